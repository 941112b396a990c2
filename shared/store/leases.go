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

const leaseColumns = `l.id, l.room_id, l.task_seq, l.kind, l.status, l.agent_key, coalesce(l.agent_instance_id, ''),
	coalesce(l.agent_session_id, 0), l.actor_label, coalesce(l.branch_ref, ''), coalesce(l.pr_url, ''), coalesce(l.output_intent, ''),
	l.expires_at, coalesce(l.ttl_seconds, 0), l.last_heartbeat_at, coalesce(l.revoked_reason, ''), l.created_by, l.created_at, l.updated_at`

func scanLease(row pgx.Row) (letagents.Lease, error) {
	var l letagents.Lease
	var expires *time.Time
	var ttl int64
	err := row.Scan(&l.ID, &l.RoomID, &l.TaskSeq, &l.Kind, &l.Status, &l.AgentKey, &l.InstanceID, &l.SessionID, &l.ActorLabel,
		&l.BranchRef, &l.PRURL, &l.OutputIntent, &expires, &ttl, &l.LastHeartbeatAt, &l.RevokedReason, &l.CreatedBy,
		&l.CreatedAt, &l.UpdatedAt)
	l.ExpiresAt, l.TTL = deref(expires), time.Duration(ttl)*time.Second
	return l, err
}

// activeLeasesSQL reads the effectively active leases of some tasks as of
// $3: active and not past their expiry (a reader that did not expire them
// first still never shows an overdue lease). Work leases come first.
const activeLeasesSQL = `SELECT ` + leaseColumns + ` FROM task_leases l
	WHERE l.room_id = $1 AND l.task_seq = ANY($2) AND l.status = 'active' AND (l.expires_at IS NULL OR l.expires_at > $3)
	ORDER BY l.task_seq, l.kind = 'review', l.created_at, l.id`

// withLeases fills in the active leases of tasks of one room.
func withLeases(ctx context.Context, q boardQuerier, tasks []letagents.Task, now time.Time) error {
	if len(tasks) == 0 {
		return nil
	}
	seqs := make([]int64, len(tasks))
	at := make(map[int64]int, len(tasks))
	for i, t := range tasks {
		seqs[i], at[t.Seq] = t.Seq, i
	}
	rows, err := q.Query(ctx, activeLeasesSQL, tasks[0].RoomID, seqs, now)
	if err != nil {
		return fmt.Errorf("read leases: %w", err)
	}
	leases, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (letagents.Lease, error) { return scanLease(row) })
	if err != nil {
		return fmt.Errorf("read leases: %w", err)
	}
	for _, l := range leases {
		t := &tasks[at[l.TaskSeq]]
		t.ActiveLeases = append(t.ActiveLeases, l)
	}
	return nil
}

// leasesOf reads one task's active leases.
func leasesOf(ctx context.Context, q boardQuerier, roomID string, seq int64, now time.Time) ([]letagents.Lease, error) {
	one := []letagents.Task{{RoomID: roomID, Seq: seq, ActiveLeases: []letagents.Lease{}}}
	err := withLeases(ctx, q, one, now)
	return one[0].ActiveLeases, err
}

// newLeaseID makes a lease id: "tl_" and 16 random bytes in hex.
func newLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return letagents.LeasePrefix + hex.EncodeToString(b[:])
}

