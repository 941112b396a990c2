package store

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/pgtest"
)

// A page of messages is read the same way whatever the statistics say.
// Right after a burst of sends into a room, before autovacuum analyses
// the table, the statistics still say the room is almost empty; the read
// then went through a bitmap of the whole tail and sorted it, and its
// time grew with the room. The test makes that moment (autovacuum off,
// the table analysed empty, then 10,000 messages) and checks the plan's
// shape, as a read plans it (pageSettings) and in a custom plan too:
// every table read through a unique key, row by row (a quarter of the
// messages are replies, whose parents are read too), and the page itself
// touching a handful of blocks, not the room.
func TestMessagePagePlanIgnoresStaleStatistics(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, analyse string
		messages      int
	}{
		{"never analysed, 500 messages", ``, 500},
		{"never analysed, 10,000 messages", ``, 10000},
		{"analysed empty, 10,000 messages", `ANALYZE messages; ANALYZE message_threads; ANALYZE agent_sessions`, 10000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkPagePlans(t, tt.analyse, tt.messages)
		})
	}
}

// checkPagePlans makes a room of n messages with autovacuum off, after
// the statements analyse (or not), and checks each way a page is read.
func checkPagePlans(t *testing.T, analyse string, n int) {
	d := pgtest.New(t)
	s := New(d.Pool)
	ctx := context.Background()
	if _, _, err := s.EnsureRoom(ctx, "plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		ALTER TABLE messages SET (autovacuum_enabled = off);
		ALTER TABLE message_threads SET (autovacuum_enabled = off);
		ALTER TABLE agent_sessions SET (autovacuum_enabled = off);`+analyse); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO messages (room_id, seq, sender, text, created_at, thread_parent_seq, thread_root_seq)
			SELECT 'plan', g, 'agent', 'message ' || g, now(), CASE WHEN g % 4 = 0 THEN g - 1 END, CASE WHEN g % 4 = 0 THEN g - 1 END
			FROM generate_series(1, `+strconv.Itoa(n)+`) g;
		UPDATE rooms SET last_seq = `+strconv.Itoa(n)+` WHERE id = 'plan'`); err != nil {
		t.Fatal(err)
	}
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, custom := range []bool{false, true} {
		mode := "as a read plans it"
		if custom {
			mode = "in a custom plan"
		}
		for _, tt := range []struct {
			name   string
			before bool
			bound  int64
		}{{"the newest page", true, int64(n) + 1}, {"after a cursor near the end", false, int64(n) - 50}, {"from the start", false, 0}} {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, pageSettings); err != nil {
				t.Fatal(err)
			}
			if custom {
				if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
					t.Fatal(err)
				}
			}
			var raw []byte
			if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+messagePageSQL(tt.before), "plan", tt.bound, 50, false).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal(raw, &plans); err != nil {
				t.Fatal(err)
			}
			for _, bad := range plans[0].Plan.unkeyedReads() {
				t.Errorf("%s, %s: %s; want every table read through its key, row by row", mode, tt.name, bad)
			}
			blocks := fewestBlocks(t, tx, "x", messagePageSQL(tt.before), "plan", tt.bound, 50, false)
			// 51 short messages lie in two or three heap blocks, and the
			// key's path to them is three or four more; a room of 10,000
			// is over a hundred (a small room's whole is a handful too).
			if n >= 10000 && blocks > 30 {
				t.Errorf("%s, %s: the page touched %d blocks; want the page's handful, not the room's", mode, tt.name, blocks)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fewestBlocks is the fewest blocks query touches in three runs on q
// (EXPLAIN ANALYZE's buffers), in all or in its node that reads the
// relation aliased alias: the count includes the catalogs a function
// reads again when another test's DDL has invalidated their cache (the
// suite creates schemas all the time), which a room's walk would exceed
// every time.
func fewestBlocks(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, alias, query string, args ...any) int {
	t.Helper()
	blocks := -1
	for range 3 {
		var raw []byte
		if err := q.QueryRow(context.Background(), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+query, args...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var analysed []struct{ Plan planNode }
		if err := json.Unmarshal(raw, &analysed); err != nil {
			t.Fatal(err)
		}
		n, ok := analysed[0].Plan.find(alias)
		if !ok {
			t.Fatalf("no node reads %q in the plan of %s", alias, query)
		}
		if b := n.Hit + n.Read; blocks < 0 || b < blocks {
			blocks = b
		}
	}
	return blocks
}

// A stream's page of the event log is read the same way whatever the
// statistics say, as a page of messages is: right after 50,000 events,
// with the log never analysed or analysed empty, a catch-up from the start
// walked a bitmap of the whole room and sorted it. In custom and generic
// plans alike, event_page touches a handful of blocks, not the room.
func TestEventPagePlanIgnoresStaleStatistics(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, analyse string }{
		{"never analysed", ``},
		{"analysed empty", `ANALYZE room_events; ANALYZE tasks; ANALYZE reasoning_sessions; ANALYZE agent_sessions`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			ctx := context.Background()
			if _, _, err := New(d.Pool).EnsureRoom(ctx, "plan"); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Pool.Exec(ctx, `ALTER TABLE room_events SET (autovacuum_enabled = off);`+tt.analyse); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Pool.Exec(ctx, `
				INSERT INTO room_events (room_id, seq, kind, ref) SELECT 'plan', g, 'message', g FROM generate_series(1, 50000) g;
				UPDATE rooms SET last_event = 50000 WHERE id = 'plan'`); err != nil {
				t.Fatal(err)
			}
			conn, err := d.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
				if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
					t.Fatal(err)
				}
				for _, bound := range []int64{0, 49950} {
					// 51 events lie in one or two heap blocks, the key's path
					// to them three or four more, and a custom plan reads
					// the metapages of the indexes it weighs (about 30 in
					// all); the room is over 500.
					if blocks := fewestBlocks(t, conn, "", `SELECT * FROM event_page($1, $2, $3)`, "plan", bound, 51); blocks > 100 {
						t.Errorf("%s, after %d: event_page touched %d blocks; want the page's handful, not the room's", mode, bound, blocks)
					}
				}
			}
		})
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	Alias        string     `json:"Alias"`
	IndexName    string     `json:"Index Name"`
	Hit          int        `json:"Shared Hit Blocks"`
	Read         int        `json:"Shared Read Blocks"`
	Plans        []planNode `json:"Plans"`
}

