package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// indexVariant is one way to keep messages searchable, as a table of the
// columns a send writes with what the variant adds.
type indexVariant struct {
	name, ddl string // ddl makes table %[1]s
}

// indexVariants are the ways of indexing a chat line that the
// -search-index rows weigh against a table with no search at all: the
// migrations' (a stored generated tsvector, GIN taking new words into a
// pending list of 256 kB that is merged when full), the same with no
// pending list (0015's) and with the default list of 4 MB, an expression
// index with no stored column, a trigger instead of the generated column,
// and the 'english' configuration instead of 'simple'. The 256 kB list
// fills and is merged within each round, so its row counts the merges; a
// 4 MB list is not filled by the whole run, so its row counts no merge.
var indexVariants = []indexVariant{
	{"no search (floor)", `CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq))`},
	{"stored generated tsvector ('simple'), GIN pending list of 256 kB (ours)", `
		CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq),
			v tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, message_search_text(text))) STORED);
		CREATE INDEX ON %[1]s USING gin (v) WITH (fastupdate = on, gin_pending_list_limit = 256)`},
	{"same, GIN fastupdate off (no pending list)", `
		CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq),
			v tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, message_search_text(text))) STORED);
		CREATE INDEX ON %[1]s USING gin (v) WITH (fastupdate = off)`},
	{"same, GIN pending list of 4 MB (the default), never filled here", `
		CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq),
			v tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, message_search_text(text))) STORED);
		CREATE INDEX ON %[1]s USING gin (v) WITH (fastupdate = on)`},
	{"expression GIN index, no stored column, fastupdate off", `
		CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq));
		CREATE INDEX ON %[1]s USING gin ((to_tsvector('simple'::regconfig, message_search_text(text)))) WITH (fastupdate = off)`},
	{"tsvector kept by a trigger, GIN fastupdate off", `
		CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq), v tsvector);
		CREATE FUNCTION %[1]s_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN NEW.v := to_tsvector('simple'::regconfig, message_search_text(NEW.text)); RETURN NEW; END $$;
		CREATE TRIGGER tsv BEFORE INSERT ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[1]s_tsv();
		CREATE INDEX ON %[1]s USING gin (v) WITH (fastupdate = off)`},
	{"stored generated tsvector ('english'), GIN fastupdate off", `
		CREATE TABLE %[1]s (room_id text, seq bigint, text text NOT NULL, PRIMARY KEY (room_id, seq),
			v tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, message_search_text(text))) STORED);
		CREATE INDEX ON %[1]s USING gin (v) WITH (fastupdate = off)`},
}

// searchIndex times the insert of a chat line (the corpus's texts: 6–20
// words, P(wk) ∝ 1/k) into each variant holding indexPrefill rows
// already, one autocommitted statement at a time on one connection, and
// counts the CPU its backend spent per insert (/proc), in rounds that
// take the variants in turn.
func (b *bench) searchIndex(ctx context.Context) error {
	const indexPrefill, texts, perRound = 200_000, 20_000, 2_000
	rounds := 4
	if b.opt.quick {
		rounds = 2
	}
	conn, err := pgx.Connect(ctx, b.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `CREATE TABLE bench_texts AS
		SELECT g AS id, (SELECT string_agg('w' || floor(exp(random() * ln($2::float8)))::int, ' ') FROM generate_series(1, 6 + g % 15)) AS text
		FROM generate_series(1, $1) g`, texts, searchVocab); err != nil {
		return fmt.Errorf("texts: %w", err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE bench_texts ADD PRIMARY KEY (id)`); err != nil {
		return fmt.Errorf("texts: %w", err)
	}
	for i, v := range indexVariants {
		tbl := fmt.Sprintf("bench_index_%d", i)
		if _, err := conn.Exec(ctx, fmt.Sprintf(v.ddl, tbl)); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO `+tbl+` (room_id, seq, text)
			SELECT 'r' || (g % 100), g, t.text FROM generate_series(1, $1) g JOIN bench_texts t ON t.id = 1 + g % $2`, indexPrefill, texts); err != nil {
			return fmt.Errorf("fill %s: %w", v.name, err)
		}
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE `+tbl); err != nil {
			return err
		}
	}
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	cpu := make([]time.Duration, len(indexVariants))
	wall := make([]time.Duration, len(indexVariants))
	seq := int64(indexPrefill)
	for r := range rounds {
		for i := range indexVariants {
			tbl := fmt.Sprintf("bench_index_%d", i)
			c0, err := procCPU(pid)
			if err != nil {
				return err
			}
			t0 := time.Now()
			for range perRound {
				seq++
				if _, err := conn.Exec(ctx, `INSERT INTO `+tbl+` (room_id, seq, text) SELECT 'r', $1, text FROM bench_texts WHERE id = $2`,
					seq, 1+rand.IntN(texts)); err != nil {
					return fmt.Errorf("round %d, %s: %w", r, indexVariants[i].name, err)
				}
			}
			wall[i] += time.Since(t0)
			c1, err := procCPU(pid)
			if err != nil {
				return err
			}
			cpu[i] += c1 - c0
		}
	}
	n := time.Duration(rounds * perRound)
	fmt.Fprintf(os.Stderr, "bench: search index variants done\n")
	for i, v := range indexVariants {
		var size string
		if err := conn.QueryRow(ctx, `SELECT pg_size_pretty(pg_total_relation_size($1::regclass))`, fmt.Sprintf("bench_index_%d", i)).Scan(&size); err != nil {
			return err
		}
		b.add(secSearch, func() row {
			return row{name: "insert of a chat line, " + v.name, p50: ms(cpu[i] / n), p99: "—",
				r50: ratio(cpu[i], cpu[0]), r99: "—",
				notes: fmt.Sprintf("p50 column is the backend's CPU per insert (/proc), ratio to no search; %d inserts in %d rounds taking the variants in turn, into %d rows already there; wall %s per insert; table and indexes %s at the end",
					rounds*perRound, rounds, indexPrefill, ms(wall[i]/n), size)}
		})
	}
	return nil
}
