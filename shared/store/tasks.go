package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/letagents"
)

// The task board: tasks numbered per room, their status moving along the
// transition table, and leases (leases.go) saying who works on or reviews
// each. Every method that changes a task locks its row first (SELECT …
// FOR UPDATE), so changes to one task take turns; leases come next and
// the room's row (numbering the status line) last, in that order
// everywhere, so two changes never wait on each other in a circle. Every
// time is the caller's now, never the database's clock, so expiry follows
// whatever clock the caller runs on.

// Actor is who acts on the board, as the API verified them: an agent
// through its worker session, or a person.
type Actor struct {
	Label      string // an agent's actor label, or a person's name
	AgentKey   string // the agent's canonical key; "" for a person
	InstanceID string // the agent instance, "" when it named none
	SessionID  int64  // the agent session, 0 for a person
	// Admin: the signed-in account behind the request administers the room.
	Admin bool
}

func (a Actor) agent() bool { return a.AgentKey != "" }

// holds reports whether the actor holds lease l: the same agent, and the
// same instance when the lease recorded one.
func (a Actor) holds(l letagents.Lease) bool {
	return a.agent() && l.AgentKey == a.AgentKey && (l.InstanceID == "" || l.InstanceID == a.InstanceID)
}

// boardQuerier runs statements: the pool, or a transaction.
type boardQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const taskColumns = `t.room_id, t.seq, t.title, coalesce(t.description, ''), t.status, coalesce(t.assignee, ''),
	coalesce(t.assignee_agent_key, ''), t.created_by, coalesce(t.created_by_account_id, 0), coalesce(t.created_by_session_id, 0),
	coalesce(t.source_message_id, ''), coalesce(t.pr_url, ''), t.created_at, t.updated_at`

func scanTask(row pgx.Row) (letagents.Task, error) {
	var t letagents.Task
	err := row.Scan(&t.RoomID, &t.Seq, &t.Title, &t.Description, &t.Status, &t.Assignee, &t.AssigneeAgentKey, &t.CreatedBy,
		&t.CreatedByAccountID, &t.CreatedBySessionID, &t.SourceMessageID, &t.PRURL, &t.CreatedAt, &t.UpdatedAt)
	t.ActiveLeases = []letagents.Lease{}
	return t, err
}

// NewTask is a task to add to a room's board.
type NewTask struct {
	RoomID          string
	Title           string
	Description     string
	SourceMessageID string // "msg_N", "" for none
	CreatedBy       string // the creator's label
	// CreatedByAccountID and CreatedBySessionID are the account and agent
	// session the server verified, 0 for none.
	CreatedByAccountID int64
	CreatedBySessionID int64
	// Accepted puts the task straight on the open board; otherwise it is
	// proposed, waiting for a room admin. The API decides (see createTask).
	Accepted bool
}

func (n NewTask) validate() error {
	if _, err := letagents.TaskTitle(n.Title); err != nil {
		return err
	}
	if _, err := letagents.TaskDescription(n.Description); err != nil {
		return err
	}
	if strings.TrimSpace(n.CreatedBy) == "" || len(n.CreatedBy) > letagents.MaxSenderBytes || strings.ContainsRune(n.CreatedBy, 0) {
		return letagents.Errorf(letagents.Invalid, "created_by must be a label of 1 to %d bytes", letagents.MaxSenderBytes)
	}
	return nil
}

