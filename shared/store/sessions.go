package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// sessionColumns reads an agent session as sessionRow names it, with its
// open connections as of $now (the query's parameter named by the caller).
func sessionColumns(nowParam string) string {
	return `s.id, s.room_id, s.session_kind, s.runtime, s.agent_key, s.agent_instance_id, s.owner_account_id, s.display_name,
		s.owner_label, s.ide_label, s.actor_label, s.repo_branch, s.created_at, s.updated_at, s.last_seen_at, s.ended_at,
		s.presence_status, s.presence_text, s.presence_at, s.last_disconnected_at, s.last_native_activity_at, s.unread_checked_at,
		s.native_status, s.native_method, s.native_text,
		(SELECT count(*) FROM delivery_connections c WHERE c.agent_session_id = s.id AND c.expires_at > ` + nowParam + `) AS open_connections`
}

// sessionRow scans sessionColumns. Its times that are null until they
// happen are pointers; session gathers presence and native activity into
// their own values.
type sessionRow struct {
	ID                   int64      `db:"id"`
	RoomID               string     `db:"room_id"`
	Kind                 string     `db:"session_kind"`
	Runtime              string     `db:"runtime"`
	AgentKey             string     `db:"agent_key"`
	InstanceID           string     `db:"agent_instance_id"`
	OwnerAccountID       int64      `db:"owner_account_id"`
	DisplayName          string     `db:"display_name"`
	OwnerLabel           string     `db:"owner_label"`
	IDELabel             string     `db:"ide_label"`
	ActorLabel           string     `db:"actor_label"`
	RepoBranch           string     `db:"repo_branch"`
	CreatedAt            time.Time  `db:"created_at"`
	UpdatedAt            time.Time  `db:"updated_at"`
	LastSeenAt           time.Time  `db:"last_seen_at"`
	EndedAt              *time.Time `db:"ended_at"`
	PresenceStatus       string     `db:"presence_status"`
	PresenceText         string     `db:"presence_text"`
	PresenceAt           *time.Time `db:"presence_at"`
	LastDisconnectedAt   *time.Time `db:"last_disconnected_at"`
	LastNativeActivityAt *time.Time `db:"last_native_activity_at"`
	LastHookAt           *time.Time `db:"unread_checked_at"`
	NativeStatus         string     `db:"native_status"`
	NativeMethod         string     `db:"native_method"`
	NativeText           string     `db:"native_text"`
	OpenConnections      int        `db:"open_connections"`
}

func (r sessionRow) session() letagents.AgentSession {
	native := deref(r.LastNativeActivityAt)
	return letagents.AgentSession{ID: r.ID, RoomID: r.RoomID, Kind: r.Kind, Runtime: r.Runtime, AgentKey: r.AgentKey,
		InstanceID: r.InstanceID, OwnerAccountID: r.OwnerAccountID, DisplayName: r.DisplayName, OwnerLabel: r.OwnerLabel,
		IDELabel: r.IDELabel, ActorLabel: r.ActorLabel, RepoBranch: r.RepoBranch, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		LastSeenAt: r.LastSeenAt, EndedAt: deref(r.EndedAt),
		Presence:           letagents.Presence{Status: r.PresenceStatus, Text: r.PresenceText, UpdatedAt: deref(r.PresenceAt)},
		LastDisconnectedAt: deref(r.LastDisconnectedAt), LastNativeActivityAt: native,
		Native:          letagents.NativeActivity{At: native, Status: r.NativeStatus, Method: r.NativeMethod, Text: r.NativeText},
		OpenConnections: r.OpenConnections, LastHookAt: deref(r.LastHookAt)}
}

// querySession runs sql on q and scans its one row, sessionColumns, as a
// session; pgx.ErrNoRows when there is none.
func querySession(ctx context.Context, q querier, sql string, args ...any) (letagents.AgentSession, error) {
	r, err := queryOne[sessionRow](ctx, q, sql, args...)
	return r.session(), err
}

// querySessions is querySession for every row, in order.
func querySessions(ctx context.Context, q querier, sql string, args ...any) ([]letagents.AgentSession, error) {
	rows, err := queryAll[sessionRow](ctx, q, sql, args...)
	if err != nil {
		return nil, err
	}
	out := make([]letagents.AgentSession, len(rows))
	for i, r := range rows {
		out[i] = r.session()
	}
	return out, nil
}

