// Package pgtest gives each test its own PostgreSQL schema on the test
// server, migrated and dropped afterwards, so tests run in parallel against
// a real database without seeing each other's rows or NOTIFY channels.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
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
