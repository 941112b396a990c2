package testclock

import (
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
)

// timer is a pending After.
type timer struct {
	at time.Time
	c  chan time.Time
}

// After is time.After on this clock: the channel receives the clock's
// reading once Advance has moved it d past now (at once if d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, timer{at: c.now.Add(d), c: ch})
	c.fire()
	select {
	case c.waited <- struct{}{}:
	default: // a signal is already pending
	}
	return ch
}

// Waiters is how many channels from After have not fired yet. Code under
// test waits on them in its own goroutine: a test waits for Waiters to
// rise (see testwait.Until) before it advances, so that the wait it means
// to end has begun. A wait the code abandoned still counts until the
// clock passes it.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// fire sends to the timers that are due; c.mu is held.
func (c *Clock) fire() {
	c.timers = slices.DeleteFunc(c.timers, func(t timer) bool {
		if t.at.After(c.now) {
			return false
		}
		t.c <- c.now
		return true
	})
}

// Drive runs fn in its own goroutine and, while it runs, moves c on by
// step whenever something waits on it (After), so code that waits out
// intervals finishes without the test waiting for them; it returns what fn
// returns, and fails the test if fn is still running after twice
// testwait.Bound. ready, when not nil, must hold before the clock first
// moves (a spawned process listening, say), so that no waited-for time
// passes before then.
func Drive[T any](t testing.TB, c *Clock, step time.Duration, ready func() bool, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	if ready != nil {
		testwait.Until(t, "the code under test to be ready", ready)
	}
	deadline := time.After(2 * testwait.Bound)
	for {
		select {
		case v := <-done:
			return v
		default:
		}
		if c.Waiters() > 0 {
			c.Advance(step)
			continue
		}
		select {
		case v := <-done:
			return v
		case <-c.waited:
		case <-deadline:
			t.Fatalf("still running after %v", 2*testwait.Bound)
		}
	}
}
