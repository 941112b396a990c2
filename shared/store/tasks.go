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

// Actor is who acts on the board (letagents.Actor).
type Actor = letagents.Actor

// taskColumns reads a tasks row aliased t as letagents.Task's db tags
// name its fields.
const taskColumns = `t.room_id, t.seq, t.title, coalesce(t.description, '') AS description, t.status,
	coalesce(t.assignee, '') AS assignee, coalesce(t.assignee_agent_key, '') AS assignee_agent_key, t.created_by,
	coalesce(t.created_by_account_id, 0) AS created_by_account_id, coalesce(t.created_by_session_id, 0) AS created_by_session_id,
	coalesce(t.source_message_id, '') AS source_message_id, coalesce(t.pr_url, '') AS pr_url, t.created_at, t.updated_at`

// queryTask runs sql on q and scans its one row, taskColumns, as a task
// with no active leases yet; pgx.ErrNoRows when there is none.
func queryTask(ctx context.Context, q querier, sql string, args ...any) (letagents.Task, error) {
	t, err := queryOne[letagents.Task](ctx, q, sql, args...)
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
	var t letagents.Task
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		t, err = s.insertTask(ctx, tx, n, status, now)
		return err
	})
	return t, err
}

// insertTask adds a valid task to its room's board inside tx, announcing
// it when it is accepted.
func (s *Store) insertTask(ctx context.Context, tx pgx.Tx, n NewTask, status letagents.TaskStatus, now time.Time) (letagents.Task, error) {
	t, err := queryTask(ctx, tx, `
		WITH next AS (
			UPDATE rooms SET last_task_seq = last_task_seq + 1 WHERE id = $1 RETURNING id, last_task_seq
		)
		INSERT INTO tasks AS t (room_id, seq, title, description, status, created_by, created_by_account_id, created_by_session_id,
			source_message_id, created_at, updated_at)
		SELECT id, last_task_seq, $2, $3, $4, $5, $6, $7, $8, $9, $9 FROM next
		RETURNING `+taskColumns,
		n.RoomID, strings.TrimSpace(n.Title), nullString(strings.TrimSpace(n.Description)), status, n.CreatedBy,
		nullInt(n.CreatedByAccountID), nullInt(n.CreatedBySessionID), nullString(n.SourceMessageID), now)
	switch {
	case isNoRows(err):
		return t, letagents.RoomNotFound()
	case err != nil:
		return t, fmt.Errorf("create task: %w", err)
	}
	if status == letagents.TaskAccepted {
		if err := s.postLine(ctx, tx, t.RoomID, letagents.TaskStatusLine(t, "")); err != nil {
			return t, fmt.Errorf("create task: %w", err)
		}
	}
	return t, s.touchTask(ctx, tx, t.RoomID, t.Seq)
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
		tasks, err := queryAll[letagents.Task](ctx, s.pool, `
			SELECT `+taskColumns+` FROM tasks t
			WHERE t.room_id = $1 AND t.seq > $2 AND ($3 = '' OR t.status = $3) AND (NOT $4 OR t.status NOT IN ('done', 'cancelled'))
			ORDER BY t.seq LIMIT $5`, roomID, q.After, string(q.Status), q.Open, q.Limit+1)
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
		t, err := queryTask(ctx, s.pool, `SELECT `+taskColumns+` FROM tasks t WHERE t.room_id = $1 AND t.seq = $2`, roomID, seq)
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
func (s *Store) taskNotFound(ctx context.Context, q querier, roomID string) error {
	var room bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rooms WHERE id = $1)`, roomID).Scan(&room); err != nil {
		return fmt.Errorf("read room: %w", err)
	}
	if !room {
		return letagents.RoomNotFound()
	}
	return letagents.Errorf(letagents.NotFound, "Task not found")
}

// TaskChange is a change to a task other than a claim
// (letagents.TaskChange).
type TaskChange = letagents.TaskChange

// UpdateTask changes a task as letagents.DecideTaskUpdate decides, in one
// transaction under the task's lock: the task's row, the leases the
// change ends or renews, and a status line announcing a new status. A
// claim (status assigned) is ClaimTask.
func (s *Store) UpdateTask(ctx context.Context, roomID string, seq int64, c TaskChange, now time.Time) (letagents.Task, error) {
	if err := c.Check(); err != nil {
		return letagents.Task{}, err
	}
	var t letagents.Task
	err := s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if t, err = s.lockTask(ctx, tx, roomID, seq, now); err != nil {
			return err
		}
		// Decided on the leases as read under the lock: nobody else can
		// change them before this transaction ends.
		u, err := letagents.DecideTaskUpdate(t, c)
		if err != nil {
			return err
		}
		if t, err = s.writeTaskUpdate(ctx, tx, t, u, now); err != nil {
			return fmt.Errorf("update task: %w", err)
		}
		return nil
	})
	return t, err
}

// writeTaskUpdate writes what DecideTaskUpdate decided for the locked
// task t and returns the task as it now is.
func (s *Store) writeTaskUpdate(ctx context.Context, tx pgx.Tx, t letagents.Task, u letagents.TaskUpdate, now time.Time) (letagents.Task, error) {
	t, err := queryTask(ctx, tx, `
		UPDATE tasks t SET status = $3, pr_url = $4, updated_at = $5,
			assignee = CASE WHEN $6 THEN NULL ELSE assignee END,
			assignee_agent_key = CASE WHEN $6 THEN NULL ELSE assignee_agent_key END
		WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns,
		t.RoomID, t.Seq, u.Status, nullString(u.PRURL), now, u.ClearAssignee)
	if err != nil {
		return t, err
	}
	for _, e := range u.EndLeases {
		if _, err := endLease(ctx, tx, e, now); err != nil {
			return t, err
		}
	}
	if u.Renew != nil {
		if err := renewLease(ctx, tx, *u.Renew, now); err != nil {
			return t, err
		}
	}
	if u.PRLease != "" {
		if _, err := tx.Exec(ctx, `UPDATE task_leases SET pr_url = $2, updated_at = $3 WHERE id = $1`, u.PRLease, nullString(u.PRURL), now); err != nil {
			return t, err
		}
	}
	if u.Moved {
		if err := s.postLine(ctx, tx, t.RoomID, letagents.TaskStatusLine(t, primary(t.Assignee))); err != nil {
			return t, err
		}
	}
	if t.ActiveLeases, err = leasesOf(ctx, tx, t.RoomID, t.Seq, now); err != nil {
		return t, err
	}
	return t, s.touchTask(ctx, tx, t.RoomID, t.Seq)
}

