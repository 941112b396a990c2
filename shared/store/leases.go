package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// leaseColumns reads a task_leases row aliased l as leaseRow names it.
const leaseColumns = `l.id, l.room_id, l.task_seq, l.kind, l.status, l.agent_key,
	coalesce(l.agent_instance_id, '') AS agent_instance_id, coalesce(l.agent_session_id, 0) AS agent_session_id, l.actor_label,
	coalesce(l.branch_ref, '') AS branch_ref, coalesce(l.pr_url, '') AS pr_url, coalesce(l.output_intent, '') AS output_intent,
	l.expires_at, coalesce(l.ttl_seconds, 0) AS ttl_seconds, l.last_heartbeat_at, coalesce(l.revoked_reason, '') AS revoked_reason,
	l.created_by, l.created_at, l.updated_at`

// leaseRow scans leaseColumns: a lease by its db tags, and the two
// columns whose Go form differs (a null expiry, the time to live in
// seconds).
type leaseRow struct {
	letagents.Lease
	ExpiresAtOrNever *time.Time `db:"expires_at"`
	TTLSeconds       int64      `db:"ttl_seconds"`
}

func (r leaseRow) lease() letagents.Lease {
	l := r.Lease
	l.ExpiresAt, l.TTL = deref(r.ExpiresAtOrNever), time.Duration(r.TTLSeconds)*time.Second
	return l
}

// queryLease runs sql on q and scans its one row, leaseColumns, as a
// lease; pgx.ErrNoRows when there is none.
func queryLease(ctx context.Context, q querier, sql string, args ...any) (letagents.Lease, error) {
	r, err := queryOne[leaseRow](ctx, q, sql, args...)
	return r.lease(), err
}

// activeLeasesSQL reads the effectively active leases of some tasks as of
// $3: active and not past their expiry (a reader that did not expire them
// first still never shows an overdue lease). Work leases come first. The
// status is spelled out rather than passed, so that the planner matches the
// partial indexes on status = 'active'.
const activeLeasesSQL = `SELECT ` + leaseColumns + ` FROM task_leases l
	WHERE l.room_id = $1 AND l.task_seq = ANY($2) AND l.status = 'active' AND (l.expires_at IS NULL OR l.expires_at > $3)
	ORDER BY l.task_seq, l.kind = 'review', l.created_at, l.id`

// withLeases sets the active leases of tasks of one room (an empty list
// for none).
func withLeases(ctx context.Context, q querier, tasks []letagents.Task, now time.Time) error {
	if len(tasks) == 0 {
		return nil
	}
	seqs := make([]int64, len(tasks))
	at := make(map[int64]int, len(tasks))
	for i, t := range tasks {
		seqs[i], at[t.Seq] = t.Seq, i
		tasks[i].ActiveLeases = []letagents.Lease{}
	}
	leases, err := queryAll[leaseRow](ctx, q, activeLeasesSQL, tasks[0].RoomID, seqs, now)
	if err != nil {
		return fmt.Errorf("read leases: %w", err)
	}
	for _, l := range leases {
		t := &tasks[at[l.TaskSeq]]
		t.ActiveLeases = append(t.ActiveLeases, l.lease())
	}
	return nil
}

// leasesOf reads one task's active leases.
func leasesOf(ctx context.Context, q querier, roomID string, seq int64, now time.Time) ([]letagents.Lease, error) {
	one := []letagents.Task{{RoomID: roomID, Seq: seq, ActiveLeases: []letagents.Lease{}}}
	err := withLeases(ctx, q, one, now)
	return one[0].ActiveLeases, err
}

// randomID makes an id of prefix and 16 random bytes in hex (32 digits):
// leases' "tl_…", reasoning sessions' "rs_…" and updates' "ru_…".
func randomID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b[:])
}

