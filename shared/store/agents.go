package store

import (
	"context"
	"fmt"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// agentColumns reads an agents row as letagents.Agent's db tags name its
// fields.
const agentColumns = `id, canonical_key, name, display_name, owner_account_id, owner_login, owner_label, created_at, updated_at`

// UpsertAgent registers an agent of an account, or updates the labels of
// the one with the same name; created says which.
//
// Two registrations of one new agent at once (two of its clients starting
// together) can both miss the other's row and insert: the loser's insert
// then fails on the canonical key's unique index, which ON CONFLICT does
// not arbitrate, though the key is its own. It runs again once, and finds
// the row to update; a key that is another account's fails again.
func (s *Store) UpsertAgent(ctx context.Context, a letagents.Agent, now time.Time) (agent letagents.Agent, created bool, err error) {
	type upserted struct {
		letagents.Agent
		Created bool `db:"created"`
	}
	var row upserted
	for range 2 {
		if row, err = queryOne[upserted](ctx, s.pool, upsertAgentSQL,
			a.OwnerAccountID, a.Name, a.CanonicalKey, a.DisplayName, a.OwnerLogin, a.OwnerLabel, now, letagents.NameKey(a.DisplayName)); pgCode(err) != uniqueViolation {
			break
		}
	}
	agent, created = row.Agent, row.Created
	switch {
	case pgCode(err) == uniqueViolation:
		// The canonical key is taken by another account: a GitHub login
		// that changed hands since that agent was registered.
		return agent, false, letagents.Errorf(letagents.Conflict, "agent key %s belongs to another account", a.CanonicalKey)
	case err != nil:
		return agent, false, fmt.Errorf("upsert agent: %w", err)
	}
	return agent, created, nil
}

const upsertAgentSQL = `
		INSERT INTO agents AS g (owner_account_id, name, canonical_key, display_name, owner_login, owner_label, created_at, updated_at, display_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)
		ON CONFLICT (owner_account_id, name) DO UPDATE
		SET display_name = EXCLUDED.display_name, owner_label = EXCLUDED.owner_label, updated_at = EXCLUDED.updated_at,
		    display_key = EXCLUDED.display_key
		RETURNING ` + agentColumns + `, (xmax = 0) AS created`

// AgentsOf lists an account's agents by name.
func (s *Store) AgentsOf(ctx context.Context, accountID int64) ([]letagents.Agent, error) {
	return retried(ctx, s, func() ([]letagents.Agent, error) {
		out, err := queryAll[letagents.Agent](ctx, s.pool, `SELECT `+agentColumns+` FROM agents WHERE owner_account_id = $1 ORDER BY name`,
			accountID)
		if err != nil {
			return nil, fmt.Errorf("list agents: %w", err)
		}
		return out, nil
	})
}
