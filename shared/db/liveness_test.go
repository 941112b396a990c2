package db_test

import (
	"context"
	"net"
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
	c := usedConn(t, d)
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

// TestTheLookWaitsForNoReader holds the look at an idle connection to
// never waiting: pgx leaves a background reader blocked on a connection's
// socket after a write slower than 15 ms (a busy machine), and a look that
// waited for that reader's turn hung the pool's Acquire until the server
// spoke, which on an idle connection is never.
func TestTheLookWaitsForNoReader(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	c := usedConn(t, d)
	read := make(chan error, 1)
	go readAsPgxsBackgroundReader(c.Conn().PgConn().Conn(), read)
	testwait.Blocked(t, "the reader to be blocked on the idle socket", "IO wait", "internal/poll.", "readAsPgxsBackgroundReader")

	shouldPing := d.Pool.Config().ShouldPing
	looked := make(chan bool, 1)
	go func() {
		looked <- shouldPing(ctx, pgxpool.ShouldPingParams{Conn: c.Conn(), IdleDuration: 5 * time.Second})
	}()
	if testwait.Recv(t, "the look at a socket another goroutine is reading", looked) {
		t.Error("a live, quiet connection with a reader blocked on it is pinged")
	}

	// The server's goodbye ends the reader; the connection is dead.
	if _, err := d.Pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, c.Conn().PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the reader to see the server's goodbye", read)
	_ = c.Conn().Close(ctx)
}

// readAsPgxsBackgroundReader reads c as pgx's background reader does,
// once, until the server speaks or the socket ends.
func readAsPgxsBackgroundReader(c net.Conn, done chan<- error) {
	_, err := c.Read(make([]byte, 8192))
	done <- err
}

// usedConn acquires a connection of d's pool that has run a statement,
// released when the test ends.
func usedConn(t *testing.T, d *pgtest.DB) *pgxpool.Conn {
	t.Helper()
	c, err := d.Pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	if _, err := c.Exec(context.Background(), `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	return c
}
