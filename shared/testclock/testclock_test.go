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