// NewAgentSession is a session to register. ActorLabel is made from each
// display name candidate in turn.
type NewAgentSession struct {
	letagents.AgentSession
	TokenHash []byte
	// Names are the display names to try, in order: the first free among
	// the room's live workers is taken.
	Names []string
	Label func(displayName string) string
}

// CreateAgentSession registers a session under the first of its candidate
// names no live worker of the room uses, its delivery cursor at the room's
// newest message (a new agent is not handed the history); Conflict (code
// agent_session_display_name_exhausted) when every one is taken, NotFound
// when the room does not exist. A worker joining is a presence event of
// the room, logged by the same statement.
func (s *Store) CreateAgentSession(ctx context.Context, n NewAgentSession, now time.Time) (letagents.AgentSession, error) {
	a := n.AgentSession
	var out letagents.AgentSession
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		for _, name := range n.Names {
			var id int64
			// The label's verdict is kept with it, so that a send need not
			// judge it again (migration 0039).
			label := n.Label(name)
			err := savepoint(ctx, tx, func(sp pgx.Tx) error {
				// The event names the session before it is inserted, so its id
				// is drawn first; a name taken rolls both back.
				return sp.QueryRow(ctx, `
					WITH new AS (SELECT nextval(pg_get_serial_sequence('agent_sessions', 'id')) AS id),
					`+roomEvent{kind: letagents.EventPresence, room: "$1", channel: "$14", where: " AND $3 = '" + letagents.SessionWorker + "'",
					ref: "(SELECT id FROM new)"}.with()+`
					INSERT INTO agent_sessions (id, room_id, token_hash, session_kind, runtime, agent_key, agent_instance_id, owner_account_id,
						display_name, owner_label, ide_label, actor_label, repo_branch, created_at, updated_at, last_seen_at, delivered_seq,
						change_seq, display_key, label_reserved)
					VALUES ((SELECT id FROM new), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $13,
						coalesce((SELECT last_seq FROM rooms WHERE id = $1), 0), coalesce((SELECT last_event FROM next), 0), $15, $16) RETURNING id`,
					a.RoomID, n.TokenHash, a.Kind, a.Runtime, a.AgentKey, a.InstanceID, a.OwnerAccountID, name, a.OwnerLabel, a.IDELabel,
					label, a.RepoBranch, now, s.RoomChannel(a.RoomID), letagents.NameKey(name), letagents.ReservedSender(label)).Scan(&id)
			})
			switch {
			case pgCode(err) == uniqueViolation:
				continue
			case pgCode(err) == foreignKeyViolation:
				return letagents.RoomNotFound()
			case err != nil:
				return fmt.Errorf("create agent session: %w", err)
			}
			if out, err = querySession(ctx, tx, `SELECT `+sessionColumns("$2")+` FROM agent_sessions s WHERE s.id = $1`, id, now); err != nil {
				return fmt.Errorf("create agent session: read back: %w", err)
			}
			return nil
		}
		return &letagents.Error{Kind: letagents.Conflict, Code: letagents.CodeDisplayNameExhausted,
			Message: fmt.Sprintf("Every display name tried (%d) is taken by a live agent in this room; pass another display_name.", len(n.Names))}
	})
	if err != nil {
		return a, err
	}
	return out, nil
}

// AgentSession reads a session as of now; NotFound when there is none in
// the room.
func (s *Store) AgentSession(ctx context.Context, roomID string, id int64, now time.Time) (letagents.AgentSession, error) {
	a, err := retried(ctx, s, func() (letagents.AgentSession, error) {
		return querySession(ctx, s.pool, `SELECT `+sessionColumns("$3")+` FROM agent_sessions s WHERE s.id = $1 AND s.room_id = $2`,
			id, roomID, now)
	})
	switch {
	case isNoRows(err):
		return a, letagents.Errorf(letagents.NotFound, "Agent session not found")
	case err != nil:
		return a, fmt.Errorf("read agent session: %w", err)
	}
	return a, nil
}

