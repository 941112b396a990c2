package pgtest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/pgtest"
)

// Race lets no racer through before every racer the pool can serve waits
// for the held row, and returns only when all of them are done.
func TestRace(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	ctx := context.Background()
	if _, err := d.Pool.Exec(ctx, `CREATE TABLE counter (n int); INSERT INTO counter VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	// The pool is full of racers: count them on a connection of its own.
	watcher, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	hold := d.HoldLock(t, `SELECT 1 FROM counter FOR UPDATE`)
	waitingAtRelease := -1
	release := func() {
		if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			d.Schema).Scan(&waitingAtRelease); err != nil {
			t.Error(err)
		}
		hold()
	}
	const racers = 12 // more than the pool's 8 connections
	var done atomic.Int32
	d.Race(t, racers, release, func(int) {
		if _, err := d.Pool.Exec(ctx, `UPDATE counter SET n = n + 1`); err != nil {
			t.Error(err)
		}
		done.Add(1)
	})
	if pool := int(d.Pool.Config().MaxConns); waitingAtRelease != pool {
		t.Errorf("%d racers waited for the row when it was released, want %d (the pool's size)", waitingAtRelease, pool)
	}
	if n := done.Load(); n != racers {
		t.Errorf("Race returned with %d of %d racers done", n, racers)
	}
	var n int
	if err := d.Pool.QueryRow(ctx, `SELECT n FROM counter`).Scan(&n); err != nil || n != racers {
		t.Errorf("counter = %d, %v; want %d", n, err, racers)
	}
}
