package store

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// BoardSettingsChange is what a room admin changes of the settings: an
// empty ManagerMode, a zero IntentTTL and a nil RequireWorkerSessions
// keep the current value.
type BoardSettingsChange struct {
	ManagerMode           string
	IntentTTL             time.Duration
	RequireWorkerSessions *bool
}

// NewBoardIntent is an intent to register. The caller validates and
// canonicalises the payload and computes its hash.
type NewBoardIntent struct {
	RoomID             string
	Action             string
	Payload            []byte
	PayloadHash        string
	ProposerSessionID  int64
	ProposerActorLabel string
	ProposerAgentKey   string
	Reason             string
}

// BoardDecision is a room admin's answer to a pending intent.
type BoardDecision struct {
	Approve   bool
	DecidedBy string
	// TokenHash is the hash of the one-time approval token (approvals only).
	TokenHash []byte
}

// BoardIntentUse is an agent's board action presenting an approval: it
// must match the intent exactly.
type BoardIntentUse struct {
	TokenHash   []byte
	Action      string
	PayloadHash string
	AgentKey    string
	SessionID   int64 // the acting session, recorded as the user
}

// intentColumns reads a board_intents row as intentRow names it.
const intentColumns = `id, room_id, action, payload, payload_hash, status, coalesce(proposer_session_id, 0) AS proposer_session_id,
	proposer_actor_label, proposer_agent_key, reason, coalesce(decided_by, '') AS decided_by, decided_at, used_at, expires_at,
	created_at, approval_token_hash`

// intentRow scans intentColumns: an intent by its db tags, and its two
// times that are null until they happen.
type intentRow struct {
	letagents.BoardIntent
	DecidedAtOrNever *time.Time `db:"decided_at"`
	UsedAtOrNever    *time.Time `db:"used_at"`
}

func (r intentRow) intent() letagents.BoardIntent {
	i := r.BoardIntent
	i.DecidedAt, i.UsedAt = deref(r.DecidedAtOrNever), deref(r.UsedAtOrNever)
	return i
}

// queryIntent runs sql on q and scans its one row, intentColumns, as an
// intent; pgx.ErrNoRows when there is none.
func queryIntent(ctx context.Context, q querier, sql string, args ...any) (letagents.BoardIntent, error) {
	r, err := queryOne[intentRow](ctx, q, sql, args...)
	return r.intent(), err
}

func intentRef(id int64) string { return letagents.WireID(letagents.IntentPrefix, id) }

// ttlSQL is a room's intent TTL in seconds ($1 the room, $ttlParam the default).
func ttlSQL(ttlParam string) string {
	return `coalesce((SELECT intent_ttl_seconds FROM board_settings WHERE room_id = $1), ` + ttlParam + `)`
}

// BoardSettings reads a room's board settings, the defaults when it has
// none of its own; NotFound when the room does not exist.
func (s *Store) BoardSettings(ctx context.Context, roomID string) (letagents.BoardSettings, error) {
	row, err := retried(ctx, s, func() (settingsRow, error) {
		return queryOne[settingsRow](ctx, s.pool, `
			SELECT r.kind, coalesce(b.manager_mode, $2) AS manager_mode, coalesce(b.intent_ttl_seconds, $3) AS intent_ttl_seconds,
				b.require_worker_sessions
			FROM rooms r LEFT JOIN board_settings b ON b.room_id = r.id WHERE r.id = $1`,
			roomID, letagents.ManagerOptional, int64(letagents.DefaultIntentTTL/time.Second))
	})
	b := row.settings(roomID)
	switch {
	case isNoRows(err):
		return b, letagents.RoomNotFound()
	case err != nil:
		return b, fmt.Errorf("read board settings: %w", err)
	}
	return b, nil
}

// settingsRow scans a room's kind beside its board settings, whose
// require_worker_sessions is null for the kind's default.
type settingsRow struct {
	Kind                  letagents.RoomKind `db:"kind"`
	ManagerMode           string             `db:"manager_mode"`
	IntentTTLSeconds      int64              `db:"intent_ttl_seconds"`
	RequireWorkerSessions *bool              `db:"require_worker_sessions"`
}