// lockTask reads a task under FOR UPDATE, expires its overdue leases
// (putting the task back to accepted when its work lease was among them)
// and reads its active leases.
func (s *Store) lockTask(ctx context.Context, tx pgx.Tx, roomID string, seq int64, now time.Time) (letagents.Task, error) {
	t, err := queryTask(ctx, tx, `SELECT `+taskColumns+` FROM tasks t WHERE t.room_id = $1 AND t.seq = $2 FOR UPDATE`, roomID, seq)
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
	workHolder, expired := "", false
	for rows.Next() {
		expired = true
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
	if expired {
		if err := s.touchTask(ctx, tx, t.RoomID, t.Seq); err != nil {
			return t, fmt.Errorf("expire leases: %w", err)
		}
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
	return queryTask(ctx, tx, `
		UPDATE tasks t SET status = 'accepted', assignee = NULL, assignee_agent_key = NULL, updated_at = $3
		WHERE t.room_id = $1 AND t.seq = $2 RETURNING `+taskColumns, t.RoomID, t.Seq, now)
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
		if err := s.withTx(ctx, func(tx pgx.Tx) error {
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

// touchTask logs a change to a task or its leases in the room's event log
// and stamps the task with the event's number, inside the transaction that
// changed it. Every such transaction calls it, last or nearly so: it locks
// the room's row, which comes last in the order locks are taken.
func (s *Store) touchTask(ctx context.Context, tx pgx.Tx, roomID string, seq int64) error {
	if _, err := tx.Exec(ctx, `
		WITH `+roomEvent{kind: letagents.EventTask, room: "$1", channel: "$3", ref: "$2::bigint"}.with()+`
		UPDATE tasks SET change_seq = (SELECT last_event FROM next) WHERE room_id = $1 AND seq = $2`,
		roomID, seq, s.RoomChannel(roomID)); err != nil {
		return fmt.Errorf("log task change: %w", err)
	}
	return nil
}
