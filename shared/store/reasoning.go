package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// Reasoning writes are one statement each, like a message send: it logs
// the change in the room's event log (roomEvent), which rings the room's
// channel, and writes the session (and the update it appends) stamped
// with the event's number, all committing together. A reader of the log
// finds the update a change appended by that number.

// sessionExists is the condition, on a reasoning write's room row, that
// the session ($2) exists: without it nothing is written or logged.
const sessionExists = ` AND EXISTS (SELECT FROM reasoning_sessions WHERE room_id = $1 AND id = $2)`

// NewReasoningSession is a session to open with its first snapshot.
type NewReasoningSession struct {
	RoomID          string
	TaskID          string // "" for none
	AnchorMessageID string // "" for none
	ActorLabel      string
	AgentKey        string // "" for none
	Snapshot        letagents.ReasoningSnapshot
	// OwnerAccountID is the account opening the session, which alone
	// may change it (letagents.MayChange); 0 for nobody signed in.
	OwnerAccountID int64
}

// ReasoningQuery selects sessions of a room.
type ReasoningQuery struct {
	Limit      int
	OpenOnly   bool   // only sessions not closed
	ActorLabel string // only this actor's, when set
	TaskID     string // only this task's, when set
}

const (
	reasoningSessionColumns = `id, room_id, task_id, anchor_message_id, actor_label, agent_key, status, summary, latest_payload,
		change_seq, created_at, updated_at, closed_at, owner_account_id`
	reasoningUpdateColumns = `id, room_id, session_id, actor_label, status, summary, milestone, payload, change_seq, created_at`
)

// aliased reads columns (a list as reasoningSessionColumns is) from the
// relation alias, each named as plus its own name, so that a session's
// columns and its update's can share a row.
func aliased(alias, as, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		c = strings.TrimSpace(c)
		cols[i] = alias + "." + c + " AS " + as + c
	}
	return strings.Join(cols, ", ")
}

// sessionSelect and updateSelect read a session aliased alias and an
// update as reasoningSessionRow and reasoningUpdateRow name them.
func sessionSelect(alias string) string { return aliased(alias, "rs_", reasoningSessionColumns) }
func updateSelect(alias string) string  { return aliased(alias, "ru_", reasoningUpdateColumns) }

// reasoningSessionRow scans sessionSelect. Every column is a pointer so
// that a row of nulls (a LEFT JOIN of nothing) scans too; session reports
// ok false then.
type reasoningSessionRow struct {
	ID              *string                      `db:"rs_id"`
	RoomID          *string                      `db:"rs_room_id"`
	TaskID          *string                      `db:"rs_task_id"`
	AnchorMessageID *string                      `db:"rs_anchor_message_id"`
	ActorLabel      *string                      `db:"rs_actor_label"`
	AgentKey        *string                      `db:"rs_agent_key"`
	Status          *string                      `db:"rs_status"`
	Summary         *string                      `db:"rs_summary"`
	LatestPayload   *letagents.ReasoningSnapshot `db:"rs_latest_payload"`
	ChangeSeq       *int64                       `db:"rs_change_seq"`
	CreatedAt       *time.Time                   `db:"rs_created_at"`
	UpdatedAt       *time.Time                   `db:"rs_updated_at"`
	ClosedAt        *time.Time                   `db:"rs_closed_at"`
	OwnerAccountID  *int64                       `db:"rs_owner_account_id"`
}

func (d *reasoningSessionRow) session() (letagents.ReasoningSession, bool) {
	if d.ID == nil {
		return letagents.ReasoningSession{}, false
	}
	return letagents.ReasoningSession{ID: *d.ID, RoomID: *d.RoomID, TaskID: deref(d.TaskID), AnchorMessageID: deref(d.AnchorMessageID),
		ActorLabel: *d.ActorLabel, AgentKey: deref(d.AgentKey), Status: deref(d.Status), Summary: *d.Summary,
		LatestPayload: *d.LatestPayload, ChangeSeq: *d.ChangeSeq, CreatedAt: *d.CreatedAt, UpdatedAt: *d.UpdatedAt,
		ClosedAt: deref(d.ClosedAt), OwnerAccountID: deref(d.OwnerAccountID)}, true
}

// reasoningUpdateRow scans updateSelect, as reasoningSessionRow does;
// update is nil for a row of nulls.
type reasoningUpdateRow struct {
	ID         *string                      `db:"ru_id"`
	RoomID     *string                      `db:"ru_room_id"`
	SessionID  *string                      `db:"ru_session_id"`
	ActorLabel *string                      `db:"ru_actor_label"`
	Status     *string                      `db:"ru_status"`
	Summary    *string                      `db:"ru_summary"`
	Milestone  *string                      `db:"ru_milestone"`
	Payload    *letagents.ReasoningSnapshot `db:"ru_payload"`
	ChangeSeq  *int64                       `db:"ru_change_seq"`
	CreatedAt  *time.Time                   `db:"ru_created_at"`
}

