package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// searchSQL finds a page of hits. Its parameters: $1 the query text, $2
// the rooms, $3 sender, $4 source, $5 a message of the thread, $6 since,
// $7 until, $8 the page size (one more is read, to tell has_more), $9
// ts_headline's options, $10..$13 the cursor (rank, created_at, room_id,
// seq); a filter left out is NULL.
//
// The first columns say whether the query has a word that must appear
// (querytree is ” or 'T' when it has none: nothing the index can serve)
// and how many of the rooms do not exist; the rest are a hit's, NULL when
// there are none. Hits are ordered by rank, then newest first, then by
// room and number, all descending, so one row comparison continues after
// the cursor. The rank is ts_rank_cd with its length normalisation (1): a
// long log that mentions a word once ranks below a short line about it.
// Snippets are made for the page's rows only: ts_headline reparses the
// text, which costs far more than matching. It reads the text as the
// index does (message_search_text, whose stand-ins for < and > are turned
// back here), so it highlights what the index matched.
const searchSQL = `
	WITH hits AS (
		SELECT m.room_id, m.seq, m.sender, m.text, m.source, m.thread_parent_seq, m.thread_root_seq, m.created_at,
			ts_rank_cd(m.search_vector, websearch_to_tsquery('simple', $1), 1) AS rank
		FROM messages m
		WHERE m.room_id = ANY ($2::text[])
			AND querytree(websearch_to_tsquery('simple', $1)) NOT IN ('', 'T')
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
	SELECT f.tree NOT IN ('', 'T'), f.missing,
		h.room_id, h.seq, h.sender, h.text, h.source, h.thread_parent_seq, h.thread_root_seq, h.created_at, h.rank,
		translate(ts_headline('simple', message_search_text(h.text), websearch_to_tsquery('simple', $1), $9::text), E'\uE000\uE001', '<>')
	FROM (SELECT querytree(websearch_to_tsquery('simple', $1)) AS tree,
			(SELECT count(*) FROM unnest($2::text[]) u (id) WHERE NOT EXISTS (SELECT 1 FROM rooms r WHERE r.id = u.id)) AS missing) f
	LEFT JOIN hits h ON true
	ORDER BY h.rank DESC, h.created_at DESC, h.room_id DESC, h.seq DESC`

// Snippet shape: ts_headline's fragments of about 10 to 30 words, at most
// two, joined by an ellipsis.
const snippetOptions = "MaxWords=30, MinWords=10, ShortWord=2, MaxFragments=2, FragmentDelimiter=\" … \""

// Search finds the messages of rooms that match q, a page of them, best
// first (letagents.SearchPage says the order). Every room of rooms must
// exist (RoomNotFound otherwise); with none it finds nothing. A query
// with no word that must appear is refused, as is a thread filter over
// more than one room.
//
// Each search is planned with its own values (QueryExecModeExec, an
// unnamed statement), never a cached generic plan: how common the words
// are decides whether the index or the rooms' rows are read first.
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
		rows, err := s.pool.Query(ctx, searchSQL, args...)
		if err != nil {
			return page, fmt.Errorf("search messages: %w", err)
		}
		defer rows.Close()
		findable, missing := true, int64(0)
		for rows.Next() {
			var (
				roomID, sender, text, source, snippet *string
				seq, parent, root                     *int64
				at                                    *time.Time
				rank                                  *float32
			)
			if err := rows.Scan(&findable, &missing, &roomID, &seq, &sender, &text, &source, &parent, &root, &at, &rank, &snippet); err != nil {
				return page, fmt.Errorf("search messages: %w", err)
			}
			if seq == nil {
				continue // nothing found
			}
			page.Hits = append(page.Hits, letagents.SearchHit{
				Message: letagents.Message{RoomID: *roomID, Seq: *seq, Sender: *sender, Text: *text, Source: deref(source),
					ThreadParentSeq: deref(parent), ThreadRootSeq: deref(root), CreatedAt: *at},
				Rank: *rank, Snippet: marks.split(deref(snippet)),
			})
		}
		if err := rows.Err(); err != nil {
			return page, fmt.Errorf("search messages: %w", err)
		}
		switch {
		case missing > 0:
			return page, letagents.RoomNotFound()
		case !findable:
			return page, letagents.SearchError(letagents.CodeSearchQueryInvalid,
				"q has no word that must appear: -word alone, or an or with -word, would match almost every message")
		}
		if len(page.Hits) > q.Limit {
			page.Hits, page.HasMore = page.Hits[:q.Limit], true
		}
		return page, nil
	})
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
