package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

// searchRoom makes a room and sends texts to it in order (as sender
// "ann", source agent, unless a text starts "name|source|"): message i+1
// is texts[i].
func searchRoom(t *testing.T, s *store.Store, room string, texts ...string) []letagents.Message {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.EnsureRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	out := make([]letagents.Message, len(texts))
	for i, text := range texts {
		m := letagents.NewMessage{RoomID: room, Sender: "ann", Source: letagents.SourceAgent, Text: text}
		if f := strings.SplitN(text, "|", 3); len(f) == 3 {
			m.Sender, m.Source, m.Text = f[0], f[1], f[2]
		}
		msg, _, err := s.SendMessage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = msg
	}
	return out
}

// hitSeqs are the messages of a page, as room:seq in the page's order
// (or seq alone for one room).
func hitSeqs(p letagents.SearchPage, withRoom bool) []string {
	out := make([]string, len(p.Hits))
	for i, h := range p.Hits {
		out[i] = fmt.Sprint(h.Message.Seq)
		if withRoom {
			out[i] = h.Message.RoomID + ":" + out[i]
		}
	}
	return out
}

func search(t *testing.T, s *store.Store, rooms []string, q letagents.SearchQuery) letagents.SearchPage {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = letagents.MaxSearchPage
	}
	p, err := s.Search(context.Background(), rooms, q)
	if err != nil {
		t.Fatalf("search %q: %v", q.Text, err)
	}
	return p
}

// The query syntax, as websearch_to_tsquery with the 'simple'
// configuration reads it: every word, "phrases", -exclusions, or; case
// ignored; no stemming; code-like tokens kept whole. Read room by room
// or through the index, the answers are the same.
func TestSearchSyntax(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	texts := []string{
		"deploy failed on staging",                 // 1
		"deploy succeeded on production",           // 2
		"rollback the failed deploy",               // 3
		"Staging is down: connection refused",      // 4
		"the config file config.yaml was changed",  // 5
		"failed deploy failed again",               // 6
		"see /usr/local/bin/letagents and v1.2.3+", // 7
		"fn parse() -> Vec<String> { todo!() }",    // 8
		"<script>window.rollout()</script>",        // 9
	}
	searchRoom(t, s, "syntax", texts...)
	tests := []struct {
		q    string
		want []string // in any order
	}{
		{"deploy", []string{"1", "2", "3", "6"}},
		{"deploy failed", []string{"1", "3", "6"}},
		{`"deploy failed"`, []string{"1", "6"}},
		{`"failed deploy"`, []string{"3", "6"}},
		{"deploy -failed", []string{"2"}},
		{"production or staging", []string{"1", "2", "4"}},
		{"STAGING", []string{"1", "4"}},
		{"deploys", nil}, // no stemming
		{"config.yaml", []string{"5"}},
		{"config", []string{"5"}},
		{"/usr/local/bin/letagents", []string{"7"}},
		{"v1.2.3", []string{"7"}},
		{"nothing-like-this", nil},
		{"string", []string{"8"}},                      // not an HTML tag to skip
		{"window.rollout", []string{"9"}},              // nor a script body
		{"deploy:* & failed", []string{"1", "3", "6"}}, // tsquery operators are plain punctuation here
	}
	for _, byRooms := range []bool{false, true} {
		s := store.SearchReading(s, byRooms)
		for _, tt := range tests {
			got := hitSeqs(search(t, s, []string{"syntax"}, letagents.SearchQuery{Text: tt.q}), false)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("by rooms %v: search %q = %v, want %v", byRooms, tt.q, got, tt.want)
			}
		}
	}
}

