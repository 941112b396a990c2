package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/letagents/letagents-go/shared/letagents"
)

// The room event log (migration 0022): every change a client sees live is
// one row of room_events, numbered in the room's one sequence. Every write
// that makes such a change appends its event through roomEvent, in the
// statement (so the transaction) that makes it, and every live reader
// reads RoomEvents after its cursor.

// roomEvent is one event to append to a room's log, as SQL for the WITH
// list of the statement that makes the change (with): the relation next
// bumps the room's last_event under the room row's lock, which it holds to
// commit, so event numbers become visible in the order they are taken;
// logged appends the event numbered next.last_event and rings the room's
// channel. A statement that writes the change reads next (its id,
// last_event, and whatever else set moved), so the change and its event
// are one round trip.
//
// The ring's payload is the room's newest message number as of the event
// (its last_seq): a listener that has heard it knows every message up to
// it is committed, since the room row's lock orders the room's commits,
// so a poll whose cursor is there already can park without reading
// (notify.Subscription.Heard). A message sent in a transaction of its own
// rings with the message after its number (ringSQL, ParseRing), so a
// poll woken with its cursor just before it needs no read either; so does
// a room's one message in a statement of concurrent sends, when a waiter
// of this process listens there (sendSetSQL, WaitersFrom).
// Identical notifications of one transaction collapse into one, so a
// transaction that logs several events (a task change and its status
// line, whose send rings plainly) rings its room once unless a message
// came between them.
type roomEvent struct {
	kind    letagents.EventKind
	room    string // SQL of the room's id
	channel string // SQL of the room's channel (Store.RoomChannel)
	// set moves more of the room row in the same UPDATE, as
	// ", last_seq = last_seq + 1" does for a message; where adds to its
	// condition (" AND …"): no row, no event and no change.
	set, where string
	// ref and refID are SQL of the item the event names (a number; an
	// id), over next's columns or the statement's parameters; "" is null.
	ref, refID string
	// ringsItself leaves the ring to the statement, which rings once it
	// has what its payload carries (a message's send: ringSQL).
	ringsItself bool
}

func (e roomEvent) with() string {
	ring := `
			RETURNING pg_notify(` + e.channel + `, (SELECT last_seq FROM next)::text)`
	if e.ringsItself {
		ring = ""
	}
	return `next AS (
			UPDATE rooms SET last_event = last_event + 1` + e.set + ` WHERE id = ` + e.room + e.where + ` RETURNING *
		), logged AS (
			INSERT INTO room_events (room_id, seq, kind, ref, ref_id)
			SELECT id, last_event, '` + string(e.kind) + `', ` + orNull(e.ref) + `, ` + orNull(e.refID) + ` FROM next` + ring + `
		)`
}

// Ring is what a room's ring says: Last, the room's newest message
// number as of the ring; and, when the ring is that message's send
// (ringSQL), Event, the number of its event in the room's log, and
// Message, the message as a read of the room gave it at the commit.
type Ring struct {
	Last    int64
	Event   int64
	Message *letagents.Message
}

// ParseRing reads the payload of a room's ring; ok is false for a payload
// that is not a ring's.
func ParseRing(payload string) (r Ring, ok bool) {
	last, ok := RingLast(payload)
	if !ok {
		return Ring{}, false
	}
	_, msg, found := strings.Cut(payload, " ")
	if !found {
		return Ring{Last: last}, true
	}
	var row struct {
		messageRow
		Event int64 `json:"event"`
	}
	if err := json.Unmarshal([]byte(msg), &row); err != nil {
		return Ring{}, false
	}
	sent, ok := row.message()
	if !ok || sent.Seq != last || row.Event < 1 {
		return Ring{}, false
	}
	return Ring{Last: last, Event: row.Event, Message: &sent}, true
}

// RingLast is the room's newest message number a ring's payload names
// (Ring.Last), without reading the message it may carry: all that a poll
// coming back after its answer needs to park unread.
func RingLast(payload string) (int64, bool) {
	num, _, _ := strings.Cut(payload, " ")
	last, err := strconv.ParseInt(num, 10, 64)
	return last, err == nil
}

