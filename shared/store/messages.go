package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/letagents/letagents-go/shared/letagents"
)

// SendMessage appends a message to its room and rings the room's channel.
//
// One statement does it all, so a send is one round trip: bumping the
// room's last_seq takes the next gap-free number under that row's lock, the
// insert, its event in the room's log and the NOTIFY commit with it (NOTIFY
// is delivered only on commit, so a woken reader always finds the row). A reply joins its parent's
// thread (the parent's root, or the parent itself when it is top-level),
// and the thread's reply count moves in the same statement.
//
// A message with a ClientMessageID is sent at most once per room, which
// makes a send safe to repeat when its outcome is unknown (a timeout, a
// dropped connection): when the room already holds a message of that id,
// SendMessage answers that message with created false. It does so even
// when the repeat's text differs, since the id names the send: a client
// gives every new message a new id. Like Send, it goes alone or in a
// batch of this process's sends (turns).
func (s *Store) SendMessage(ctx context.Context, m letagents.NewMessage) (msg letagents.Message, created bool, err error) {
	if err := m.Validate(); err != nil {
		return msg, false, err
	}
	rs, sent := s.sendMessageStatement(m, loneSend)
	msg, err = sent(s.sendInTurn(ctx, m.RoomID, nil, rs))
	if m.ClientMessageID == "" || !letagents.IsKind(err, letagents.Conflict) {
		return msg, err == nil, err
	}
	msg, err = s.messageByClientID(ctx, m.RoomID, m.ClientMessageID)
	return msg, false, err
}

// messageByClientID reads the message of a room sent with a client id,
// as a send answers it.
func (s *Store) messageByClientID(ctx context.Context, roomID, clientID string) (letagents.Message, error) {
	row, err := retried(ctx, s, func() (messageRow, error) {
		return queryOne[messageRow](ctx, s.pool, `SELECT `+messageSelect+` FROM messages m `+messageJoins+`
			WHERE m.room_id = $1 AND m.client_message_id = $2`, roomID, clientID)
	})
	if err != nil {
		// Not even no rows is expected: the id's unique index just refused a
		// second message, and messages are never deleted.
		return letagents.Message{RoomID: roomID}, fmt.Errorf("read message of client_message_id %q: %w", clientID, err)
	}
	m, _ := row.message()
	return m, nil
}

// quoteMax is letagents.QuoteMaxChars as SQL reads it.
var quoteMax = strconv.Itoa(letagents.QuoteMaxChars)

// messageColumns reads the columns of a messages row aliased m, as
// messageColumnsRow names them: the one list every read of messages
// (the timeline, unread, search) starts from; github_event is the GitHub
// event a line of the server's announces (letagents.GitHubLineClientIDPrefix).
const messageColumns = `m.room_id, m.seq, m.sender, m.text, m.source, m.agent_prompt_kind, m.thread_parent_seq, m.thread_root_seq, m.created_at,
	m.pinned_at, m.pinned_by, CASE WHEN m.source = 'system' AND m.client_message_id ~ '^` + letagents.GitHubLineClientIDPrefix + `[0-9]{1,18}$'
		THEN substr(m.client_message_id, length('` + letagents.GitHubLineClientIDPrefix + `') + 1)::bigint END AS github_event`

// messageColumnsRow scans messageColumns; every column may be null, as
// when m comes from a LEFT JOIN that found no message.
type messageColumnsRow struct {
	RoomID          pgtype.Text        `db:"room_id" json:"room_id"`
	Seq             pgtype.Int8        `db:"seq" json:"seq"`
	Sender          pgtype.Text        `db:"sender" json:"sender"`
	Text            pgtype.Text        `db:"text" json:"text"`
	Source          pgtype.Text        `db:"source" json:"source"`
	PromptKind      pgtype.Text        `db:"agent_prompt_kind" json:"agent_prompt_kind"`
	ThreadParentSeq pgtype.Int8        `db:"thread_parent_seq" json:"thread_parent_seq"`
	ThreadRootSeq   pgtype.Int8        `db:"thread_root_seq" json:"thread_root_seq"`
	CreatedAt       pgtype.Timestamptz `db:"created_at" json:"created_at"`
	PinnedAt        pgtype.Timestamptz `db:"pinned_at" json:"pinned_at"`
	PinnedBy        pgtype.Text        `db:"pinned_by" json:"pinned_by"`
	GitHubEvent     pgtype.Int8        `db:"github_event" json:"github_event"`
}