func TestSearchRefusals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	searchRoom(t, s, "refusals", "a message")
	tests := []struct {
		name  string
		rooms []string
		q     letagents.SearchQuery
		code  letagents.ErrorKind
		rsn   string
	}{
		{"empty", []string{"refusals"}, letagents.SearchQuery{Text: "  "}, letagents.Invalid, letagents.CodeSearchQueryInvalid},
		{"only an exclusion", []string{"refusals"}, letagents.SearchQuery{Text: "-message"}, letagents.Invalid, letagents.CodeSearchQueryInvalid},
		{"or with an exclusion", []string{"refusals"}, letagents.SearchQuery{Text: "a or -message"}, letagents.Invalid, letagents.CodeSearchQueryInvalid},
		{"no words", []string{"refusals"}, letagents.SearchQuery{Text: "!!! ---"}, letagents.Invalid, letagents.CodeSearchQueryInvalid},
		{"too long", []string{"refusals"}, letagents.SearchQuery{Text: strings.Repeat("a", letagents.MaxSearchQueryBytes+1)}, letagents.Invalid, letagents.CodeSearchQueryInvalid},
		{"bad source", []string{"refusals"}, letagents.SearchQuery{Text: "a", Source: "robot"}, letagents.Invalid, letagents.CodeSearchFilterInvalid},
		{"since after until", []string{"refusals"}, letagents.SearchQuery{Text: "a", Since: time.Now(), Until: time.Now().Add(-time.Hour)}, letagents.Invalid, letagents.CodeSearchFilterInvalid},
		{"thread over rooms", []string{"refusals", "other"}, letagents.SearchQuery{Text: "a", ThreadSeq: 1}, letagents.Invalid, letagents.CodeSearchFilterInvalid},
		{"no such room", []string{"refusals", "missing room"}, letagents.SearchQuery{Text: "message"}, letagents.NotFound, "ROOM_NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.q.Limit == 0 {
				tt.q.Limit = 10
			}
			_, err := s.Search(context.Background(), tt.rooms, tt.q)
			var e *letagents.Error
			if !errors.As(err, &e) || e.Kind != tt.code || e.Code != tt.rsn {
				t.Errorf("error %v (%+v), want code %s reason %s", err, e, tt.code, tt.rsn)
			}
		})
	}
	if p := search(t, s, nil, letagents.SearchQuery{Text: "message"}); len(p.Hits) != 0 || p.HasMore {
		t.Errorf("search of no rooms = %+v, want nothing", p)
	}
}

