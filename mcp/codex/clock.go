package codex

import "time"

// Clock is the time this package reads and waits on. The timings it
// drives (a second between bind attempts, 750 ms between posts, 15 s of
// quiet before a heartbeat) are tested on a clock the test moves
// (shared/testclock).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// realClock is the system clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