func (d *reasoningUpdateRow) update() *letagents.ReasoningUpdate {
	if d.ID == nil {
		return nil
	}
	return &letagents.ReasoningUpdate{ID: *d.ID, RoomID: *d.RoomID, SessionID: *d.SessionID, ActorLabel: *d.ActorLabel,
		Status: deref(d.Status), Summary: *d.Summary, Milestone: deref(d.Milestone), Payload: *d.Payload, ChangeSeq: *d.ChangeSeq,
		CreatedAt: *d.CreatedAt}
}

// reasoningChangeRow scans a session's columns beside an update's.
type reasoningChangeRow struct {
	reasoningSessionRow
	reasoningUpdateRow
}

func (r *reasoningChangeRow) change() letagents.ReasoningChange {
	session, _ := r.session()
	return letagents.ReasoningChange{Session: session, Update: r.update()}
}

// CreateReasoningSession opens a session in a room with its first
// snapshot, which is also its first update. NotFound when the room does
// not exist.
func (s *Store) CreateReasoningSession(ctx context.Context, n NewReasoningSession, now time.Time) (letagents.ReasoningChange, error) {
	snap := n.Snapshot
	row, err := queryOne[reasoningChangeRow](ctx, s.pool, `
		WITH `+roomEvent{kind: letagents.EventReasoning, room: "$1", channel: "$13", refID: "$2"}.with()+`,
		session AS (
			INSERT INTO reasoning_sessions (`+reasoningSessionColumns+`)
			SELECT $2, $1, $3, $4, $5, $6, $7, $8, $9, last_event, $10, $10, NULL, $14 FROM next
			RETURNING `+reasoningSessionColumns+`
		), upd AS (
			INSERT INTO reasoning_updates (`+reasoningUpdateColumns+`)
			SELECT $11, room_id, id, actor_label, status, summary, $12, latest_payload, change_seq, created_at FROM session
			RETURNING `+reasoningUpdateColumns+`
		)
		SELECT `+sessionSelect("s")+`, `+updateSelect("u")+`
		FROM session s, upd u`,
		n.RoomID, randomID(letagents.ReasoningSessionPrefix), nullString(n.TaskID), nullString(n.AnchorMessageID), n.ActorLabel,
		nullString(n.AgentKey), snap.Status.Value, snap.Summary, snap, now, randomID(letagents.ReasoningUpdatePrefix),
		snap.Milestone.Value, s.RoomChannel(n.RoomID), nullInt(n.OwnerAccountID))
	c := row.change()
	switch {
	case isNoRows(err):
		return c, letagents.RoomNotFound()
	case err != nil:
		return c, fmt.Errorf("create reasoning session: %w", err)
	}
	return c, nil
}

// AddReasoningUpdate appends a snapshot to a session and merges it into
// the session's latest payload: the fields the snapshot has replace the
// session's, its status (when it has one) becomes the session's, and its
// summary always does. actorLabel is who wrote it, "" for the session's
// actor. A closed session takes updates and stays closed. NotFound when
// the room or the session does not exist.
func (s *Store) AddReasoningUpdate(ctx context.Context, roomID, sessionID, actorLabel string, snap letagents.ReasoningSnapshot,
	now time.Time) (letagents.ReasoningChange, error) {
	row, err := queryOne[reasoningChangeRow](ctx, s.pool, `
		WITH `+roomEvent{kind: letagents.EventReasoning, room: "$1", channel: "$11", refID: "$2", where: sessionExists}.with()+`,
		session AS (
			UPDATE reasoning_sessions r SET status = CASE WHEN $3 THEN $4 ELSE r.status END, summary = $5,
				latest_payload = r.latest_payload || $6, updated_at = $7, change_seq = next.last_event
			FROM next WHERE r.room_id = $1 AND r.id = $2
			RETURNING r.*
		), upd AS (
			INSERT INTO reasoning_updates (`+reasoningUpdateColumns+`)
			SELECT $8, room_id, id, coalesce($9, actor_label), status, summary, $10, $6, change_seq, updated_at FROM session
			RETURNING `+reasoningUpdateColumns+`
		)
		SELECT `+sessionSelect("s")+`, `+updateSelect("u")+`
		FROM session s, upd u`,
		roomID, sessionID, snap.Status.Set, snap.Status.Value, snap.Summary, snap, now, randomID(letagents.ReasoningUpdatePrefix),
		nullString(actorLabel), snap.Milestone.Value, s.RoomChannel(roomID))
	c := row.change()
	switch {
	case isNoRows(err):
		return c, s.reasoningNotFound(ctx, roomID)
	case err != nil:
		return c, fmt.Errorf("add reasoning update: %w", err)
	}
	return c, nil
}