// insertLease creates an active lease. The unique indexes refuse a second
// active work lease on the task, or a second active review lease of the
// same agent: those are Conflicts with the claim codes.
func insertLease(ctx context.Context, tx pgx.Tx, l letagents.Lease, now time.Time) (letagents.Lease, error) {
	var expires, ttl any
	if l.TTL > 0 {
		expires, ttl = now.Add(l.TTL), int64(l.TTL/time.Second)
	}
	out, err := queryLease(ctx, tx, `
		INSERT INTO task_leases AS l (id, room_id, task_seq, kind, status, agent_key, agent_instance_id, agent_session_id, actor_label,
			branch_ref, pr_url, output_intent, expires_at, ttl_seconds, last_heartbeat_at, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $16, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $14, $14)
		RETURNING `+leaseColumns,
		randomID(letagents.LeasePrefix), l.RoomID, l.TaskSeq, l.Kind, l.AgentKey, nullString(l.InstanceID), nullInt(l.SessionID), l.ActorLabel,
		nullString(l.BranchRef), nullString(l.PRURL), nullString(l.OutputIntent), expires, ttl, now, l.CreatedBy, letagents.LeaseActive)
	switch {
	case pgCode(err) == uniqueViolation && l.Kind == letagents.LeaseWork:
		return out, letagents.Coordination(letagents.CodeWrongActor, "%s was just claimed by another agent", letagents.TaskID(l.TaskSeq))
	case pgCode(err) == uniqueViolation:
		return out, letagents.Coordination(letagents.CodeReviewClaimed, "%s already holds a review lease on %s", l.ActorLabel, letagents.TaskID(l.TaskSeq))
	case err != nil:
		return out, fmt.Errorf("create lease: %w", err)
	}
	return out, nil
}

// endLease ends an active lease as e says: released, or revoked with a
// reason.
func endLease(ctx context.Context, tx pgx.Tx, e letagents.LeaseEnd, now time.Time) (letagents.Lease, error) {
	l, err := queryLease(ctx, tx, `
		UPDATE task_leases l SET status = $2, revoked_reason = $3, updated_at = $4
		WHERE l.id = $1 RETURNING `+leaseColumns, e.Lease.ID, e.How, nullString(e.Reason), now)
	if err != nil {
		return l, fmt.Errorf("end lease: %w", err)
	}
	return l, nil
}

// renewLease writes a holder's heartbeat: the lease's expiry moves to now
// plus its time to live, and it takes the renewal's PR URL.
func renewLease(ctx context.Context, tx pgx.Tx, r letagents.LeaseRenewal, now time.Time) error {
	var expires, seconds any
	if r.TTL > 0 {
		expires, seconds = now.Add(r.TTL), int64(r.TTL/time.Second)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE task_leases SET last_heartbeat_at = $2, updated_at = $2, expires_at = $3, ttl_seconds = $4, pr_url = $5 WHERE id = $1`,
		r.LeaseID, now, expires, seconds, nullString(r.PRURL)); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	return nil
}

// Claim is an agent taking a task, to work on it or to review it
// (letagents.Claim).
type Claim = letagents.Claim

// ClaimTask gives an accepted task to an agent, as letagents.ClaimWork
// decides: the task becomes assigned to the actor's label and key, and
// the agent gets its active work lease (none for a claim by name),
// announced with a status line, all in one transaction. Of claims racing
// for a task exactly one wins; the others are Conflicts with code
// coordination_wrong_actor (the task's row lock orders them, and the
// unique index on active work leases stands behind it).
func (s *Store) ClaimTask(ctx context.Context, roomID string, seq int64, c Claim, now time.Time) (letagents.Task, letagents.Lease, error) {
	if err := letagents.CheckClaimer(c, letagents.LeaseWork); err != nil {
		return letagents.Task{}, letagents.Lease{}, err
	}
	var t letagents.Task
	var lease letagents.Lease
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if t, lease, err = s.claim(ctx, tx, roomID, seq, c, letagents.ClaimWork, now); err != nil {
			return err
		}
		t, err = queryTask(ctx, tx, `
			UPDATE tasks t SET status = 'assigned', assignee = $3, assignee_agent_key = $4, pr_url = $5, updated_at = $6
			WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns,
			roomID, seq, c.Actor.Label, nullString(c.Actor.AgentKey), nullString(lease.PRURL), now)
		if err != nil {
			return fmt.Errorf("claim task: %w", err)
		}
		if err := s.postLine(ctx, tx, roomID, letagents.TaskStatusLine(t, primary(t.Assignee))); err != nil {
			return fmt.Errorf("claim task: %w", err)
		}
		if !c.ByName {
			t.ActiveLeases = []letagents.Lease{lease}
		}
		return s.touchTask(ctx, tx, roomID, seq)
	})
	return t, lease, err
}