func orNull(sql string) string {
	if sql == "" {
		return "NULL"
	}
	return sql
}

// EventStart returns where a reader of a room's events starts when it
// resumes after the message afterSeq: just after that message's event
// (anything logged after it follows, as it now is), or at the newest
// message when afterSeq is past it; with afterSeq -1, at the end of the
// log (only what comes next). NotFound when the room does not exist.
func (s *Store) EventStart(ctx context.Context, roomID string, afterSeq int64) (letagents.EventStart, error) {
	var at letagents.EventStart
	var last int64
	var found *int64
	err := s.queryRow(ctx, `
		SELECT r.last_event, r.last_seq, (SELECT e.seq FROM room_events e
			WHERE e.room_id = r.id AND e.kind = 'message' AND e.ref <= least($2, r.last_seq) ORDER BY e.ref DESC LIMIT 1)
		FROM rooms r WHERE r.id = $1`, roomID, max(afterSeq, 0)).Scan(&last, &at.Seq, &found)
	switch {
	case isNoRows(err):
		return at, letagents.RoomNotFound()
	case err != nil:
		return at, fmt.Errorf("find where events start: %w", err)
	case afterSeq < 0:
		at.Cursor = last
	default:
		at.Seq = min(afterSeq, at.Seq)
		at.Cursor = deref(found)
	}
	return at, nil
}

