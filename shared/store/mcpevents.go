package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// ErrUnknownMCPEvent says an event id names no event of the session: never
// sent to it, or pruned.
var ErrUnknownMCPEvent = errors.New("unknown MCP event id")

// StoreMCPEvent records message as the next event of a hosted MCP
// session's stream and returns its id.
func (s *Store) StoreMCPEvent(ctx context.Context, sessionID, streamID string, message []byte) (string, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `INSERT INTO mcp_events (session_id, stream_id, message) VALUES ($1, $2, $3) RETURNING id`,
		sessionID, streamID, string(message)).Scan(&id); err != nil {
		return "", fmt.Errorf("store MCP event: %w", err)
	}
	return strconv.FormatInt(id, 10), nil
}

// ReplayMCPEvents calls send, in order, with each event of the stream of
// event after (one of sessionID's) sent after it, and returns that
// stream's id; ErrUnknownMCPEvent when after is not an event of the
// session.
func (s *Store) ReplayMCPEvents(ctx context.Context, sessionID, after string, send func(id string, message []byte) error) (string, error) {
	last, err := strconv.ParseInt(after, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrUnknownMCPEvent, after)
	}
	var stream string
	err = s.pool.QueryRow(ctx, `SELECT stream_id FROM mcp_events WHERE id = $1 AND session_id = $2`, last, sessionID).Scan(&stream)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: %q", ErrUnknownMCPEvent, after)
	}
	if err != nil {
		return "", fmt.Errorf("replay MCP events: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, message FROM mcp_events WHERE stream_id = $1 AND id > $2 ORDER BY id`, stream, last)
	if err != nil {
		return "", fmt.Errorf("replay MCP events: %w", err)
	}
	type event struct {
		id      int64
		message string
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var e event
		return e, r.Scan(&e.id, &e.message)
	})
	if err != nil {
		return "", fmt.Errorf("replay MCP events: %w", err)
	}
	// Sent once the rows are read: send writes to a client, which must not
	// hold a connection of the pool meanwhile.
	for _, e := range events {
		if err := send(strconv.FormatInt(e.id, 10), []byte(e.message)); err != nil {
			return stream, err
		}
	}
	return stream, nil
}

// PurgeMCPEvents deletes every event of a hosted MCP session.
func (s *Store) PurgeMCPEvents(ctx context.Context, sessionID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM mcp_events WHERE session_id = $1`, sessionID); err != nil {
		return fmt.Errorf("purge MCP events: %w", err)
	}
	return nil
}

// PruneMCPEvents deletes up to limit of the hosted MCP stream events sent
// before before (now less letagents.HostedEventRetention), oldest first,
// and returns how many it deleted: fewer than limit means none older is
// left.
func (s *Store) PruneMCPEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.pruneOldest(ctx, "MCP events", "mcp_events", "created_at", before, limit)
}

// pruneOldest deletes up to limit rows of table (keyed by id) whose
// column is before before, oldest first, and returns how many it
// deleted. table and column are the callers' constants, never input.
func (s *Store) pruneOldest(ctx context.Context, what, table, column string, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+table+` WHERE id = ANY (ARRAY(
		SELECT id FROM `+table+` WHERE `+column+` < $1 ORDER BY `+column+` LIMIT $2))`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("prune %s: %w", what, err)
	}
	return int(tag.RowsAffected()), nil
}
