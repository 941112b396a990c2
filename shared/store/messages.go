package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// SendMessage appends a message to its room and rings the room's channel.
//
// One statement does it all, so a send is one round trip: bumping the
// room's last_seq takes the next gap-free number under that row's lock, the
// insert and the NOTIFY commit with it (NOTIFY is delivered only on commit,
// so a woken reader always finds the row). A reply joins its parent's
// thread (the parent's root, or the parent itself when it is top-level),
// and the thread's reply count moves in the same statement.
//
// A message with a ClientMessageID is sent at most once per room, which
// makes a send safe to repeat when its outcome is unknown (a timeout, a
// dropped connection): when the room already holds a message of that id,
// SendMessage answers that message with created false. It does so even
// when the repeat's text differs, since the id names the send: a client
// gives every new message a new id.
func (s *Store) SendMessage(ctx context.Context, m letagents.NewMessage) (msg letagents.Message, created bool, err error) {
	msg, err = s.sendMessage(ctx, s.pool, m)
	if m.ClientMessageID == "" || !letagents.IsCode(err, letagents.Conflict) {
		return msg, err == nil, err
	}
	msg, err = s.messageByClientID(ctx, m.RoomID, m.ClientMessageID)
	return msg, false, err
}

// messageByClientID reads the message of a room sent with a client id,
// with the quote of its parent as a send answers it.
func (s *Store) messageByClientID(ctx context.Context, roomID, clientID string) (letagents.Message, error) {
	m := letagents.Message{RoomID: roomID}
	var source, kind *string
	var parent, root *int64
	var quoted quoteRow
	err := s.queryRow(ctx, `
		SELECT m.seq, m.sender, m.text, m.source, m.agent_prompt_kind, m.thread_parent_seq, m.thread_root_seq, m.created_at,
			p.sender, left(p.text, $3), length(p.text) > $3, p.source, p.created_at
		FROM messages m LEFT JOIN messages p ON p.room_id = m.room_id AND p.seq = m.thread_parent_seq
		WHERE m.room_id = $1 AND m.client_message_id = $2`, roomID, clientID, letagents.QuoteMaxChars,
	).Scan(append([]any{&m.Seq, &m.Sender, &m.Text, &source, &kind, &parent, &root, &m.CreatedAt}, quoted.dest()...)...)
	if err != nil {
		// Not even no rows is expected: the id's unique index just refused a
		// second message, and messages are never deleted.
		return m, fmt.Errorf("read message of client_message_id %q: %w", clientID, err)
	}
	m.Source, m.PromptKind, m.ThreadParentSeq, m.ThreadRootSeq = deref(source), letagents.PromptKind(deref(kind)), deref(parent), deref(root)
	m.ReplyTo = quoted.quote(m.ThreadParentSeq)
	return m, nil
}

// quoteRow scans the columns of a reply's parent as a quote: sender,
// text cut to QuoteMaxChars, whether it was cut, source, created_at; all
// null when the message is no reply.
type quoteRow struct {
	sender, text, source *string
	truncated            *bool
	at                   *time.Time
}

func (q *quoteRow) dest() []any { return []any{&q.sender, &q.text, &q.truncated, &q.source, &q.at} }

// quote is the scanned parent, message parentSeq; nil when there was none.
func (q *quoteRow) quote(parentSeq int64) *letagents.Quote {
	if q.sender == nil {
		return nil
	}
	return &letagents.Quote{Seq: parentSeq, Sender: *q.sender, Text: *q.text, Truncated: *q.truncated,
		Source: deref(q.source), CreatedAt: *q.at}
}