// CreateTask adds a task to a room's board under the room's next task
// number, proposed or (n.Accepted) accepted; an accepted task is announced
// with a status line in the same transaction. NotFound when the room does
// not exist.
func (s *Store) CreateTask(ctx context.Context, n NewTask, now time.Time) (letagents.Task, error) {
	if err := n.validate(); err != nil {
		return letagents.Task{}, err
	}
	status := letagents.TaskProposed
	if n.Accepted {
		status = letagents.TaskAccepted
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Task{}, fmt.Errorf("create task: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := scanTask(tx.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_task_seq = last_task_seq + 1 WHERE id = $1 RETURNING id, last_task_seq
		)
		INSERT INTO tasks AS t (room_id, seq, title, description, status, created_by, created_by_account_id, created_by_session_id,
			source_message_id, created_at, updated_at)
		SELECT id, last_task_seq, $2, $3, $4, $5, $6, $7, $8, $9, $9 FROM next
		RETURNING `+taskColumns,
		n.RoomID, strings.TrimSpace(n.Title), nullString(strings.TrimSpace(n.Description)), status, n.CreatedBy,
		nullInt(n.CreatedByAccountID), nullInt(n.CreatedBySessionID), nullString(n.SourceMessageID), now))
	switch {
	case isNoRows(err):
		return t, letagents.Errorf(letagents.NotFound, "Room not found")
	case err != nil:
		return t, fmt.Errorf("create task: %w", err)
	}
	if n.Accepted {
		if err := s.postLine(ctx, tx, t.RoomID, letagents.TaskStatusLine(t, "")); err != nil {
			return t, fmt.Errorf("create task: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return t, fmt.Errorf("create task: commit: %w", err)
	}
	return t, nil
}

// TaskQuery selects a page of a room's board, by task number.
type TaskQuery struct {
	Status letagents.TaskStatus // only tasks in this status; "" for any
	Open   bool                 // only open tasks (not done or cancelled)
	After  int64                // tasks numbered after this
	Limit  int
}

// Tasks reads one page of a room's board, oldest task first, each with its
// active leases. Overdue leases of the room expire first.
func (s *Store) Tasks(ctx context.Context, roomID string, q TaskQuery, now time.Time) (letagents.TaskPage, error) {
	return retried(ctx, s, func() (letagents.TaskPage, error) {
		page := letagents.TaskPage{Tasks: []letagents.Task{}}
		if q.Limit < 1 || q.Limit > letagents.MaxTaskPage {
			return page, letagents.Errorf(letagents.Invalid, "limit must be between 1 and %d", letagents.MaxTaskPage)
		}
		if err := s.expireOverdue(ctx, roomID, 0, now); err != nil {
			return page, err
		}
		rows, err := s.pool.Query(ctx, `
			SELECT `+taskColumns+` FROM tasks t
			WHERE t.room_id = $1 AND t.seq > $2 AND ($3 = '' OR t.status = $3) AND (NOT $4 OR t.status NOT IN ('done', 'cancelled'))
			ORDER BY t.seq LIMIT $5`, roomID, q.After, string(q.Status), q.Open, q.Limit+1)
		if err != nil {
			return page, fmt.Errorf("list tasks: %w", err)
		}
		tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (letagents.Task, error) { return scanTask(row) })
		if err != nil {
			return page, fmt.Errorf("list tasks: %w", err)
		}
		if len(tasks) == 0 {
			if _, err := s.Room(ctx, roomID); err != nil {
				return page, err
			}
			return page, nil
		}
		if len(tasks) > q.Limit {
			tasks, page.HasMore = tasks[:q.Limit], true
		}
		if err := withLeases(ctx, s.pool, tasks, now); err != nil {
			return page, fmt.Errorf("list tasks: %w", err)
		}
		page.Tasks = tasks
		return page, nil
	})
}

// Task reads one task with its active leases, its overdue leases expired
// first. NotFound when the room or the task does not exist.
func (s *Store) Task(ctx context.Context, roomID string, seq int64, now time.Time) (letagents.Task, error) {
	return retried(ctx, s, func() (letagents.Task, error) {
		if err := s.expireOverdue(ctx, roomID, seq, now); err != nil {
			return letagents.Task{}, err
		}
		t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.room_id = $1 AND t.seq = $2`, roomID, seq))
		switch {
		case isNoRows(err):
			return t, s.taskNotFound(ctx, s.pool, roomID)
		case err != nil:
			return t, fmt.Errorf("read task: %w", err)
		}
		one := []letagents.Task{t}
		if err := withLeases(ctx, s.pool, one, now); err != nil {
			return t, fmt.Errorf("read task: %w", err)
		}
		return one[0], nil
	})
}

