package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// LivenessState is one live worker session as the liveness sweeper sees it
// at a moment: its delivery state and the sweeper's own marks.
type LivenessState struct {
	// Session has OpenConnections counted as of the moment read.
	Session letagents.AgentSession
	// LapsedAt is when the session's latest delivery connection that was
	// never closed ran out of lease (its poll process died or hung); zero
	// when none did.
	LapsedAt time.Time
	// OfflineEpoch is the outage start the last offline notice was posted
	// for, OfflineAnnouncedAt when it was posted, RecoveryAnnouncedAt when
	// the last return was announced; zero when never.
	OfflineEpoch        time.Time
	OfflineAnnouncedAt  time.Time
	RecoveryAnnouncedAt time.Time
	// UnreadCheckedAt is when the session last took its unread messages
	// (a hook); zero when never.
	UnreadCheckedAt time.Time
	// Unsurfaced counts the messages past the session's delivery cursor
	// that were sent to its room while it existed, by others (at most
	// letagents.UnreadScan); OldestUnsurfacedAt is when the first was sent.
	Unsurfaced         int
	OldestUnsurfacedAt time.Time
}

// Kinds of liveness notice.
const (
	NoticeOffline   = "offline"
	NoticeRecovered = "recovered"
)

// LivenessNotice is a status message about a session and the mark that
// records it was posted.
type LivenessNotice struct {
	Kind string // NoticeOffline or NoticeRecovered
	// Epoch is the outage an offline notice announces (its start).
	Epoch time.Time
	// Message is posted to the session's room (its RoomID is ignored).
	Message letagents.NewMessage
}

// livenessColumns reads a LivenessState as of $1, as livenessRow names it.
var livenessColumns = sessionColumns("$1") + `, s.offline_epoch, s.offline_announced_at, s.recovery_announced_at,
	(SELECT max(c.expires_at) FROM delivery_connections c WHERE c.agent_session_id = s.id AND c.expires_at <= $1) AS lapsed_at,
	u.n AS unsurfaced, u.oldest AS oldest_unsurfaced_at`

// unsurfacedJoin adds u, the messages past the cursor of session s that
// livenessColumns counts.
var unsurfacedJoin = `LEFT JOIN LATERAL (SELECT count(*) AS n, min(created_at) AS oldest FROM (
		SELECT m.created_at FROM messages m
		WHERE m.room_id = s.room_id AND m.seq > s.delivered_seq AND m.created_at >= s.created_at AND ` + visible + `
			AND m.publisher_session_id IS DISTINCT FROM s.id
		ORDER BY m.seq LIMIT ` + strconv.Itoa(letagents.UnreadScan) + `) past) u ON true`

// livenessRow scans livenessColumns: a session and the sweeper's marks,
// null until set.
type livenessRow struct {
	sessionRow
	OfflineEpoch        *time.Time `db:"offline_epoch"`
	OfflineAnnouncedAt  *time.Time `db:"offline_announced_at"`
	RecoveryAnnouncedAt *time.Time `db:"recovery_announced_at"`
	LapsedAt            *time.Time `db:"lapsed_at"`
	Unsurfaced          int        `db:"unsurfaced"`
	OldestUnsurfacedAt  *time.Time `db:"oldest_unsurfaced_at"`
}

func (r livenessRow) state() LivenessState {
	a := r.session()
	// The session's LastHookAt is its unread_checked_at column.
	return LivenessState{Session: a, LapsedAt: deref(r.LapsedAt), OfflineEpoch: deref(r.OfflineEpoch),
		OfflineAnnouncedAt: deref(r.OfflineAnnouncedAt), RecoveryAnnouncedAt: deref(r.RecoveryAnnouncedAt),
		UnreadCheckedAt: a.LastHookAt, Unsurfaced: r.Unsurfaced, OldestUnsurfacedAt: deref(r.OldestUnsurfacedAt)}
}