// sendMessage is SendMessage on q: inside a caller's transaction the
// message (and its NOTIFY) commit with whatever else the transaction
// writes, such as a task's status change and the line that announces it.
func (s *Store) sendMessage(ctx context.Context, q querier, m letagents.NewMessage) (letagents.Message, error) {
	if err := m.Validate(); err != nil {
		return letagents.Message{}, err
	}
	var source, kind, parent any
	if m.Source != "" {
		source = m.Source
	}
	if m.PromptKind != "" {
		kind = string(m.PromptKind)
	}
	if m.ThreadParentSeq > 0 {
		parent = m.ThreadParentSeq
	}
	out := letagents.Message{RoomID: m.RoomID, Sender: m.Sender, Text: m.Text, Source: m.Source, PromptKind: m.PromptKind,
		ThreadParentSeq: m.ThreadParentSeq}
	var root *int64
	var quoted quoteRow
	// A prompt-only parent is no parent: with no root found, the thread
	// shape check refuses the reply.
	err := q.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_seq = last_seq + 1 WHERE id = $1 RETURNING id, last_seq
		), parent AS (
			SELECT coalesce(thread_root_seq, seq) AS root, sender, left(text, $10) AS text, length(text) > $10 AS truncated,
				source, created_at
			FROM messages WHERE room_id = $1 AND seq = $5 AND `+visible+`
		), ins AS (
			INSERT INTO messages (room_id, seq, sender, text, source, thread_parent_seq, thread_root_seq, created_at,
				publisher_session_id, client_message_id, agent_prompt_kind)
			SELECT id, last_seq, $2, $3, $4, $5, (SELECT root FROM parent), date_trunc('milliseconds', clock_timestamp()), $7, $8, $9
			FROM next
			RETURNING seq, thread_root_seq, created_at
		), thread AS (
			INSERT INTO message_threads AS t (room_id, root_seq, reply_count, latest_reply_seq, latest_reply_at)
			SELECT $1, thread_root_seq, 1, seq, created_at FROM ins WHERE thread_root_seq IS NOT NULL
			ON CONFLICT (room_id, root_seq) DO UPDATE
			SET reply_count = t.reply_count + 1, latest_reply_seq = EXCLUDED.latest_reply_seq, latest_reply_at = EXCLUDED.latest_reply_at
		)
		SELECT i.seq, i.thread_root_seq, i.created_at, pg_notify($6, i.seq::text),
			p.sender, p.text, p.truncated, p.source, p.created_at
		FROM ins i LEFT JOIN parent p ON true`,
		m.RoomID, m.Sender, m.Text, source, parent, s.Channel(m.RoomID), nullInt(m.PublisherSessionID), nullString(m.ClientMessageID),
		kind, letagents.QuoteMaxChars,
	).Scan(append([]any{&out.Seq, &root, &out.CreatedAt, nil}, quoted.dest()...)...)
	if root != nil {
		out.ThreadRootSeq = *root
	}
	out.ReplyTo = quoted.quote(m.ThreadParentSeq)
	switch {
	case isNoRows(err):
		return out, letagents.RoomNotFound()
	case pgCode(err) == uniqueViolation:
		return out, letagents.Errorf(letagents.Conflict, "a message with client_message_id %q is already in this room", m.ClientMessageID)
	case pgCode(err) == foreignKeyViolation, pgCode(err) == checkViolation:
		return out, letagents.Errorf(letagents.Invalid, "thread_parent_id %s is not a message in this room", letagents.MessageID(m.ThreadParentSeq))
	case err != nil:
		return out, fmt.Errorf("send message: %w", err)
	}
	return out, nil
}

// BeforeLatest as MessageQuery.Before asks for the newest page.
const BeforeLatest = math.MaxInt64

// MessageQuery selects a page of a room's timeline: the Limit messages
// after After, or, when Before is set, the Limit messages just before it.
// Prompt-only messages (kind auto, no text) are left out unless
// IncludePromptOnly, as the original leaves them out.
type MessageQuery struct {
	After             int64
	Before            int64 // 0: read forward from After; BeforeLatest: the newest page
	Limit             int
	IncludePromptOnly bool
}

// visible is the SQL condition of a messages row that is not prompt-only.
const visible = `(agent_prompt_kind IS DISTINCT FROM 'auto' OR text ~ '\S')`

// Messages reads one page of a room's timeline, oldest first, in one round
// trip that also tells a missing room from an empty one.
func (s *Store) Messages(ctx context.Context, roomID string, q MessageQuery) (letagents.MessagePage, error) {
	return retried(ctx, s, func() (letagents.MessagePage, error) {
		var page letagents.MessagePage
		if q.Limit < 1 || q.Limit > letagents.MaxPageSize {
			return page, letagents.Errorf(letagents.Invalid, "limit must be between 1 and %d", letagents.MaxPageSize)
		}
		// One message more than the page, to tell whether more lie beyond
		// it: hidden messages leave gaps in what is read.
		inner := `SELECT * FROM messages WHERE room_id = r.id AND seq > $2 AND ($5 OR ` + visible + `) ORDER BY seq LIMIT $3 + 1`
		bound := q.After
		if q.Before > 0 {
			inner = `SELECT * FROM messages WHERE room_id = r.id AND seq < $2 AND ($5 OR ` + visible + `) ORDER BY seq DESC LIMIT $3 + 1`
			bound = q.Before
		}
		// A reply brings a quote of its parent; a root its thread's summary.
		rows, err := s.pool.Query(ctx, `
			SELECT r.last_seq, m.seq, m.sender, m.text, m.source, m.agent_prompt_kind, m.thread_parent_seq, m.thread_root_seq, m.created_at,
				p.sender, left(p.text, $4), length(p.text) > $4, p.source, p.created_at,
				t.reply_count, t.latest_reply_seq, t.latest_reply_at
			FROM rooms r
			LEFT JOIN LATERAL (`+inner+`) m ON true
			LEFT JOIN messages p ON p.room_id = m.room_id AND p.seq = m.thread_parent_seq
			LEFT JOIN message_threads t ON t.room_id = m.room_id AND t.root_seq = m.seq
			WHERE r.id = $1
			ORDER BY m.seq`, roomID, bound, q.Limit, letagents.QuoteMaxChars, q.IncludePromptOnly)
		if err != nil {
			return page, fmt.Errorf("read messages: %w", err)
		}
		defer rows.Close()
		found := false
		for rows.Next() {
			found = true
			var (
				seq, parent, root    *int64
				sender, text, source *string
				kind                 *string
				createdAt            *time.Time
				quoted               quoteRow
				latestAt             *time.Time
				replies              *int
				latest               *int64
			)
			dest := append([]any{&page.LastSeq, &seq, &sender, &text, &source, &kind, &parent, &root, &createdAt}, quoted.dest()...)
			if err := rows.Scan(append(dest, &replies, &latest, &latestAt)...); err != nil {
				return page, fmt.Errorf("read messages: %w", err)
			}
			if seq == nil {
				continue // the room exists and the page is empty
			}
			m := letagents.Message{RoomID: roomID, Seq: *seq, Sender: *sender, Text: *text, CreatedAt: *createdAt,
				Source: deref(source), PromptKind: letagents.PromptKind(deref(kind)), ThreadParentSeq: deref(parent), ThreadRootSeq: deref(root)}
			m.ReplyTo = quoted.quote(m.ThreadParentSeq)
			if replies != nil {
				m.Thread = &letagents.ThreadSummary{ReplyCount: *replies, LatestReplySeq: *latest, LatestReplyAt: *latestAt}
			}
			page.Messages = append(page.Messages, m)
		}
		if err := rows.Err(); err != nil {
			return page, fmt.Errorf("read messages: %w", err)
		}
		if !found {
			return page, letagents.RoomNotFound()
		}
		if len(page.Messages) > q.Limit {
			if q.Before > 0 {
				page.Messages, page.HasOlder = page.Messages[1:], true
			} else {
				page.Messages, page.HasMore = page.Messages[:q.Limit], true
			}
		}
		return page, nil
	})
}

// HasSent reports whether a message of the room was sent under sender,
// whatever its case.
func (s *Store) HasSent(ctx context.Context, roomID, sender string) (bool, error) {
	var sent bool
	err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE room_id = $1 AND lower(sender) = lower($2))`,
		roomID, sender).Scan(&sent)
	if err != nil {
		return false, fmt.Errorf("find messages by sender: %w", err)
	}
	return sent, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
