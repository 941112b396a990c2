package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// searchFacts says, before a search, whether its query has a word that
// must appear (querytree is empty or 'T' when it has none: nothing an
// index can serve), how many of its rooms do not exist, and how many
// messages they hold.
const searchFacts = `
	SELECT querytree(websearch_to_tsquery('simple', $1)) NOT IN ('', 'T'),
		(SELECT count(*) FROM unnest($2::text[]) u (id) WHERE NOT EXISTS (SELECT 1 FROM rooms r WHERE r.id = u.id)),
		(SELECT coalesce(sum(last_seq), 0) FROM rooms WHERE id = ANY ($2::text[]))`

// searchSQL finds a page of hits in the messages of %s. Its parameters:
// $1 the query text, $2 the rooms, $3 sender, $4 source, $5 a message of
// the thread, $6 since, $7 until, $8 the page size (one more is read, to
// tell has_more), $9 ts_headline's options, $10..$13 the cursor (rank,
// created_at, room_id, seq); a filter left out is NULL.
//
// Hits are ordered by rank, then newest first, then by room and number,
// all descending, so one row comparison continues after the cursor. The
// rank is ts_rank_cd with its length normalisation (1): a long log that
// mentions a word once ranks below a short line about it. Snippets are
// made for the page's rows only: ts_headline reparses the text, which
// costs far more than matching. It reads the text as the index does
// (message_search_text, whose stand-ins for < and > are turned back
// here), so it highlights what the index matched.
const searchSQL = `
	WITH hits AS (
		SELECT ` + messageColumns + `,
			ts_rank_cd(m.search_vector, websearch_to_tsquery('simple', $1), 1) AS rank
		FROM %s m
		WHERE m.room_id = ANY ($2::text[])
			AND m.search_vector @@ websearch_to_tsquery('simple', $1)
			AND ($3::text IS NULL OR lower(m.sender) = lower($3::text))
			AND ($4::text IS NULL OR m.source = $4::text)
			AND ($5::bigint IS NULL OR coalesce(m.thread_root_seq, m.seq) = (
				SELECT coalesce(t.thread_root_seq, t.seq) FROM messages t WHERE t.room_id = ($2::text[])[1] AND t.seq = $5::bigint))
			AND ($6::timestamptz IS NULL OR m.created_at >= $6::timestamptz)
			AND ($7::timestamptz IS NULL OR m.created_at < $7::timestamptz)
			AND ($10::real IS NULL OR (ts_rank_cd(m.search_vector, websearch_to_tsquery('simple', $1), 1), m.created_at, m.room_id, m.seq)
				< ($10::real, $11::timestamptz, $12::text, $13::bigint))
		ORDER BY rank DESC, m.created_at DESC, m.room_id DESC, m.seq DESC
		LIMIT $8::integer
	)
	SELECT *,
		translate(ts_headline('simple', message_search_text(text), websearch_to_tsquery('simple', $1), $9::text), E'\uE000\uE001', '<>')
			AS snippet
	FROM hits
	ORDER BY rank DESC, created_at DESC, room_id DESC, seq DESC`

// The two ways a search reads: through the GIN index, or room by room,
// testing each of the rooms' messages. The planner prefers the index
// whenever it narrows the rooms' rows, but for a word in a good share of
// all messages that means gathering a hundred thousand entries to keep
// a hundred (measured on a million messages: 9 ms, and 19 ms for two such
// words, against 3 to 8 ms to test a room's thousand messages). So the
// planner is asked (searchEstimate) how many messages in all match, and
// the rooms are read one by one when that is over scanRatio times what
// they hold. The OFFSET 0 fence keeps the planner from pushing the match
// into the scan.
var (
	searchByIndex = fmt.Sprintf(searchSQL, "messages")
	searchByRooms = fmt.Sprintf(searchSQL, "(SELECT * FROM messages WHERE room_id = ANY ($2::text[]) OFFSET 0)")
)

// searchEstimate plans, without running, the match of a query over all
// messages: the plan's rows are the planner's estimate of its matches.
const searchEstimate = `EXPLAIN (FORMAT JSON) SELECT 1 FROM messages WHERE search_vector @@ websearch_to_tsquery('simple', $1)`

// scanRatio is how many matches in all, per message of the rooms
// searched, make reading the rooms cheaper than the index: an index
// entry costs about a twentieth of testing a message.
const scanRatio = 20

// Snippet shape: ts_headline's fragments of about 10 to 30 words, at most
// two, joined by an ellipsis.
const snippetOptions = "MaxWords=30, MinWords=10, ShortWord=2, MaxFragments=2, FragmentDelimiter=\" … \""