// RoomEvents reads up to limit events of a room after the event cursor,
// oldest first, each with its item as it is now: a message as reads give
// it, a task with its active leases as of now, a reasoning session with
// the update its latest change appended, a room as it is named now, a
// worker session as of now (ended, or live with its open connections). A
// task, reasoning session or agent session changed more than once after
// the cursor shows once, at its latest change, as it now is. Prompt-only
// messages are left out, as reads leave them out. It only reads. NotFound
// when the room does not exist.
func (s *Store) RoomEvents(ctx context.Context, roomID string, after int64, limit int, now time.Time) (letagents.EventPage, error) {
	if limit < 1 {
		return letagents.EventPage{}, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	return retried(ctx, s, func() (letagents.EventPage, error) {
		page := letagents.EventPage{Last: after}
		// The head is read in the same snapshot as the events: every event
		// numbered up to it is visible there, so a page that holds every
		// event left may move the cursor to the head. The page comes from
		// event_page (migration 0034), which reads it in the log's key
		// order whatever the statistics say.
		//
		// A message's event comes with its message (as messagesWhere reads
		// it) in the same statement: a stream woken by a send reads once.
		// LIMIT 1 keeps the message a lookup by its key, row by row: the
		// planner cannot fold it into a join that it may hash on stale
		// statistics.
		rows, err := s.pool.Query(ctx, roomEventsSQL, roomID, after, limit+1)
		var (
			row      eventRow
			found    bool
			head     int64
			events   []eventAt
			messages = map[int64]letagents.Message{}
		)
		if err == nil {
			_, err = pgx.ForEachRow(rows, row.targets(), func() error {
				found, head = true, row.Head
				if !row.Seq.Valid { // a room with no event after the cursor is one row of nulls
					return nil
				}
				events = append(events, eventAt{seq: row.Seq.Int64, kind: letagents.EventKind(row.Kind.String), ref: row.Ref.Int64, refID: row.RefID.String})
				if m, ok := row.message(); ok && len(events) <= limit {
					messages[m.Seq] = m
				}
				return nil
			})
		}
		if err != nil {
			return page, fmt.Errorf("read room events: %w", err)
		}
		if !found {
			return page, letagents.RoomNotFound()
		}
		page.Last = max(after, head)
		if len(events) == 0 {
			return page, nil
		}
		if len(events) > limit {
			events, page.HasMore = events[:limit], true
			page.Last = events[limit-1].seq
		}
		var refs eventRefs
		for _, e := range events {
			refs.add(e.kind, e.ref, e.refID)
		}
		items, err := s.eventItems(ctx, roomID, refs, messages, now)
		if err != nil {
			return page, fmt.Errorf("read room events: %w", err)
		}
		page.Events = make([]letagents.RoomEvent, 0, len(events))
		for _, e := range events {
			ev := letagents.RoomEvent{Seq: e.seq, Kind: e.kind}
			if items.fill(&ev, e.ref, e.refID) {
				page.Events = append(page.Events, ev)
			}
		}
		return page, nil
	})
}

// roomEventsSQL reads the events of a room ($1) after $2, at most $3, with
// the room's last event; one row of nulls but that when there is none.
var roomEventsSQL = `
	SELECT r.last_event, e.seq AS event_seq, e.kind AS event_kind, e.ref AS event_ref, e.ref_id AS event_ref_id, ` + messageSelect + `
	FROM rooms r
	LEFT JOIN LATERAL event_page(r.id, $2, $3) e ON true
	LEFT JOIN LATERAL (
		SELECT * FROM messages m
		WHERE e.kind IN ('` + string(letagents.EventMessage) + `', '` + string(letagents.EventPin) + `') AND m.room_id = r.id AND m.seq = e.ref AND ` + visible + ` LIMIT 1
	) m ON true ` + messageJoins + `
	WHERE r.id = $1
	ORDER BY e.seq`

// eventRow is a row of roomEventsSQL: an event and, when it is a
// message's, its message.
type eventRow struct {
	Head  int64       `db:"last_event"`
	Seq   pgtype.Int8 `db:"event_seq"`
	Kind  pgtype.Text `db:"event_kind"`
	Ref   pgtype.Int8 `db:"event_ref"`
	RefID pgtype.Text `db:"event_ref_id"`
	messageRow
}

func (r *eventRow) targets() []any {
	return append([]any{&r.Head, &r.Seq, &r.Kind, &r.Ref, &r.RefID}, r.messageRow.targets()...)
}

// eventAt is an event as RoomEvents read it, before its item is filled.
type eventAt struct {
	seq   int64
	kind  letagents.EventKind
	ref   int64
	refID string
}

// PruneRoomEvents deletes up to limit of the oldest events other than
// messages logged before before (now less letagents.EventRetention), in
// every room, and returns how many it deleted: fewer than limit means
// none older is left. Message events are never pruned: a stream resumes
// after any message (EventStart). Deleting an event a reader has not
// reached only leaves that change out of what it replays; the log's
// numbers, and every cursor, stay as they were.
func (s *Store) PruneRoomEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, letagents.Errorf(letagents.Invalid, "limit must be at least 1")
	}
	// By ctid: a join on the key instead makes the planner scan the whole
	// log, messages and all, to delete a batch (measured: 35–47 ms for a
	// batch of 1000 in 200,000 rows, against 0.9 ms). The kind is checked
	// again so that no message's event can go, whatever the ctid found.
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM room_events WHERE kind <> 'message' AND ctid = ANY (ARRAY(
			SELECT ctid FROM room_events
			WHERE kind <> 'message' AND created_at < $1
			ORDER BY created_at LIMIT $2))`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("prune room events: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// eventRefs are the items other than messages a page of events names, by
// kind (a message comes with its event).
type eventRefs struct {
	tasks, sessions, github []int64
	reasoning               []string
	room                    bool
}

func (r *eventRefs) add(kind letagents.EventKind, ref int64, refID string) {
	switch kind {
	case letagents.EventTask:
		r.tasks = append(r.tasks, ref)
	case letagents.EventReasoning:
		r.reasoning = append(r.reasoning, refID)
	case letagents.EventRoom:
		r.room = true
	case letagents.EventPresence:
		r.sessions = append(r.sessions, ref)
	case letagents.EventGitHub:
		r.github = append(r.github, ref)
	}
}

// eventItemSet is the current state of the items of a page of events.
type eventItemSet struct {
	messages  map[int64]letagents.Message
	tasks     map[int64]letagents.Task
	reasoning map[string]letagents.ReasoningChange
	room      *letagents.Room
	sessions  map[int64]letagents.AgentSession
	github    map[int64]letagents.GitHubEvent
}

// fill sets ev's item; false when it is gone from reads (a prompt-only
// message) or of a kind this reader does not know.
func (s eventItemSet) fill(ev *letagents.RoomEvent, ref int64, refID string) bool {
	switch ev.Kind {
	case letagents.EventMessage, letagents.EventPin:
		if m, ok := s.messages[ref]; ok {
			ev.Message = &m
		}
	case letagents.EventTask:
		if t, ok := s.tasks[ref]; ok {
			ev.Task = &t
		}
	case letagents.EventReasoning:
		if c, ok := s.reasoning[refID]; ok {
			ev.Reasoning = &c
		}
	case letagents.EventRoom:
		ev.Room = s.room
	case letagents.EventPresence:
		if a, ok := s.sessions[ref]; ok {
			ev.Session = &a
		}
	case letagents.EventGitHub:
		if g, ok := s.github[ref]; ok {
			ev.GitHub = &g
		}
	}
	return ev.Message != nil || ev.Task != nil || ev.Reasoning != nil || ev.Room != nil || ev.Session != nil || ev.GitHub != nil
}

// eventItems reads the items refs names, one statement per kind present,
// beside the messages read with the events.
func (s *Store) eventItems(ctx context.Context, roomID string, refs eventRefs, messages map[int64]letagents.Message, now time.Time) (eventItemSet, error) {
	set := eventItemSet{messages: messages, tasks: map[int64]letagents.Task{},
		reasoning: map[string]letagents.ReasoningChange{}, sessions: map[int64]letagents.AgentSession{},
		github: map[int64]letagents.GitHubEvent{}}
	if len(refs.tasks) > 0 {
		tasks, err := queryAll[letagents.Task](ctx, s.pool, `SELECT `+taskColumns+` FROM tasks t WHERE t.room_id = $1 AND t.seq = ANY($2)`,
			roomID, refs.tasks)
		if err != nil {
			return set, fmt.Errorf("tasks: %w", err)
		}
		if err := withLeases(ctx, s.pool, tasks, now); err != nil {
			return set, fmt.Errorf("tasks: %w", err)
		}
		for _, t := range tasks {
			set.tasks[t.Seq] = t
		}
	}
	if len(refs.reasoning) > 0 {
		rows, err := queryAll[reasoningChangeRow](ctx, s.pool, `
			SELECT `+sessionSelect("s")+`, `+updateSelect("u")+` FROM reasoning_sessions s
			LEFT JOIN reasoning_updates u ON u.room_id = s.room_id AND u.session_id = s.id AND u.change_seq = s.change_seq
			WHERE s.room_id = $1 AND s.id = ANY($2)`, roomID, refs.reasoning)
		if err != nil {
			return set, fmt.Errorf("reasoning: %w", err)
		}
		for _, r := range rows {
			c := r.change()
			set.reasoning[c.Session.ID] = c
		}
	}
	if refs.room {
		room, err := queryOne[letagents.Room](ctx, s.pool, `SELECT `+roomColumns+` FROM rooms WHERE id = $1`, roomID)
		if err != nil {
			return set, fmt.Errorf("room: %w", err)
		}
		set.room = &room
	}
	if len(refs.sessions) > 0 {
		// Workers only: a controller never shows in the roster, so its
		// changes, which log no event, must not leak through one either.
		list, err := querySessions(ctx, s.pool, `SELECT `+sessionColumns("$3")+` FROM agent_sessions s
			WHERE s.room_id = $1 AND s.id = ANY($2) AND s.session_kind = 'worker'`, roomID, refs.sessions, now)
		if err != nil {
			return set, fmt.Errorf("sessions: %w", err)
		}
		for _, a := range list {
			set.sessions[a.ID] = a
		}
	}
	if len(refs.github) > 0 {
		// By id alone: a branch room's event names its repo room's row.
		evs, err := queryAll[letagents.GitHubEvent](ctx, s.pool, `SELECT `+githubEventColumns+` FROM github_events g WHERE g.id = ANY($1)`,
			refs.github)
		if err != nil {
			return set, fmt.Errorf("GitHub events: %w", err)
		}
		for _, g := range evs {
			set.github[g.ID] = g
		}
	}
	return set, nil
}
