package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/pgtest"
)

// A page of messages is read the same way whatever the statistics say.
// Right after a burst of sends into a room, before autovacuum analyses
// the table, the statistics still say the room is almost empty; the read
// then went through a bitmap of the whole tail and sorted it, and its
// time grew with the room. The test makes that moment (autovacuum off,
// the table analysed empty, then 10,000 messages) and checks the plan's
// shape, in PostgreSQL's custom and generic plans alike: every table read
// through a unique key, row by row, and the page itself (message_page)
// touching a handful of blocks, not the room.
func TestMessagePagePlanIgnoresStaleStatistics(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := New(d.Pool)
	ctx := context.Background()
	if _, _, err := s.EnsureRoom(ctx, "plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		ALTER TABLE messages SET (autovacuum_enabled = off);
		ALTER TABLE message_threads SET (autovacuum_enabled = off);
		ALTER TABLE agent_sessions SET (autovacuum_enabled = off);
		ANALYZE messages; ANALYZE message_threads; ANALYZE agent_sessions`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO messages (room_id, seq, sender, text, created_at)
			SELECT 'plan', g, 'agent', 'message ' || g, now() FROM generate_series(1, 10000) g;
		UPDATE rooms SET last_seq = 10000 WHERE id = 'plan'`); err != nil {
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
		for _, tt := range []struct {
			name   string
			before bool
			bound  int64
		}{{"the newest page", true, 10001}, {"after a cursor near the end", false, 9950}, {"from the start", false, 0}} {
			var raw []byte
			if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+messagePageSQL(tt.before), "plan", tt.bound, 50, false).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal(raw, &plans); err != nil {
				t.Fatal(err)
			}
			for _, bad := range plans[0].Plan.unkeyedReads() {
				t.Errorf("%s, %s: %s; want every table read through its key, row by row", mode, tt.name, bad)
			}
			var analysed []struct {
				Plan struct {
					Hit  int `json:"Shared Hit Blocks"`
					Read int `json:"Shared Read Blocks"`
				}
			}
			if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM message_page($1, $2, $3, $4, $5)`,
				"plan", tt.bound, 51, false, tt.before).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &analysed); err != nil {
				t.Fatal(err)
			}
			blocks := analysed[0].Plan.Hit + analysed[0].Plan.Read
			// 51 short messages lie in two or three heap blocks, and the
			// key's path to them is three or four more; the room's 10,000
			// are over a hundred.
			if blocks > 30 {
				t.Errorf("%s, %s: message_page touched %d blocks; want the page's handful, not the room's", mode, tt.name, blocks)
			}
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	Plans        []planNode `json:"Plans"`
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
	case "Hash Join", "Merge Join":
		out = append(out, n.NodeType)
	}
	for _, c := range n.Plans {
		out = append(out, c.unkeyedReads()...)
	}
	return out
}

// The page's visibility test in message_page (migration 0026) is the
// store's, for both directions.
func TestMessagePageVisibility(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	var src string
	if err := d.Pool.QueryRow(context.Background(), `SELECT prosrc FROM pg_proc WHERE proname = 'message_page'`).Scan(&src); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(src, visible); n != 2 {
		t.Errorf("message_page tests visibility as the store does (%s) %d times; want 2, once each way:\n%s", visible, n, src)
	}
}
