package letagents

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Full-text search over a room's messages, or over every room a signed-in
// account may read. A query is written as web search engines take it
// (PostgreSQL's websearch_to_tsquery): words must all appear, "quoted
// words" must appear in that order, -word must not appear, and or between
// two terms takes either. Words match whole, ignoring case, with no
// stemming: "deploy" does not find "deploys".

// Limits of a search. They are part of the public contract: docs/limits.md lists
// them and tests pin them.
const (
	// MaxSearchQueryBytes bounds a query (q): far beyond any real search.
	MaxSearchQueryBytes = 1024
	// DefaultSearchPage and MaxSearchPage bound ?limit, the results of one
	// page (a larger limit reads as MaxSearchPage).
	DefaultSearchPage = 20
	MaxSearchPage     = 100
	// SearchIndexedChars is how much of a message's text search reads,
	// from its start: words beyond the first 65,536 characters are not
	// found, and snippets come from that part too. The migration that
	// builds the index spells the same number (0013_message_search.sql).
	SearchIndexedChars = 65536
	// MaxSearchCursorBytes bounds ?cursor; a cursor this server made is
	// far shorter.
	MaxSearchCursorBytes = 1024
)

// Machine-readable codes of refused searches.
const (
	// CodeSearchQueryInvalid: q is missing, too long, or has no word that
	// must appear (a query of only -exclusions would match almost every
	// message, and no index can serve it).
	CodeSearchQueryInvalid = "SEARCH_QUERY_INVALID"
	// CodeSearchFilterInvalid: a filter (sender, source, thread, since,
	// until) is malformed.
	CodeSearchFilterInvalid = "SEARCH_FILTER_INVALID"
	// CodeSearchCursorInvalid: the cursor is not one a search answered.
	CodeSearchCursorInvalid = "SEARCH_CURSOR_INVALID"
)

// SearchQuery is one page of a search.
type SearchQuery struct {
	// Text is the query, in websearch syntax.
	Text string
	// Sender, when set, keeps the messages of that sender, whatever its case.
	Sender string
	// Source, when set, keeps the messages of that source (SourceAgent,
	// SourceBrowser or SourceSystem).
	Source string
	// ThreadSeq, when set, keeps the messages of the thread of that
	// message (any message of it names it): its top-level message and
	// every reply. It needs a single room.
	ThreadSeq int64
	// Since and Until, when set, keep the messages sent at or after Since
	// and before Until.
	Since, Until time.Time
	// Limit is the page size, 1 to MaxSearchPage.
	Limit int
	// After continues a search after the last hit of a page (its
	// Cursor); nil for the first page.
	After *SearchCursor
}

// SearchError is a refused search, with its machine-readable code.
func SearchError(code, format string, args ...any) *Error {
	e := Errorf(Invalid, format, args...)
	e.Code = code
	return e
}

// Validate checks a query before it is run; whether its text has a word
// to find is the database's to say (its parser decides what a word is).
func (q SearchQuery) Validate() error {
	switch {
	case strings.TrimSpace(q.Text) == "":
		return SearchError(CodeSearchQueryInvalid, "q is required: the words to search for")
	case len(q.Text) > MaxSearchQueryBytes:
		return SearchError(CodeSearchQueryInvalid, "q is longer than %d bytes", MaxSearchQueryBytes)
	case !utf8.ValidString(q.Text) || strings.ContainsRune(q.Text, 0):
		return SearchError(CodeSearchQueryInvalid, "q must be UTF-8 text without NUL characters")
	case len(q.Sender) > MaxSenderBytes || !utf8.ValidString(q.Sender) || strings.ContainsRune(q.Sender, 0):
		return SearchError(CodeSearchFilterInvalid, "sender must be UTF-8 text of at most %d bytes without NUL characters", MaxSenderBytes)
	case q.Source != "" && q.Source != SourceAgent && q.Source != SourceBrowser && q.Source != SourceSystem:
		return SearchError(CodeSearchFilterInvalid, "source must be agent, browser or system")
	case q.ThreadSeq < 0:
		return SearchError(CodeSearchFilterInvalid, "thread must be a message id like msg_42")
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return SearchError(CodeSearchFilterInvalid, "since must be before until")
	case q.Limit < 1 || q.Limit > MaxSearchPage:
		return SearchError(CodeSearchFilterInvalid, "limit must be between 1 and %d", MaxSearchPage)
	}
	return nil
}

// SearchHit is a message a search found: its rank (higher is better)
// and a snippet of its text around the words found.
type SearchHit struct {
	Message Message
	Rank    float32
	Snippet []SnippetPart
}

// SnippetPart is a piece of a snippet's text; Match marks the words the
// query found. The parts joined are the snippet: its text is plain text,
// never markup.
type SnippetPart struct {
	Text  string
	Match bool
}

// SearchPage is one page of hits, best first: by rank, then newest first,
// then by room and message number, so that ties are ordered too.
type SearchPage struct {
	Hits    []SearchHit
	HasMore bool
}

// Cursor is where a search continues after h.
func (h SearchHit) Cursor() SearchCursor {
	return SearchCursor{Rank: h.Rank, CreatedAt: h.Message.CreatedAt, RoomID: h.Message.RoomID, Seq: h.Message.Seq}
}

// SearchCursor is a position in a search's order: its hit's rank, time,
// room and number, which together name one message. A search continued
// from it returns what follows it in that order, so pages have neither
// gaps nor repeats (messages sent meanwhile may rank before it and are
// then not seen).
type SearchCursor struct {
	Rank      float32
	CreatedAt time.Time
	RoomID    string
	Seq       int64
}

// cursorVersion starts every encoded cursor, so that a later encoding
// can tell its own.
const cursorVersion = 1

// String encodes the cursor for the wire: opaque to clients, URL-safe.
func (c SearchCursor) String() string {
	b := []byte{cursorVersion}
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(c.Rank))
	b = binary.AppendVarint(b, c.CreatedAt.UnixMicro())
	b = binary.AppendUvarint(b, uint64(c.Seq))
	b = append(b, c.RoomID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseSearchCursor reads a cursor String made.
func ParseSearchCursor(s string) (SearchCursor, error) {
	bad := SearchError(CodeSearchCursorInvalid, "cursor is not one a search answered; start again without it")
	if len(s) > MaxSearchCursorBytes {
		return SearchCursor{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 5 || b[0] != cursorVersion {
		return SearchCursor{}, bad
	}
	c := SearchCursor{Rank: math.Float32frombits(binary.BigEndian.Uint32(b[1:5]))}
	b = b[5:]
	micros, n := binary.Varint(b)
	if n <= 0 {
		return SearchCursor{}, bad
	}
	b = b[n:]
	seq, n := binary.Uvarint(b)
	if n <= 0 || seq == 0 || seq > math.MaxInt64 {
		return SearchCursor{}, bad
	}
	c.CreatedAt, c.Seq, c.RoomID = time.UnixMicro(micros).UTC(), int64(seq), string(b[n:])
	if c.RoomID == "" || !utf8.ValidString(c.RoomID) || strings.ContainsRune(c.RoomID, 0) ||
		math.IsNaN(float64(c.Rank)) || math.IsInf(float64(c.Rank), 0) {
		return SearchCursor{}, bad
	}
	return c, nil
}