// taskNotFound tells a missing room from a missing task.
func (s *Store) taskNotFound(ctx context.Context, q boardQuerier, roomID string) error {
	var room bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rooms WHERE id = $1)`, roomID).Scan(&room); err != nil {
		return fmt.Errorf("read room: %w", err)
	}
	if !room {
		return letagents.Errorf(letagents.NotFound, "Room not found")
	}
	return letagents.Errorf(letagents.NotFound, "Task not found")
}

// TaskChange is a change to a task other than a claim.
type TaskChange struct {
	Status letagents.TaskStatus // the status to move to; "" keeps it
	// Assignee and AssigneeAgentKey may only repeat what the task has (or
	// be empty when the change reopens it): a task changes hands through a
	// claim or a lease handoff, never by editing its assignee.
	Assignee, AssigneeAgentKey *string
	PRURL                      *string       // "" clears it
	LeaseTTL                   time.Duration // >0: the holder's work lease now lives this long past each heartbeat
	Actor                      Actor
}

// UpdateTask changes a task, in one transaction under the task's lock:
//
//   - a status change must be in the transition table (Invalid otherwise)
//     and is announced with a status line; done, cancelled and accepted
//     end the task's active leases (accepted also clears the assignee);
//   - once the task has an active work lease, an agent other than its
//     holder may not change it (Conflict coordination_not_lease_holder),
//     except a reviewer holding an active review lease, who may change
//     the status only (coordination_review_decision_only otherwise), and
//     a room admin's agent moving it to an admin-only status;
//   - merged needs an active review lease of an agent other than the work
//     holder (coordination_board_review_required);
//   - a change by the holder is a heartbeat: it renews its lease's expiry.
//
// Who may ask for which status (admins for admin-only ones) is the API's
// to check; a claim (status assigned) is ClaimTask.
func (s *Store) UpdateTask(ctx context.Context, roomID string, seq int64, c TaskChange, now time.Time) (letagents.Task, error) {
	if c.Status == letagents.TaskAssigned {
		return letagents.Task{}, letagents.Errorf(letagents.Invalid, "status assigned is a claim: claim the task with the claiming agent's session")
	}
	if c.Status != "" && !c.Status.Valid() {
		_, err := letagents.ParseTaskStatus(string(c.Status))
		return letagents.Task{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return letagents.Task{}, fmt.Errorf("update task: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := s.lockTask(ctx, tx, roomID, seq, now)
	if err != nil {
		return t, err
	}
	moving := c.Status != "" && c.Status != t.Status
	if moving {
		if err := letagents.CheckTransition(t.Status, c.Status); err != nil {
			return t, err
		}
	}
	reopening := moving && c.Status == letagents.TaskAccepted
	for _, f := range []struct {
		name      string
		give, has *string
	}{{"assignee", c.Assignee, &t.Assignee}, {"assignee_agent_key", c.AssigneeAgentKey, &t.AssigneeAgentKey}} {
		if f.give != nil && *f.give != *f.has && !(reopening && *f.give == "") {
			return t, letagents.Errorf(letagents.Invalid,
				"%s cannot be edited: an agent takes a task by claiming it (status assigned), and a held task changes hands by a lease handoff", f.name)
		}
	}
	work, held := t.WorkLease()
	holder := held && c.Actor.holds(work)
	if c.Actor.agent() && held && !holder && !(c.Actor.Admin && moving && c.Status.AdminOnly()) {
		if !holdsReview(c.Actor, t) {
			return t, letagents.Coordination(letagents.CodeNotLeaseHolder,
				"%s is held by %s: only the holder of its work lease can change it (ask them to release or hand it off)", t.ID(), work.ActorLabel)
		}
		if c.PRURL != nil || c.LeaseTTL > 0 {
			return t, letagents.Coordination(letagents.CodeReviewDecisionOnly,
				"A reviewer of %s can only change its status (request changes with blocked, or move it on)", t.ID())
		}
	}
	if c.LeaseTTL > 0 && !holder {
		return t, letagents.Errorf(letagents.Invalid, "lease_ttl_seconds renews the work lease of its holder; this caller holds none on %s", t.ID())
	}
	if moving && c.Status == letagents.TaskMerged && !reviewedByOther(t) {
		return t, letagents.Coordination(letagents.CodeReviewRequired,
			"Merging %s needs an active review lease held by an agent other than the one that did the work (claim_task_review)", t.ID())
	}

	// The leases as read under the lock: nobody else can change them
	// before this transaction ends.
	leases := t.ActiveLeases
	status, prURL := t.Status, t.PRURL
	if moving {
		status = c.Status
	}
	if c.PRURL != nil {
		prURL = *c.PRURL
	}
	t, err = scanTask(tx.QueryRow(ctx, `
		UPDATE tasks t SET status = $3, pr_url = $4, updated_at = $5,
			assignee = CASE WHEN $6 THEN NULL ELSE assignee END,
			assignee_agent_key = CASE WHEN $6 THEN NULL ELSE assignee_agent_key END
		WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns,
		roomID, seq, status, nullString(prURL), now, reopening))
	if err != nil {
		return t, fmt.Errorf("update task: %w", err)
	}
	switch {
	case moving && (status == letagents.TaskDone || status == letagents.TaskCancelled || status == letagents.TaskAccepted):
		for _, l := range leases {
			// Finishing a task ends its leases as finished work; anything
			// else taken from under their holders is a revocation.
			how, reason := letagents.LeaseReleased, ""
			if !c.Actor.holds(l) && status != letagents.TaskDone {
				how, reason = letagents.LeaseRevoked, "task moved to "+string(status)
			}
			if _, err := endLease(ctx, tx, l.ID, how, reason, now); err != nil {
				return t, fmt.Errorf("update task: %w", err)
			}
		}
	case holder:
		if err := heartbeat(ctx, tx, work, c.LeaseTTL, c.PRURL, now); err != nil {
			return t, fmt.Errorf("update task: %w", err)
		}
	case held && c.PRURL != nil:
		// An admin's edit keeps the lease's PR in step with the task's.
		if _, err := tx.Exec(ctx, `UPDATE task_leases SET pr_url = $2, updated_at = $3 WHERE id = $1`, work.ID, nullString(prURL), now); err != nil {
			return t, fmt.Errorf("update task: %w", err)
		}
	}
	if moving {
		if err := s.postLine(ctx, tx, roomID, letagents.TaskStatusLine(t, primary(t.Assignee))); err != nil {
			return t, fmt.Errorf("update task: %w", err)
		}
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
		return t, fmt.Errorf("update task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return t, fmt.Errorf("update task: commit: %w", err)
	}
	return t, nil
}

