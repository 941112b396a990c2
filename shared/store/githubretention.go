package store

import (
	"context"
	"fmt"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// The retention of what GitHub's webhooks left (migration 0029): the
// liveness sweeper prunes GitHub events as it prunes the room event log
// (letagents.EventRetention), and the deliveries' records once their
// events are gone and GitHub can no longer redeliver them
// (letagents.GitHubDeliveryRetention).

// PruneGitHubEvents deletes up to limit of the oldest GitHub events
// logged before before, in every room, and returns how many it deleted:
// fewer than limit means none older is left. Their entries in the rooms'
// logs go with the log's own pruning (same retention); a reader that
// reaches one first skips it, as an event whose item is gone.
func (s *Store) PruneGitHubEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	// The oldest by id, read from the primary key, then only those old
	// enough: ids follow the time they were logged (both taken in the
	// logging transaction), so this reads at most limit rows where a
	// filter on created_at, which no index holds, would scan the table.
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM github_events WHERE id = ANY (ARRAY(
			SELECT id FROM (SELECT id, created_at FROM github_events ORDER BY id LIMIT $2) oldest
			WHERE created_at < $1))`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("prune GitHub events: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// PruneGitHubDeliveries deletes up to limit of the delivery records
// received before before that no GitHub event names any more (an event
// outlives nothing of its delivery: deleting a delivery would take its
// events with it), and returns how many it deleted: fewer than limit
// means none older is left. A redelivery of one pruned is taken afresh;
// before must be at least letagents.GitHubDeliveryRetention ago, which
// is longer than GitHub redelivers.
func (s *Store) PruneGitHubDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	// No index holds received_at (migration 0029 added none): the scan
	// stops at limit rows, and reads the whole table only when nothing is
	// old enough; measured in docs/operations.md.
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM github_deliveries WHERE ctid = ANY (ARRAY(
			SELECT d.ctid FROM github_deliveries d
			WHERE d.received_at < $1 AND NOT EXISTS (SELECT FROM github_events g WHERE g.delivery_id = d.delivery_id)
			LIMIT $2))`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("prune GitHub deliveries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
