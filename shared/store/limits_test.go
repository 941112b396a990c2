package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

func TestTake(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	// A minute boundary, as a fixed window would see it.
	boundary := time.Now().Truncate(time.Minute).Add(time.Hour)
	const perMinute = 10 // a token every 6 s
	at := func(d time.Duration) time.Time { return boundary.Add(d) }
	tests := []struct {
		name     string
		kind     string
		key      string
		at       time.Time
		times    int
		wantWait time.Duration // of the last take; 0 for taken
	}{
		{"a full bucket: a burst of perMinute at the end of a minute", "join", "a", at(-500 * time.Millisecond), perMinute, 0},
		{"then empty", "join", "a", at(-500 * time.Millisecond), 1, 6 * time.Second},
		// The case a calendar minute let through: another burst just
		// after the boundary.
		{"still empty across the minute boundary", "join", "a", at(350 * time.Millisecond), 1, 5150 * time.Millisecond},
		{"refusals take nothing", "join", "a", at(5499 * time.Millisecond), 1, time.Millisecond},
		{"one token back after 6 s", "join", "a", at(5500 * time.Millisecond), 1, 0},
		{"and only one", "join", "a", at(5500 * time.Millisecond), 1, 6 * time.Second},
		{"another address has its own bucket", "join", "b", at(5500 * time.Millisecond), perMinute, 0},
		{"another kind has its own bucket", "send", "a", at(5500 * time.Millisecond), perMinute, 0},
		{"a clock behind the last take waits longer", "join", "a", at(time.Second), 1, 10500 * time.Millisecond},
		{"half a minute refills half the bucket", "join", "a", at(35500 * time.Millisecond), 5, 0},
		{"and no more", "join", "a", at(35500 * time.Millisecond), 1, 6 * time.Second},
		{"an idle hour refills it only to perMinute", "join", "a", at(2 * time.Hour), perMinute, 0},
		{"and not beyond", "join", "a", at(2 * time.Hour), 1, 6 * time.Second},
	}
	for _, tt := range tests {
		var wait time.Duration
		for i := range tt.times {
			var err error
			if wait, err = s.Take(ctx, tt.kind, tt.key, perMinute, tt.at); err != nil {
				t.Fatalf("%s: take %d: %v", tt.name, i+1, err)
			}
			if i < tt.times-1 && wait != 0 {
				t.Fatalf("%s: take %d of %d refused (wait %v); want all taken", tt.name, i+1, tt.times, wait)
			}
		}
		if wait != tt.wantWait {
			t.Errorf("%s: Take(%s, %s, %d, %v) wait = %v; want %v", tt.name, tt.kind, tt.key, perMinute, tt.at.Sub(boundary), wait, tt.wantWait)
		}
	}
	if _, err := s.Take(ctx, "join", "a", 0, boundary); err == nil {
		t.Error("Take(perMinute 0) succeeded; want an error")
	}
}

func TestTakePurgesFullBuckets(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	now := testNow()
	for _, key := range []string{"old", "recent"} {
		if _, err := s.Take(ctx, "join", key, 10, now); err != nil {
			t.Fatal(err)
		}
		now = now.Add(50 * time.Minute)
	}
	// A new bucket, 100 minutes after "old" and 50 after "recent".
	if _, err := s.Take(ctx, "join", "new", 10, now); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, d.Pool, `SELECT count(*) FROM rate_buckets WHERE key = 'old'`); n != 0 {
		t.Error("a bucket full for over an hour survived a new bucket's purge")
	}
	if n := countRows(t, d.Pool, `SELECT count(*) FROM rate_buckets`); n != 2 {
		t.Errorf("buckets after the purge = %d; want 2 (recent, new)", n)
	}
}

// TestTakeRace lines 20 takers up behind a lock on the bucket (none yet, or
// one already there) and lets them go at once: exactly perMinute win.
func TestTakeRace(t *testing.T) {
	t.Parallel()
	const racers, perMinute = 20, 10
	for _, tt := range []struct {
		name string
		hold string
	}{
		{"new bucket", `LOCK TABLE rate_buckets IN EXCLUSIVE MODE`},
		{"existing bucket", `SELECT 1 FROM rate_buckets WHERE kind = 'join' AND key = '203.0.113.7' FOR UPDATE`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			ctx := context.Background()
			pool, err := db.Open(ctx, d.URL, racers)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			warmPool(t, pool, racers)
			s := store.New(pool)
			now := testNow()
			limit := perMinute
			if tt.name == "existing bucket" {
				// One more token, spent now, so the bucket exists.
				limit++
				if wait, err := s.Take(ctx, "join", "203.0.113.7", limit, now); err != nil || wait != 0 {
					t.Fatalf("first take = %v, %v", wait, err)
				}
			}
			release := d.HoldLock(t, tt.hold)
			waits := make([]time.Duration, racers)
			errs := make([]error, racers)
			var wg sync.WaitGroup
			for i := range racers {
				wg.Go(func() { waits[i], errs[i] = s.Take(ctx, "join", "203.0.113.7", limit, now) })
			}
			d.AwaitLockWaiters(t, racers)
			release()
			wg.Wait()
			taken := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("take %d: %v", i, err)
				}
				if waits[i] == 0 {
					taken++
				}
			}
			if taken != perMinute {
				t.Errorf("%d racing takes from a bucket of %d took %d tokens (waits %v); want exactly %d", racers, perMinute, taken, fmt.Sprint(waits), perMinute)
			}
		})
	}
}
