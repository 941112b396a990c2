// Package store owns every SQL statement of the service: one file per table
// family, pgx v5, $n parameters only. It turns database conditions into
// letagents errors so the layers above never see a pgx error type.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/db"
)

// Store reads and writes rooms and messages.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	// byRooms, when set, decides for tests how a search reads (see
	// searchByRooms) in place of the planner's estimate.
	byRooms *bool
	// turns lets this process's sends into the database in batches, no
	// two at once holding a room's or a client's row.
	turns *turns
	// waited, when set (WaitersFrom), tells whether someone in this
	// process waits on a NOTIFY channel.
	waited func(channel string) bool
}

// New returns a Store on pool. Its NOTIFY channels are namespaced by the
// pool's schema.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, schema: db.Schema(pool), turns: newTurns()}
}

// WaitersFrom has a send that shares its statement with others
// (sendSetSQL, where this process's concurrent sends go together) ring
// its room with the message, as a send alone does, when waited says that
// someone in this process waits on the room's channel: the message's
// JSON costs the statement about 20 µs, which only a waiter here is
// spared a read for. Call it before the first send.
func (s *Store) WaitersFrom(waited func(channel string) bool) { s.waited = waited }

// RingsWithMessage reports whether a send to the room that shares its
// statement with others rings with its message (WaitersFrom); a send
// alone always does, unless its message is too long for a ring.
func (s *Store) RingsWithMessage(roomID string) bool { return s.ringsWith(s.RoomChannel(roomID)) }

func (s *Store) ringsWith(channel string) bool { return s.waited != nil && s.waited(channel) }

// RoomChannel returns the room's doorbell: the NOTIFY channel rung, once
// per transaction, when an event is added to the room's log (a message, a
// task change, a reasoning change: see roomEvent). Channel names are
// identifiers of at most 63 bytes while room ids are free text, so the
// name is a hash; listeners must quote it like any identifier.
func (s *Store) RoomChannel(roomID string) string { return s.channel("room_", roomID) }

// MCPSessionChannel returns the NOTIFY channel rung when a hosted MCP
// session's saved state changed (SaveSessionState).
func (s *Store) MCPSessionChannel(id string) string { return s.channel("mcps_", id) }

// AccountAccessChannel returns the NOTIFY channel rung when what an
// account's connections may see may have changed: one of its browser
// sessions or agent sessions ended, it signed in again, or GitHub said
// something new about it (InvalidateRepoAccess). The ring is only a hint
// to check again: it carries no data.
func (s *Store) AccountAccessChannel(accountID int64) string {
	return s.channel("access_", "account\x00"+strconv.FormatInt(accountID, 10))
}

// RoomAccessChannel returns the NOTIFY channel rung when who may use a
// room that no repository guards may have changed: its invite code rotated.
func (s *Store) RoomAccessChannel(roomID string) string {
	return s.channel("access_", "room\x00"+roomID)
}

// RepoAccessChannel returns the NOTIFY channel rung when who may see a
// GitHub repository ("owner/name", any case) may have changed, for
// everyone in the rooms it guards (InvalidateRepoAccess).
func (s *Store) RepoAccessChannel(repo string) string {
	return s.channel("access_", "repo\x00"+strings.ToLower(repo))
}

func (s *Store) channel(prefix, roomID string) string {
	sum := sha256.Sum256([]byte(s.schema + "\x00" + roomID))
	return prefix + hex.EncodeToString(sum[:20])
}

// PostgreSQL error codes the store translates.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	checkViolation      = "23514"
)

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// querier runs statements: the pool, or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// rollbackTimeout bounds a rollback, which runs even when the caller's
// context is done.
const rollbackTimeout = 5 * time.Second

// withTx runs fn in a transaction: committed when fn returns nil, rolled
// back otherwise. fn's error comes back as it is, so a letagents error
// stays one.
func (s *Store) withTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return inTx(ctx, s.pool, fn)
}

// savepoint runs fn under a savepoint of tx: released when fn returns nil,
// rolled back to otherwise, which leaves tx usable after a statement of
// fn's failed (a unique violation the caller means to survive).
func savepoint(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) error {
	return inTx(ctx, tx, fn)
}

// inTx runs fn in a transaction begun on db (a savepoint when db is one).
// The rollback runs under context.WithoutCancel: a caller whose context
// was cancelled mid-transaction still gets its rollback sent, rather than
// pgx giving up on it at once and closing the connection.
func inTx(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, fn func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rctx) // a no-op after Commit; pgx closes a connection whose rollback failed
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// retry runs read, which only reads (or repeats an idempotent repair such
// as expiring what is overdue), and runs it once more when it failed
// because the database was unavailable and ctx still has time.
//
// A restart or failover kills every pooled connection at once, and pgx
// learns that a connection is dead only by using it: the pool looks at
// (or pings) the ones idle for over a second before handing them out
// (db.Open), so those used just before the restart, and any whose end
// has not reached the socket yet, are met dead. The pool is reset before the second
// attempt, which then (like the requests after it) opens a fresh
// connection instead of meeting the dead one's siblings. Writes are not
// retried here: whether one committed before its connection broke is
// unknown (a send is made safe by its client_message_id instead).
func (s *Store) retry(ctx context.Context, read func() error) error {
	err := read()
	if !db.Unavailable(err) || ctx.Err() != nil {
		return err
	}
	s.pool.Reset()
	return read()
}

// retried is retry for a read that returns a value.
func retried[T any](ctx context.Context, s *Store, read func() (T, error)) (T, error) {
	var v T
	err := s.retry(ctx, func() (err error) {
		v, err = read()
		return err
	})
	return v, err
}

// queryRow is the pool's QueryRow for a statement that only reads: its
// Scan is retried as retry says.
func (s *Store) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return retryRow{ctx: ctx, s: s, sql: sql, args: args}
}

type retryRow struct {
	ctx  context.Context
	s    *Store
	sql  string
	args []any
}

func (r retryRow) Scan(dest ...any) error {
	return r.s.retry(r.ctx, func() error { return r.s.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...) })
}

// queryOne runs sql on q and scans its one row into a T by name
// (pgx.RowToStructByName: every column is a field's db tag, every field
// a column); pgx.ErrNoRows when there is none.
func queryOne[T any](ctx context.Context, q querier, sql string, args ...any) (T, error) {
	var out T
	rows, err := q.Query(ctx, sql, args...)
	if err == nil {
		err = collectOne(&out)(rows)
	}
	return out, err
}

// collectOne reads the one row of rows into *dst, as queryOne does: the
// scan of a statement that may run in a batch (roomSend).
func collectOne[T any](dst *T) func(pgx.Rows) error {
	return func(rows pgx.Rows) (err error) {
		*dst, err = pgx.CollectOneRow(rows, pgx.RowToStructByName[T])
		return err
	}
}

// queryAll is queryOne for every row, in order; none is no error.
func queryAll[T any](ctx context.Context, q querier, sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[T])
}
