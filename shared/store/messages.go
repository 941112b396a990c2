package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
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
// as a send answers it.
func (s *Store) messageByClientID(ctx context.Context, roomID, clientID string) (letagents.Message, error) {
	var row messageRow
	err := s.queryRow(ctx, `SELECT `+messageSelect+` FROM messages m `+messageJoins+`
		WHERE m.room_id = $1 AND m.client_message_id = $2`, roomID, clientID).Scan(row.dest()...)
	if err != nil {
		// Not even no rows is expected: the id's unique index just refused a
		// second message, and messages are never deleted.
		return letagents.Message{RoomID: roomID}, fmt.Errorf("read message of client_message_id %q: %w", clientID, err)
	}
	m, _ := row.message(roomID)
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

// quoteMax is letagents.QuoteMaxChars as SQL reads it.
var quoteMax = strconv.Itoa(letagents.QuoteMaxChars)

// messageSelect reads a message aliased m (a messages row) with what its
// readers see beside it, from the relations messageJoins adds after the
// FROM item m: the quote of its parent, the summary of its thread, and
// the sessions it mentions. messageRow scans it.
var messageSelect = `m.seq, m.sender, m.text, m.source, m.agent_prompt_kind, m.thread_parent_seq, m.thread_root_seq, m.created_at,
	p.sender, left(p.text, ` + quoteMax + `), length(p.text) > ` + quoteMax + `, p.source, p.created_at,
	t.reply_count, t.latest_reply_seq, t.latest_reply_at, mn.ids, mn.names, mn.labels`

const messageJoins = `
	LEFT JOIN messages p ON p.room_id = m.room_id AND p.seq = m.thread_parent_seq
	LEFT JOIN message_threads t ON t.room_id = m.room_id AND t.root_seq = m.seq
	LEFT JOIN LATERAL (SELECT array_agg(ms.id ORDER BY ms.id) AS ids, array_agg(ms.display_name ORDER BY ms.id) AS names,
		array_agg(ms.actor_label ORDER BY ms.id) AS labels
		FROM agent_sessions ms WHERE ms.id = ANY(m.mentions)) mn ON true`

// mentionNameSQL is letagents.MentionName of a session's display_name,
// as an "@Name" mention's key is compared with it.
const mentionNameSQL = `rtrim(lower(regexp_replace(display_name, '[^A-Za-z0-9._-]+', '', 'g')), '.')`

// collapsedSQL is a text column with its white space collapsed, as an
// "@[label]" mention's key is compared with it (in lower case).
func collapsedSQL(col string) string { return `regexp_replace(btrim(` + col + `), '\s+', ' ', 'g')` }

// messageRow scans messageSelect; every column may be null, as when m
// comes from a LEFT JOIN that found no message.
type messageRow struct {
	seq, parent, root    *int64
	sender, text, source *string
	kind                 *string
	createdAt            *time.Time
	quoted               quoteRow
	replies              *int
	latest               *int64
	latestAt             *time.Time
	mentions             mentionsRow
}

func (r *messageRow) dest() []any {
	d := append([]any{&r.seq, &r.sender, &r.text, &r.source, &r.kind, &r.parent, &r.root, &r.createdAt}, r.quoted.dest()...)
	return append(append(d, &r.replies, &r.latest, &r.latestAt), r.mentions.dest()...)
}

// message is the scanned message of room roomID; false when the row held
// none.
func (r *messageRow) message(roomID string) (letagents.Message, bool) {
	if r.seq == nil {
		return letagents.Message{}, false
	}
	m := letagents.Message{RoomID: roomID, Seq: *r.seq, Sender: *r.sender, Text: *r.text, CreatedAt: *r.createdAt,
		Source: deref(r.source), PromptKind: letagents.PromptKind(deref(r.kind)), ThreadParentSeq: deref(r.parent), ThreadRootSeq: deref(r.root),
		Mentions: r.mentions.refs()}
	m.ReplyTo = r.quoted.quote(m.ThreadParentSeq)
	if r.replies != nil {
		m.Thread = &letagents.ThreadSummary{ReplyCount: *r.replies, LatestReplySeq: *r.latest, LatestReplyAt: *r.latestAt}
	}
	return m, true
}

// mentionsRow scans the sessions a message mentions as three parallel
// arrays (ids, display names, actor labels), null for none.
type mentionsRow struct {
	ids           []int64
	names, labels []string
}

func (r *mentionsRow) dest() []any { return []any{&r.ids, &r.names, &r.labels} }

func (r *mentionsRow) refs() []letagents.AgentRef {
	if len(r.ids) == 0 || len(r.names) != len(r.ids) || len(r.labels) != len(r.ids) {
		return nil
	}
	out := make([]letagents.AgentRef, len(r.ids))
	for i, id := range r.ids {
		out[i] = letagents.AgentRef{SessionID: id, DisplayName: r.names[i], ActorLabel: r.labels[i]}
	}
	return out
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
	var mentioned mentionsRow
	var keys []string // nil (null) when the text mentions nobody
	if k := letagents.ParseMentions(m.Text); len(k) > 0 {
		keys = k
	}
	// A prompt-only parent is no parent: with no root found, the thread
	// shape check refuses the reply. The mentions are resolved to the
	// room's live sessions here, once: a name taken later by another
	// agent does not move them.
	err := q.QueryRow(ctx, `
		WITH next AS (
			UPDATE rooms SET last_seq = last_seq + 1 WHERE id = $1 RETURNING id, last_seq
		), mentioned AS (
			SELECT id, display_name, actor_label FROM agent_sessions
			WHERE $11::text[] IS NOT NULL AND room_id = $1 AND ended_at IS NULL AND id IS DISTINCT FROM $7
				AND (`+mentionNameSQL+` = ANY($11) OR lower(`+collapsedSQL("actor_label")+`) = ANY($11)
					OR lower(`+collapsedSQL("display_name")+`) = ANY($11))
			ORDER BY id
		), parent AS (
			SELECT coalesce(thread_root_seq, seq) AS root, sender, left(text, $10) AS text, length(text) > $10 AS truncated,
				source, created_at
			FROM messages WHERE room_id = $1 AND seq = $5 AND `+visible+`
		), ins AS (
			INSERT INTO messages (room_id, seq, sender, text, source, thread_parent_seq, thread_root_seq, created_at,
				publisher_session_id, client_message_id, agent_prompt_kind, mentions)
			SELECT id, last_seq, $2, $3, $4, $5, (SELECT root FROM parent), date_trunc('milliseconds', clock_timestamp()), $7, $8, $9,
				(SELECT array_agg(id) FROM mentioned)
			FROM next
			RETURNING seq, thread_root_seq, created_at
		), thread AS (
			INSERT INTO message_threads AS t (room_id, root_seq, reply_count, latest_reply_seq, latest_reply_at)
			SELECT $1, thread_root_seq, 1, seq, created_at FROM ins WHERE thread_root_seq IS NOT NULL
			ON CONFLICT (room_id, root_seq) DO UPDATE
			SET reply_count = t.reply_count + 1, latest_reply_seq = EXCLUDED.latest_reply_seq, latest_reply_at = EXCLUDED.latest_reply_at
		)
		SELECT i.seq, i.thread_root_seq, i.created_at, pg_notify($6, i.seq::text),
			p.sender, p.text, p.truncated, p.source, p.created_at,
			(SELECT array_agg(id) FROM mentioned), (SELECT array_agg(display_name) FROM mentioned),
			(SELECT array_agg(actor_label) FROM mentioned)
		FROM ins i LEFT JOIN parent p ON true`,
		m.RoomID, m.Sender, m.Text, source, parent, s.Channel(m.RoomID), nullInt(m.PublisherSessionID), nullString(m.ClientMessageID),
		kind, letagents.QuoteMaxChars, keys,
	).Scan(append(append([]any{&out.Seq, &root, &out.CreatedAt, nil}, quoted.dest()...), mentioned.dest()...)...)
	if root != nil {
		out.ThreadRootSeq = *root
	}
	out.ReplyTo = quoted.quote(m.ThreadParentSeq)
	out.Mentions = mentioned.refs()
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
		inner := `SELECT * FROM messages WHERE room_id = r.id AND seq > $2 AND ($4 OR ` + visible + `) ORDER BY seq LIMIT $3 + 1`
		bound := q.After
		if q.Before > 0 {
			inner = `SELECT * FROM messages WHERE room_id = r.id AND seq < $2 AND ($4 OR ` + visible + `) ORDER BY seq DESC LIMIT $3 + 1`
			bound = q.Before
		}
		rows, err := s.pool.Query(ctx, `
			SELECT r.last_seq, `+messageSelect+`
			FROM rooms r
			LEFT JOIN LATERAL (`+inner+`) m ON true `+messageJoins+`
			WHERE r.id = $1
			ORDER BY m.seq`, roomID, bound, q.Limit, q.IncludePromptOnly)
		if err != nil {
			return page, fmt.Errorf("read messages: %w", err)
		}
		defer rows.Close()
		found := false
		for rows.Next() {
			found = true
			var row messageRow
			if err := rows.Scan(append([]any{&page.LastSeq}, row.dest()...)...); err != nil {
				return page, fmt.Errorf("read messages: %w", err)
			}
			if m, ok := row.message(roomID); ok { // else the room exists and the page is empty
				page.Messages = append(page.Messages, m)
			}
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
