package main

import (
	"context"
	"fmt"
	"runtime"

	"github.com/jackc/pgx/v5"
)

// Bounds of the runner's own pool size (poolSize).
const (
	// connsPerCore: a request holds a connection only for its
	// transaction, so about 4 per core keep the database's cores busy and
	// overlap the round trips to a database elsewhere; many more only
	// make its backends take turns on the same cores (on 2 cores a burst
	// of 100 sends took 1.5× as long with 32 connections as with 4 to 16).
	connsPerCore = 4
	// minConns is the least it sizes for: a burst of sends from a crowd
	// of agents should not queue for a handful of connections.
	minConns = 16
	maxConns = 64
	// leastConns is the floor when the database has few connections to
	// spare: pgx's own default.
	leastConns = 4
)

// poolSize is the runner's pool size when DB_MAX_CONNS does not set it.
// The runner serves every function from one pool, where AWS gives each
// concurrent Lambda instance a pool of its own: so it sizes for
// concurrency, connsPerCore per core (at least minConns, at most
// maxConns), but takes at most half the connections the database has
// free, leaving the rest to tests, psql or a second runner. It says how
// it chose, for the line the runner prints.
func poolSize(ctx context.Context, connString string) (int32, string, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return 0, "", fmt.Errorf("connect to size the pool: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var free int
	// Client backends only: background workers have slots of their own.
	if err := conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int
		- current_setting('superuser_reserved_connections')::int
		- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')`).Scan(&free); err != nil {
		return 0, "", fmt.Errorf("read the database's free connections: %w", err)
	}
	n := sizeFor(runtime.GOMAXPROCS(0), free)
	return n, fmt.Sprintf("%d per core, %d to %d, at most half the database's %d free; DB_MAX_CONNS sets it", connsPerCore, minConns, maxConns, free), nil
}

// sizeFor is poolSize's rule for procs cores and free connections.
func sizeFor(procs, free int) int32 {
	n := min(max(connsPerCore*procs, minConns), maxConns, free/2)
	return int32(max(n, leastConns))
}
