// Package testclock is the clock tests hand to code that reads the time
// through a func() time.Time: it stands still until the test moves it, so
// expiries, intervals and rotations are tested without waiting for them.
package testclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told; safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []timer // see After
	// waited holds a signal once a timer is added (see Drive), so a test
	// can wait for code to block on the clock instead of polling.
	waited chan struct{}
}

// New returns a Clock reading now.
func New(now time.Time) *Clock { return &Clock{now: now, waited: make(chan struct{}, 1)} }

// Now is the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d, firing the timers (see After)
// that are due by then.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fire()
}