func TestSearchFilters(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	searchRoom(t, s, "filters",
		"ann|agent|build is red",         // 1
		"bob|browser|build is red again", // 2
		"letagents|system|build status",  // 3
		"Ann|agent|unrelated",            // 4
	)
	reply := func(parent int64, sender, text string) letagents.Message {
		m, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: "filters", Sender: sender, Text: text, ThreadParentSeq: parent})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	r5 := reply(1, "bob", "build fixed")   // 5: in 1's thread
	reply(r5.Seq, "cy", "build confirmed") // 6: a reply to a reply, same thread
	reply(2, "cy", "build again?")         // 7: in 2's thread
	searchRoom(t, s, "elsewhere", "ann|agent|build elsewhere")

	all, err := s.Messages(ctx, "filters", store.MessageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	at := func(seq int) time.Time { return all.Messages[seq-1].CreatedAt }
	// Messages sent in the same millisecond share a time: what since and
	// until keep is worked out from the times the messages have.
	sentIn := func(since, until time.Time) []string {
		var out []string
		for _, m := range all.Messages {
			if strings.Contains(m.Text, "build") && !m.CreatedAt.Before(since) && (until.IsZero() || m.CreatedAt.Before(until)) {
				out = append(out, fmt.Sprint(m.Seq))
			}
		}
		return out
	}
	tests := []struct {
		name string
		q    letagents.SearchQuery
		want []string
	}{
		{"none", letagents.SearchQuery{}, []string{"1", "2", "3", "5", "6", "7"}},
		{"sender, any case", letagents.SearchQuery{Sender: "ANN"}, []string{"1"}},
		{"source agent", letagents.SearchQuery{Source: letagents.SourceAgent}, []string{"1"}},
		{"source browser", letagents.SearchQuery{Source: letagents.SourceBrowser}, []string{"2"}},
		{"source system", letagents.SearchQuery{Source: letagents.SourceSystem}, []string{"3"}},
		{"thread by its root", letagents.SearchQuery{ThreadSeq: 1}, []string{"1", "5", "6"}},
		{"thread by a reply", letagents.SearchQuery{ThreadSeq: 6}, []string{"1", "5", "6"}},
		{"thread of a message that is not there", letagents.SearchQuery{ThreadSeq: 99}, nil},
		{"sender and thread", letagents.SearchQuery{Sender: "cy", ThreadSeq: 2}, []string{"7"}},
		{"since", letagents.SearchQuery{Since: at(3)}, sentIn(at(3), time.Time{})},
		{"until", letagents.SearchQuery{Until: at(3)}, sentIn(time.Time{}, at(3))},
		{"since and until", letagents.SearchQuery{Since: at(2), Until: at(6)}, sentIn(at(2), at(6))},
	}
	for _, tt := range tests {
		tt.q.Text = "build"
		got := hitSeqs(search(t, s, []string{"filters"}, tt.q), false)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := hitSeqs(search(t, s, []string{"filters", "elsewhere"}, letagents.SearchQuery{Text: "build", Sender: "ann"}), true); !slices.Contains(got, "elsewhere:1") || len(got) != 2 {
		t.Errorf("search of two rooms by ann = %v, want filters:1 and elsewhere:1", got)
	}
}

// Hits come best first: by rank (more of the words, closer together,
// in a shorter message), then the newest first among equals.
func TestSearchRanking(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	searchRoom(t, s, "ranking",
		"deploy failed on staging",   // 1
		"rollback the failed deploy", // 2: as good as 1, and newer
		"failed deploy failed again", // 3: failed twice
		"failed: see the long log below for every line that the deploy printed on its way down, which is long", // 4: longer
		"no match here", // 5
	)
	if got := hitSeqs(search(t, s, []string{"ranking"}, letagents.SearchQuery{Text: "failed"}), false); !slices.Equal(got, []string{"3", "2", "1", "4"}) {
		t.Errorf("search failed = %v, want [3 2 1 4]", got)
	}
	p := search(t, s, []string{"ranking"}, letagents.SearchQuery{Text: "failed"})
	for i := 1; i < len(p.Hits); i++ {
		if p.Hits[i].Rank > p.Hits[i-1].Rank {
			t.Errorf("hit %d ranks %v, above hit %d's %v", i, p.Hits[i].Rank, i-1, p.Hits[i-1].Rank)
		}
	}
	// Words next to each other rank above words apart.
	if got := hitSeqs(search(t, s, []string{"ranking"}, letagents.SearchQuery{Text: "deploy staging"}), false); !slices.Equal(got, []string{"1"}) {
		t.Errorf("search deploy staging = %v, want [1]", got)
	}
	if got := hitSeqs(search(t, s, []string{"ranking"}, letagents.SearchQuery{Text: "failed deploy"}), false); got[0] != "3" || got[len(got)-1] != "4" {
		t.Errorf("search failed deploy = %v, want 3 first and 4 last", got)
	}
}

// Paging by cursor walks the whole order once: no hit twice, none left
// out, ties (equal ranks, equal times) included, whatever the page size
// and whatever is sent between pages.
func TestSearchCursorPaging(t *testing.T) {
	t.Parallel()
	for _, byRooms := range []bool{false, true} {
		t.Run(fmt.Sprintf("by rooms %v", byRooms), func(t *testing.T) {
			t.Parallel()
			searchPages(t, store.SearchReading(newStore(t), byRooms))
		})
	}
}

func searchPages(t *testing.T, s *store.Store) {
	var a, b []string
	for i := range 23 {
		// Three ranks, many ties; two rooms.
		text := fmt.Sprintf("alpha note %d", i)
		switch i % 3 {
		case 1:
			text = fmt.Sprintf("alpha alpha note %d", i)
		case 2:
			text = fmt.Sprintf("alpha note %d with a longer tail of words after it", i)
		}
		if i%2 == 0 {
			a = append(a, text)
		} else {
			b = append(b, text)
		}
	}
	searchRoom(t, s, "page-a", a...)
	searchRoom(t, s, "page-b", b...)
	rooms := []string{"page-a", "page-b"}
	sent := 23
	for _, size := range []int{1, 2, 4, 7, 22, 23} {
		all := hitSeqs(search(t, s, rooms, letagents.SearchQuery{Text: "alpha"}), true)
		if len(all) != sent {
			t.Fatalf("one page of everything = %d hits, want %d", len(all), sent)
		}
		var got []string
		q := letagents.SearchQuery{Text: "alpha", Limit: size}
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatalf("page size %d: no end after 30 pages", size)
			}
			p := search(t, s, rooms, q)
			got = append(got, hitSeqs(p, true)...)
			if !p.HasMore {
				break
			}
			if len(p.Hits) != size {
				t.Fatalf("page size %d: a page of %d with has_more", size, len(p.Hits))
			}
			// A cursor crosses the wire as a string.
			c, err := letagents.ParseSearchCursor(p.Hits[len(p.Hits)-1].Cursor().String())
			if err != nil {
				t.Fatal(err)
			}
			q.After = &c
			if pages == 0 {
				searchRoom(t, s, "page-a", "alpha alpha alpha") // ranks first: not seen
				sent++
			}
		}
		if !slices.Equal(got, all) {
			t.Errorf("page size %d walked %v, want %v", size, got, all)
		}
	}
}

// A snippet is plain text around the words found, cut into parts that
// say which are matches; the text of a message comes through as it was.
func TestSearchSnippets(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	long := strings.Repeat("filler words go here ", 40)
	searchRoom(t, s, "snippets",
		`<b>Deploy</b> & <script>alert("deploy")</script>`,
		long+"the deploy broke "+long,
	)
	p := search(t, s, []string{"snippets"}, letagents.SearchQuery{Text: "deploy"})
	if len(p.Hits) != 2 {
		t.Fatalf("hits = %d, want 2", len(p.Hits))
	}
	for _, h := range p.Hits {
		var text strings.Builder
		matches := 0
		for _, part := range h.Snippet {
			text.WriteString(part.Text)
			if part.Match {
				matches++
				if !strings.EqualFold(part.Text, "deploy") {
					t.Errorf("msg %d: match part %q, want deploy", h.Message.Seq, part.Text)
				}
			}
		}
		if matches == 0 || strings.Contains(text.String(), "hlst") {
			t.Errorf("msg %d: snippet %+v, want matches and no markers", h.Message.Seq, h.Snippet)
		}
		switch h.Message.Seq {
		case 1:
			if !strings.Contains(text.String(), `<script>alert("`) {
				t.Errorf("snippet of message 1 = %q, want its text as it was", text.String())
			}
		case 2:
			if n := len(text.String()); n >= len(h.Message.Text)/4 || !strings.Contains(text.String(), "the deploy broke") {
				t.Errorf("snippet of message 2 = %q (%d bytes), want a short cut around the match", text.String(), n)
			}
		}
	}
}