// targets are where messageColumns land, in their order: a hot read
// scans by position, without pgx's per-row reflection
// (TestColumnListsMatchRows holds the order to the names).
func (r *messageColumnsRow) targets() []any {
	return []any{&r.RoomID, &r.Seq, &r.Sender, &r.Text, &r.Source, &r.PromptKind, &r.ThreadParentSeq, &r.ThreadRootSeq,
		&r.CreatedAt, &r.PinnedAt, &r.PinnedBy, &r.GitHubEvent}
}

// message is the scanned message, without what is read beside it; false
// when the row held none.
func (r *messageColumnsRow) message() (letagents.Message, bool) {
	if !r.Seq.Valid {
		return letagents.Message{}, false
	}
	return letagents.Message{RoomID: r.RoomID.String, Seq: r.Seq.Int64, Sender: r.Sender.String, Text: r.Text.String,
		CreatedAt: r.CreatedAt.Time, Source: r.Source.String, PromptKind: letagents.PromptKind(r.PromptKind.String),
		ThreadParentSeq: r.ThreadParentSeq.Int64, ThreadRootSeq: r.ThreadRootSeq.Int64, PinnedAt: r.PinnedAt.Time,
		PinnedBy: r.PinnedBy.String, GitHubEvent: r.GitHubEvent.Int64}, true
}

// quoteColumns reads a reply's parent aliased p as a quote, as quoteRow
// names them.
var quoteColumns = `p.sender AS quote_sender, left(p.text, ` + quoteMax + `) AS quote_text,
	length(p.text) > ` + quoteMax + ` AS quote_truncated, p.source AS quote_source, p.created_at AS quote_created_at`

// quoteRow scans the quote of a reply's parent: its text cut to
// QuoteMaxChars, and whether it was cut; all null when the message is no
// reply.
type quoteRow struct {
	QuoteSender    pgtype.Text        `db:"quote_sender" json:"quote_sender"`
	QuoteText      pgtype.Text        `db:"quote_text" json:"quote_text"`
	QuoteTruncated pgtype.Bool        `db:"quote_truncated" json:"quote_truncated"`
	QuoteSource    pgtype.Text        `db:"quote_source" json:"quote_source"`
	QuoteCreatedAt pgtype.Timestamptz `db:"quote_created_at" json:"quote_created_at"`
}

// quote is the scanned parent, message parentSeq; nil when there was none.
func (q *quoteRow) quote(parentSeq int64) *letagents.Quote {
	if !q.QuoteSender.Valid {
		return nil
	}
	return &letagents.Quote{Seq: parentSeq, Sender: q.QuoteSender.String, Text: q.QuoteText.String, Truncated: q.QuoteTruncated.Bool,
		Source: q.QuoteSource.String, CreatedAt: q.QuoteCreatedAt.Time}
}

// messageSelect reads a message aliased m (a messages row) with what its
// readers see beside it, from the relations messageJoins adds after the
// FROM item m: the quote of its parent and the summary of its thread;
// and the sessions it mentions (mention_refs, migration 0038), asked
// for only for a message that mentions someone.
var messageSelect = messageColumns + `, ` + quoteColumns + `,
	t.reply_count, t.latest_reply_seq, t.latest_reply_at,
	CASE WHEN cardinality(m.mentions) > 0 THEN mention_refs(m.mentions) END AS mention_refs`

// mentionRefsSQL aggregates the sessions of the relation alias (id,
// display_name, actor_label) as mention_refs (migration 0038) answers
// them: a JSON array in the order of their ids, null for none.
func mentionRefsSQL(alias string) string {
	return `json_agg(json_build_object('id', ` + alias + `.id, 'display_name', ` + alias + `.display_name, 'actor_label', ` +
		alias + `.actor_label) ORDER BY ` + alias + `.id)`
}