// LivenessCandidates lists, across every room, the live worker sessions
// the sweeper should look at now: those seen, disconnected or holding a
// delivery lease since since (the oldest outage still worth announcing).
func (s *Store) LivenessCandidates(ctx context.Context, now, since time.Time) ([]LivenessState, error) {
	rows, err := queryAll[livenessRow](ctx, s.pool, `
		SELECT `+livenessColumns+` FROM agent_sessions s `+unsurfacedJoin+`
		WHERE s.ended_at IS NULL AND s.session_kind = 'worker'
			AND (greatest(s.last_seen_at, s.updated_at, s.last_disconnected_at) >= $2
				OR EXISTS (SELECT 1 FROM delivery_connections c WHERE c.agent_session_id = s.id AND c.expires_at >= $2))
		ORDER BY s.room_id, s.id`, now, since)
	if err != nil {
		return nil, fmt.Errorf("list liveness candidates: %w", err)
	}
	out := make([]LivenessState, len(rows))
	for i, r := range rows {
		out[i] = r.state()
	}
	return out, nil
}

// AnnounceLiveness reads a session's liveness as of now afresh, under a
// lock on its row, and hands it to decide; when decide returns a notice,
// the notice is posted to the session's room and its mark recorded in the
// same transaction. A sweeper running at the same time waits on the lock
// and then reads the mark, so a notice is posted once. posted is false
// when decide declined (or the session is gone).
//
// decide runs inside the transaction: it must not block or do I/O.
func (s *Store) AnnounceLiveness(ctx context.Context, sessionID int64, now time.Time,
	decide func(LivenessState) (LivenessNotice, bool)) (posted bool, err error) {
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		// NO KEY UPDATE: it excludes another sweeper, yet lets rows that refer
		// to the session (tasks, intents: KEY SHARE) be written meanwhile.
		// The state is read by a second statement, whose snapshot is taken
		// after the lock was granted and so sees whatever the lock waited for.
		if err := tx.QueryRow(ctx, `SELECT id FROM agent_sessions WHERE id = $1 FOR NO KEY UPDATE`, sessionID).Scan(new(int64)); err != nil {
			if isNoRows(err) {
				return nil
			}
			return fmt.Errorf("announce liveness: lock session: %w", err)
		}
		row, err := queryOne[livenessRow](ctx, tx, `SELECT `+livenessColumns+` FROM agent_sessions s `+unsurfacedJoin+` WHERE s.id = $2`,
			now, sessionID)
		if err != nil {
			return fmt.Errorf("announce liveness: read session: %w", err)
		}
		st := row.state()
		n, ok := decide(st)
		if !ok {
			return nil
		}
		var mark string
		args := []any{sessionID}
		switch n.Kind {
		case NoticeOffline:
			mark = `UPDATE agent_sessions SET offline_epoch = $2, offline_announced_at = $3 WHERE id = $1`
			args = append(args, n.Epoch, now)
		case NoticeRecovered:
			mark = `UPDATE agent_sessions SET recovery_announced_at = $2 WHERE id = $1`
			args = append(args, now)
		default:
			return fmt.Errorf("announce liveness: unknown notice kind %q", n.Kind)
		}
		n.Message.RoomID = st.Session.RoomID
		// The lock, not the unique index, keeps notices single. The savepoint
		// only keeps a message that already holds the notice's client id (none
		// should) from failing every later sweep: the mark is then recorded
		// without a second post.
		err = savepoint(ctx, tx, func(sp pgx.Tx) error {
			_, err := s.sendMessage(ctx, sp, n.Message)
			return err
		})
		switch {
		case letagents.IsKind(err, letagents.Conflict):
			// Rolled back to the savepoint: the mark goes without a post.
		case err != nil:
			return fmt.Errorf("announce liveness: post %s notice: %w", n.Kind, err)
		default:
			posted = true
		}
		if _, err := tx.Exec(ctx, mark, args...); err != nil {
			return fmt.Errorf("announce liveness: mark %s notice: %w", n.Kind, err)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return posted, nil
}