// AgentSessionByToken finds the session a token belongs to, and touches
// its last_seen_at; Unauthorized when there is none.
func (s *Store) AgentSessionByToken(ctx context.Context, hash []byte, now time.Time) (letagents.AgentSession, error) {
	a, err := retried(ctx, s, func() (letagents.AgentSession, error) {
		// The touch, every agent call's, is unflushed (skipFlush); quick
		// is read below so that the setting is surely made.
		return querySession(ctx, s.pool, `
			WITH touched AS (
				UPDATE agent_sessions SET last_seen_at = greatest(last_seen_at, $2) WHERE token_hash = $1
				RETURNING id, `+skipFlush+` AS quick
			)
			SELECT `+sessionColumns("$2")+` FROM agent_sessions s JOIN touched t ON t.id = s.id AND t.quick IS NOT NULL`, hash, now)
	})
	switch {
	case isNoRows(err):
		return a, letagents.Errorf(letagents.Unauthorized, "Invalid agent session credentials.")
	case err != nil:
		return a, fmt.Errorf("read agent session: %w", err)
	}
	return a, nil
}

// AgentSessions lists a room's live sessions of a kind ("" for all) as of
// now, by actor label.
func (s *Store) AgentSessions(ctx context.Context, roomID, kind string, now time.Time) ([]letagents.AgentSession, error) {
	return retried(ctx, s, func() ([]letagents.AgentSession, error) {
		out, err := querySessions(ctx, s.pool, `
			SELECT `+sessionColumns("$3")+` FROM agent_sessions s
			WHERE s.room_id = $1 AND s.ended_at IS NULL AND ($2 = '' OR s.session_kind = $2)
			ORDER BY s.actor_label`, roomID, kind, now)
		if err != nil {
			return nil, fmt.Errorf("list agent sessions: %w", err)
		}
		return out, nil
	})
}

// EndAgentSession ends a session (idempotent) and closes its delivery
// connections, ringing its owner's access channel so that streams opened
// with its credentials end now; the answer is the session as ended. A
// live worker ending is a presence event of the room; ending it again
// logs nothing.
func (s *Store) EndAgentSession(ctx context.Context, roomID string, id int64, now time.Time) (letagents.AgentSession, error) {
	var a letagents.AgentSession
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			WITH `+sessionChange("$1", "$2", "$4", "old.ended_at IS NULL")+`
			UPDATE agent_sessions s SET ended_at = coalesce(s.ended_at, $3), updated_at = $3,
				last_disconnected_at = CASE WHEN EXISTS (SELECT 1 FROM delivery_connections c
					WHERE c.agent_session_id = s.id AND c.expires_at > $3)
					THEN $3 ELSE s.last_disconnected_at END,
				`+changeSeq+`
			FROM old WHERE s.id = old.id`, id, roomID, now, s.RoomChannel(roomID))
		if err != nil {
			return fmt.Errorf("end agent session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return letagents.Errorf(letagents.NotFound, "Agent session not found")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM delivery_connections WHERE agent_session_id = $1`, id); err != nil {
			return fmt.Errorf("end agent session: close connections: %w", err)
		}
		if a, err = querySession(ctx, tx, `SELECT `+sessionColumns("$2")+` FROM agent_sessions s WHERE s.id = $1`, id, now); err != nil {
			return fmt.Errorf("end agent session: %w", err)
		}
		return ringAccess(ctx, tx, s.AccountAccessChannel(a.OwnerAccountID))
	})
	return a, err
}

// sessionChange is the WITH list of a statement that changes agent
// session $id of room $room and logs a presence event when changed (SQL
// over old, the session's row before the change) holds and the session is
// a worker: old locks the row, so that of two writers the second reads
// what the first wrote, and next and logged (roomEvent) append the event.
// The statement's UPDATE of the session joins old and sets changeSeq.
// channel is the SQL of the room's channel.
func sessionChange(id, room, channel, changed string) string {
	return `old AS (
			SELECT * FROM agent_sessions WHERE id = ` + id + ` AND room_id = ` + room + ` FOR NO KEY UPDATE
		), ` + roomEvent{kind: letagents.EventPresence, room: room, channel: channel, ref: id,
		where: ` AND EXISTS (SELECT FROM old WHERE old.session_kind = '` + letagents.SessionWorker + `' AND ` + changed + `)`}.with()
}