// insertLease creates an active lease. The unique indexes refuse a second
// active work lease on the task, or a second active review lease of the
// same agent: those are Conflicts with the claim codes.
func insertLease(ctx context.Context, tx pgx.Tx, l letagents.Lease, now time.Time) (letagents.Lease, error) {
	var expires, ttl any
	if l.TTL > 0 {
		expires, ttl = now.Add(l.TTL), int64(l.TTL/time.Second)
	}
	out, err := scanLease(tx.QueryRow(ctx, `
		INSERT INTO task_leases AS l (id, room_id, task_seq, kind, status, agent_key, agent_instance_id, agent_session_id, actor_label,
			branch_ref, pr_url, output_intent, expires_at, ttl_seconds, last_heartbeat_at, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'active', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $14, $14)
		RETURNING `+leaseColumns,
		newLeaseID(), l.RoomID, l.TaskSeq, l.Kind, l.AgentKey, nullString(l.InstanceID), nullInt(l.SessionID), l.ActorLabel,
		nullString(l.BranchRef), nullString(l.PRURL), nullString(l.OutputIntent), expires, ttl, now, l.CreatedBy))
	switch {
	case pgCode(err) == uniqueViolation && l.Kind == letagents.LeaseWork:
		return out, letagents.Coordination(letagents.CodeTaskClaimed, "%s was just claimed by another agent", letagents.TaskID(l.TaskSeq))
	case pgCode(err) == uniqueViolation:
		return out, letagents.Coordination(letagents.CodeReviewClaimed, "%s already holds a review lease on %s", l.ActorLabel, letagents.TaskID(l.TaskSeq))
	case err != nil:
		return out, fmt.Errorf("create lease: %w", err)
	}
	return out, nil
}

// endLease ends an active lease: released, revoked (with a reason) or
// expired.
func endLease(ctx context.Context, tx pgx.Tx, id, status, reason string, now time.Time) (letagents.Lease, error) {
	l, err := scanLease(tx.QueryRow(ctx, `
		UPDATE task_leases l SET status = $2, revoked_reason = $3, updated_at = $4
		WHERE l.id = $1 RETURNING `+leaseColumns, id, status, nullString(reason), now))
	if err != nil {
		return l, fmt.Errorf("end lease: %w", err)
	}
	return l, nil
}

// heartbeat notes that a lease's holder is at work: its expiry moves to
// now plus its time to live (ttl, when positive, replaces that), and a
// new PR URL is copied onto it.
func heartbeat(ctx context.Context, tx pgx.Tx, l letagents.Lease, ttl time.Duration, prURL *string, now time.Time) error {
	if ttl <= 0 {
		ttl = l.TTL
	}
	var expires, seconds any
	if ttl > 0 {
		expires, seconds = now.Add(ttl), int64(ttl/time.Second)
	}
	pr := l.PRURL
	if prURL != nil {
		pr = *prURL
	}
	if _, err := tx.Exec(ctx, `
		UPDATE task_leases SET last_heartbeat_at = $2, updated_at = $2, expires_at = $3, ttl_seconds = $4, pr_url = $5 WHERE id = $1`,
		l.ID, now, expires, seconds, nullString(pr)); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	return nil
}

// Claim is an agent taking a task, to work on it or to review it.
type Claim struct {
	Actor Actor
	TTL   time.Duration // the lease's time to live; 0 never expires
	PRURL *string       // a work claim may set the task's PR URL
}

// branchRef is the branch a claimer is expected to work on by default.
func branchRef(seq int64, agentKey string) string {
	name := agentKey[strings.LastIndex(agentKey, "/")+1:]
	return fmt.Sprintf("letagents/task-%d-%s", seq, name)
}

