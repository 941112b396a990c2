package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/mcp/codex/codextest"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
)

// callDriving calls a tool while moving clk on whenever something waits
// on it: a live start watches its worker for seconds.
func (a *agent) callDriving(t *testing.T, clk *testclock.Clock, name string, args map[string]any) answer {
	t.Helper()
	return testclock.Drive(t, clk, 250*time.Millisecond, nil, func() answer { return a.call(t, name, args) })
}

// workerRegisters has a (standing in for the worker's MCP server)
// register a Codex worker session once the fake's turn has started, as a
// live start's worker does; it delivers the answer's text.
func workerRegisters(a *agent, fake *codextest.Server) <-chan string {
	registered := make(chan string, 1)
	go func() {
		select {
		case <-fake.Called("turn/start"):
		case <-time.After(testwait.Bound):
			registered <- "no turn/start"
			return
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "register_agent_session", map[string]any{"runtime": "codex"}
		res, err := a.client.CallTool(context.Background(), req)
		if err != nil || res.IsError || len(res.Content) != 1 {
			registered <- fmt.Sprintf("register_agent_session: %v %+v", err, res)
			return
		}
		registered <- res.Content[0].(mcp.TextContent).Text
	}()
	return registered
}

// liveWorker signs an agent (builder) in to b as ann and has it join
// github.com/acme/app with session_mode "live" on fake, whose worker
// (here the same server) registers once its turn has started, as a real
// worker does: the start answers once it has. The agent's Codex clock is
// the API's, so that the bridge's observed_at is the API's now. It
// answers the agent, the join's answer and the worker's agent session id.
func liveWorker(t *testing.T, b *backend, fake *codextest.Server) (*agent, answer, string) {
	t.Helper()
	b.gh.AddRepo("acme/app", false)
	a := newAgentWith(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "builder", "LETAGENTS_CODEX_SERVER_URL": fake.URL},
		func(c *Config) { c.CodexClock = b.clock })
	a.signIn(t, b, "ann")
	registered := workerRegisters(a, fake)
	j := a.callDriving(t, b.clock, "join_room", map[string]any{"name": "github.com/acme/app", "session_mode": "live"}).ok(t)
	var reg struct {
		AgentSessionID string `json:"agent_session_id"`
	}
	if text := testwait.Recv(t, "the worker's registration", registered); json.Unmarshal([]byte(text), &reg) != nil || reg.AgentSessionID == "" {
		t.Fatalf("worker registration = %s", text)
	}
	return a, j, reg.AgentSessionID
}

func (r answer) obj2(key string) map[string]any { m, _ := r.obj[key].(map[string]any); return m }

