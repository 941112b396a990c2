package testclock

import (
	"slices"
	"time"
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