// changeSeq sets a session's change_seq to its event's number when the
// statement (sessionChange) logged one.
const changeSeq = `change_seq = coalesce((SELECT last_event FROM next), s.change_seq)`

// SetPresence records what a session of the room says it is doing. A
// change the roster shows (the first report, a new status or text) is a
// presence event of the room; the same report again, which agents send
// as a heartbeat with every tool call and wait, moves only its times.
func (s *Store) SetPresence(ctx context.Context, roomID string, id int64, p letagents.Presence) (letagents.AgentSession, error) {
	// The answer is the session as the UPDATE leaves it (RETURNING), which
	// spares a read after it.
	a, err := querySession(ctx, s.pool, `
		WITH `+sessionChange("$1", "$5", "$6", "old.ended_at IS NULL AND (old.presence_at IS NULL OR (old.presence_status, old.presence_text) IS DISTINCT FROM ($2, $3))")+`
		UPDATE agent_sessions s SET presence_status = $2, presence_text = $3, presence_at = $4, updated_at = $4,
			last_seen_at = greatest(s.last_seen_at, $4), `+changeSeq+`
		FROM old WHERE s.id = old.id AND old.ended_at IS NULL RETURNING `+sessionColumns("$4"), id, p.Status, p.Text, p.UpdatedAt, roomID,
		s.RoomChannel(roomID))
	switch {
	case isNoRows(err):
		return a, letagents.Errorf(letagents.Unauthorized, "This agent session has ended; register a new one.")
	case err != nil:
		return a, fmt.Errorf("set presence: %w", err)
	}
	return a, nil
}

// RecordNativeActivity notes that a session of the room's runtime
// reported activity: the latest report (by n.At) is the one kept; an
// older one arriving late only leaves its time, if it were later. A kept
// report of a live worker whose status or text the roster does not show
// yet is a presence event of the room; its method and time alone are not.
func (s *Store) RecordNativeActivity(ctx context.Context, roomID string, id int64, n letagents.NativeActivity) error {
	const latest = `(old.last_native_activity_at IS NULL OR $2 >= old.last_native_activity_at)`
	if _, err := s.pool.Exec(ctx, `
		WITH `+sessionChange("$1", "$6", "$7", "old.ended_at IS NULL AND "+latest+
		" AND (old.last_native_activity_at IS NULL OR (old.native_status, old.native_text) IS DISTINCT FROM ($3, $5))")+`
		UPDATE agent_sessions s SET
			native_status = CASE WHEN `+latest+` THEN $3 ELSE s.native_status END,
			native_method = CASE WHEN `+latest+` THEN $4 ELSE s.native_method END,
			native_text = CASE WHEN `+latest+` THEN $5 ELSE s.native_text END,
			last_native_activity_at = greatest(s.last_native_activity_at, $2), `+changeSeq+`
		FROM old WHERE s.id = old.id`, id, n.At, n.Status, n.Method, n.Text, roomID, s.RoomChannel(roomID)); err != nil {
		return fmt.Errorf("record native activity: %w", err)
	}
	return nil
}

// Delivery is a delivery connection just opened: its id, and the number
// of the presence event its opening logged (0: none).
type Delivery struct {
	ID    int64
	Event int64
}