// holdsReview reports whether the actor holds an active review lease on t.
func holdsReview(a Actor, t letagents.Task) bool {
	for _, l := range t.ActiveLeases {
		if l.Kind == letagents.LeaseReview && a.holds(l) {
			return true
		}
	}
	return false
}

// reviewedByOther reports whether t has an active review lease of an
// agent other than its work holder.
func reviewedByOther(t letagents.Task) bool {
	work, held := t.WorkLease()
	for _, l := range t.ActiveLeases {
		if l.Kind == letagents.LeaseReview && (!held || l.AgentKey != work.AgentKey) {
			return true
		}
	}
	return false
}

// lockTask reads a task under FOR UPDATE, expires its overdue leases
// (putting the task back to accepted when its work lease was among them)
// and reads its active leases.
func (s *Store) lockTask(ctx context.Context, tx pgx.Tx, roomID string, seq int64, now time.Time) (letagents.Task, error) {
	t, err := scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.room_id = $1 AND t.seq = $2 FOR UPDATE`, roomID, seq))
	switch {
	case isNoRows(err):
		return t, s.taskNotFound(ctx, tx, roomID)
	case err != nil:
		return t, fmt.Errorf("lock task: %w", err)
	}
	if t, err = s.expireTask(ctx, tx, t, now); err != nil {
		return t, err
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, roomID, seq, now); err != nil {
		return t, fmt.Errorf("lock task: %w", err)
	}
	return t, nil
}

// expireTask flips the overdue active leases of a locked task to expired.
// A task whose work lease expired is free again: back to accepted, its
// assignee cleared, and the room told.
func (s *Store) expireTask(ctx context.Context, tx pgx.Tx, t letagents.Task, now time.Time) (letagents.Task, error) {
	rows, err := tx.Query(ctx, `
		UPDATE task_leases SET status = 'expired', updated_at = $3
		WHERE room_id = $1 AND task_seq = $2 AND status = 'active' AND expires_at <= $3
		RETURNING kind, actor_label`, t.RoomID, t.Seq, now)
	if err != nil {
		return t, fmt.Errorf("expire leases: %w", err)
	}
	workHolder := ""
	for rows.Next() {
		var kind, label string
		if err := rows.Scan(&kind, &label); err != nil {
			rows.Close()
			return t, fmt.Errorf("expire leases: %w", err)
		}
		if kind == letagents.LeaseWork {
			workHolder = label
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("expire leases: %w", err)
	}
	if workHolder == "" || !t.Status.Held() {
		return t, nil
	}
	t, err = freeTask(ctx, tx, t, now)
	if err != nil {
		return t, fmt.Errorf("expire leases: %w", err)
	}
	if err := s.postLine(ctx, tx, t.RoomID, letagents.TaskReleasedLine(t, primary(workHolder), letagents.LeaseExpired)); err != nil {
		return t, fmt.Errorf("expire leases: %w", err)
	}
	return t, nil
}

// freeTask puts a task back to accepted with no assignee.
func freeTask(ctx context.Context, tx pgx.Tx, t letagents.Task, now time.Time) (letagents.Task, error) {
	return scanTask(tx.QueryRow(ctx, `
		UPDATE tasks t SET status = 'accepted', assignee = NULL, assignee_agent_key = NULL, updated_at = $3
		WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns, t.RoomID, t.Seq, now))
}