const messageJoins = `
	LEFT JOIN LATERAL (SELECT * FROM messages p WHERE m.thread_parent_seq IS NOT NULL AND p.room_id = m.room_id AND p.seq = m.thread_parent_seq LIMIT 1) p ON true
	LEFT JOIN LATERAL (SELECT * FROM message_threads t WHERE t.room_id = m.room_id AND t.root_seq = m.seq LIMIT 1) t ON true`

// mentionNameSQL is letagents.MentionName of a session's display_name,
// as an "@Name" mention's key is compared with it.
const mentionNameSQL = `rtrim(lower(regexp_replace(display_name, '[^A-Za-z0-9._-]+', '', 'g')), '.')`

// collapsedSQL is a text column with its white space collapsed, as an
// "@[label]" mention's key is compared with it (in lower case).
func collapsedSQL(col string) string { return `regexp_replace(btrim(` + col + `), '\s+', ' ', 'g')` }

// messageRow scans messageSelect.
type messageRow struct {
	messageColumnsRow
	quoteRow
	ReplyCount     pgtype.Int4        `db:"reply_count"`
	LatestReplySeq pgtype.Int8        `db:"latest_reply_seq"`
	LatestReplyAt  pgtype.Timestamptz `db:"latest_reply_at"`
	mentionsRow
}

// targets are where messageSelect lands, in its order.
func (r *messageRow) targets() []any {
	return append(r.messageColumnsRow.targets(), &r.QuoteSender, &r.QuoteText, &r.QuoteTruncated, &r.QuoteSource,
		&r.QuoteCreatedAt, &r.ReplyCount, &r.LatestReplySeq, &r.LatestReplyAt, &r.MentionRefs)
}

// message is the scanned message; false when the row held none.
func (r *messageRow) message() (letagents.Message, bool) {
	m, ok := r.messageColumnsRow.message()
	if !ok {
		return m, false
	}
	m.Mentions = r.refs()
	m.ReplyTo = r.quote(m.ThreadParentSeq)
	if r.ReplyCount.Valid {
		m.Thread = &letagents.ThreadSummary{ReplyCount: int(r.ReplyCount.Int32), LatestReplySeq: r.LatestReplySeq.Int64, LatestReplyAt: r.LatestReplyAt.Time}
	}
	return m, true
}

// mentionsRow scans the sessions a message mentions, as mention_refs
// (migration 0038) and mentionRefsSQL give them; null for none.
type mentionsRow struct {
	MentionRefs []mentionRef `db:"mention_refs" json:"mention_refs"`
}

// mentionRef is one session of mention_refs' JSON array.
type mentionRef struct {
	ID          int64  `json:"id"`
	DisplayName string `json:"display_name"`
	ActorLabel  string `json:"actor_label"`
}

func (r *mentionsRow) refs() []letagents.AgentRef {
	if len(r.MentionRefs) == 0 {
		return nil
	}
	out := make([]letagents.AgentRef, len(r.MentionRefs))
	for i, m := range r.MentionRefs {
		out[i] = letagents.AgentRef{SessionID: m.ID, DisplayName: m.DisplayName, ActorLabel: m.ActorLabel}
	}
	return out
}

// sendMessage is SendMessage on q: inside a caller's transaction the
// message (and its NOTIFY) commit with whatever else the transaction
// writes, such as a task's status change and the line that announces it.
// Its ring is plain (sendParts.plainRing), so the transaction's rings stay
// one.
func (s *Store) sendMessage(ctx context.Context, q querier, m letagents.NewMessage) (letagents.Message, error) {
	if err := m.Validate(); err != nil {
		return letagents.Message{}, err
	}
	rs, sent := s.sendMessageStatement(m, txSend)
	return sent(rs.run(ctx, q))
}

// loneSend and txSend are the statements of sendMessageStatement, built
// once: a send on its own, which rings with its message, and one inside a
// caller's transaction (sendParts.plainRing).
var loneSend, txSend = messageSendSQL(sendParts{}), messageSendSQL(sendParts{plainRing: true})