func (r settingsRow) settings(roomID string) letagents.BoardSettings {
	b := letagents.BoardSettings{RoomID: roomID, ManagerMode: r.ManagerMode, IntentTTL: time.Duration(r.IntentTTLSeconds) * time.Second,
		RequireWorkerSessions: letagents.DefaultRequireWorkerSessions(r.Kind)}
	if r.RequireWorkerSessions != nil {
		b.RequireWorkerSessions = *r.RequireWorkerSessions
	}
	return b
}

// SetBoardSettings changes a room's board settings as c says. NotFound
// when the room does not exist.
func (s *Store) SetBoardSettings(ctx context.Context, roomID string, c BoardSettingsChange, now time.Time) (letagents.BoardSettings, error) {
	var modeArg, ttlArg any
	if c.ManagerMode != "" {
		modeArg = c.ManagerMode
	}
	if c.IntentTTL > 0 {
		ttlArg = int64(c.IntentTTL / time.Second)
	}
	row, err := queryOne[settingsRow](ctx, s.pool, `
		WITH saved AS (
			INSERT INTO board_settings AS b (room_id, manager_mode, intent_ttl_seconds, require_worker_sessions, updated_at)
			VALUES ($1, coalesce($2::text, $6), coalesce($3::integer, $7), $4, $5)
			ON CONFLICT (room_id) DO UPDATE SET
				manager_mode = coalesce($2::text, b.manager_mode),
				intent_ttl_seconds = coalesce($3::integer, b.intent_ttl_seconds),
				require_worker_sessions = coalesce($4::boolean, b.require_worker_sessions),
				updated_at = $5
			RETURNING room_id, manager_mode, intent_ttl_seconds, require_worker_sessions
		)
		SELECT r.kind, saved.manager_mode, saved.intent_ttl_seconds, saved.require_worker_sessions FROM saved JOIN rooms r ON r.id = saved.room_id`,
		roomID, modeArg, ttlArg, c.RequireWorkerSessions, now, letagents.ManagerOptional, int64(letagents.DefaultIntentTTL/time.Second))
	b := row.settings(roomID)
	switch {
	case pgCode(err) == foreignKeyViolation:
		return b, letagents.RoomNotFound()
	case pgCode(err) == checkViolation:
		return b, letagents.Errorf(letagents.Invalid, "manager_mode must be off, manager_optional or intent_required")
	case err != nil:
		return b, fmt.Errorf("set board settings: %w", err)
	}
	return b, nil
}

// CreateBoardIntent registers an intent, expiring after the room's TTL.
// When the same agent already has a pending intent for the same action and
// payload in the room, that one is returned instead and created is false.
// NotFound when the room does not exist.
func (s *Store) CreateBoardIntent(ctx context.Context, n NewBoardIntent, now time.Time) (i letagents.BoardIntent, created bool, err error) {
	// A pending twin found by the insert can be decided before the select
	// reads it; then the next round inserts.
	for range 3 {
		i, created, err = s.createBoardIntent(ctx, n, now)
		if err == nil || !isNoRows(err) {
			return i, created, err
		}
	}
	return i, false, fmt.Errorf("create board intent: the pending twin kept changing")
}

func (s *Store) createBoardIntent(ctx context.Context, n NewBoardIntent, now time.Time) (i letagents.BoardIntent, created bool, err error) {
	err = s.withTx(ctx, func(tx pgx.Tx) (err error) {
		if _, err := tx.Exec(ctx, `UPDATE board_intents SET status = 'expired'
			WHERE room_id = $1 AND action = $2 AND payload_hash = $3 AND proposer_agent_key = $4 AND status = 'pending' AND expires_at <= $5`,
			n.RoomID, n.Action, n.PayloadHash, n.ProposerAgentKey, now); err != nil {
			return fmt.Errorf("create board intent: expire: %w", err)
		}
		pendingTwin := func() (letagents.BoardIntent, error) {
			return queryIntent(ctx, tx, `SELECT `+intentColumns+` FROM board_intents
				WHERE room_id = $1 AND action = $2 AND payload_hash = $3 AND proposer_agent_key = $4 AND status = 'pending'`,
				n.RoomID, n.Action, n.PayloadHash, n.ProposerAgentKey)
		}
		// Look first, so that asking again does not spend an id; the insert's
		// ON CONFLICT settles a race between two first askers.
		i, err = pendingTwin()
		switch {
		case err == nil:
			return nil
		case !isNoRows(err):
			return fmt.Errorf("create board intent: %w", err)
		}
		var session any
		if n.ProposerSessionID != 0 {
			session = n.ProposerSessionID
		}
		i, err = queryIntent(ctx, tx, `
			INSERT INTO board_intents (room_id, action, payload, payload_hash, proposer_session_id, proposer_actor_label,
				proposer_agent_key, reason, expires_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::timestamptz + `+ttlSQL("$10")+` * interval '1 second', $9)
			ON CONFLICT (room_id, action, payload_hash, proposer_agent_key) WHERE status = 'pending' DO NOTHING
			RETURNING `+intentColumns,
			n.RoomID, n.Action, string(n.Payload), n.PayloadHash, session, n.ProposerActorLabel, n.ProposerAgentKey, n.Reason, now,
			int64(letagents.DefaultIntentTTL/time.Second))
		created = err == nil
		switch {
		case pgCode(err) == foreignKeyViolation:
			return letagents.RoomNotFound()
		case isNoRows(err):
			if i, err = pendingTwin(); isNoRows(err) {
				return err // retried by the caller
			}
		}
		if err != nil {
			return fmt.Errorf("create board intent: %w", err)
		}
		return nil
	})
	if err != nil {
		return i, false, err
	}
	return i, created, nil
}

