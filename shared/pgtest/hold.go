package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Holder is an open transaction holding locks, for race tests: racers line
// up behind its locks, the test waits until they all have, then releases
// them at once. That proves the racers overlapped, which starting
// goroutines together cannot.
type Holder struct {
	t    testing.TB
	conn *pgx.Conn
	tx   pgx.Tx
}

// Hold runs sql (e.g. `LOCK TABLE t IN EXCLUSIVE MODE`, or `SELECT ...
// FOR UPDATE`) in a transaction on a connection of its own, outside the
// pool, and keeps the transaction open until Release or the test's end.
func (d *DB) Hold(t testing.TB, sql string, args ...any) *Holder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("pgtest: hold: connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("pgtest: hold: begin: %v", err)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: hold: %s: %v", sql, err)
	}
	return &Holder{t: t, conn: conn, tx: tx}
}

// WaitQueued waits, up to a minute, until n sessions wait behind the
// held locks, directly or queued behind another waiter.
func (h *Holder) WaitQueued(n int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		// pg_locks and pg_blocking_pids read the lock table live, unlike
		// pg_stat_activity, which a transaction sees as of its start.
		var queued int
		err := h.tx.QueryRow(ctx, `
			WITH RECURSIVE queued(pid) AS (
				SELECT pid FROM pg_locks WHERE NOT granted AND pg_backend_pid() = ANY(pg_blocking_pids(pid))
				UNION
				SELECT l.pid FROM pg_locks l, queued q WHERE NOT l.granted AND q.pid = ANY(pg_blocking_pids(l.pid))
			)
			SELECT count(*) FROM queued`).Scan(&queued)
		if err != nil {
			h.t.Fatalf("pgtest: count sessions queued behind the hold: %v", err)
		}
		if queued >= n {
			return
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("pgtest: %d sessions queued behind the hold after a minute, want %d", queued, n)
		case <-tick.C:
		}
	}
}

// Release commits the transaction, letting every waiter go at once.
func (h *Holder) Release() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.tx.Commit(ctx); err != nil {
		h.t.Fatalf("pgtest: release the hold: %v", err)
	}
}
