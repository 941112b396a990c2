package db

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Before a pooled connection is handed out, pgx pings it when it has been
// idle for over a second: a round trip before the statement, which on a
// quiet server is nearly every request (an agent's one-statement send
// became two round trips). A server that restarts or is killed closes
// its sockets, and the kernel has that on the connection before anyone
// writes to it, so a look at the socket (socketQuiet) finds those
// connections without the round trip. What it cannot see is a peer gone
// without a word (a host lost, a partition), so a connection idle longer
// than stillPingAfter is pinged as before.
const (
	lookAfter      = time.Second
	stillPingAfter = time.Minute
)

// shouldPing is the pool's ShouldPing: true when a connection about to be
// handed out is worth a ping, because it sat idle long or its socket has
// something to say (the server's goodbye, or its end).
func shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	switch {
	case p.IdleDuration <= lookAfter:
		return false
	case p.IdleDuration > stillPingAfter:
		return true
	}
	return !socketQuiet(p.Conn.PgConn().Conn())
}

// PoolLiveness sets cfg's check of idle connections to the one db.Open's
// pools use, for a pool made elsewhere (the benchmark's) that must behave
// as the service's.
func PoolLiveness(cfg *pgxpool.Config) { cfg.ShouldPing = shouldPing }