// ChangeReasoningSession changes a session's task, anchor or closing
// time. NotFound when the room or the session does not exist.
func (s *Store) ChangeReasoningSession(ctx context.Context, roomID, sessionID string, ch letagents.ReasoningSessionChange,
	now time.Time) (letagents.ReasoningChange, error) {
	row, err := queryOne[reasoningSessionRow](ctx, s.pool, `
		WITH `+roomEvent{kind: letagents.EventReasoning, room: "$1", channel: "$10", refID: "$2", where: sessionExists}.with()+`,
		session AS (
			UPDATE reasoning_sessions r SET
				task_id = CASE WHEN $3 THEN $4 ELSE r.task_id END,
				anchor_message_id = CASE WHEN $5 THEN $6 ELSE r.anchor_message_id END,
				closed_at = CASE WHEN $7 THEN $8 ELSE r.closed_at END,
				updated_at = $9, change_seq = next.last_event
			FROM next WHERE r.room_id = $1 AND r.id = $2
			RETURNING r.*
		)
		SELECT `+sessionSelect("s")+` FROM session s`,
		roomID, sessionID, ch.TaskID.Set, ch.TaskID.Value, ch.AnchorMessageID.Set, ch.AnchorMessageID.Value,
		ch.ClosedAt.Set, ch.ClosedAt.Value, now, s.RoomChannel(roomID))
	session, _ := row.session() // a change of the session alone appends no update
	c := letagents.ReasoningChange{Session: session}
	switch {
	case isNoRows(err):
		return c, s.reasoningNotFound(ctx, roomID)
	case err != nil:
		return c, fmt.Errorf("change reasoning session: %w", err)
	}
	return c, nil
}

// reasoningNotFound says which of a room and its session a write did not
// find.
func (s *Store) reasoningNotFound(ctx context.Context, roomID string) error {
	if _, err := s.Room(ctx, roomID); err != nil {
		return err
	}
	return letagents.Errorf(letagents.NotFound, "Reasoning session not found")
}

// ReasoningSessions lists a room's sessions as q selects them, the most
// recently updated first. NotFound when the room does not exist.
func (s *Store) ReasoningSessions(ctx context.Context, roomID string, q ReasoningQuery) ([]letagents.ReasoningSession, error) {
	list, err := retried(ctx, s, func() ([]letagents.ReasoningSession, error) {
		rows, err := queryAll[reasoningSessionRow](ctx, s.pool, `
			SELECT `+sessionSelect("s")+` FROM reasoning_sessions s
			WHERE s.room_id = $1 AND (NOT $2 OR s.closed_at IS NULL) AND ($3 = '' OR s.actor_label = $3) AND ($4 = '' OR s.task_id = $4)
			ORDER BY s.updated_at DESC, s.created_at DESC, s.change_seq DESC LIMIT $5`,
			roomID, q.OpenOnly, q.ActorLabel, q.TaskID, q.Limit)
		if err != nil {
			return nil, err
		}
		list := make([]letagents.ReasoningSession, len(rows))
		for i := range rows {
			list[i], _ = rows[i].session()
		}
		return list, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list reasoning sessions: %w", err)
	}
	if len(list) == 0 {
		// Tell an empty room from a missing one.
		if _, err := s.Room(ctx, roomID); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// ReasoningSession reads one session of a room. NotFound when the room or
// the session does not exist.
func (s *Store) ReasoningSession(ctx context.Context, roomID, id string) (letagents.ReasoningSession, error) {
	row, err := retried(ctx, s, func() (reasoningSessionRow, error) {
		return queryOne[reasoningSessionRow](ctx, s.pool, `SELECT `+sessionSelect("s")+` FROM reasoning_sessions s
			WHERE s.room_id = $1 AND s.id = $2`, roomID, id)
	})
	session, _ := row.session()
	switch {
	case isNoRows(err):
		return session, s.reasoningNotFound(ctx, roomID)
	case err != nil:
		return session, fmt.Errorf("read reasoning session: %w", err)
	}
	return session, nil
}

// ReasoningUpdates reads the first limit updates of a session, oldest
// first (as the original does: a longer trace's newest updates are left
// out).
func (s *Store) ReasoningUpdates(ctx context.Context, roomID, sessionID string, limit int) ([]letagents.ReasoningUpdate, error) {
	list, err := retried(ctx, s, func() ([]letagents.ReasoningUpdate, error) {
		rows, err := queryAll[reasoningUpdateRow](ctx, s.pool, `
			SELECT `+updateSelect("u")+` FROM reasoning_updates u WHERE u.room_id = $1 AND u.session_id = $2
			ORDER BY u.created_at, u.change_seq LIMIT $3`, roomID, sessionID, limit)
		if err != nil {
			return nil, err
		}
		list := make([]letagents.ReasoningUpdate, len(rows))
		for i := range rows {
			list[i] = *rows[i].update()
		}
		return list, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read reasoning updates: %w", err)
	}
	return list, nil
}
