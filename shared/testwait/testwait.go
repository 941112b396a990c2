// Package testwait lets tests wait for something that happens in its own
// time, such as a long-poll parking or a goroutine answering, without
// guessing how long it takes with a sleep. The bound is generous: a busy
// machine takes seconds where an idle one takes milliseconds, and only a
// broken program should ever reach it.
package testwait

import (
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