// expireOverdue runs the lazy expiry for a room's tasks (seq 0) or one
// task, before a read: each task with an overdue active lease is locked
// and expired. Each task takes its own transaction: a status line holds
// the room's row until commit, and a transaction that then waited for
// another task's lock could wait on a writer waiting for that row. Rooms
// with nothing overdue cost one indexed look-up.
func (s *Store) expireOverdue(ctx context.Context, roomID string, seq int64, now time.Time) error {
	rows, err := s.pool.Query(ctx, `
		SELECT DISTINCT task_seq FROM task_leases
		WHERE room_id = $1 AND ($2::bigint = 0 OR task_seq = $2) AND status = 'active' AND expires_at <= $3
		ORDER BY task_seq`, roomID, seq, now)
	if err != nil {
		return fmt.Errorf("find overdue leases: %w", err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("find overdue leases: %w", err)
	}
	for _, n := range due {
		if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			_, err := s.lockTask(ctx, tx, roomID, n, now)
			return err
		}); err != nil {
			return fmt.Errorf("expire leases of %s: %w", letagents.TaskID(n), err)
		}
	}
	return nil
}

// postLine posts a status line of the server's to a room, inside the
// caller's transaction: it commits (and rings the room) with the change it
// announces, or not at all.
func (s *Store) postLine(ctx context.Context, tx pgx.Tx, roomID, text string) error {
	if _, err := s.sendMessage(ctx, tx, letagents.SystemMessage(roomID, text)); err != nil {
		return fmt.Errorf("post status line: %w", err)
	}
	return nil
}

// primary is the part of an actor label to name someone by.
func primary(label string) string {
	if label == "" {
		return ""
	}
	display, _, _ := actors.ParseActorLabel(label)
	return display
}