// OpenDelivery records a parked long-poll or open stream of a session of
// the room as an open delivery connection until expiresAt. A live worker
// that messages did not reach a moment ago (no open connection, none
// closed within letagents.ReconnectGrace) is reached now: the roster shows
// it connected, so that is a presence event; an agent that waits again at
// once, as agents do in a loop, logs none. The event's number lets the
// stream that opened the connection leave out its own news.
func (s *Store) OpenDelivery(ctx context.Context, roomID string, sessionID int64, now, expiresAt time.Time) (Delivery, error) {
	var d Delivery
	err := s.pool.QueryRow(ctx, `
		WITH `+sessionChange("$1", "$4", "$5", `old.ended_at IS NULL
			AND NOT EXISTS (SELECT FROM delivery_connections c WHERE c.agent_session_id = old.id AND c.expires_at > $2)
			AND (old.last_disconnected_at IS NULL OR old.last_disconnected_at <= $6)`)+`,
		seq AS (
			UPDATE agent_sessions s SET `+changeSeq+` FROM old WHERE s.id = old.id AND EXISTS (SELECT FROM next)
		)
		INSERT INTO delivery_connections (agent_session_id, opened_at, expires_at) SELECT id, $2, $3 FROM old
		RETURNING id, coalesce((SELECT last_event FROM next), 0)`,
		sessionID, now, expiresAt, roomID, s.RoomChannel(roomID), now.Add(-letagents.ReconnectGrace)).Scan(&d.ID, &d.Event)
	switch {
	case isNoRows(err):
		return d, letagents.Errorf(letagents.NotFound, "Agent session not found")
	case err != nil:
		return d, fmt.Errorf("open delivery connection: %w", err)
	}
	return d, nil
}

