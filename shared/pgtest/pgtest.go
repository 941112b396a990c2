// Package pgtest gives each test its own PostgreSQL schema on the test
// server, migrated and dropped afterwards, so tests run in parallel against
// a real database without seeing each other's rows or NOTIFY channels.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/testwait"
)

// DefaultURL is the test server used when LETAGENTS_TEST_DB_URL is unset;
// `make test` sets that variable after making sure a server answers.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL returns the test server's URL.
func BaseURL() string {
	if u := os.Getenv("LETAGENTS_TEST_DB_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// DB is one test's private schema.
type DB struct {
	Pool   *pgxpool.Pool
	URL    string // connects with search_path set to Schema
	Schema string
}

// New creates a fresh migrated schema and a pool on it, both removed when
// the test ends. It fails the test when no server answers: a database test
// that skips would be counted as passing.
func New(t testing.TB) *DB {
	t.Helper()
	d := NewEmpty(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil {
		t.Fatalf("pgtest: migrate %s: %v", d.Schema, err)
	}
	return d
}

// NewEmpty is New without the migrations.
func NewEmpty(t testing.TB) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := BaseURL()
	admin, err := db.Open(ctx, base, 1)
	if err != nil {
		t.Fatalf("pgtest: no test database at %s (run `make test`, which starts one): %v", base, err)
	}
	defer admin.Close()

	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	// Names the test's connections in pg_stat_activity, for AwaitLockWaiters.
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()

	pool, err := db.Open(ctx, u.String(), 8)
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", schema, err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := db.Open(ctx, base, 1)
		if err != nil {
			t.Errorf("pgtest: reconnect to drop %s: %v", schema, err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("pgtest: drop %s: %v", schema, err)
		}
	})
	return &DB{Pool: pool, URL: u.String(), Schema: schema}
}

// TracedPool opens a pool of its own on d's schema whose statements
// tracer sees (to count a request's round trips), closed when the test
// ends.
func (d *DB) TracedPool(t testing.TB, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// HoldLock runs query, which should lock rows (SELECT ... FOR UPDATE), in
// a transaction on a connection of its own, and returns a function that
// commits it. A race test holds the contested rows this way, starts its
// racers, waits with AwaitLockWaiters until they all wait for the rows,
// and only then lets them go: so the racers surely overlapped, which
// merely starting them together does not ensure.
func (d *DB) HoldLock(t testing.TB, query string, args ...any) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("pgtest: connect to hold a lock: %v", err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, query, args...)
	}
	if err != nil {
		conn.Close(context.Background())
		t.Fatalf("pgtest: hold lock: %v", err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := tx.Commit(ctx); err != nil {
			t.Errorf("pgtest: release lock: %v", err)
		}
		conn.Close(ctx)
	}
	t.Cleanup(release)
	return release
}

// HoldMigrateLock takes this schema's migration lock (db.Migrate's) on a
// session of its own, held until it releases it or the test ends, and
// returns the session's backend pid: a migrator behind it must wait, or
// name it.
func (d *DB) HoldMigrateLock(t testing.TB) (pid int, release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("pgtest: connect to hold the migration lock: %v", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock(hashtext('letagents.migrate:' || current_schema()))) l`).Scan(&pid); err != nil {
		conn.Close(context.Background())
		t.Fatalf("pgtest: hold the migration lock: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			// Unlocked before the session ends: a closed session's locks go
			// only when its backend has exited, a moment later.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
				t.Errorf("pgtest: release the migration lock: %v", err)
			}
			conn.Close(ctx)
		})
	}
	t.Cleanup(release)
	return pid, release
}

// AwaitLockWaiters waits until n of this schema's connections wait for a
// lock. It counts on a connection of its own: the racers may hold every
// connection of the pool.
func (d *DB) AwaitLockWaiters(t testing.TB, n int) {
	t.Helper()
	d.awaitLockWaiters(t, n, func() bool { return false })
}

// awaitLockWaiters is AwaitLockWaiters, failing at once when gaveUp
// reports true: then the waiters will never come.
func (d *DB) awaitLockWaiters(t testing.TB, n int, gaveUp func() bool) {
	t.Helper()
	count, done := d.lockWaiterCounter(t)
	defer done()
	what := fmt.Sprintf("%d connections to wait for a lock", n)
	testwait.Until(t, what, func() bool {
		waiting := count()
		if waiting < n && gaveUp() {
			t.Fatalf("pgtest: a racer returned while waiting for %s: it never contended for the held lock", what)
		}
		return waiting >= n
	})
}

// LockWaiters counts this schema's connections that wait for a lock now.
func (d *DB) LockWaiters(t testing.TB) int {
	t.Helper()
	count, done := d.lockWaiterCounter(t)
	defer done()
	return count()
}

// lockWaiterCounter counts this schema's connections that wait for a lock
// on a connection of its own (the racers may hold every connection of the
// pool), until done closes it.
func (d *DB) lockWaiterCounter(t testing.TB) (count func() int, done func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		cancel()
		t.Fatalf("pgtest: connect to count lock waiters: %v", err)
	}
	count = func() int {
		var n int
		err := conn.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, d.Schema).Scan(&n)
		if err != nil {
			t.Fatalf("pgtest: count lock waiters: %v", err)
		}
		return n
	}
	return count, func() { conn.Close(context.Background()); cancel() }
}

// Race runs racer(0), …, racer(n-1), each in a goroutine of its own,
// against rows held by HoldLock, whose release it is given. It lets them
// go only once as many racers wait for a lock as can: n, or the pool's
// size when n is larger (the others wait for a connection). It returns
// when every racer has. A racer that returns before the release fails the
// test, since it did not contend.
func (d *DB) Race(t testing.TB, n int, release func(), racer func(i int)) {
	t.Helper()
	var wg sync.WaitGroup
	var returned atomic.Bool
	for i := range n {
		wg.Go(func() {
			defer returned.Store(true)
			racer(i)
		})
	}
	d.awaitLockWaiters(t, min(n, int(d.Pool.Config().MaxConns)), returned.Load)
	release()
	wg.Wait()
}