func messageSendSQL(p sendParts) sendVariants {
	return variantsOf(p, func(p sendParts) string {
		if p.unlinked {
			return `WITH unread AS (SELECT ` + unlinkedUnread + `), ` + sendSQL(p) + `
		SELECT ` + unlinkedSentColumns + ` FROM ins i`
		}
		return `WITH ` + sendSQL(p) + `
		SELECT ` + sentColumns + ` FROM ins i LEFT JOIN parent p ON true`
	})
}

// sendVariants are a send statement's two variants: for a message that
// replies or mentions, and for an unlinked one (sendParts.unlinked).
type sendVariants struct{ linked, unlinked string }

// variantsOf builds p's statement in both variants.
func variantsOf(p sendParts, build func(sendParts) string) sendVariants {
	p.unlinked = false
	linked := build(p)
	p.unlinked = true
	return sendVariants{linked: linked, unlinked: build(p)}
}

// of is the variant for a send whose arguments sendArgs made.
func (v sendVariants) of(unlinked bool) string {
	if unlinked {
		return v.unlinked
	}
	return v.linked
}

// sendMessageStatement is the statement of a send of m, valid, and sent,
// which reads the message sent from its outcome; v is loneSend or txSend.
func (s *Store) sendMessageStatement(m letagents.NewMessage, v sendVariants) (rs *roomSend, sent func(error) (letagents.Message, error)) {
	var row sentRow
	args, unlinked := sendArgs(s, m)
	rs = &roomSend{sql: v.of(unlinked), args: args, scan: collectOne(&row)}
	return rs, func(err error) (letagents.Message, error) {
		out := letagents.Message{RoomID: m.RoomID, Seq: row.Seq, Sender: m.Sender, Text: m.Text, Source: m.Source, PromptKind: m.PromptKind,
			ThreadParentSeq: m.ThreadParentSeq, ThreadRootSeq: deref(row.ThreadRootSeq), CreatedAt: row.CreatedAt,
			ReplyTo: row.quote(m.ThreadParentSeq), Mentions: row.refs()}
		switch {
		case isNoRows(err):
			return out, letagents.RoomNotFound()
		case pgCode(err) == uniqueViolation:
			return out, letagents.Errorf(letagents.Conflict, "a message with client_message_id %q is already in this room", m.ClientMessageID)
		case pgCode(err) == foreignKeyViolation, pgCode(err) == checkViolation:
			return out, noParent(m.ThreadParentSeq)
		case err != nil:
			return out, fmt.Errorf("send message: %w", err)
		}
		return out, nil
	}
}

// noParent refuses a reply to seq, which is no message of the room (or a
// prompt-only one).
func noParent(seq int64) error {
	return letagents.Errorf(letagents.Invalid, "thread_parent_id %s is not a message in this room", letagents.MessageID(seq))
}

// sendArgs are the parameters $1…$11 of sendSQL for message m, and
// whether m is unlinked: it replies to nothing and mentions no one, so
// sendSQL's unlinked variant sends it.
func sendArgs(s *Store, m letagents.NewMessage) (args []any, unlinked bool) {
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
	keys := mentionKeys(m.Text)
	return []any{m.RoomID, m.Sender, m.Text, source, parent, s.RoomChannel(m.RoomID), nullInt(m.PublisherSessionID),
		nullString(m.ClientMessageID), kind, letagents.QuoteMaxChars, keys}, parent == nil && keys == nil
}

// mentionKeys are the keys of the names text mentions, nil for none.
func mentionKeys(text string) []string {
	if k := letagents.ParseMentions(text); len(k) > 0 {
		return k
	}
	return nil
}