// RenewDelivery extends an open delivery connection.
func (s *Store) RenewDelivery(ctx context.Context, id int64, expiresAt time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE delivery_connections SET expires_at = $2 WHERE id = $1`, id, expiresAt); err != nil {
		return fmt.Errorf("renew delivery connection: %w", err)
	}
	return nil
}

// CloseDelivery ends a delivery connection: its session was reachable
// until now, and stays so for the reconnect grace.
func (s *Store) CloseDelivery(ctx context.Context, id int64, now time.Time) error {
	if _, err := s.pool.Exec(ctx, `
		WITH gone AS (DELETE FROM delivery_connections WHERE id = $1 RETURNING agent_session_id)
		UPDATE agent_sessions SET last_disconnected_at = greatest(last_disconnected_at, $2), last_seen_at = greatest(last_seen_at, $2)
		WHERE id = (SELECT agent_session_id FROM gone)`, id, now); err != nil {
		return fmt.Errorf("close delivery connection: %w", err)
	}
	return nil
}

// NameHeldByOthers reports whether any of keys (NameKeys of a name and
// of its parts) reads as the name of someone other than accountID (0 is
// nobody): the login or display name of another account, the display
// name of another account's agent, or the display name of another
// account's agent session in the room (which may differ from its agent's).
func (s *Store) NameHeldByOthers(ctx context.Context, roomID string, keys []string, accountID int64) (bool, error) {
	var held bool
	if err := s.pool.QueryRow(ctx, `SELECT `+nameHeldSQL("$1::text[]", "$2", "$3"), keys, accountID, roomID).Scan(&held); err != nil {
		return false, fmt.Errorf("read names held: %w", err)
	}
	return held, nil
}

// NameKeys are the keys (letagents.NameKey) by which a name, its display
// part and its owner part are held: the keys NameHeldByOthers and
// Send.NameKeys take, with no empty key.
func NameKeys(name, display, owner string) []string {
	keys := []string{letagents.NameKey(name), letagents.NameKey(display), letagents.NameKey(owner)}
	return slices.DeleteFunc(keys, func(k string) bool { return k == "" })
}

// nameHeldSQL is SQL of whether one of the keys (a text[]) is held by
// someone other than the account, as NameHeldByOthers reads it. Each key
// is compared where it is stored (the server writes them with the names),
// so the lookups are by index; an empty or null array, which no one
// holds, skips them (a send signed by a worker session gives none).
func nameHeldSQL(keys, account, room string) string {
	return `(coalesce(cardinality(` + keys + `), 0) > 0 AND (EXISTS (SELECT 1 FROM accounts WHERE id <> ` + account + ` AND login_key <> '' AND login_key = ANY (` + keys + `))
		OR EXISTS (SELECT 1 FROM accounts WHERE id <> ` + account + ` AND name_key <> '' AND name_key = ANY (` + keys + `))
		OR EXISTS (SELECT 1 FROM agents WHERE owner_account_id <> ` + account + ` AND display_key <> '' AND display_key = ANY (` + keys + `))
		OR EXISTS (SELECT 1 FROM agent_sessions WHERE room_id = ` + room + ` AND owner_account_id <> ` + account + `
			AND display_key <> '' AND display_key = ANY (` + keys + `))))`
}

// SenderClaim is who holds a sender name in a room, as SenderClaim reads
// it (claimSQL, by its db tags).
type SenderClaim struct {
	// Session: an agent session of the account in the room carries it.
	Session bool `db:"session"`
	// Agent: it is made of the display and owner labels of one of the
	// account's agents (whatever its IDE part).
	Agent bool `db:"agent"`
	// Others: an agent session of another account in the room carries it.
	Others bool `db:"others"`
}

// claimSQL reads the claims (SenderClaim) on the label in the room by the
// account, whose agent's display and owner labels would be display and
// owner: SQL of each.
func claimSQL(room, label, account, display, owner string) string {
	return `
	SELECT coalesce(bool_or(owner_account_id = ` + account + `), false) AS session,
		coalesce(bool_or(owner_account_id <> ` + account + `), false) AS others,
		EXISTS (SELECT 1 FROM agents WHERE owner_account_id = ` + account + `
			AND lower(display_name) = lower(` + display + `) AND lower(owner_label) = lower(` + owner + `)) AS agent
	FROM agent_sessions WHERE room_id = ` + room + ` AND lower(actor_label) = lower(` + label + `)`
}

// SenderClaim reads the claims on an actor label in a room (ended sessions
// included: their label still names them in the room's history). label
// is compared in actors.CanonicalLabel form, display and owner are its
// parts (actors.ParseActorLabel), all without regard to case; accountID 0
// is nobody, whom every session's label is someone else's.
func (s *Store) SenderClaim(ctx context.Context, roomID, label, display, owner string, accountID int64) (SenderClaim, error) {
	c, err := queryOne[SenderClaim](ctx, s.pool, claimSQL("$1", "$2", "$3", "$4", "$5"), roomID, label, accountID, display, owner)
	if err != nil {
		return c, fmt.Errorf("read claims on sender: %w", err)
	}
	return c, nil
}

// AnnounceReachLapses logs a presence event for each live worker whose
// reach lapsed in (since, now]: its last delivery connection closed more
// than letagents.ReconnectGrace ago or expired unclosed, or its hooks last
// ran letagents.HookGrace ago, and nothing reaches it now. No write marks
// that moment, so the liveness sweeper calls this every SweepInterval;
// the roster's readers then show the agent unreached without asking
// again. It returns how many it logged.
func (s *Store) AnnounceReachLapses(ctx context.Context, since, now time.Time) (int, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.id, s.room_id FROM agent_sessions s
		WHERE s.ended_at IS NULL AND s.session_kind = '`+letagents.SessionWorker+`'
			AND NOT EXISTS (SELECT FROM delivery_connections c WHERE c.agent_session_id = s.id AND c.expires_at > $2)
			AND (greatest(s.last_disconnected_at + $3::interval,
					(SELECT max(c.expires_at) FROM delivery_connections c WHERE c.agent_session_id = s.id)) > $1
				AND greatest(s.last_disconnected_at + $3::interval,
					(SELECT max(c.expires_at) FROM delivery_connections c WHERE c.agent_session_id = s.id)) <= $2
				OR s.unread_checked_at + $4::interval > $1 AND s.unread_checked_at + $4::interval <= $2)`,
		since, now, letagents.ReconnectGrace, letagents.HookGrace)
	if err != nil {
		return 0, fmt.Errorf("find reach lapses: %w", err)
	}
	type lapse struct {
		ID   int64  `db:"id"`
		Room string `db:"room_id"`
	}
	lapses, err := pgx.CollectRows(rows, pgx.RowToStructByName[lapse])
	if err != nil {
		return 0, fmt.Errorf("find reach lapses: %w", err)
	}
	for i, l := range lapses {
		if _, err := s.pool.Exec(ctx, `
			WITH `+sessionChange("$1", "$2", "$3", "old.ended_at IS NULL")+`
			UPDATE agent_sessions s SET `+changeSeq+` FROM old WHERE s.id = old.id AND EXISTS (SELECT FROM next)`,
			l.ID, l.Room, s.RoomChannel(l.Room)); err != nil {
			return i, fmt.Errorf("announce reach lapse of session %d: %w", l.ID, err)
		}
	}
	return len(lapses), nil
}
