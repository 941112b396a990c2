package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// skipFlush is SQL that has the transaction it runs in commit without
// waiting for its WAL to reach the disk (synchronous_commit off for that
// transaction alone), for writes an agent waits on that are receipts or
// liveness: what a crash of the database can lose is the last moment's,
// so a message may be surfaced again, never recorded as surfaced without
// being shown, and a touch is made again by the agent's next call. Other
// transactions see the commit at once either way. It must be evaluated
// for sure: in a select list, or a RETURNING whose rows come back.
const skipFlush = `set_config('synchronous_commit', 'off', true)`

// RecordSurfaced records that messages seqs of a room were surfaced to a
// session's agent through via at now (each message once: a later
// surfacing keeps the first), and moves the session's delivery cursor up
// to the newest of them. The session's own messages are not recorded. It
// is one statement, bounded by the answer that surfaced the messages.
func (s *Store) RecordSurfaced(ctx context.Context, sessionID int64, roomID string, seqs []int64, via letagents.Via, now time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	// Unflushed (skipFlush): a woken long-poll answers only once it is
	// recorded.
	_, err := s.pool.Exec(ctx, `
		WITH ins AS (
			INSERT INTO message_deliveries (room_id, seq, session_id, surfaced_at, via)
			SELECT m.room_id, m.seq, $2, $4, $5 FROM messages m
			WHERE m.room_id = $1 AND m.seq = ANY($3) AND m.publisher_session_id IS DISTINCT FROM $2
			ON CONFLICT DO NOTHING
		)
		UPDATE agent_sessions SET delivered_seq = greatest(delivered_seq, $6) WHERE id = $2 AND room_id = $1
		RETURNING `+skipFlush,
		roomID, sessionID, seqs, now, string(via), slices.Max(seqs))
	if err != nil {
		return fmt.Errorf("record surfaced messages: %w", err)
	}
	return nil
}

// UnreadQuery says what TakeUnread takes.
type UnreadQuery struct {
	Filter letagents.UnreadFilter
	// Limit bounds the messages taken (1 to letagents.MaxUnreadLimit).
	Limit int
	// OnlyIfAsked takes nothing unless a person asked the agent
	// something among its unread messages (letagents.Unread.Asked).
	OnlyIfAsked bool
	// Deadline, when set, is the last moment the take may commit; past
	// it, nothing is taken (CodeUnreadTooLate).
	Deadline time.Time
}

// unreadRow scans a message TakeUnread may take, with the room's last
// number, whether any message it considered asks the agent something,
// and how this one addresses it (null when the row holds no message).
type unreadRow struct {
	LastSeq  int64 `db:"last_seq"`
	AnyAsked bool  `db:"any_asked"`
	messageRow
	Mentioned *bool `db:"mentioned"`
	InThread  *bool `db:"in_thread"`
	Asked     *bool `db:"asked"`
}

