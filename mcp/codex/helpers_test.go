package codex

import (
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/codex/codextest"
	"github.com/letagents/letagents-go/mcp/state"
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

// summaries are the parts the posts carried, in order.
func summaries(posts []ReasoningPost) []string {
	var out []string
	for _, p := range posts {
		out = append(out, strings.Split(p.Summary, "\n\n")...)
	}
	return out
}

func saved(t *testing.T, f *state.File, id string) state.CodexLiveSession {
	t.Helper()
	st, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	s, ok := st.CodexLiveSessions[id]
	if !ok {
		t.Fatalf("live session %s not saved", id)
	}
	return s
}
