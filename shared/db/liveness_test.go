package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// TestIdleConnectionsAreLookedAtNotPinged holds db.Open's pools to
// handing out an idle connection whose socket is quiet without a ping (a
// round trip), to pinging one the server has closed, and to pinging any
// that sat idle for over a minute.
func TestIdleConnectionsAreLookedAtNotPinged(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t) // its pool is db.Open's
	ctx := context.Background()
	shouldPing := d.Pool.Config().ShouldPing
	if shouldPing == nil {
		t.Fatal("db.Open's pool has no ShouldPing: pgx's default pings every connection idle for over a second")
	}
	c, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		idle time.Duration
		want bool
	}{
		{500 * time.Millisecond, false},
		{5 * time.Second, false}, // pgx's default pings this one
		{2 * time.Minute, true},
	} {
		if got := shouldPing(ctx, pgxpool.ShouldPingParams{Conn: c.Conn(), IdleDuration: tc.idle}); got != tc.want {
			t.Errorf("a live connection idle for %s: ping %v, want %v", tc.idle, got, tc.want)
		}
	}

	// The server ends the connection, as a restart does: the socket has
	// its goodbye before anyone writes to it.
	pid := c.Conn().PgConn().PID()
	if _, err := d.Pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "a connection whose backend was terminated to be pinged before it is handed out", func() bool {
		return shouldPing(ctx, pgxpool.ShouldPingParams{Conn: c.Conn(), IdleDuration: 5 * time.Second})
	})
	if got := shouldPing(ctx, pgxpool.ShouldPingParams{Conn: c.Conn(), IdleDuration: 500 * time.Millisecond}); got {
		t.Error("a connection idle for under a second is pinged: pgx never pinged those, and the store retries what meets one")
	}
	_ = c.Conn().Close(ctx) // dead already; the pool drops a closed connection on release
}