// claim locks a task and creates the lease that decide (ClaimWork or
// ClaimReview) grants c on it.
func (s *Store) claim(ctx context.Context, tx pgx.Tx, roomID string, seq int64, c Claim,
	decide func(letagents.Task, letagents.Claim) (letagents.Lease, error), now time.Time) (letagents.Task, letagents.Lease, error) {
	t, err := s.lockTask(ctx, tx, roomID, seq, now)
	if err != nil {
		return t, letagents.Lease{}, err
	}
	lease, err := decide(t, c)
	if err != nil || c.ByName {
		return t, lease, err
	}
	lease, err = insertLease(ctx, tx, lease, now)
	return t, lease, err
}

// LeaseRelease asks to end a lease (letagents.LeaseRelease).
type LeaseRelease = letagents.LeaseRelease

// ReleaseWorkLease ends a task's work lease as letagents.ReleaseWork
// decides: released by its holder, or revoked by a room admin. A task in
// hand (assigned, in_progress, blocked, in_review) goes back to accepted
// with no assignee, announced with a status line.
func (s *Store) ReleaseWorkLease(ctx context.Context, roomID string, seq int64, r LeaseRelease, now time.Time) (letagents.Task, letagents.Lease, error) {
	var t letagents.Task
	var released letagents.Lease
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if t, err = s.lockTask(ctx, tx, roomID, seq, now); err != nil {
			return err
		}
		end, err := letagents.ReleaseWork(t, r)
		if err != nil {
			return err
		}
		if released, err = endLease(ctx, tx, end, now); err != nil {
			return err
		}
		if t.Status.Held() {
			if t, err = freeTask(ctx, tx, t, now); err != nil {
				return fmt.Errorf("release lease: %w", err)
			}
			if err := s.postLine(ctx, tx, roomID, letagents.TaskReleasedLine(t, primary(end.Lease.ActorLabel), end.How)); err != nil {
				return fmt.Errorf("release lease: %w", err)
			}
		}
		if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
		return s.touchTask(ctx, tx, roomID, seq)
	})
	return t, released, err
}

// Handoff passes a task's work to another agent.
type Handoff struct {
	Actor   Actor
	LeaseID string
	Reason  string
	// TargetKey is the receiving agent's canonical key; TargetSessionID
	// (or TargetInstanceID) picks its session when it has several live
	// worker sessions in the room.
	TargetKey        string
	TargetSessionID  int64
	TargetInstanceID string
}

