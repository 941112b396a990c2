// Package testwait lets tests wait for something that happens in its own
// time, such as a long-poll parking or a goroutine answering, without
// guessing how long it takes with a sleep. The bound is generous: a busy
// machine takes seconds where an idle one takes milliseconds, and only a
// broken program should ever reach it.
package testwait

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Bound is how long Until and Recv wait before failing the test.
const Bound = time.Minute

// every is how often Until checks its condition.
const every = 5 * time.Millisecond

// Until returns once cond reports true, failing the test, with what it
// was waiting for, if that takes longer than Bound.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", Bound, what)
		}
		time.Sleep(every)
	}
}

// Recv returns the next value from c, failing the test, with what it was
// waiting for, if none comes within Bound.
func Recv[T any](t testing.TB, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(Bound):
		t.Fatalf("waited %v for %s", Bound, what)
		var zero T
		return zero
	}
}

// Blocked returns once some goroutine is blocked in state (as a goroutine
// dump names it: "select", "IO wait", "chan receive") in a function
// named top (as the dump prints it; the first frame it shows), with below
// further down its stack unless below is "", failing the test after
// Bound: what a test waits on when the only sign that a goroutine has
// done everything before its wait is that it waits there. It looks at
// the whole process: a test that waits for a function other tests block
// in too must not run in parallel with them.
func Blocked(t testing.TB, what, state, top, below string) {
	t.Helper()
	Until(t, what, func() bool {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		for _, g := range strings.Split(string(buf), "\n\n") {
			header, frames, _ := strings.Cut(g, "\n")
			first, _, _ := strings.Cut(frames, "\n")
			if strings.Contains(header, "["+state) && strings.Contains(first, top) && strings.Contains(frames, below) {
				return true
			}
		}
		return false
	})
}