// sendParts are what a statement that sends a message with more in it
// (Store.Send) puts in sendSQL's place: SQL of the sender, the source and
// the publisher's session over the relations it adds before, and a
// condition without which nothing is sent. Empty, each is the parameter
// sendArgs gives ($2, $4, $7) and the send is unconditional.
type sendParts struct {
	sender, source, publisher, cond string
	// plainRing rings as every other event does (roomEvent), with no
	// message: a send inside a larger transaction, whose events' rings
	// then stay alike and collapse into one.
	plainRing bool
	// unlinked leaves out the parent, its thread and the mentioned
	// sessions, for a message that replies to nothing and mentions no one
	// (sendArgs): set up for nothing, they cost a lone send's backend a
	// seventh of its CPU (docs/benchmark.md). Its statement must still
	// type $10 and $11, which it does not read (unlinkedUnread).
	unlinked bool
}

// publisherSQL is the publisher's session of p's send: p.publisher, or
// the message's own ($7).
func (p sendParts) publisherSQL() string { return cmp.Or(p.publisher, "$7") }

// unlinkedUnread types the parameters an unlinked send's statement does
// not read, in the select list of its CTE unread, which nothing reads, so
// that it never runs (as checkedSQL's variants type theirs).
const unlinkedUnread = `$10::integer, $11::text[]`

// sendSQL is the WITH list that appends message $1…$11 (sendArgs) to its
// room: next bumps the room's last_seq, taking the next gap-free number
// under that row's lock, ins inserts it and rings the room's channel
// with it (loneRingSQL; logged rings instead, plainly, with p.plainRing),
// logged logs its event, thread moves its thread's counters. parent is
// the message it replies to, mentioned the room's live sessions its text
// mentions; p.unlinked has neither, nor thread.
//
// A prompt-only parent is no parent: with no root found, the thread
// shape check refuses the reply. The mentions are resolved to the room's
// live sessions here, once: a name taken later by another agent does not
// move them. A data-modifying WITH runs to the end whatever the query
// reads.
func sendSQL(p sendParts) string {
	where := ""
	if p.cond != "" {
		where = " AND (" + p.cond + ")"
	}
	publisher := p.publisherSQL()
	ring := ", pg_notify($6, " + loneRingSQL + ")"
	if p.unlinked {
		ring = ", pg_notify($6, " + unlinkedRingSQL + ")"
	}
	if p.plainRing {
		ring = ""
	}
	event := roomEvent{kind: letagents.EventMessage, room: "$1", channel: "$6", set: ", last_seq = last_seq + 1", ref: "last_seq", where: where,
		ringsItself: !p.plainRing}.with()
	if p.unlinked {
		return event + `,
		ins AS (` + insertSQL(p, "NULL", "NULL") + ring + `
		)`
	}
	return event + `,
		mentioned AS (
			SELECT id, display_name, actor_label FROM agent_sessions
			WHERE $11::text[] IS NOT NULL AND room_id = $1 AND ended_at IS NULL AND id IS DISTINCT FROM ` + publisher + `
				AND (` + mentionNameSQL + ` = ANY($11) OR lower(` + collapsedSQL("actor_label") + `) = ANY($11)
					OR lower(` + collapsedSQL("display_name") + `) = ANY($11))
			ORDER BY id
		), parent AS (
			SELECT coalesce(thread_root_seq, seq) AS root, sender, left(text, $10) AS text, length(text) > $10 AS truncated,
				source, created_at
			FROM messages WHERE room_id = $1 AND seq = $5 AND ` + visible + `
		), ins AS (` + insertSQL(p, "(SELECT root FROM parent)", "(SELECT array_agg(id) FROM mentioned)") + ring + `
		), thread AS (
			INSERT INTO message_threads AS t (room_id, root_seq, reply_count, latest_reply_seq, latest_reply_at)
			SELECT $1, thread_root_seq, 1, seq, created_at FROM ins WHERE thread_root_seq IS NOT NULL
			ON CONFLICT (room_id, root_seq) DO UPDATE
			SET reply_count = t.reply_count + 1, latest_reply_seq = EXCLUDED.latest_reply_seq, latest_reply_at = EXCLUDED.latest_reply_at
		)`
}