// TakeUnread hands a session its unread messages and marks them surfaced
// through a hook, atomically: the messages after its delivery cursor
// (within the room's newest letagents.UnreadScan) that it did not send
// and has not surfaced, those q.Filter keeps, oldest first, at most
// q.Limit. Each taken message is recorded as surfaced, and the cursor
// moves past it, and past every message the filter passed over; the
// take's time is recorded either way. Takes of one session take turns,
// so two hooks firing together never hand the agent the same message.
// NotFound when the session is not in the room.
func (s *Store) TakeUnread(ctx context.Context, sessionID int64, roomID string, q UnreadQuery, now time.Time) (letagents.Unread, error) {
	var u letagents.Unread
	if q.Limit < 1 || q.Limit > letagents.MaxUnreadLimit {
		return u, letagents.Errorf(letagents.Invalid, "limit must be between 1 and %d", letagents.MaxUnreadLimit)
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		// Unflushed (skipFlush): a hook holds the agent's tool call until
		// it has its answer, and the flush was most of the take's time.
		// Set in the locking statement, it costs no round trip of its own.
		err := tx.QueryRow(ctx, `SELECT delivered_seq, `+skipFlush+`
			FROM agent_sessions WHERE id = $1 AND room_id = $2 FOR NO KEY UPDATE`,
			sessionID, roomID).Scan(&u.Cursor, nil)
		switch {
		case isNoRows(err):
			return letagents.Errorf(letagents.NotFound, "Agent session not found")
		case err != nil:
			return fmt.Errorf("take unread messages: lock session: %w", err)
		}
		// A message is addressed to the agent when it mentions it, or
		// replies in a thread the agent wrote in before it; asked when a
		// person (no agent, not the server) addressed it so, or gave it as
		// the agents' instruction.
		rows, err := queryAll[unreadRow](ctx, tx, `
			WITH r AS (SELECT last_seq FROM rooms WHERE id = $2),
			c AS (
				SELECT m.*, coalesce(m.mentions @> ARRAY[$1::bigint], false) AS mentioned,
					m.thread_root_seq IS NOT NULL AND EXISTS (SELECT 1 FROM messages w
						WHERE w.room_id = m.room_id AND w.publisher_session_id = $1 AND w.seq < m.seq
							AND (w.seq = m.thread_root_seq OR w.thread_root_seq = m.thread_root_seq)) AS in_thread
				FROM messages m, r
				WHERE m.room_id = $2 AND m.seq > greatest($3, r.last_seq - $6) AND `+visible+`
					AND m.publisher_session_id IS DISTINCT FROM $1
					AND NOT EXISTS (SELECT 1 FROM message_deliveries d WHERE d.room_id = m.room_id AND d.seq = m.seq AND d.session_id = $1)
			), a AS (
				SELECT *, (source IS NULL OR source = 'browser') AND (mentioned OR in_thread OR agent_prompt_kind IS NOT DISTINCT FROM 'inline') AS asked
				FROM c WHERE $4 = 'all' OR mentioned OR in_thread
			)
			SELECT r.last_seq, (SELECT coalesce(bool_or(asked), false) FROM a) AS any_asked, `+messageSelect+`,
				m.mentioned, m.in_thread, m.asked
			FROM r LEFT JOIN LATERAL (SELECT * FROM a ORDER BY seq LIMIT $5 + 1) m ON true `+messageJoins+`
			ORDER BY m.seq`,
			sessionID, roomID, u.Cursor, string(q.Filter), q.Limit, letagents.UnreadScan)
		if err != nil {
			return fmt.Errorf("take unread messages: %w", err)
		}
		var lastSeq int64
		for _, row := range rows {
			lastSeq, u.Asked = row.LastSeq, row.AnyAsked
			m, ok := row.message()
			if !ok {
				continue
			}
			um := letagents.UnreadMessage{Message: m, Asked: *row.Asked}
			switch {
			case *row.Mentioned:
				um.Addressed = letagents.AddressedMention
			case *row.InThread:
				um.Addressed = letagents.AddressedThread
			}
			u.Messages = append(u.Messages, um)
		}
		if q.OnlyIfAsked && !u.Asked {
			u.Messages = nil
			_, err := tx.Exec(ctx, `UPDATE agent_sessions SET unread_checked_at = $2 WHERE id = $1`, sessionID, now)
			if err != nil {
				return fmt.Errorf("take unread messages: %w", err)
			}
			return nil
		}
		cursor := lastSeq
		if len(u.Messages) > q.Limit {
			u.Messages, u.HasMore = u.Messages[:q.Limit], true
			cursor = u.Messages[q.Limit-1].Seq
		}
		seqs := make([]int64, len(u.Messages))
		for i, m := range u.Messages {
			seqs[i] = m.Seq
		}
		_, err = tx.Exec(ctx, `
			WITH ins AS (
				INSERT INTO message_deliveries (room_id, seq, session_id, surfaced_at, via)
				SELECT $2, x, $1, $4, $5 FROM unnest($3::bigint[]) x
				ON CONFLICT DO NOTHING
			)
			UPDATE agent_sessions SET delivered_seq = greatest(delivered_seq, $6), unread_checked_at = $4 WHERE id = $1`,
			sessionID, roomID, seqs, now, string(letagents.ViaHook), cursor)
		if err != nil {
			return fmt.Errorf("take unread messages: record: %w", err)
		}
		// Checked last, just before the commit: a caller that has given
		// up would never show what a later commit records as surfaced.
		if !q.Deadline.IsZero() && !time.Now().Before(q.Deadline) {
			return &letagents.Error{Kind: letagents.Unavailable, Code: letagents.CodeUnreadTooLate,
				Message: "The unread messages could not be taken within answer_within_ms; nothing was taken, take them again."}
		}
		u.Cursor = max(u.Cursor, cursor)
		return nil
	})
	return u, err
}

// Receipt is who a message has reached: when it was sent, the sessions it
// was surfaced to (first surfacing first, Latency from the send), and the
// live workers that have not surfaced it though it was sent at least
// letagents.UnreadAfter ago (and after they joined).
type Receipt struct {
	SentAt   time.Time
	SeenBy   []letagents.Delivery
	UnreadBy []letagents.AgentRef
}