// Search reads the first SearchIndexedChars characters of a text, and any
// text a message may have indexes (a tsvector holds at most 1 MiB).
func TestSearchIndexedChars(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	pad := strings.Repeat("é", letagents.SearchIndexedChars-len(" inside")) // multi-byte: characters, not bytes, count
	searchRoom(t, s, "indexed",
		pad+" inside",
		pad+" xinside beyond", // cut to "xinsid"
	)
	for q, want := range map[string][]string{"inside": {"1"}, "beyond": nil, "xinside": nil} {
		if got := hitSeqs(search(t, s, []string{"indexed"}, letagents.SearchQuery{Text: q}), false); !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", q, got, want)
		}
	}

	// The worst texts measured: distinct words of two 4-byte letters, joined
	// by hyphens (each pair also indexed whole), and plain distinct words.
	var hyph, plain strings.Builder
	for i := 0; hyph.Len() < letagents.MaxTextBytes-16; i++ {
		hyph.WriteRune(rune(0x20000 + i%40000))
		hyph.WriteRune(rune(0x20000 + i/40000))
		hyph.WriteByte("- "[i%2])
	}
	for i := 0; plain.Len() < letagents.MaxTextBytes-16; i++ {
		plain.WriteRune(rune(0x20000 + i%40000))
		plain.WriteRune(rune(0x20000 + i/40000))
		plain.WriteByte(' ')
	}
	searchRoom(t, s, "indexed", hyph.String(), plain.String())
}

// A search reads room by room when the planner expects its query to
// match far more messages in all than its rooms hold, else through the
// index.
func TestSearchReadsByRoomsForCommonWords(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	if _, _, err := s.EnsureRoom(ctx, "stats"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO messages (room_id, seq, sender, text, created_at)
		SELECT 'stats', g, 'ann', CASE WHEN g = 1 THEN 'rare common' ELSE 'common ' || g END, now() FROM generate_series(1, 2000) g;
		ANALYZE messages`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		query string
		held  int64
		want  bool
	}{
		{"common", 10, true},    // ~2000 matches expected for 10 messages
		{"common", 2000, false}, // as many as the rooms hold
		{"rare", 10, false},
	} {
		if got, err := store.ReadsByRooms(ctx, s, tt.query, tt.held); err != nil || got != tt.want {
			t.Errorf("ReadsByRooms(%q, %d) = %v, %v; want %v", tt.query, tt.held, got, err, tt.want)
		}
	}
}

// The search index takes a send's words into its pending list and merges
// the list into the index once it holds 256 kB (migration 0036, for the
// send's cost); searches find messages on both sides of a merge.
func TestSearchAcrossPendingListMerges(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	var opts []string
	if err := d.Pool.QueryRow(ctx, `SELECT reloptions FROM pg_class WHERE oid = 'messages_search_idx'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fastupdate=on", "gin_pending_list_limit=256"}; !slices.Equal(opts, want) {
		t.Errorf("messages_search_idx options %v, want %v", opts, want)
	}
	// 100 messages of 400 words no other message has: 100 pages (800 kB)
	// of pending entries were the list never merged, three times its limit.
	const messages, words = 100, 400
	texts := make([]string, messages)
	for i := range texts {
		w := make([]string, words)
		for j := range w {
			w[j] = fmt.Sprintf("m%dw%d", i, j)
		}
		texts[i] = strings.Join(w, " ")
	}
	searchRoom(t, s, "merges", texts...)
	for _, i := range []int{0, 1, messages / 2, messages - 1} {
		q := fmt.Sprintf("m%dw%d", i, words-1)
		if got, want := hitSeqs(search(t, s, []string{"merges"}, letagents.SearchQuery{Text: q}), false), []string{fmt.Sprint(i + 1)}; !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", q, got, want)
		}
	}
	// What is still pending is at most the limit (32 pages of 8 kB) and
	// the one message that took it past: the list was merged on the way.
	pending, err := s.MergeSearchPending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pending > 40 {
		t.Errorf("%d pages pending after the sends, want at most 40: the list was not merged at its limit", pending)
	}
}