// insertSQL is sendSQL's insert of the message, its thread's root and
// its mentioned sessions' ids SQL over the CTEs before it, up to the end
// of its RETURNING list.
func insertSQL(p sendParts, root, mentions string) string {
	return `
			INSERT INTO messages AS m (room_id, seq, sender, text, source, thread_parent_seq, thread_root_seq, created_at,
				publisher_session_id, client_message_id, agent_prompt_kind, mentions)
			SELECT id, last_seq, ` + cmp.Or(p.sender, "$2") + `, $3, ` + cmp.Or(p.source, "$4") + `, $5, ` + root + `,
				date_trunc('milliseconds', clock_timestamp()), ` + p.publisherSQL() + `, $8, $9, ` + mentions + `
			FROM next
			RETURNING seq, sender, source, publisher_session_id, thread_root_seq, created_at`
}

// sentColumns reads what sentRow scans from ins i and parent p;
// unlinkedSentColumns the same of an unlinked send, from ins i alone.
var sentColumns = `i.seq, i.thread_root_seq, i.created_at, ` + sentQuoteColumns
var unlinkedSentColumns = `i.seq, i.thread_root_seq, i.created_at, ` + unlinkedQuoteColumns

// unlinkedQuoteColumns are sentQuoteColumns of an unlinked send: no
// quote, no one mentioned.
const unlinkedQuoteColumns = noQuoteColumns + `, NULL::json AS mention_refs`

// sentQuoteColumns read, in a send's statement, the quote of the parent p
// (sendSQL's parent, its text cut already) and the sessions mentioned,
// as quoteRow and mentionsRow name them.
var sentQuoteColumns = `p.sender AS quote_sender, p.text AS quote_text, p.truncated AS quote_truncated, p.source AS quote_source,
	p.created_at AS quote_created_at,
	(SELECT ` + mentionRefsSQL("mentioned") + ` FROM mentioned) AS mention_refs`

// ringSQL is the payload of the ring of a message's send, in the
// RETURNING of its insert (the new row m): the room's newest number,
// which is the message's, then, when the payload stays within ringMax,
// a space and the message as a read of the room would give it at the
// commit, as JSON of messageRow's columns and its event's number as
// "event" (ParseRing). beside is SQL of the quote's and the mentioned
// sessions' columns (as sentQuoteColumns names them) and of the event,
// over from. Nothing reads the message before that commit, so it has no
// thread and no pin yet. A text longer than a payload is not made JSON
// only to be dropped (a send's text may be 1 MiB).
func ringSQL(beside, from string) string {
	return `(SELECT m.seq || CASE WHEN octet_length(r.j) <= ` + strconv.Itoa(ringMax) + ` THEN ' ' || r.j ELSE '' END
	FROM (SELECT CASE WHEN octet_length(m.text) <= ` + strconv.Itoa(ringMax) + ` THEN row_to_json(x)::text END AS j
	FROM (SELECT ` + messageColumns + `, ` + beside + ` FROM ` + from + `) x) r)`
}

// loneRingSQL is sendSQL's ringSQL: its parent's quote, its mentioned
// sessions, and next's last_event.
var loneRingSQL = ringSQL(sentQuoteColumns+`, (SELECT last_event FROM next) AS event`, `(SELECT) AS one LEFT JOIN parent p ON true`)

// unlinkedRingSQL is loneRingSQL of an unlinked send, the same JSON.
var unlinkedRingSQL = ringSQL(unlinkedQuoteColumns+`, (SELECT last_event FROM next) AS event`, `(SELECT) AS one`)

// noQuoteColumns are sentQuoteColumns' quote of a message that quotes
// nothing.
const noQuoteColumns = `NULL::text AS quote_sender, NULL::text AS quote_text, NULL::boolean AS quote_truncated,
	NULL::text AS quote_source, NULL::timestamptz AS quote_created_at`

// ringMax bounds the message's JSON in a ring: PostgreSQL refuses a
// payload of 8,000 bytes or more, and the number and its space come first.
const ringMax = 7900

