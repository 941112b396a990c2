package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// txStore is a store on a pool of one connection, so that every statement
// runs on the same backend unless that connection was closed.
func txStore(t *testing.T) (*Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	pool, err := db.Open(ctx, pgtest.New(t).URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return New(pool), ctx
}

// insertRoom adds a room in tx.
func insertRoom(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `INSERT INTO rooms (id, kind, display_name) VALUES ($1, 'named', $1)`, id)
	return err
}

// roomsExist reports which of ids are rooms.
func roomsExist(ctx context.Context, t *testing.T, s *Store, ids ...string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, id := range ids {
		var ok bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rooms WHERE id = $1)`, id).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		got[id] = ok
	}
	return got
}

func TestWithTx(t *testing.T) {
	t.Parallel()
	failed := errors.New("fn failed")
	tests := []struct {
		name string
		fn   func(ctx context.Context, cancel context.CancelFunc, tx pgx.Tx) error
		err  error // what withTx must return, nil for success
		want map[string]bool
	}{
		{"commits when fn succeeds", func(ctx context.Context, _ context.CancelFunc, tx pgx.Tx) error {
			return insertRoom(ctx, tx, "kept")
		}, nil, map[string]bool{"kept": true}},
		{"rolls back when fn fails, and returns its error", func(ctx context.Context, _ context.CancelFunc, tx pgx.Tx) error {
			if err := insertRoom(ctx, tx, "dropped"); err != nil {
				return err
			}
			return failed
		}, failed, map[string]bool{"dropped": false}},
		// The caller's context ends mid-transaction: the rollback is still
		// sent, rather than given up on at once, which would close the
		// connection.
		{"rolls back after the caller's context ended", func(ctx context.Context, cancel context.CancelFunc, tx pgx.Tx) error {
			if err := insertRoom(ctx, tx, "cancelled"); err != nil {
				return err
			}
			cancel()
			return failed
		}, failed, map[string]bool{"cancelled": false}},
		// A savepoint that fails is rolled back to; the transaction goes on.
		{"a failed savepoint leaves the transaction usable", func(ctx context.Context, _ context.CancelFunc, tx pgx.Tx) error {
			if err := insertRoom(ctx, tx, "before"); err != nil {
				return err
			}
			err := savepoint(ctx, tx, func(sp pgx.Tx) error {
				if err := insertRoom(ctx, sp, "inside"); err != nil {
					return err
				}
				return insertRoom(ctx, sp, "before") // a unique violation
			})
			if pgCode(err) != uniqueViolation {
				return fmt.Errorf("savepoint = %v, want a unique violation", err)
			}
			return insertRoom(ctx, tx, "after")
		}, nil, map[string]bool{"before": true, "inside": false, "after": true}},
		{"a savepoint that succeeds is kept", func(ctx context.Context, _ context.CancelFunc, tx pgx.Tx) error {
			return savepoint(ctx, tx, func(sp pgx.Tx) error { return insertRoom(ctx, sp, "saved") })
		}, nil, map[string]bool{"saved": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ctx := txStore(t)
			var before, after int32
			if err := s.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			txCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			err := s.withTx(txCtx, func(tx pgx.Tx) error { return tt.fn(txCtx, cancel, tx) })
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Errorf("withTx = %v, want %v", err, tt.err)
			}
			if err := s.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != before {
				t.Errorf("the transaction's connection (backend %d) was closed; the next statement ran on backend %d", before, after)
			}
			ids := make([]string, 0, len(tt.want))
			for id := range tt.want {
				ids = append(ids, id)
			}
			for id, ok := range roomsExist(ctx, t, s, ids...) {
				if ok != tt.want[id] {
					t.Errorf("room %q exists: %v, want %v", id, ok, tt.want[id])
				}
			}
		})
	}
}
