package testclock_test

import (
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testclock"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testclock.New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("after Advance(90s) Now = %v, want %v", got, want)
	}
}

func TestAfterFiresWhenAdvancedPast(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		after   time.Duration
		advance []time.Duration
		fired   bool
	}{
		{"not yet", time.Second, []time.Duration{999 * time.Millisecond}, false},
		{"exactly due", time.Second, []time.Duration{time.Second}, true},
		{"in steps", time.Second, []time.Duration{600 * time.Millisecond, 600 * time.Millisecond}, true},
		{"zero fires at once", 0, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := testclock.New(start)
			ch := c.After(tc.after)
			for _, d := range tc.advance {
				c.Advance(d)
			}
			select {
			case got := <-ch:
				if !tc.fired {
					t.Fatalf("fired at %v, want still pending", got)
				}
				if want := start.Add(tc.after); got.Before(want) {
					t.Errorf("fired with %v, before its time %v", got, want)
				}
				if n := c.Waiters(); n != 0 {
					t.Errorf("Waiters after firing = %d, want 0", n)
				}
			default:
				if tc.fired {
					t.Fatal("did not fire")
				}
				if n := c.Waiters(); n != 1 {
					t.Errorf("Waiters = %d, want 1", n)
				}
			}
		})
	}
}

// Drive moves the clock whenever the code waits on it: an hour of waits
// in 10-minute steps ends without the test waiting an hour, and the clock
// then reads the time the code waited for.
func TestDriveAdvancesWhileCodeWaits(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testclock.New(start)
	waits := testclock.Drive(t, c, 10*time.Minute, nil, func() int {
		n := 0
		for range 3 {
			<-c.After(20 * time.Minute)
			n++
		}
		return n
	})
	if waits != 3 {
		t.Errorf("waits = %d, want 3", waits)
	}
	if got, want := c.Now(), start.Add(time.Hour); got.Before(want) {
		t.Errorf("clock = %v, want at least %v", got, want)
	}
}
