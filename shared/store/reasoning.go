package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// Reasoning writes are one statement each, like a message send: it takes
// the room's next reasoning change number under the room row's lock,
// writes the session (and the update it appends) stamped with it, and
// NOTIFYs the room's channel, all committing together. The number is the
// cursor of ReasoningChanges; the NOTIFY is the room's doorbell, the same
// one a message rings, so whoever waits on the room reads again.

// reasoningBell is the payload of a reasoning write's NOTIFY: listeners
// take nothing from it (a ring only says to read again); it tells a
// reasoning ring from a message's when watching the channel by hand.
const reasoningBell = "reasoning"

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

// prefixed qualifies each of columns with alias.
func prefixed(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// sessionDest is where a session's columns scan to. Every column is a
// pointer so that a row of nulls (a LEFT JOIN of nothing) scans too;
// session reports ok false then.
type sessionDest struct {
	id, room, task, anchor, actor, agent, status, summary *string
	payload                                               *letagents.ReasoningSnapshot
	seq, owner                                            *int64
	created, updated, closed                              *time.Time
}

func (d *sessionDest) dest() []any {
	return []any{&d.id, &d.room, &d.task, &d.anchor, &d.actor, &d.agent, &d.status, &d.summary, &d.payload, &d.seq,
		&d.created, &d.updated, &d.closed, &d.owner}
}

func (d *sessionDest) session() (letagents.ReasoningSession, bool) {
	if d.id == nil {
		return letagents.ReasoningSession{}, false
	}
	return letagents.ReasoningSession{ID: *d.id, RoomID: *d.room, TaskID: deref(d.task), AnchorMessageID: deref(d.anchor),
		ActorLabel: *d.actor, AgentKey: deref(d.agent), Status: deref(d.status), Summary: *d.summary, LatestPayload: *d.payload,
		ChangeSeq: *d.seq, CreatedAt: *d.created, UpdatedAt: *d.updated, ClosedAt: deref(d.closed), OwnerAccountID: deref(d.owner)}, true
}

// updateDest is where an update's columns scan to, as sessionDest's do;
// update is nil for a row of nulls.
type updateDest struct {
	id, room, session, actor, status, summary, milestone *string
	payload                                              *letagents.ReasoningSnapshot
	seq                                                  *int64
	created                                              *time.Time
}

func (d *updateDest) dest() []any {
	return []any{&d.id, &d.room, &d.session, &d.actor, &d.status, &d.summary, &d.milestone, &d.payload, &d.seq, &d.created}
}

func (d *updateDest) update() *letagents.ReasoningUpdate {
	if d.id == nil {
		return nil
	}
	return &letagents.ReasoningUpdate{ID: *d.id, RoomID: *d.room, SessionID: *d.session, ActorLabel: *d.actor, Status: deref(d.status),
		Summary: *d.summary, Milestone: deref(d.milestone), Payload: *d.payload, ChangeSeq: *d.seq, CreatedAt: *d.created}
}

// scanChange reads a session's columns followed by an update's, and any
// extra columns after them.
func scanChange(row pgx.Row, extra ...any) (letagents.ReasoningChange, error) {
	var s sessionDest
	var u updateDest
	err := row.Scan(append(append(s.dest(), u.dest()...), extra...)...)
	session, _ := s.session()
	return letagents.ReasoningChange{Session: session, Update: u.update()}, err
}

// CreateReasoningSession opens a session in a room with its first
// snapshot, which is also its first update. NotFound when the room does
// not exist.
func (s *Store) CreateReasoningSession(ctx context.Context, n NewReasoningSession, now time.Time) (letagents.ReasoningChange, error) {
	snap := n.Snapshot
	c, err := scanChange(s.pool.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_reasoning_seq = last_reasoning_seq + 1 WHERE id = $1 RETURNING last_reasoning_seq AS seq
		), session AS (
			INSERT INTO reasoning_sessions (`+reasoningSessionColumns+`)
			SELECT $2, $1, $3, $4, $5, $6, $7, $8, $9, seq, $10, $10, NULL, $15 FROM next
			RETURNING `+reasoningSessionColumns+`
		), upd AS (
			INSERT INTO reasoning_updates (`+reasoningUpdateColumns+`)
			SELECT $11, room_id, id, actor_label, status, summary, $12, latest_payload, change_seq, created_at FROM session
			RETURNING `+reasoningUpdateColumns+`
		)
		SELECT `+prefixed("s", reasoningSessionColumns)+`, `+prefixed("u", reasoningUpdateColumns)+`, pg_notify($13, $14)
		FROM session s, upd u`,
		n.RoomID, randomID(letagents.ReasoningSessionPrefix), nullString(n.TaskID), nullString(n.AnchorMessageID), n.ActorLabel,
		nullString(n.AgentKey), snap.Status.Value, snap.Summary, snap, now, randomID(letagents.ReasoningUpdatePrefix),
		snap.Milestone.Value, s.Channel(n.RoomID), reasoningBell, nullInt(n.OwnerAccountID)), nil)
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
	c, err := scanChange(s.pool.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_reasoning_seq = last_reasoning_seq + 1
			WHERE id = $1 AND EXISTS (SELECT FROM reasoning_sessions WHERE room_id = $1 AND id = $2)
			RETURNING last_reasoning_seq AS seq
		), session AS (
			UPDATE reasoning_sessions r SET status = CASE WHEN $3 THEN $4 ELSE r.status END, summary = $5,
				latest_payload = r.latest_payload || $6, updated_at = $7, change_seq = next.seq
			FROM next WHERE r.room_id = $1 AND r.id = $2
			RETURNING `+prefixed("r", reasoningSessionColumns)+`
		), upd AS (
			INSERT INTO reasoning_updates (`+reasoningUpdateColumns+`)
			SELECT $8, room_id, id, coalesce($9, actor_label), status, summary, $10, $6, change_seq, updated_at FROM session
			RETURNING `+reasoningUpdateColumns+`
		)
		SELECT `+prefixed("s", reasoningSessionColumns)+`, `+prefixed("u", reasoningUpdateColumns)+`, pg_notify($11, $12)
		FROM session s, upd u`,
		roomID, sessionID, snap.Status.Set, snap.Status.Value, snap.Summary, snap, now, randomID(letagents.ReasoningUpdatePrefix),
		nullString(actorLabel), snap.Milestone.Value, s.Channel(roomID), reasoningBell), nil)
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
	var sd sessionDest
	err := s.pool.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_reasoning_seq = last_reasoning_seq + 1
			WHERE id = $1 AND EXISTS (SELECT FROM reasoning_sessions WHERE room_id = $1 AND id = $2)
			RETURNING last_reasoning_seq AS seq
		), session AS (
			UPDATE reasoning_sessions r SET
				task_id = CASE WHEN $3 THEN $4 ELSE r.task_id END,
				anchor_message_id = CASE WHEN $5 THEN $6 ELSE r.anchor_message_id END,
				closed_at = CASE WHEN $7 THEN $8 ELSE r.closed_at END,
				updated_at = $9, change_seq = next.seq
			FROM next WHERE r.room_id = $1 AND r.id = $2
			RETURNING `+prefixed("r", reasoningSessionColumns)+`
		)
		SELECT `+reasoningSessionColumns+`, pg_notify($10, $11) FROM session`,
		roomID, sessionID, ch.TaskID.Set, ch.TaskID.Value, ch.AnchorMessageID.Set, ch.AnchorMessageID.Value,
		ch.ClosedAt.Set, ch.ClosedAt.Value, now, s.Channel(roomID), reasoningBell,
	).Scan(append(sd.dest(), nil)...)
	session, _ := sd.session() // a change of the session alone appends no update
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
		rows, err := s.pool.Query(ctx, `
			SELECT `+reasoningSessionColumns+` FROM reasoning_sessions
			WHERE room_id = $1 AND (NOT $2 OR closed_at IS NULL) AND ($3 = '' OR actor_label = $3) AND ($4 = '' OR task_id = $4)
			ORDER BY updated_at DESC, created_at DESC, change_seq DESC LIMIT $5`,
			roomID, q.OpenOnly, q.ActorLabel, q.TaskID, q.Limit)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (letagents.ReasoningSession, error) {
			var d sessionDest
			err := row.Scan(d.dest()...)
			session, _ := d.session()
			return session, err
		})
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
	var d sessionDest
	err := s.queryRow(ctx, `SELECT `+reasoningSessionColumns+` FROM reasoning_sessions WHERE room_id = $1 AND id = $2`,
		roomID, id).Scan(d.dest()...)
	session, _ := d.session()
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
		rows, err := s.pool.Query(ctx, `
			SELECT `+reasoningUpdateColumns+` FROM reasoning_updates WHERE room_id = $1 AND session_id = $2
			ORDER BY created_at, change_seq LIMIT $3`, roomID, sessionID, limit)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (letagents.ReasoningUpdate, error) {
			var d updateDest
			err := row.Scan(d.dest()...)
			if err != nil {
				return letagents.ReasoningUpdate{}, err
			}
			return *d.update(), nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read reasoning updates: %w", err)
	}
	return list, nil
}

// ReasoningChanges reads what changed in a room's reasoning after the
// change number after: each session changed since, once, as it is now,
// with the update its latest change appended (none when that change was
// to the session alone), in the order of those changes. A session that
// changed twice since after shows once, at its latest change: a trace is
// replaced in place, and its history is ReasoningUpdates'. At most limit
// changes; HasMore says more follow. Head is the room's latest change
// number, so a reader that wants only what comes next reads with after
// math.MaxInt64 and goes on from Head. NotFound when the room does not
// exist.
//
// Change numbers follow commit order within a room, so a reader that
// goes on from the last change it read never skips one.
func (s *Store) ReasoningChanges(ctx context.Context, roomID string, after int64, limit int) (letagents.ReasoningChangePage, error) {
	if limit < 1 {
		return letagents.ReasoningChangePage{}, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	return retried(ctx, s, func() (letagents.ReasoningChangePage, error) {
		var page letagents.ReasoningChangePage
		rows, err := s.pool.Query(ctx, `
			SELECT r.last_reasoning_seq, `+prefixed("s", reasoningSessionColumns)+`, `+prefixed("u", reasoningUpdateColumns)+`
			FROM rooms r
			LEFT JOIN LATERAL (
				SELECT * FROM reasoning_sessions WHERE room_id = r.id AND change_seq > $2 ORDER BY change_seq LIMIT $3
			) s ON true
			LEFT JOIN reasoning_updates u ON u.room_id = s.room_id AND u.change_seq = s.change_seq
			WHERE r.id = $1
			ORDER BY s.change_seq`, roomID, after, limit+1)
		if err != nil {
			return page, fmt.Errorf("read reasoning changes: %w", err)
		}
		defer rows.Close()
		found := false
		for rows.Next() {
			found = true
			var sd sessionDest
			var ud updateDest
			if err := rows.Scan(append(append([]any{&page.Head}, sd.dest()...), ud.dest()...)...); err != nil {
				return page, fmt.Errorf("read reasoning changes: %w", err)
			}
			// A room with no change after the cursor is one row of nulls.
			if session, ok := sd.session(); ok {
				page.Changes = append(page.Changes, letagents.ReasoningChange{Session: session, Update: ud.update()})
			}
		}
		if err := rows.Err(); err != nil {
			return page, fmt.Errorf("read reasoning changes: %w", err)
		}
		if !found {
			return page, letagents.RoomNotFound()
		}
		if len(page.Changes) > limit {
			page.Changes, page.HasMore = page.Changes[:limit], true
		}
		return page, nil
	})
}
