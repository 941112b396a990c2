package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// The search corpus: searchMessages messages spread evenly over
// searchRooms rooms, sent in turn (room = n mod rooms), as chat interleaves
// them. A text is 6 to 20 words drawn from searchVocab words w1…wN with
// P(wk) ∝ 1/k (log-uniform ranks), so a few words are in most messages
// and most words in few: w1 in about half of them, w10 in about one in
// ten, w1000 in about a thousand of the million, w30000 in a handful.
const (
	searchRooms    = 1000
	searchMessages = 1_000_000
	searchVocab    = 50_000
	// searchAccountRooms is how many rooms the account of the GET /search
	// rows is known in.
	searchAccountRooms = 100
)

// corpusSQL fills the corpus in one statement (no API calls): its
// rooms' counters are set to match.
const corpusSQL = `
	INSERT INTO messages (room_id, seq, sender, text, source, created_at)
	SELECT 'bench-search-' || (g % $1), g / $1 + 1, 'agent-' || (g % 17),
		(SELECT string_agg('w' || floor(exp(random() * ln($3::float8)))::int, ' ') FROM generate_series(1, 6 + g % 15)),
		(ARRAY['agent', 'browser', NULL])[1 + g % 3],
		now() - interval '30 days' + g * interval '2 seconds'
	FROM generate_series(0, $2 - 1) g`