// find is the first node, depth first, that reads the relation aliased
// alias; n itself for "".
func (n planNode) find(alias string) (planNode, bool) {
	if alias == "" || n.Alias == alias {
		return n, true
	}
	for _, c := range n.Plans {
		if f, ok := c.find(alias); ok {
			return f, true
		}
	}
	return planNode{}, false
}

// unkeyedReads names the nodes of the plan that read messages other than
// through an index, or join by hashing or merging rows.
func (n planNode) unkeyedReads() []string {
	var out []string
	switch n.NodeType {
	case "Seq Scan", "Bitmap Heap Scan":
		// Only messages grew: the planner sizes the other tables from
		// their blocks on disk, and scans the empty ones as it likes.
		if n.RelationName == "messages" {
			out = append(out, n.NodeType+" on "+n.RelationName)
		}
	case "Index Scan", "Index Only Scan":
		// A message by its number (a reply's parent) is the primary
		// key's: another index that leads with room_id scores the same
		// on stale statistics and walks the room.
		if n.RelationName == "messages" && n.IndexName != "messages_pkey" {
			out = append(out, n.NodeType+" on messages using "+n.IndexName)
		}
	case "Hash Join", "Merge Join":
		out = append(out, n.NodeType)
	}
	for _, c := range n.Plans {
		out = append(out, c.unkeyedReads()...)
	}
	return out
}
