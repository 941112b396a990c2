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

// drive is testclock.Drive with the tests' step.
func drive[T any](t *testing.T, clk *testclock.Clock, ready func() bool, fn func() T) T {
	t.Helper()
	return testclock.Drive(t, clk, step, ready, fn)
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