// TestLiveCodexSession: join with session_mode "live" starts a worker on
// the app-server, a second join reuses it, status and get_current_room
// show it without its token, the worker registering binds the bridge
// (whose native activity the API records), and stop interrupts it.
func TestLiveCodexSession(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	fake := codextest.New(t, codextest.Options{})
	a, j, workerID := liveWorker(t, b, fake)
	clk := b.clock
	live := j.obj2("local_codex_session")
	if j.str("session_mode") != "live" || j.str("room_id") != "github.com/acme/app" || j.obj["local_codex_session_started"] != true ||
		j.obj["local_codex_session_reused"] != false || live["status"] != "running" || live["thread_id"] != codextest.ThreadID ||
		live["server_url"] != fake.URL || live["token"] != nil || !strings.Contains(j.str("agent_prompt"), "wait_for_messages") {
		t.Fatalf("live join = %s", j.raw)
	}
	id := live["session_id"].(string)
	var turn struct {
		Input []struct{ Text string } `json:"input"`
	}
	if err := json.Unmarshal(fake.Calls("turn/start")[0].Params, &turn); err != nil ||
		!strings.Contains(turn.Input[0].Text, `join_room with {"name":"github.com/acme/app","session_mode":"current"}`) {
		t.Errorf("start prompt = %+v, %v", turn, err)
	}

	again := a.call(t, "join_room", map[string]any{"name": "github.com/acme/app", "session_mode": "live"}).ok(t)
	if again.obj["local_codex_session_reused"] != true || again.obj2("local_codex_session")["session_id"] != id {
		t.Errorf("second live join = %s, want the session reused", again.raw)
	}
	st := a.call(t, "status_local_codex_session", nil).ok(t)
	if st.obj["server_reachable"] != true || st.obj["turn_status"] != "inProgress" || st.obj2("session")["session_id"] != id ||
		strings.Contains(st.raw, "LOCAL_CODEX_ROOM_") {
		t.Errorf("status = %s", st.raw)
	}
	cur := a.call(t, "get_current_room", nil).ok(t)
	if cur.obj2("current_local_codex_session")["session_id"] != id || cur.obj["local_codex_session_count"] != float64(1) {
		t.Errorf("get_current_room = %s", cur.raw)
	}

	// The bridge reports what happens on the worker's thread.
	testwait.Until(t, "the bridge to follow the thread", func() bool { return fake.Followers() > 0 })
	fake.Notify("item/started", map[string]any{"threadId": codextest.ThreadID, "turnId": codextest.TurnID, "item": map[string]any{"type": "commandExecution"}})
	testwait.Until(t, "the API to record native activity", func() bool {
		var seen bool
		err := b.db.Pool.QueryRow(context.Background(),
			`SELECT last_native_activity_at IS NOT NULL FROM agent_sessions WHERE 'as_' || id = $1`, workerID).Scan(&seen)
		return err == nil && seen
	})
	// A reasoning summary becomes the worker's reasoning session in the
	// room, signed by its worker session; the raw reasoning never leaves.
	fake.Notify("item/completed", map[string]any{"threadId": codextest.ThreadID, "turnId": codextest.TurnID,
		"item": map[string]any{"type": "reasoning", "id": "r1", "summary": []string{"Checking the build"}, "content": []string{"raw, never posted"}}})
	// Posts are 750 ms apart: whether the summary waits or not, a second
	// on lets it go.
	clk.Advance(time.Second)
	testwait.Until(t, "the API to record the reasoning summary", func() bool {
		var signed bool
		err := b.db.Pool.QueryRow(context.Background(), `SELECT r.actor_label = a.actor_label FROM reasoning_sessions r
			JOIN agent_sessions a ON 'as_' || a.id = $1
			WHERE r.room_id = 'github.com/acme/app' AND r.summary = 'Checking the build' AND r.latest_payload::text NOT LIKE '%raw, never posted%'`,
			workerID).Scan(&signed)
		return err == nil && signed
	})
	if live["agent_session_id"] != workerID {
		t.Errorf("live start answered worker %v, want the registered %s", live["agent_session_id"], workerID)
	}

	// The stop ends it all: the turn is interrupted, the reasoning
	// session closed, and the worker's agent session ended, so the room
	// does not wait for it to come back.
	stop := a.callDriving(t, clk, "stop_local_codex_session", nil).ok(t)
	if stop.obj2("session")["status"] != "interrupted" || stop.obj2("session")["ended_at"] == nil || len(fake.Calls("turn/interrupt")) != 1 {
		t.Errorf("stop = %s; interrupts %d", stop.raw, len(fake.Calls("turn/interrupt")))
	}
	var ended, closed bool
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT a.ended_at IS NOT NULL, bool_and(r.closed_at IS NOT NULL) FROM agent_sessions a
		JOIN reasoning_sessions r ON r.room_id = a.room_id WHERE 'as_' || a.id = $1 GROUP BY a.ended_at`, workerID).Scan(&ended, &closed); err != nil ||
		!ended || !closed {
		t.Errorf("after the stop: agent session ended %v, reasoning closed %v (%v)", ended, closed, err)
	}
}

// TestLiveCodexFailures: what a live start cannot do, it says.
func TestLiveCodexFailures(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	ended := codextest.New(t, codextest.Options{TurnStatus: "completed"})
	clk := testclock.New(time.Now())
	a := newAgentWith(t, b, "", map[string]string{"LETAGENTS_CODEX_BIN": "/nonexistent/codex"}, func(c *Config) { c.CodexClock = clk })
	a.call(t, "status_local_codex_session", nil).failed(t, "No local Codex live session found.")
	a.call(t, "stop_local_codex_session", map[string]any{"session_id": "nope"}).failed(t, "No local Codex live session found.")
	a.callDriving(t, clk, "start_local_codex_session", map[string]any{"room": "named-room"}).failed(t, "LETAGENTS_CODEX_BIN")
	a.callDriving(t, clk, "start_local_codex_session", map[string]any{"room": "named-room", "server_url": ended.URL}).
		failed(t, "turn completed before the worker registered in the room")
	a.call(t, "start_local_codex_session", map[string]any{"room": "named-room", "server_url": "http://x"}).failed(t, "want ws://host:port")
	a.call(t, "start_local_codex_session", map[string]any{"room": "named-room", "cwd": "/nonexistent/dir"}).failed(t, "not a directory")
	if _, err := LoadConfig(func(k string) string {
		return map[string]string{"LETAGENTS_CODEX_SERVER_URL": "127.0.0.1:4500"}[k]
	}, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "LETAGENTS_CODEX_SERVER_URL") {
		t.Errorf("LoadConfig with a bad LETAGENTS_CODEX_SERVER_URL = %v", err)
	}
}

// TestLiveCodexNoFalseNotice: once a live session's worker is done (a
// stop, its turn ending on the stop phrase, its app-server crashing),
// its agent session is ended, so the real liveness sweeper, run past its
// threshold, tells the room nothing; a worker still in its session is
// announced (the case that shows the sweep would see one).
func TestLiveCodexNoFalseNotice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		end    func(t *testing.T, a *agent, clk *testclock.Clock, fake *codextest.Server)
		notice bool
	}{
		{"a stop", func(t *testing.T, a *agent, clk *testclock.Clock, _ *codextest.Server) {
			a.callDriving(t, clk, "stop_local_codex_session", nil).ok(t)
		}, false},
		{"the stop phrase: its turn completes", func(t *testing.T, _ *agent, _ *testclock.Clock, fake *codextest.Server) {
			fake.SetTurnStatus("completed")
			fake.Notify("turn/completed", map[string]any{"threadId": codextest.ThreadID, "turn": map[string]any{"id": codextest.TurnID, "status": "completed"}})
		}, false},
		{"a crash", func(t *testing.T, _ *agent, _ *testclock.Clock, fake *codextest.Server) {
			fake.Close()
		}, false},
		{"still working", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, true)
			fake := codextest.New(t, codextest.Options{})
			a, _, workerID := liveWorker(t, b, fake)
			clk := b.clock
			testwait.Until(t, "the bridge to follow the thread", func() bool { return fake.Followers() > 0 })
			if tc.end != nil {
				tc.end(t, a, clk, fake)
				testwait.Until(t, "the worker's agent session to end", func() bool {
					var ended bool
					err := b.db.Pool.QueryRow(context.Background(), `SELECT ended_at IS NOT NULL FROM agent_sessions WHERE 'as_' || id = $1`,
						workerID).Scan(&ended)
					return err == nil && ended
				})
			}
			// The sweeper's own clock, past the threshold: moving the API's
			// would wake the bridge, whose heartbeat would make the worker
			// reachable again.
			sweepClock := testclock.New(clk.Now())
			sweepClock.Advance(liveness.DefaultNoticeAfter + 2*liveness.SweepInterval)
			r, err := liveness.New(store.New(b.db.Pool), 0, nil).Sweep(context.Background(), sweepClock.Now())
			if err != nil {
				t.Fatal(err)
			}
			var notices int
			if err := b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM messages WHERE room_id = 'github.com/acme/app'
				AND text LIKE '[status] %message channel has been unreachable%'`).Scan(&notices); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1}[tc.notice]; notices != want || r.Offline != want {
				t.Errorf("sweep %+v, %d notices in the room; want %d", r, notices, want)
			}
		})
	}
}
