// Package store owns every SQL statement of the service: one file per table
// family, pgx v5, $n parameters only. It turns database conditions into
// letagents errors so the layers above never see a pgx error type.
package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/db"
)

// Store reads and writes rooms and messages.
type Store struct {
	pool   *pgxpool.Pool
	schema string
}

// New returns a Store on pool. Its NOTIFY channels are namespaced by the
// pool's schema.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, schema: db.Schema(pool)}
}

// Channel returns the NOTIFY channel rung when a message is added to room.
// Channel names are identifiers of at most 63 bytes while room ids are free
// text, so the name is a hash; listeners must quote it like any identifier.
func (s *Store) Channel(roomID string) string {
	sum := sha256.Sum256([]byte(s.schema + "\x00" + roomID))
	return "room_" + hex.EncodeToString(sum[:20])
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