// searchBench builds the corpus, times searches over it through the HTTP
// API, and times sends with and without the search index.
func (b *bench) searchBench(ctx context.Context) error {
	t0 := time.Now()
	if err := b.searchCorpus(ctx, b.pool); err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	built := time.Since(t0)
	var tableSize, indexSize string
	if err := b.pool.QueryRow(ctx, `SELECT pg_size_pretty(pg_table_size('messages')), pg_size_pretty(pg_relation_size('messages_search_idx'))`).
		Scan(&tableSize, &indexSize); err != nil {
		return err
	}
	progress("search: corpus of %d messages in %d rooms built in %s (table %s, index %s)", searchMessages, searchRooms, built.Round(time.Second), tableSize, indexSize)

	token, err := b.searchAccount(ctx)
	if err != nil {
		return fmt.Errorf("account: %w", err)
	}
	n := 400
	if b.opt.quick {
		n = 100
	}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(maxRank int) string {
		return fmt.Sprintf("w%d", int(math.Floor(math.Exp(rng.Float64()*math.Log(float64(maxRank))))))
	}
	mixed := func(maxRank int) func(i int) string {
		return func(i int) string {
			switch i % 5 {
			case 0:
				return word(maxRank)
			case 1:
				return word(maxRank) + " " + word(maxRank)
			case 2:
				return `"` + word(maxRank) + " " + word(maxRank) + `"`
			case 3:
				return word(maxRank) + " -" + word(maxRank)
			}
			return word(maxRank) + " or " + word(maxRank)
		}
	}
	type searchCase struct {
		name, notes string
		path        func(i int) string
		token       string
	}
	inRoom := func(q func(int) string) func(i int) string {
		return func(i int) string {
			return fmt.Sprintf("/rooms/bench-search-%d/search?q=%s", rng.IntN(searchRooms), url.QueryEscape(q(i)))
		}
	}
	across := func(q func(int) string) func(i int) string {
		return func(i int) string { return "/search?q=" + url.QueryEscape(q(i)) }
	}
	mixNote := "queries cycle through one word, two words, a \"phrase\", a -exclusion and an or, their words drawn as the corpus draws them"
	cases := []searchCase{
		{"Search: GET /rooms/{room}/search, query mix", mixNote + ", a random room each; first page (20 hits) with snippets", inRoom(mixed(searchVocab)), ""},
		{"Search: GET /rooms/{room}/search, common words only", "the same mix of words among w1…w10 (each in 10–50 % of messages), a random room each", inRoom(mixed(10)), ""},
		{fmt.Sprintf("Search: GET /search, an account in %d rooms, query mix", searchAccountRooms),
			fmt.Sprintf("signed in; %s; over the account's %d rooms (%d messages), each let in by the access gate", mixNote, searchAccountRooms, searchAccountRooms*searchMessages/searchRooms),
			across(mixed(searchVocab)), token},
		{fmt.Sprintf("Search: GET /search, an account in %d rooms, common words only", searchAccountRooms),
			"as above, words among w1…w10: tens of thousands of matches ranked for each page", across(mixed(10)), token},
	}
	for _, c := range cases {
		for i := range 20 { // warm the caches and the pool
			if _, err := b.searchOnce(ctx, c.path(i), c.token); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		var d dist
		hits := 0
		for i := range n {
			start := time.Now()
			got, err := b.searchOnce(ctx, c.path(i), c.token)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			d = append(d, time.Since(start))
			hits += got
		}
		progress("%s: p50 %s p99 %s", c.name, ms(d.pct(.5)), ms(d.pct(.99)))
		name, notes := c.name, fmt.Sprintf("n=%d sequential over keep-alive HTTP (after 20 to warm up); %s; %.1f hits a page on average; corpus %d messages in %d rooms, built with one INSERT … SELECT generate_series in %s (table %s, GIN index %s)",
			n, c.notes, float64(hits)/float64(n), searchMessages, searchRooms, built.Round(time.Second), tableSize, indexSize)
		b.add(secSearch, func() row {
			return row{name: name, p50: ms(d.pct(.5)), p99: ms(d.pct(.99)), r50: "—", r99: "—", notes: notes}
		})
	}
	return b.indexCost(ctx)
}

// searchCorpus fills the corpus on pool. The GIN index is dropped for the
// bulk insert and built again after it, as a restore would: building it
// once is far faster than a million insertions into it.
func (b *bench) searchCorpus(ctx context.Context, pool *pgxpool.Pool) error {
	var indexDef string
	if err := pool.QueryRow(ctx, `SELECT pg_get_indexdef('messages_search_idx'::regclass)`).Scan(&indexDef); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `DROP INDEX messages_search_idx`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO rooms (id, kind, display_name, last_seq)
		SELECT 'bench-search-' || r, 'named', 'search ' || r, $2 / $1 FROM generate_series(0, $1 - 1) r`, searchRooms, searchMessages); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, corpusSQL, searchRooms, searchMessages, searchVocab); err != nil {
		return err
	}
	for _, sql := range []string{`SET maintenance_work_mem = '256MB'`, indexDef, `RESET maintenance_work_mem`, `ANALYZE rooms`, `ANALYZE messages`} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}

// searchAccount signs an account in (straight in the store, with no
// GitHub) and makes it an admin of searchAccountRooms rooms; it returns
// its owner token.
func (b *bench) searchAccount(ctx context.Context) (string, error) {
	token := auth.NewToken()
	acct, _, err := b.svc.Store.SignIn(ctx, store.SignIn{
		Account:        letagents.Account{Provider: "github", ProviderUserID: "bench-search", Login: "bench-search", DisplayName: "bench"},
		GitHubToken:    []byte{0},
		OwnerTokenHash: auth.HashToken(token),
		Now:            time.Now(),
	})
	if err != nil {
		return "", err
	}
	for r := range searchAccountRooms {
		if err := b.svc.Store.AddRoomAdmin(ctx, fmt.Sprintf("bench-search-%d", r*(searchRooms/searchAccountRooms)), acct.ID); err != nil {
			return "", err
		}
	}
	return token, nil
}

// searchOnce runs one search and returns its number of hits.
func (b *bench) searchOnce(ctx context.Context, path, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+path, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	var res struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return 0, fmt.Errorf("GET %s: %w", path, err)
	}
	return len(res.Results), nil
}

// indexCost times sends into the corpus against sends into a twin of it
// without the search column and index: another schema, migrated the same
// way, with the same rows copied over, its messages table the corpus's
// but for the search_vector column (and so its index). Sends alternate
// between the two, one at a time, so both see the same moments of the
// machine.
func (b *bench) indexCost(ctx context.Context) error {
	twin := b.schema + "_plain"
	u, err := url.Parse(b.dbURL)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", twin)
	u.RawQuery = q.Encode()
	if _, err := b.pool.Exec(ctx, `CREATE SCHEMA `+twin); err != nil {
		return err
	}
	b.mu.Lock()
	b.extraSchemas = append(b.extraSchemas, twin)
	b.mu.Unlock()
	pool, err := db.Open(ctx, u.String(), 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := db.Migrate(ctx, pool, migrations.FS); err != nil {
		return err
	}
	t0 := time.Now()
	copySQL := `INSERT INTO rooms SELECT * FROM ` + pgx.Identifier{b.schema, "rooms"}.Sanitize() + ` WHERE id LIKE 'bench-search-%'`
	if _, err := pool.Exec(ctx, `ALTER TABLE messages DROP COLUMN search_vector`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, copySQL); err != nil {
		return err
	}
	var cols string
	if err := pool.QueryRow(ctx, `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'messages'`, twin).Scan(&cols); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO messages (`+cols+`) SELECT `+cols+` FROM `+pgx.Identifier{b.schema, "messages"}.Sanitize()+
		` WHERE room_id LIKE 'bench-search-%'`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `ANALYZE messages`); err != nil {
		return err
	}
	progress("search: twin without the index copied in %s", time.Since(t0).Round(time.Second))

	plain := store.New(pool)
	n := 600
	if b.opt.quick {
		n = 150
	}
	rng := rand.New(rand.NewPCG(3, 4))
	short := func() string {
		w := make([]string, 6+rng.IntN(15))
		for i := range w {
			w[i] = fmt.Sprintf("w%d", int(math.Floor(math.Exp(rng.Float64()*math.Log(searchVocab)))))
		}
		return strings.Join(w, " ")
	}
	long := func() string {
		var s strings.Builder
		for s.Len() < 8<<10 {
			fmt.Fprintf(&s, "2026-01-02T03:04:05Z worker-%d INFO step %d of job w%d finished in %dms\n", rng.IntN(64), rng.IntN(1e6), rng.IntN(searchVocab), rng.IntN(5000))
		}
		return s.String()
	}
	for _, k := range []struct {
		name string
		text func() string
	}{{"a chat line (6–20 words)", short}, {"an 8 KB log paste (~900 words)", long}} {
		var with, without dist
		for i := range 20 + n {
			room := fmt.Sprintf("bench-search-%d", rng.IntN(searchRooms))
			m := letagents.NewMessage{RoomID: room, Sender: "bench", Text: k.text()}
			for _, side := range []struct {
				s *store.Store
				d *dist
			}{{b.svc.Store, &with}, {plain, &without}} {
				start := time.Now()
				if _, _, err := side.s.SendMessage(ctx, m); err != nil {
					return err
				}
				if i >= 20 {
					*side.d = append(*side.d, time.Since(start))
				}
			}
		}
		progress("search index on sends of %s: with %s p50 / %s p99, without %s / %s", k.name, ms(with.pct(.5)), ms(with.pct(.99)), ms(without.pct(.5)), ms(without.pct(.99)))
		name := "Search index: store.SendMessage of " + k.name
		b.add(secSearch, func() row {
			return row{name: name, p50: ms(with.pct(.5)), p99: ms(with.pct(.99)),
				r50: ratio(with.pct(.5), without.pct(.5)), r99: ratio(with.pct(.99), without.pct(.99)),
				notes: fmt.Sprintf("n=%d sequential sends to random rooms of the corpus, alternating with the same send into a twin schema holding the same rows without the search column and its GIN index: ratio = with / without; without: %s p50 / %s p99",
					n, ms(without.pct(.5)), ms(without.pct(.99)))}
		})
	}
	return nil
}