// sentRow scans what a send learns of the message it added.
type sentRow struct {
	Seq           int64     `db:"seq"`
	ThreadRootSeq *int64    `db:"thread_root_seq"`
	CreatedAt     time.Time `db:"created_at"`
	quoteRow
	mentionsRow
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

// messagePageSQL reads a page of a room's messages ($1) after the message
// $2, or before it when before is set, at most $3 of them, with prompt-only
// messages when $4; with the room's last number, and one row with no
// message when the page is empty. One message more than the page is read,
// to tell whether more lie beyond it: hidden messages leave gaps. It runs
// after pageSettings, in the same transaction, so that the page is read in
// the primary key's order whatever the statistics say.
func messagePageSQL(before bool) string {
	op, order := ">", ""
	if before {
		op, order = "<", " DESC"
	}
	return `
		SELECT r.last_seq, ` + messageSelect + `
		FROM rooms r
		LEFT JOIN LATERAL (
			SELECT * FROM messages x WHERE x.room_id = r.id AND x.seq ` + op + ` $2 AND ($4 OR ` + visible + `)
			ORDER BY x.seq` + order + ` LIMIT $3 + 1
		) m ON true ` + messageJoins + `
		WHERE r.id = $1
		ORDER BY m.seq`
}

// pageSettings, run just before a page's statement in its transaction,
// plan it without bitmap and sequential scans, and on its generic plan.
// Right after a burst of sends into a room, before autovacuum analyses
// the table, the statistics still say the room is almost empty, and the
// planner read the page through a bitmap of the whole tail and sorted it:
// its time grew with the room. With those two off, a walk of the key in
// the page's order is its one way (a sort of the walk costs more), and
// the generic plan is made once a connection instead of at every read.
// Migrations 0026 and 0033 had the page in a function with those
// settings, message_page, which cost a read 60 µs more than the same walk
// in the statement: its rows were gathered in a tuplestore first.
const pageSettings = genericPlan + `, set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)`

// forwardPageSQL and backwardPageSQL are messagePageSQL, built once: a
// read is the statement the service runs most.
var forwardPageSQL, backwardPageSQL = messagePageSQL(false), messagePageSQL(true)

// pageRow is a row of messagePageSQL.
type pageRow struct {
	LastSeq int64 `db:"last_seq"`
	messageRow
}

func (r *pageRow) targets() []any { return append([]any{&r.LastSeq}, r.messageRow.targets()...) }

// pageFirstCap is how many messages a page's slice is made for at its
// first message: growing it from one by doubling was a read's largest
// garbage. A page of up to 63 takes one allocation, one of 100 (what the
// web page and the MCP server read) two; a poll's backlog of a few
// takes 17 KB, where a woken poll, answered from its ring, and an empty
// page take nothing.
const pageFirstCap = 64

// Messages reads one page of a room's timeline, oldest first, in one round
// trip that also tells a missing room from an empty one.
func (s *Store) Messages(ctx context.Context, roomID string, q MessageQuery) (letagents.MessagePage, error) {
	return retried(ctx, s, func() (letagents.MessagePage, error) {
		var page letagents.MessagePage
		if q.Limit < 1 || q.Limit > letagents.MaxPageSize {
			return page, letagents.Errorf(letagents.Invalid, "limit must be between 1 and %d", letagents.MaxPageSize)
		}
		bound := q.After
		if q.Before > 0 {
			bound = q.Before
		}
		var row pageRow
		sql := forwardPageSQL
		if q.Before > 0 {
			sql = backwardPageSQL
		}
		b := &pgx.Batch{}
		b.Queue(pageSettings)
		b.Queue(sql, roomID, bound, q.Limit, q.IncludePromptOnly)
		br := s.pool.SendBatch(ctx, b)
		found := false
		_, err := br.Exec()
		var rows pgx.Rows
		if err == nil {
			rows, err = br.Query()
		}
		if err == nil {
			_, err = pgx.ForEachRow(rows, row.targets(), func() error {
				found, page.LastSeq = true, row.LastSeq
				if m, ok := row.message(); ok { // else the room exists and the page is empty
					if page.Messages == nil {
						page.Messages = make([]letagents.Message, 0, min(q.Limit+1, pageFirstCap))
					}
					page.Messages = append(page.Messages, m)
				}
				return nil
			})
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
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
