package store

import (
	"context"
	"fmt"

	"github.com/letagents/letagents-go/shared/letagents"
)

// BranchLease is the active work lease that holds a branch of a
// repository: its id, the room and task it is on and its holder's actor
// label.
type BranchLease struct {
	ID      string `db:"id"`
	RoomID  string `db:"room_id"`
	TaskSeq int64  `db:"task_seq"`
	Holder  string `db:"actor_label"`
}

// branchLease finds the newest active work lease on branch in the repo
// room or one of its branch rooms; pgx.ErrNoRows when none holds it.
func branchLease(ctx context.Context, q querier, repoRoom, branch string) (BranchLease, error) {
	l, err := queryOne[BranchLease](ctx, q, `
		SELECT l.id, l.room_id, l.task_seq, l.actor_label FROM task_leases l JOIN rooms r ON r.id = l.room_id
		WHERE (r.id = $1 OR r.parent_room_id = $1) AND l.kind = 'work' AND l.status = 'active' AND l.branch_ref = $2
			AND (l.expires_at IS NULL OR l.expires_at > now())
		ORDER BY l.created_at DESC LIMIT 1`, repoRoom, branch)
	if err != nil && !isNoRows(err) {
		return l, fmt.Errorf("find the branch's lease: %w", err)
	}
	return l, err
}

// BranchWorkLease is the active work lease holding branch of the repo
// room's repository (in the room or one of its branch rooms); NotFound
// when none does.
func (s *Store) BranchWorkLease(ctx context.Context, repoRoom, branch string) (BranchLease, error) {
	return retried(ctx, s, func() (BranchLease, error) {
		l, err := branchLease(ctx, s.pool, repoRoom, branch)
		if isNoRows(err) {
			return l, letagents.Errorf(letagents.NotFound, "no active work lease holds branch %s", branch)
		}
		return l, err
	})
}