// ClaimTask gives an accepted task to an agent: the task becomes assigned
// to the actor's label and key, and the agent gets its active work lease,
// announced with a status line, all in one transaction. Of claims racing
// for a task exactly one wins; the others are Conflicts with code
// coordination_task_claimed (the task's row lock orders them, and the
// unique index on active work leases stands behind it). A task that is
// not accepted and not held is Invalid (the transition table's answer).
func (s *Store) ClaimTask(ctx context.Context, roomID string, seq int64, c Claim, now time.Time) (letagents.Task, letagents.Lease, error) {
	var lease letagents.Lease
	if !c.Actor.agent() {
		return letagents.Task{}, lease, letagents.Errorf(letagents.Invalid, "only an agent session can claim a task")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Task{}, lease, fmt.Errorf("claim task: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := s.lockTask(ctx, tx, roomID, seq, now)
	if err != nil {
		return t, lease, err
	}
	if t.Status.Held() {
		return t, lease, letagents.Coordination(letagents.CodeTaskClaimed, "%s is already claimed by %s", t.ID(), t.Assignee)
	}
	if err := letagents.CheckTransition(t.Status, letagents.TaskAssigned); err != nil {
		if t.Status == letagents.TaskProposed {
			return t, lease, letagents.Errorf(letagents.Invalid, "%v (%s is proposed: a room admin must accept it before it can be claimed)", err, t.ID())
		}
		return t, lease, err
	}
	if work, held := t.WorkLease(); held {
		// Only an accepted task gets here, and accepting ends leases: a
		// lease left over would be a bug, but still not a second holder.
		return t, lease, letagents.Coordination(letagents.CodeTaskClaimed, "%s is already claimed by %s", t.ID(), work.ActorLabel)
	}
	prURL := t.PRURL
	if c.PRURL != nil {
		prURL = *c.PRURL
	}
	lease, err = insertLease(ctx, tx, letagents.Lease{RoomID: roomID, TaskSeq: seq, Kind: letagents.LeaseWork, AgentKey: c.Actor.AgentKey,
		InstanceID: c.Actor.InstanceID, SessionID: c.Actor.SessionID, ActorLabel: c.Actor.Label, BranchRef: branchRef(seq, c.Actor.AgentKey),
		PRURL: prURL, OutputIntent: t.Title, TTL: c.TTL, CreatedBy: c.Actor.Label}, now)
	if err != nil {
		return t, lease, err
	}
	t, err = scanTask(tx.QueryRow(ctx, `
		UPDATE tasks t SET status = 'assigned', assignee = $3, assignee_agent_key = $4, pr_url = $5, updated_at = $6
		WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns,
		roomID, seq, c.Actor.Label, c.Actor.AgentKey, nullString(prURL), now))
	if err != nil {
		return t, lease, fmt.Errorf("claim task: %w", err)
	}
	if err := s.postLine(ctx, tx, roomID, letagents.TaskStatusLine(t, primary(t.Assignee))); err != nil {
		return t, lease, fmt.Errorf("claim task: %w", err)
	}
	t.ActiveLeases = []letagents.Lease{lease}
	if err := tx.Commit(ctx); err != nil {
		return t, lease, fmt.Errorf("claim task: commit: %w", err)
	}
	return t, lease, nil
}

// LeaseRelease asks to end a lease. LeaseID, when given, must name the
// active lease meant (a stale reference is a Conflict).
type LeaseRelease struct {
	Actor   Actor
	LeaseID string
	Reason  string
}

// workLeaseFor finds a task's active work lease and how the actor may end
// it: released by its holder, revoked by a room admin.
func workLeaseFor(t letagents.Task, a Actor, leaseID string) (letagents.Lease, string, error) {
	work, held := t.WorkLease()
	switch {
	case !held:
		return work, "", letagents.Coordination(letagents.CodeMissingLease, "%s has no active work lease", t.ID())
	case leaseID != "" && leaseID != work.ID:
		return work, "", letagents.Coordination(letagents.CodeStaleLease, "lease %s is not the active work lease of %s (that is %s)", leaseID, t.ID(), work.ID)
	case a.holds(work):
		return work, letagents.LeaseReleased, nil
	case a.Admin:
		return work, letagents.LeaseRevoked, nil
	}
	return work, "", &letagents.Error{Code: letagents.Forbidden, Reason: letagents.CodeLeaseHolderRequired,
		Message: fmt.Sprintf("Only the holder of the work lease of %s (%s) or a room admin can release or hand it off", t.ID(), work.ActorLabel)}
}

// ReleaseWorkLease ends a task's work lease: released by its holder, or
// revoked by a room admin. A task in hand (assigned, in_progress, blocked,
// in_review) goes back to accepted with no assignee, announced with a
// status line. Conflicts: coordination_missing_lease when there is no
// active work lease, coordination_stale_lease_reference when LeaseID is
// not it; Forbidden for anyone else.
func (s *Store) ReleaseWorkLease(ctx context.Context, roomID string, seq int64, r LeaseRelease, now time.Time) (letagents.Task, letagents.Lease, error) {
	var released letagents.Lease
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Task{}, released, fmt.Errorf("release lease: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := s.lockTask(ctx, tx, roomID, seq, now)
	if err != nil {
		return t, released, err
	}
	work, how, err := workLeaseFor(t, r.Actor, r.LeaseID)
	if err != nil {
		return t, released, err
	}
	if released, err = endLease(ctx, tx, work.ID, how, revokedReason(how, r.Reason, "revoked by a room admin"), now); err != nil {
		return t, released, err
	}
	if t.Status.Held() {
		if t, err = freeTask(ctx, tx, t, now); err != nil {
			return t, released, fmt.Errorf("release lease: %w", err)
		}
		if err := s.postLine(ctx, tx, roomID, letagents.TaskReleasedLine(t, primary(work.ActorLabel), how)); err != nil {
			return t, released, fmt.Errorf("release lease: %w", err)
		}
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
		return t, released, fmt.Errorf("release lease: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return t, released, fmt.Errorf("release lease: commit: %w", err)
	}
	return t, released, nil
}

func revokedReason(how, reason, def string) string {
	switch {
	case how != letagents.LeaseRevoked:
		return ""
	case reason != "":
		return reason
	}
	return def
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

// HandoffWorkLease passes a task in hand to another agent: the current
// work lease is released (by its holder) or revoked (by a room admin),
// the task becomes assigned to the target session's actor label and key,
// and the target gets a new work lease that keeps the branch, PR and
// time to live of the old one; a status line says so. The target must be
// a live worker session of the room that messages reach now
// (AgentSession.Reachable). Beyond ReleaseWorkLease's refusals: NotFound
// for an unknown agent key; Conflicts coordination_invalid_task_status
// (the task is not in hand), coordination_target_session_required (no
// single live worker session of the target) and
// coordination_target_session_unreachable.
func (s *Store) HandoffWorkLease(ctx context.Context, roomID string, seq int64, h Handoff, now time.Time) (t letagents.Task, released, next letagents.Lease, err error) {
	if strings.TrimSpace(h.TargetKey) == "" {
		return t, released, next, letagents.Errorf(letagents.Invalid, "target_actor_key is required for a handoff")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return t, released, next, fmt.Errorf("hand off lease: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if t, err = s.lockTask(ctx, tx, roomID, seq, now); err != nil {
		return t, released, next, err
	}
	work, how, err := workLeaseFor(t, h.Actor, h.LeaseID)
	if err != nil {
		return t, released, next, err
	}
	if !t.Status.Held() {
		return t, released, next, letagents.Coordination(letagents.CodeInvalidTaskStatus,
			"%s is %s: only a task that is assigned, in_progress, blocked or in_review can be handed off", t.ID(), t.Status)
	}
	target, err := handoffTarget(ctx, tx, roomID, h, now)
	if err != nil {
		return t, released, next, err
	}
	if released, err = endLease(ctx, tx, work.ID, how, revokedReason(how, h.Reason, "handed off by a room admin"), now); err != nil {
		return t, released, next, err
	}
	next, err = insertLease(ctx, tx, letagents.Lease{RoomID: roomID, TaskSeq: seq, Kind: letagents.LeaseWork, AgentKey: target.AgentKey,
		InstanceID: target.InstanceID, SessionID: target.ID, ActorLabel: target.ActorLabel, BranchRef: work.BranchRef, PRURL: work.PRURL,
		OutputIntent: work.OutputIntent, TTL: work.TTL, CreatedBy: h.Actor.Label}, now)
	if err != nil {
		return t, released, next, err
	}
	t, err = scanTask(tx.QueryRow(ctx, `
		UPDATE tasks t SET status = 'assigned', assignee = $3, assignee_agent_key = $4, updated_at = $5
		WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns, roomID, seq, target.ActorLabel, target.AgentKey, now))
	if err != nil {
		return t, released, next, fmt.Errorf("hand off lease: %w", err)
	}
	if err := s.postLine(ctx, tx, roomID, letagents.TaskHandoffLine(t, primary(work.ActorLabel), primary(target.ActorLabel))); err != nil {
		return t, released, next, fmt.Errorf("hand off lease: %w", err)
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
		return t, released, next, fmt.Errorf("hand off lease: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return t, released, next, fmt.Errorf("hand off lease: commit: %w", err)
	}
	return t, released, next, nil
}

// handoffTarget picks the session a handoff goes to.
func handoffTarget(ctx context.Context, tx pgx.Tx, roomID string, h Handoff, now time.Time) (letagents.AgentSession, error) {
	var known bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE canonical_key = $1)`, h.TargetKey).Scan(&known); err != nil {
		return letagents.AgentSession{}, fmt.Errorf("find handoff target: %w", err)
	}
	if !known {
		return letagents.AgentSession{}, letagents.Errorf(letagents.NotFound, "No agent is registered as %s", h.TargetKey)
	}
	rows, err := tx.Query(ctx, `
		SELECT `+sessionColumns("$5")+` FROM agent_sessions s
		WHERE s.room_id = $1 AND s.agent_key = $2 AND s.session_kind = 'worker' AND s.ended_at IS NULL
			AND ($3::bigint = 0 OR s.id = $3) AND ($4 = '' OR s.agent_instance_id = $4)
		ORDER BY s.id`, roomID, h.TargetKey, h.TargetSessionID, h.TargetInstanceID, now)
	if err != nil {
		return letagents.AgentSession{}, fmt.Errorf("find handoff target: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (letagents.AgentSession, error) { return scanSession(row) })
	if err != nil {
		return letagents.AgentSession{}, fmt.Errorf("find handoff target: %w", err)
	}
	switch {
	case len(list) == 0 && h.TargetSessionID != 0:
		return letagents.AgentSession{}, letagents.Coordination(letagents.CodeTargetSessionRequired,
			"%s is not a live worker session of %s in this room", letagents.WireID(letagents.AgentSessionPrefix, h.TargetSessionID), h.TargetKey)
	case len(list) == 0:
		return letagents.AgentSession{}, letagents.Coordination(letagents.CodeTargetSessionRequired,
			"%s has no live worker session in this room to hand the task to", h.TargetKey)
	case len(list) > 1:
		return letagents.AgentSession{}, letagents.Coordination(letagents.CodeTargetSessionRequired,
			"%s has %d live worker sessions in this room: name one with target_agent_session_id", h.TargetKey, len(list))
	case !list[0].Reachable(now):
		return letagents.AgentSession{}, letagents.Coordination(letagents.CodeTargetUnreachable,
			"%s (%s) is not reachable now: its messages have no open delivery connection, so it would not learn of the handoff",
			list[0].ActorLabel, letagents.WireID(letagents.AgentSessionPrefix, list[0].ID))
	}
	return list[0], nil
}

// ClaimReview gives an agent a review lease on a task that is in_review
// or blocked (Conflict coordination_invalid_task_status otherwise). The
// agent holding its work lease may not review it
// (coordination_self_review), and an agent reviews a task once at a time
// (coordination_review_claimed).
func (s *Store) ClaimReview(ctx context.Context, roomID string, seq int64, c Claim, now time.Time) (letagents.Task, letagents.Lease, error) {
	var lease letagents.Lease
	if !c.Actor.agent() {
		return letagents.Task{}, lease, letagents.Errorf(letagents.Invalid, "only an agent session can review a task")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Task{}, lease, fmt.Errorf("claim review: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := s.lockTask(ctx, tx, roomID, seq, now)
	if err != nil {
		return t, lease, err
	}
	if t.Status != letagents.TaskInReview && t.Status != letagents.TaskBlocked {
		return t, lease, letagents.Coordination(letagents.CodeInvalidTaskStatus, "%s is %s: only a task in_review or blocked can be reviewed", t.ID(), t.Status)
	}
	work, held := t.WorkLease()
	if held && work.AgentKey == c.Actor.AgentKey {
		return t, lease, letagents.Coordination(letagents.CodeSelfReview, "%s holds the work lease of %s: an agent never reviews its own work", c.Actor.Label, t.ID())
	}
	lease, err = insertLease(ctx, tx, letagents.Lease{RoomID: roomID, TaskSeq: seq, Kind: letagents.LeaseReview, AgentKey: c.Actor.AgentKey,
		InstanceID: c.Actor.InstanceID, SessionID: c.Actor.SessionID, ActorLabel: c.Actor.Label, BranchRef: work.BranchRef, PRURL: t.PRURL,
		OutputIntent: "review of " + t.ID() + ": " + t.Title, TTL: c.TTL, CreatedBy: c.Actor.Label}, now)
	if err != nil {
		return t, lease, err
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
		return t, lease, fmt.Errorf("claim review: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return t, lease, fmt.Errorf("claim review: commit: %w", err)
	}
	return t, lease, nil
}

// ReleaseReview ends a review lease: the actor's own (released), or, for
// a room admin, the one LeaseID names (revoked). Conflicts:
// coordination_missing_lease when there is none to end,
// coordination_stale_lease_reference when LeaseID names no active review
// lease of the task.
func (s *Store) ReleaseReview(ctx context.Context, roomID string, seq int64, r LeaseRelease, now time.Time) (letagents.Task, letagents.Lease, error) {
	var released letagents.Lease
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Task{}, released, fmt.Errorf("release review: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := s.lockTask(ctx, tx, roomID, seq, now)
	if err != nil {
		return t, released, err
	}
	var target *letagents.Lease
	reviews := 0
	for i, l := range t.ActiveLeases {
		if l.Kind != letagents.LeaseReview {
			continue
		}
		reviews++
		if (r.LeaseID != "" && l.ID == r.LeaseID) || (r.LeaseID == "" && r.Actor.holds(l)) {
			target = &t.ActiveLeases[i]
		}
	}
	switch {
	case target == nil && r.LeaseID != "" && reviews > 0:
		return t, released, letagents.Coordination(letagents.CodeStaleLease, "lease %s is not an active review lease of %s", r.LeaseID, t.ID())
	case target == nil && r.LeaseID == "" && r.Actor.Admin && reviews > 0:
		return t, released, letagents.Errorf(letagents.Invalid, "lease_id is required to revoke another agent's review lease")
	case target == nil && r.Actor.agent():
		return t, released, letagents.Coordination(letagents.CodeMissingLease, "%s holds no active review lease on %s", r.Actor.Label, t.ID())
	case target == nil:
		return t, released, letagents.Coordination(letagents.CodeMissingLease, "%s has no active review lease to release", t.ID())
	}
	how := letagents.LeaseReleased
	if !r.Actor.holds(*target) {
		if !r.Actor.Admin {
			return t, released, &letagents.Error{Code: letagents.Forbidden, Reason: letagents.CodeLeaseHolderRequired,
				Message: fmt.Sprintf("Only the holder of review lease %s (%s) or a room admin can release it", target.ID, target.ActorLabel)}
		}
		how = letagents.LeaseRevoked
	}
	if released, err = endLease(ctx, tx, target.ID, how, revokedReason(how, r.Reason, "revoked by a room admin"), now); err != nil {
		return t, released, err
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
		return t, released, fmt.Errorf("release review: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return t, released, fmt.Errorf("release review: commit: %w", err)
	}
	return t, released, nil
}