// Search finds the messages of rooms that match q, a page of them, best
// first (letagents.SearchPage says the order). Every room of rooms must
// exist (RoomNotFound otherwise); with none it finds nothing. A query
// with no word that must appear is refused, as is a thread filter over
// more than one room.
//
// A search is three statements: what the query and its rooms are
// (searchFacts), how many messages the planner expects it to match
// (searchEstimate), then its hits, read through the index or room by
// room (searchByRooms says which). The second is planned with its own values
// (QueryExecModeExec, an unnamed statement), never a cached generic plan:
// how common its words are decides the plan.
func (s *Store) Search(ctx context.Context, rooms []string, q letagents.SearchQuery) (letagents.SearchPage, error) {
	var page letagents.SearchPage
	if err := q.Validate(); err != nil {
		return page, err
	}
	if q.ThreadSeq > 0 && len(rooms) != 1 {
		return page, letagents.SearchError(letagents.CodeSearchFilterInvalid, "thread needs a single room: search that room")
	}
	marks := newHighlightMarks()
	args := []any{pgx.QueryExecModeExec, q.Text, rooms, nullString(q.Sender), nullString(q.Source), nullInt(q.ThreadSeq),
		nullTime(q.Since), nullTime(q.Until), q.Limit + 1, marks.options() + ", " + snippetOptions, nil, nil, nil, nil}
	if c := q.After; c != nil {
		args[10], args[11], args[12], args[13] = c.Rank, c.CreatedAt, c.RoomID, c.Seq
	}
	return retried(ctx, s, func() (letagents.SearchPage, error) {
		page := letagents.SearchPage{}
		var findable bool
		var missing, held int64
		if err := s.pool.QueryRow(ctx, searchFacts, q.Text, rooms).Scan(&findable, &missing, &held); err != nil {
			return page, fmt.Errorf("search messages: %w", err)
		}
		switch {
		case missing > 0:
			return page, letagents.RoomNotFound()
		case !findable:
			return page, letagents.SearchError(letagents.CodeSearchQueryInvalid,
				"q has no word that must appear: -word alone, or an or with -word, would match almost every message")
		case len(rooms) == 0:
			return page, nil
		}
		byRooms, err := s.searchByRooms(ctx, q.Text, held)
		if err != nil {
			return page, err
		}
		sql := searchByIndex
		if byRooms {
			sql = searchByRooms
		}
		rows, err := queryAll[searchRow](ctx, s.pool, sql, args...)
		if err != nil {
			return page, fmt.Errorf("search messages: %w", err)
		}
		for _, row := range rows {
			m, _ := row.message()
			// A hit has always gone out without its prompt kind: kept so,
			// as a search answer is wire output.
			m.PromptKind = ""
			page.Hits = append(page.Hits, letagents.SearchHit{Message: m, Rank: row.Rank, Snippet: marks.split(row.Snippet)})
		}
		if len(page.Hits) > q.Limit {
			page.Hits, page.HasMore = page.Hits[:q.Limit], true
		}
		return page, nil
	})
}

// searchRow scans a row of searchSQL: a message as messageColumns reads
// it, its rank, and its snippet with highlightMarks in it.
type searchRow struct {
	messageColumnsRow
	Rank    float32 `db:"rank"`
	Snippet string  `db:"snippet"`
}

// searchByRooms says whether a search of rooms that hold held messages
// reads them room by room: when the planner expects the query to match
// over scanRatio times as many messages in all (searchEstimate).
func (s *Store) searchByRooms(ctx context.Context, query string, held int64) (bool, error) {
	if s.byRooms != nil {
		return *s.byRooms, nil
	}
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	var js []byte
	if err := s.pool.QueryRow(ctx, searchEstimate, pgx.QueryExecModeExec, query).Scan(&js); err != nil {
		return false, fmt.Errorf("estimate search matches: %w", err)
	}
	if err := json.Unmarshal(js, &plan); err != nil || len(plan) == 0 {
		return false, fmt.Errorf("estimate search matches: read plan %q: %w", js, err)
	}
	return plan[0].Plan.Rows > scanRatio*float64(held), nil
}

// highlightMarks are the markers ts_headline puts around the words it
// found: random for each search, so no message can hold them by design
// (one that held them by chance would only be split in odd places: the
// snippet is plain text, never markup).
type highlightMarks struct{ start, stop string }

func newHighlightMarks() highlightMarks {
	// Letters and digits only: ts_headline's option parser takes them
	// unquoted.
	nonce := rand.Text()
	return highlightMarks{start: "hlstart" + nonce, stop: "hlstop" + nonce}
}

func (m highlightMarks) options() string {
	return "StartSel=" + m.start + ", StopSel=" + m.stop
}

// split cuts a headline at its markers into plain text parts.
func (m highlightMarks) split(headline string) []letagents.SnippetPart {
	var parts []letagents.SnippetPart
	add := func(text string, match bool) {
		if text == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Match == match {
			parts[n-1].Text += text
			return
		}
		parts = append(parts, letagents.SnippetPart{Text: text, Match: match})
	}
	for headline != "" {
		before, rest, found := strings.Cut(headline, m.start)
		add(before, false)
		if !found {
			break
		}
		hit, after, _ := strings.Cut(rest, m.stop)
		add(hit, true)
		headline = after
	}
	return parts
}

// MergeSearchPending merges what the search index holds in its pending
// list (migration 0036) into the index, and says how many of the list's
// pages it merged. The liveness sweeper does it every sweep, so that
// only a minute's words wait there: a send merges the list itself only
// when it reaches its limit within the minute, and a search reads
// through that minute's words at most.
func (s *Store) MergeSearchPending(ctx context.Context) (int, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT gin_clean_pending_list('messages_search_idx'::regclass)`).Scan(&n); err != nil {
		return 0, fmt.Errorf("merge the search index's pending list: %w", err)
	}
	return n, nil
}
