package codex

import (
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/codex/codextest"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
)

// testRoom is the room of the tests' live sessions.
const testRoom = "github.com/acme/app"

// step is how far drive moves the clock each time: the shortest wait of
// the code under test.
const step = 250 * time.Millisecond

// drive runs fn in its own goroutine and, while it runs, moves clk on by
// step whenever something waits on it; it returns what fn returns. ready,
// when set, must hold before the clock first moves (a spawned process
// listening, say), so that no waited-for time passes before then.
func drive[T any](t *testing.T, clk *testclock.Clock, ready func() bool, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	if ready != nil {
		testwait.Until(t, "the code under test to be ready", ready)
	}
	deadline := time.Now().Add(testwait.Bound)
	for {
		select {
		case v := <-done:
			return v
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running after %v", testwait.Bound)
		}
		if clk.Waiters() > 0 {
			clk.Advance(step)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// advanceWhenWaiting moves clk on by d once something waits on it.
func advanceWhenWaiting(t *testing.T, clk *testclock.Clock, d time.Duration) {
	t.Helper()
	testwait.Until(t, "the code under test to wait on the clock", func() bool { return clk.Waiters() > 0 })
	clk.Advance(d)
}

// waitCall waits for the fake app-server's first message of method.
func waitCall(t *testing.T, fake *codextest.Server, method string) codextest.Call {
	t.Helper()
	testwait.Until(t, "the app-server to get "+method, func() bool { return len(fake.Calls(method)) > 0 })
	return fake.Calls(method)[0]
}