// HandoffWorkLease passes a task in hand to another agent, as
// letagents.HandOffWork and letagents.HandoffTarget decide: the current
// work lease is released (by its holder) or revoked (by a room admin),
// the task becomes assigned to the target session's actor label and key,
// and the target gets a new work lease that keeps the branch, PR and
// time to live of the old one; a status line says so. The target must be
// a live worker session of the room that messages reach now
// (AgentSession.Reachable). NotFound for an unknown agent key.
func (s *Store) HandoffWorkLease(ctx context.Context, roomID string, seq int64, h Handoff, now time.Time) (t letagents.Task, released, next letagents.Lease, err error) {
	if strings.TrimSpace(h.TargetKey) == "" {
		return t, released, next, letagents.Errorf(letagents.Invalid, "target_actor_key is required for a handoff")
	}
	err = s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if t, err = s.lockTask(ctx, tx, roomID, seq, now); err != nil {
			return err
		}
		end, err := letagents.HandOffWork(t, letagents.LeaseRelease{Actor: h.Actor, LeaseID: h.LeaseID, Reason: h.Reason})
		if err != nil {
			return err
		}
		target, err := handoffTarget(ctx, tx, roomID, h, now)
		if err != nil {
			return err
		}
		if released, err = endLease(ctx, tx, end, now); err != nil {
			return err
		}
		work := end.Lease
		next, err = insertLease(ctx, tx, letagents.Lease{RoomID: roomID, TaskSeq: seq, Kind: letagents.LeaseWork, AgentKey: target.AgentKey,
			InstanceID: target.InstanceID, SessionID: target.ID, ActorLabel: target.ActorLabel, BranchRef: work.BranchRef, PRURL: work.PRURL,
			OutputIntent: work.OutputIntent, TTL: work.TTL, CreatedBy: h.Actor.Label}, now)
		if err != nil {
			return err
		}
		t, err = queryTask(ctx, tx, `
			UPDATE tasks t SET status = 'assigned', assignee = $3, assignee_agent_key = $4, updated_at = $5
			WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns, roomID, seq, target.ActorLabel, target.AgentKey, now)
		if err != nil {
			return fmt.Errorf("hand off lease: %w", err)
		}
		if err := s.postLine(ctx, tx, roomID, letagents.TaskHandoffLine(t, primary(work.ActorLabel), primary(target.ActorLabel))); err != nil {
			return fmt.Errorf("hand off lease: %w", err)
		}
		if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
			return fmt.Errorf("hand off lease: %w", err)
		}
		return s.touchTask(ctx, tx, roomID, seq)
	})
	return t, released, next, err
}

// handoffTarget loads the live worker sessions a handoff may go to and
// has letagents.HandoffTarget pick one.
func handoffTarget(ctx context.Context, tx pgx.Tx, roomID string, h Handoff, now time.Time) (letagents.AgentSession, error) {
	var known bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE canonical_key = $1)`, h.TargetKey).Scan(&known); err != nil {
		return letagents.AgentSession{}, fmt.Errorf("find handoff target: %w", err)
	}
	if !known {
		return letagents.AgentSession{}, letagents.Errorf(letagents.NotFound, "No agent is registered as %s", h.TargetKey)
	}
	list, err := querySessions(ctx, tx, `
		SELECT `+sessionColumns("$5")+` FROM agent_sessions s
		WHERE s.room_id = $1 AND s.agent_key = $2 AND s.session_kind = 'worker' AND s.ended_at IS NULL
			AND ($3::bigint = 0 OR s.id = $3) AND ($4 = '' OR s.agent_instance_id = $4)
		ORDER BY s.id`, roomID, h.TargetKey, h.TargetSessionID, h.TargetInstanceID, now)
	if err != nil {
		return letagents.AgentSession{}, fmt.Errorf("find handoff target: %w", err)
	}
	return letagents.HandoffTarget(h.TargetKey, h.TargetSessionID, list, now)
}

// ClaimReview gives an agent a review lease on a task, as
// letagents.ClaimReview decides. An agent reviews a task once at a time
// (Conflict coordination_review_claimed, from the unique index).
func (s *Store) ClaimReview(ctx context.Context, roomID string, seq int64, c Claim, now time.Time) (letagents.Task, letagents.Lease, error) {
	if err := letagents.CheckClaimer(c, letagents.LeaseReview); err != nil {
		return letagents.Task{}, letagents.Lease{}, err
	}
	var t letagents.Task
	var lease letagents.Lease
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if t, lease, err = s.claim(ctx, tx, roomID, seq, c, letagents.ClaimReview, now); err != nil {
			return err
		}
		if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
			return fmt.Errorf("claim review: %w", err)
		}
		return s.touchTask(ctx, tx, roomID, seq)
	})
	return t, lease, err
}

// ReleaseReview ends a review lease as letagents.ReleaseReview decides:
// the actor's own (released), or, for a room admin, the one LeaseID
// names (revoked).
func (s *Store) ReleaseReview(ctx context.Context, roomID string, seq int64, r LeaseRelease, now time.Time) (letagents.Task, letagents.Lease, error) {
	var t letagents.Task
	var released letagents.Lease
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if t, err = s.lockTask(ctx, tx, roomID, seq, now); err != nil {
			return err
		}
		end, err := letagents.ReleaseReview(t, r)
		if err != nil {
			return err
		}
		if released, err = endLease(ctx, tx, end, now); err != nil {
			return err
		}
		if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
			return fmt.Errorf("release review: %w", err)
		}
		return s.touchTask(ctx, tx, roomID, seq)
	})
	return t, released, err
}
