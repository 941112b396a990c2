package store

import (
	"context"
	"fmt"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// The hosted MCP endpoint's sessions (migration 0028): mcp/server's
// SessionStore. A session unused for letagents.HostedSessionIdle is
// gone: reads do not see it, and the liveness sweeper deletes it
// (PruneMCPSessions).

// CreateSession opens hosted MCP session id for owner; one that is open
// already keeps its state and is marked used (a credential's state is
// opened by each task that builds it).
func (s *Store) CreateSession(ctx context.Context, id, owner string) error {
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO mcp_sessions (id, owner) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET used_at = now()`, id, owner); err != nil {
		return fmt.Errorf("create MCP session: %w", err)
	}
	return nil
}

// SessionOwner is who opened session id, and marks it used; found is
// false for a session never opened, ended or idle too long.
func (s *Store) SessionOwner(ctx context.Context, id string) (owner string, found bool, err error) {
	err = s.pool.QueryRow(ctx, `
		UPDATE mcp_sessions SET used_at = now()
		WHERE id = $1 AND used_at >= now() - make_interval(secs => $2)
		RETURNING owner`, id, letagents.HostedSessionIdle.Seconds()).Scan(&owner)
	switch {
	case isNoRows(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read MCP session: %w", err)
	}
	return owner, true, nil
}

// SessionState is session id's state document; found is false when it
// has none yet (or the session is gone).
func (s *Store) SessionState(ctx context.Context, id string) (data []byte, found bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT state FROM mcp_sessions WHERE id = $1 AND state IS NOT NULL`, id).Scan(&data)
	switch {
	case isNoRows(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read MCP session state: %w", err)
	}
	return data, true, nil
}

// SaveSessionState replaces session id's state document and rings
// MCPSessionChannel(id), so that a task holding the session's stream
// reads it again (its resource subscriptions may have changed).
func (s *Store) SaveSessionState(ctx context.Context, id string, data []byte) error {
	if _, err := s.pool.Exec(ctx, `
		WITH saved AS (UPDATE mcp_sessions SET state = $2::jsonb, used_at = now() WHERE id = $1 RETURNING id)
		SELECT pg_notify($3, '') FROM saved`, id, string(data), s.MCPSessionChannel(id)); err != nil {
		return fmt.Errorf("save MCP session state: %w", err)
	}
	return nil
}

// EndSession removes session id.
func (s *Store) EndSession(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM mcp_sessions WHERE id = $1`, id); err != nil {
		return fmt.Errorf("end MCP session: %w", err)
	}
	return nil
}

// PruneMCPSessions deletes up to limit of the hosted MCP sessions last
// used before before (now less letagents.HostedSessionIdle, which reads
// already treat as gone), oldest first, and returns how many it deleted:
// fewer than limit means none older is left.
func (s *Store) PruneMCPSessions(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.pruneOldest(ctx, "MCP sessions", "mcp_sessions", "used_at", before, limit)
}