// BoardIntent reads one intent of a room as of now; NotFound when the room
// has none of that id.
func (s *Store) BoardIntent(ctx context.Context, roomID string, id int64, now time.Time) (letagents.BoardIntent, error) {
	return retried(ctx, s, func() (letagents.BoardIntent, error) {
		if _, err := s.pool.Exec(ctx, `UPDATE board_intents SET status = 'expired'
			WHERE id = $1 AND room_id = $2 AND status IN ('pending', 'approved') AND expires_at <= $3`, id, roomID, now); err != nil {
			return letagents.BoardIntent{}, fmt.Errorf("read board intent: expire: %w", err)
		}
		i, err := queryIntent(ctx, s.pool, `SELECT `+intentColumns+` FROM board_intents WHERE id = $1 AND room_id = $2`, id, roomID)
		switch {
		case isNoRows(err):
			return i, letagents.Errorf(letagents.NotFound, "Board intent not found")
		case err != nil:
			return i, fmt.Errorf("read board intent: %w", err)
		}
		return i, nil
	})
}

// BoardIntents lists a room's intents as of now, newest first: those of a
// status, or all when status is "", at most limit.
func (s *Store) BoardIntents(ctx context.Context, roomID, status string, limit int, now time.Time) ([]letagents.BoardIntent, error) {
	return retried(ctx, s, func() ([]letagents.BoardIntent, error) {
		if _, err := s.pool.Exec(ctx, `UPDATE board_intents SET status = 'expired'
			WHERE room_id = $1 AND status IN ('pending', 'approved') AND expires_at <= $2`, roomID, now); err != nil {
			return nil, fmt.Errorf("list board intents: expire: %w", err)
		}
		rows, err := queryAll[intentRow](ctx, s.pool, `SELECT `+intentColumns+` FROM board_intents
			WHERE room_id = $1 AND ($2 = '' OR status = $2) ORDER BY id DESC LIMIT $3`, roomID, status, limit)
		if err != nil {
			return nil, fmt.Errorf("list board intents: %w", err)
		}
		out := make([]letagents.BoardIntent, len(rows))
		for i, r := range rows {
			out[i] = r.intent()
		}
		return out, nil
	})
}

// DecideBoardIntent approves or denies a pending intent. An approval
// stores the token's hash and restarts the intent's clock: the token may
// be used for one room TTL from now. NotFound when the room has no such
// intent; Conflict (code board_intent_expired or board_intent_not_pending)
// when it is not pending any more.
func (s *Store) DecideBoardIntent(ctx context.Context, roomID string, id int64, d BoardDecision, now time.Time) (letagents.BoardIntent, error) {
	status, token := letagents.IntentDenied, any(nil)
	if d.Approve {
		status, token = letagents.IntentApproved, d.TokenHash
	}
	i, err := queryIntent(ctx, s.pool, `
		UPDATE board_intents SET status = $3, decided_by = $4, decided_at = $6, approval_token_hash = $5,
			expires_at = CASE WHEN $3 = 'approved' THEN $6::timestamptz + `+ttlSQL("$7")+` * interval '1 second' ELSE expires_at END
		WHERE room_id = $1 AND id = $2 AND status = 'pending' AND expires_at > $6
		RETURNING `+intentColumns, roomID, id, status, d.DecidedBy, token, now, int64(letagents.DefaultIntentTTL/time.Second))
	switch {
	case err == nil:
		return i, nil
	case !isNoRows(err):
		return i, fmt.Errorf("decide board intent: %w", err)
	}
	cur, err := s.BoardIntent(ctx, roomID, id, now)
	switch {
	case err != nil:
		return cur, err
	case cur.Status == letagents.IntentExpired:
		return cur, &letagents.Error{Kind: letagents.Conflict, Code: letagents.CodeIntentExpired,
			Message: fmt.Sprintf("Board intent %s has expired; the agent must register it again.", intentRef(id))}
	}
	return cur, &letagents.Error{Kind: letagents.Conflict, Code: letagents.CodeIntentNotPending, Fields: map[string]any{"status": cur.Status},
		Message: fmt.Sprintf("Board intent %s is %s; only a pending intent can be approved or denied.", intentRef(id), cur.Status)}
}