// Receipts reads the receipts of messages seqs of a room as of now, in
// one statement; a message that does not exist has none in the map.
func (s *Store) Receipts(ctx context.Context, roomID string, seqs []int64, now time.Time) (map[int64]Receipt, error) {
	out := map[int64]Receipt{}
	if len(seqs) == 0 {
		return out, nil
	}
	err := s.retry(ctx, func() error {
		clear(out)
		rows, err := queryAll[receiptRow](ctx, s.pool, `
			SELECT m.seq, m.created_at, x.seen, x.id, x.display_name, x.actor_label, x.at, x.via
			FROM messages m
			LEFT JOIN LATERAL (
				SELECT true AS seen, s.id, s.display_name, s.actor_label, d.surfaced_at AS at, d.via
				FROM message_deliveries d JOIN agent_sessions s ON s.id = d.session_id
				WHERE d.room_id = m.room_id AND d.seq = m.seq
				UNION ALL
				SELECT false, s.id, s.display_name, s.actor_label, NULL, NULL
				FROM agent_sessions s
				WHERE m.created_at <= $3 AND s.room_id = m.room_id AND s.ended_at IS NULL AND s.session_kind = 'worker'
					AND s.created_at <= m.created_at AND s.id IS DISTINCT FROM m.publisher_session_id
					AND NOT EXISTS (SELECT 1 FROM message_deliveries d WHERE d.room_id = m.room_id AND d.seq = m.seq AND d.session_id = s.id)
			) x ON true
			WHERE m.room_id = $1 AND m.seq = ANY($2)
			ORDER BY m.seq, x.at, x.id`, roomID, seqs, now.Add(-letagents.UnreadAfter))
		if err != nil {
			return fmt.Errorf("read receipts: %w", err)
		}
		for _, row := range rows {
			r := out[row.Seq]
			r.SentAt = row.CreatedAt
			if row.ID != nil {
				ref := letagents.AgentRef{SessionID: *row.ID, DisplayName: *row.DisplayName, ActorLabel: *row.ActorLabel}
				if *row.Seen {
					r.SeenBy = append(r.SeenBy, letagents.Delivery{AgentRef: ref, Seq: row.Seq, SurfacedAt: *row.At,
						Via: letagents.Via(*row.Via), Latency: row.At.Sub(row.CreatedAt)})
				} else {
					r.UnreadBy = append(r.UnreadBy, ref)
				}
			}
			out[row.Seq] = r
		}
		return nil
	})
	return out, err
}

// receiptRow scans a message's receipt line: a session it was surfaced
// to (seen) or a live worker that has not surfaced it; all of x null when
// it has neither.
type receiptRow struct {
	Seq         int64      `db:"seq"`
	CreatedAt   time.Time  `db:"created_at"`
	Seen        *bool      `db:"seen"`
	ID          *int64     `db:"id"`
	DisplayName *string    `db:"display_name"`
	ActorLabel  *string    `db:"actor_label"`
	At          *time.Time `db:"at"`
	Via         *string    `db:"via"`
}

// DeliveryLatencies summarises, per session of sessionIDs, the latency
// from send to surfacing of the messages surfaced to it since since that
// were sent while it existed (history read on arrival is no latency).
// Sessions with no such delivery are left out.
func (s *Store) DeliveryLatencies(ctx context.Context, sessionIDs []int64, since time.Time) (map[int64]letagents.Latency, error) {
	out := map[int64]letagents.Latency{}
	if len(sessionIDs) == 0 {
		return out, nil
	}
	err := s.retry(ctx, func() error {
		clear(out)
		rows, err := queryAll[struct {
			SessionID int64   `db:"session_id"`
			Count     int     `db:"count"`
			P50       float64 `db:"p50"`
			P99       float64 `db:"p99"`
		}](ctx, s.pool, `
			SELECT d.session_id, count(*),
				percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.surfaced_at - m.created_at)) AS p50,
				percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM d.surfaced_at - m.created_at)) AS p99
			FROM message_deliveries d
			JOIN agent_sessions s ON s.id = d.session_id
			JOIN messages m ON m.room_id = d.room_id AND m.seq = d.seq
			WHERE d.session_id = ANY($1) AND d.surfaced_at >= $2 AND m.created_at >= s.created_at
			GROUP BY d.session_id`, sessionIDs, since)
		if err != nil {
			return fmt.Errorf("read delivery latencies: %w", err)
		}
		for _, r := range rows {
			out[r.SessionID] = letagents.Latency{Count: r.Count, P50: seconds(r.P50), P99: seconds(r.P99)}
		}
		return nil
	})
	return out, err
}

// seconds is a duration read from SQL as seconds.
func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