// UseBoardIntent consumes an approved intent for the action u describes:
// exactly once, however many actions race for it. It fails Forbidden with
// a code saying why the intent does not allow the action (there is no
// such intent, it is not approved, it expired, it was used, or it is for
// another action, payload or agent) and Unauthorized when the token is
// wrong.
func (s *Store) UseBoardIntent(ctx context.Context, roomID string, id int64, u BoardIntentUse, now time.Time) (letagents.BoardIntent, error) {
	var session any
	if u.SessionID != 0 {
		session = u.SessionID
	}
	i, err := queryIntent(ctx, s.pool, `
		UPDATE board_intents SET status = 'used', used_at = $8, used_by_session_id = $7
		WHERE room_id = $1 AND id = $2 AND status = 'approved' AND expires_at > $8
			AND approval_token_hash = $3 AND action = $4 AND payload_hash = $5 AND proposer_agent_key = $6
		RETURNING `+intentColumns, roomID, id, u.TokenHash, u.Action, u.PayloadHash, u.AgentKey, session, now)
	switch {
	case err == nil:
		return i, nil
	case !isNoRows(err):
		return i, fmt.Errorf("use board intent: %w", err)
	}
	// Refused: say why, from the intent as it is now.
	ref := intentRef(id)
	refuse := func(code, format string, args ...any) error {
		return &letagents.Error{Kind: letagents.Forbidden, Code: code, Message: fmt.Sprintf(format, args...)}
	}
	cur, err := s.BoardIntent(ctx, roomID, id, now)
	switch {
	case letagents.IsKind(err, letagents.NotFound):
		return cur, refuse(letagents.CodeIntentRequired, "Board intent %s not found in this room; register one and have it approved.", ref)
	case err != nil:
		return cur, err
	case cur.Status == letagents.IntentExpired:
		return cur, refuse(letagents.CodeIntentExpired, "Board intent %s has expired; register it again.", ref)
	case cur.Status == letagents.IntentPending || cur.Status == letagents.IntentDenied:
		return cur, refuse(letagents.CodeIntentNotApproved, "Board intent %s is %s, not approved.", ref, cur.Status)
	case subtle.ConstantTimeCompare(cur.ApprovalTokenHash, u.TokenHash) != 1:
		return cur, &letagents.Error{Kind: letagents.Unauthorized, Code: letagents.CodeApprovalToken,
			Message: fmt.Sprintf("Invalid board_approval_token for board intent %s.", ref)}
	case cur.Status == letagents.IntentUsed:
		return cur, refuse(letagents.CodeIntentUsed, "Board intent %s was already used; an approval allows one action.", ref)
	case cur.Action != u.Action:
		return cur, refuse(letagents.CodeIntentMismatch, "Board intent %s was approved for %s, not %s.", ref, cur.Action, u.Action)
	case cur.PayloadHash != u.PayloadHash:
		return cur, refuse(letagents.CodeIntentMismatch, "This %s differs from the payload board intent %s approved (hash %s); register an intent for exactly this action.",
			u.Action, ref, cur.PayloadHash)
	case cur.ProposerAgentKey != u.AgentKey:
		return cur, refuse(letagents.CodeIntentMismatch, "Board intent %s was proposed by another agent (%s).", ref, cur.ProposerAgentKey)
	}
	return cur, fmt.Errorf("use board intent %s: refused for no reason found (status %s)", ref, cur.Status)
}
