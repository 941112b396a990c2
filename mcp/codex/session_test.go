//go:build unix

package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/codex/codextest"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
)

// newManager is a Manager on a fresh state file and a test clock.
func newManager(t *testing.T, cfg Config) (*Manager, *state.File, *testclock.Clock) {
	t.Helper()
	e := newEnv(t, cfg)
	return e.m, e.f, e.clk
}

// env is a starter's Manager and, on the same state file and clock, the
// Bridges of its worker's MCP server, both posting to one fake room.
type env struct {
	m    *Manager
	b    *Bridges
	f    *state.File
	clk  *testclock.Clock
	room *fakeRoom
}

func newEnv(t *testing.T, cfg Config) env {
	t.Helper()
	e := env{clk: testclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)), f: state.Open(filepath.Join(t.TempDir(), "mcp-state.json")),
		room: &fakeRoom{}}
	cfg.Clock = e.clk
	cfg.Room = Room{Activity: e.room, Reasoning: e.room, Sessions: e.room}
	e.m = NewManager(e.f, cfg)
	e.b = NewBridges(BridgeConfig{State: e.f, Activity: e.room, Reasoning: e.room, Sessions: e.room, Clock: e.clk})
	t.Cleanup(e.b.Close)
	t.Cleanup(e.m.Close)
	return e
}

// registerWorker makes the next start's worker register, as its MCP
// server does, once its live session is saved: its agent session is
// saved and its bridge told (b nil: a bridge that cannot bind it).
func registerWorker(t *testing.T, m *Manager, b *Bridges) {
	t.Helper()
	m.saved = func(live state.CodexLiveSession) {
		m.saved = nil
		started, _ := time.Parse(time.RFC3339Nano, live.StartedAt)
		a := worker
		a.SessionID = "as_" + live.SessionID
		a = saveAgent(t, m.state, a, started)
		if b != nil {
			b.Registered(a)
		}
	}
}

func startInput(t *testing.T, serverURL string) StartInput {
	return StartInput{RoomID: testRoom, RoomIdentifier: testRoom, JoinedVia: state.JoinedViaJoinRoom, Cwd: t.TempDir(),
		Branch: "main", ServerURL: serverURL}
}

type started struct {
	sess   state.CodexLiveSession
	reused bool
	err    error
}

// start runs m.Start, driving the clock through its waits, with a worker
// that registers.
func start(t *testing.T, m *Manager, clk *testclock.Clock, in StartInput, ready func() bool) started {
	t.Helper()
	registerWorker(t, m, workerBridges(t, m))
	defer func() { m.saved = nil }()
	return startAlone(t, m, clk, in, ready)
}

// workerBridges is the Bridges of the worker's MCP server on m's state
// file and clock.
func workerBridges(t *testing.T, m *Manager) *Bridges {
	t.Helper()
	b := NewBridges(BridgeConfig{State: m.state, Activity: &fakeRoom{}, Clock: m.clock})
	t.Cleanup(b.Close)
	return b
}

// startAlone runs m.Start, driving the clock through its waits, with no
// worker registering.
func startAlone(t *testing.T, m *Manager, clk *testclock.Clock, in StartInput, ready func() bool) started {
	t.Helper()
	return drive(t, clk, ready, func() started {
		s, reused, err := m.Start(context.Background(), in)
		return started{s, reused, err}
	})
}

// freeURL is an app-server address nothing listens on yet.
func freeURL(t *testing.T) string {
	t.Helper()
	u, err := freeServerURL()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// listening reports whether something answers the readiness probe at u.
func listening(u string) func() bool {
	return func() bool { return ready(context.Background(), http.DefaultClient, u) }
}

// spawned are the app-servers m spawned and still tracks.
func spawned(m *Manager) []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*server, 0, len(m.spawned))
	for _, s := range m.spawned {
		out = append(out, s)
	}
	return out
}

// listens reports whether the spawned server s answers its readiness probe.
func listens(s *server) bool { return listening(s.url)() }

// TestStartHandshake: a start speaks the app-server's protocol as the
// original did, saves the session, and answers once its worker has
// registered, bound to it.
func TestStartHandshake(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{})
	m, f, clk := newManager(t, Config{})
	in := startInput(t, fake.URL)
	got := start(t, m, clk, in, nil)
	if got.err != nil || got.reused {
		t.Fatalf("Start = %+v", got)
	}
	if got.sess.AgentSessionID != "as_"+got.sess.SessionID {
		t.Errorf("Start answered with worker %q, want the registered one", got.sess.AgentSessionID)
	}
	if m := fake.Methods(); len(m) < 4 || !slices.Equal(m[:4], []string{"initialize", "initialized", "thread/start", "turn/start"}) {
		t.Fatalf("app-server got %v, want initialize, initialized, thread/start, turn/start first", m)
	}
	init := fake.Calls("initialize")[0]
	var ip struct {
		ClientInfo   struct{ Name, Version string } `json:"clientInfo"`
		Capabilities struct {
			ExperimentalAPI bool `json:"experimentalApi"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(init.Params, &ip); err != nil || ip.ClientInfo.Name != ClientName || ip.ClientInfo.Version != ClientVersion ||
		!ip.Capabilities.ExperimentalAPI || init.JSONRPC != "2.0" || !init.Request {
		t.Errorf("initialize = %+v %s", init, init.Params)
	}
	if n := fake.Calls("initialized")[0]; n.Request || n.JSONRPC != "2.0" {
		t.Errorf("initialized = %+v, want a JSON-RPC 2.0 notification", n)
	}
	// The current API: turns and items are listed, never read the way
	// Codex deprecated (thread/read with includeTurns).
	for _, c := range fake.Calls("thread/read") {
		if strings.Contains(string(c.Params), "includeTurns") {
			t.Errorf("thread/read %s, want no includeTurns where thread/turns/list answers", c.Params)
		}
	}
	if len(fake.Calls("thread/turns/list")) == 0 {
		t.Errorf("the start's watch read no thread/turns/list")
	}
	var tp struct {
		ThreadID       string `json:"threadId"`
		Cwd            string `json:"cwd"`
		ApprovalPolicy string `json:"approvalPolicy"`
		SandboxPolicy  struct {
			Type string `json:"type"`
		} `json:"sandboxPolicy"`
		Input []struct {
			Type         string `json:"type"`
			Text         string `json:"text"`
			TextElements []any  `json:"text_elements"`
		} `json:"input"`
	}
	if err := json.Unmarshal(fake.Calls("turn/start")[0].Params, &tp); err != nil {
		t.Fatal(err)
	}
	if tp.ThreadID != codextest.ThreadID || tp.Cwd != in.Cwd || tp.ApprovalPolicy != "never" || tp.SandboxPolicy.Type != "dangerFullAccess" ||
		len(tp.Input) != 1 || tp.Input[0].Type != "text" || tp.Input[0].TextElements == nil {
		t.Errorf("turn/start params = %+v", tp)
	}
	s := got.sess
	if s.Status != StatusRunning || s.ThreadID != codextest.ThreadID || s.TurnID != codextest.TurnID || !strings.HasPrefix(s.Token, TokenPrefix) ||
		s.StopPhrase != DefaultStopPhrase || s.LaunchedServer || s.ServerURL != fake.URL || s.Branch != "main" || s.DeadlineUTC != "" {
		t.Errorf("session = %+v", s)
	}
	if prompt := tp.Input[0].Text; !strings.Contains(prompt, s.Token+"_DONE") || !strings.Contains(prompt, `"session_mode":"current"`) {
		t.Errorf("start prompt lacks the token or the join:\n%s", prompt)
	}
	if sv := saved(t, f, s.SessionID); sv.Status != StatusRunning {
		t.Errorf("saved status %q, want running", sv.Status)
	}
	if cur, ok, n := m.Current(testRoom); !ok || cur.SessionID != s.SessionID || n != 1 {
		t.Errorf("Current = %v %v %d, want the new session of 1", cur.SessionID, ok, n)
	}
}

// TestStartShortTurn: a worker that registers and whose turn completes
// before the start's watch looks (a short turn) has started, and the room
// is told the ending once, as the worker: the turn's summaries, a final
// idle update, the reasoning session closed, the worker's agent session
// ended; by its bridge, or by the starter when no bridge could bind a
// session that had ended.
func TestStartShortTurn(t *testing.T) {
	t.Parallel()
	for _, bridge := range []bool{true, false} {
		t.Run(fmt.Sprintf("bridge binds %v", bridge), func(t *testing.T) {
			t.Parallel()
			fake := codextest.New(t, codextest.Options{TurnStatus: "completed"})
			e := newEnv(t, Config{})
			b := e.b
			if !bridge {
				b = nil
			}
			registerWorker(t, e.m, b)
			got := startAlone(t, e.m, e.clk, startInput(t, fake.URL), nil)
			if got.err != nil {
				t.Fatalf("Start = %v, want a start whose worker registered", got.err)
			}
			s := got.sess
			want := "as_" + s.SessionID
			if s.Status != StatusCompleted || s.AgentSessionID != want || s.EndedAt == "" {
				t.Errorf("Start answered %s worker %q ended %q; want completed, worker %s, ended", s.Status, s.AgentSessionID, s.EndedAt, want)
			}
			testwait.Until(t, "the room to be told the session ended", func() bool { return saved(t, e.f, s.SessionID).ToldAt != "" })
			e.room.mu.Lock()
			defer e.room.mu.Unlock()
			if got := summaries(e.room.posts); !slices.Equal(got, []string{"**Joining**", "Codex worker finished its turn."}) {
				t.Errorf("posted %q, want the turn's summary, then the ending", got)
			}
			if n := len(e.room.posts); n == 0 || e.room.posts[n-1].Status != idle || e.room.posts[n-1].AgentSessionID != want {
				t.Errorf("posts %+v, want the last one idle, as the worker", e.room.posts)
			}
			if len(e.room.closed) != 1 || !slices.Equal(e.room.ended, []string{want}) {
				t.Errorf("closed %v, ended %v; want the reasoning session closed and the worker's session ended", e.room.closed, e.room.ended)
			}
		})
	}
}

// TestStartWatch: the start's watch reads the worker's thread over one
// connection however many times it looks (the turn's start has the
// other), and a turn Codex 0.171 rebuilds from its rollout early on (the
// thread idle, the turn "interrupted": its end not written) is a turn
// that runs, not one that ended.
func TestStartWatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts codextest.Options
	}{
		{"turns listed", codextest.Options{}},
		{"0.171 early in the turn", codextest.Options{ListsOnlyEnded: true, IdleReads: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := codextest.New(t, tc.opts)
			e := newEnv(t, Config{})
			done := make(chan started, 1)
			go func() {
				s, reused, err := e.m.Start(context.Background(), startInput(t, fake.URL))
				done <- started{s, reused, err}
			}()
			const looks = 4
			for range looks {
				testwait.Until(t, "the watch to wait for its next look", func() bool { return e.clk.Waiters() > 0 || len(done) > 0 })
				if len(done) > 0 {
					got := <-done
					t.Fatalf("Start = %s, %v before the worker registered; want it watching", got.sess.Status, got.err)
				}
				e.clk.Advance(startupPoll)
			}
			// The worker registers; its bridge, in the worker's process,
			// binds it.
			testwait.Until(t, "the session to be saved", func() bool { st, _ := e.f.Load(); return len(st.CodexLiveSessions) == 1 })
			st, _ := e.f.Load()
			for _, live := range st.CodexLiveSessions {
				started, _ := time.Parse(time.RFC3339Nano, live.StartedAt)
				live.AgentSessionID = saveAgent(t, e.f, worker, started).SessionID
				saveLive(t, e.f, live)
			}
			got := drive(t, e.clk, nil, func() started { return <-done })
			if got.err != nil || got.sess.Status != StatusRunning || got.sess.EndedAt != "" {
				t.Fatalf("Start = %s ended %q, %v; want running", got.sess.Status, got.sess.EndedAt, got.err)
			}
			if n := len(fake.Calls("thread/read")); n < looks+1 {
				t.Errorf("thread/read %d times, want at least once a look (%d)", n, looks+1)
			}
			if n := len(fake.Calls("initialize")); n != 2 {
				t.Errorf("%d connections (initialize), want 2: the turn's start and the watch", n)
			}
			e.room.mu.Lock()
			defer e.room.mu.Unlock()
			if len(e.room.posts) != 0 || len(e.room.ended) != 0 {
				t.Errorf("posted %+v, ended %v; want the room told nothing", e.room.posts, e.room.ended)
			}
		})
	}
}

// TestStartReuse: a start for the same room, directory and branch reuses
// the running session; another branch or directory starts a new one.
func TestStartReuse(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{})
	m, _, clk := newManager(t, Config{})
	in := startInput(t, fake.URL)
	first := start(t, m, clk, in, nil)
	if first.err != nil {
		t.Fatal(first.err)
	}
	tests := []struct {
		name   string
		change func(*StartInput)
		reused bool
	}{
		{"same room, directory and branch", func(*StartInput) {}, true},
		{"the directory spelt another way", func(in *StartInput) { in.Cwd += "/." }, true},
		{"another branch", func(in *StartInput) { in.Branch = "feature" }, false},
	}
	for _, tc := range tests {
		// The next worker registers later than the one before.
		clk.Advance(time.Minute)
		again := in
		tc.change(&again)
		got := start(t, m, clk, again, nil)
		if got.err != nil || got.reused != tc.reused || (got.sess.SessionID == first.sess.SessionID) != tc.reused {
			t.Errorf("%s: Start = reused %v, session %s (first %s), %v; want reused %v", tc.name, got.reused, got.sess.SessionID,
				first.sess.SessionID, got.err, tc.reused)
		}
		if !tc.reused {
			break // the new session is now the room's current one
		}
	}
	if n := len(fake.Calls("thread/start")); n != 2 {
		t.Errorf("threads started = %d, want 2 (one reused)", n)
	}
}

// TestStartFailures: a start that cannot get its worker going says why,
// and leaves the session (if saved) failed.
func TestStartFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      codextest.Options
		want      string
		savedFail bool
	}{
		{"server dies after the turn starts", codextest.Options{DieAfterTurn: true}, "app-server went away during startup", true},
		{"turn ends before the loop", codextest.Options{TurnStatus: "completed"}, "turn completed before the worker registered", true},
		{"turn fails", codextest.Options{TurnStatus: "failed", TurnError: "unexpected status 500: model overloaded"},
			"turn failed: unexpected status 500: model overloaded", true},
		// 0.171 lists the turn as interrupted until it has written its end.
		{"turn fails, its end written late", codextest.Options{TurnStatus: "failed", TurnError: "unexpected status 500: model overloaded",
			UnwrittenEndReads: 1}, "turn failed: unexpected status 500: model overloaded", true},
		// On a busy machine for several reads (CI saw a model's error
		// read as an interrupted turn after two).
		{"turn fails, its end written late for several reads", codextest.Options{TurnStatus: "failed",
			TurnError: "unexpected status 500: model overloaded", UnwrittenEndReads: 5}, "turn failed: unexpected status 500: model overloaded", true},
		{"turn ends, its end written late", codextest.Options{TurnStatus: "completed", UnwrittenEndReads: 1},
			"turn completed before the worker registered", true},
		{"turn interrupted", codextest.Options{TurnStatus: "interrupted"}, "turn interrupted during startup", true},
		{"no WebSocket", codextest.Options{RefuseWebSocket: true}, "connect to codex app-server", false},
		{"the worker never registers", codextest.Options{Items: []map[string]any{{"type": "mcpToolCall", "id": "i1", "tool": "register_agent_session",
			"result": map[string]any{"isError": true, "content": []map[string]any{{"type": "text", "text": "Sign in first: no token"}}}}}},
			"did not register in the room within 1m30s: its register_agent_session call failed: Sign in first: no token", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := codextest.New(t, tc.opts)
			m, f, clk := newManager(t, Config{})
			got := startAlone(t, m, clk, startInput(t, fake.URL), nil)
			if got.err == nil || !strings.Contains(got.err.Error(), tc.want) {
				t.Fatalf("Start = %v, want an error saying %q", got.err, tc.want)
			}
			st, _ := f.Load()
			if !tc.savedFail {
				if len(st.CodexLiveSessions) != 0 {
					t.Errorf("saved %v, want nothing", st.CodexLiveSessions)
				}
				return
			}
			if s := saved(t, f, got.sess.SessionID); s.Status != StatusFailed || !strings.Contains(s.LastError, strings.TrimPrefix(tc.want, "turn failed: ")) {
				t.Errorf("saved %s / %q, want failed / %q", s.Status, s.LastError, tc.want)
			}
		})
	}
}

// TestStartSpawns: with nothing listening, the start spawns the codex
// binary's app-server, waits for it, and the stop ends it.
func TestStartSpawns(t *testing.T) {
	t.Parallel()
	m, f, clk := newManager(t, Config{Bin: serveBin})
	// On a port the start picks: one the test picked could be taken
	// before the server binds it, and a port given is tried once.
	got := start(t, m, clk, startInput(t, ""), func() bool { return slices.ContainsFunc(spawned(m), listens) })
	if got.err != nil {
		t.Fatal(got.err)
	}
	s := got.sess
	if !s.LaunchedServer || s.ServerPID <= 0 || s.CodexBin != serveBin || s.Status != StatusRunning {
		t.Fatalf("session = %+v, want a running one on a spawned server", s)
	}
	m.mu.Lock()
	srv := m.spawned[s.ServerPID]
	m.mu.Unlock()
	if srv == nil {
		t.Fatal("spawned server not tracked")
	}
	stopped := stop(t, m, clk, "", testRoom)
	if stopped.err != nil || stopped.sess.Status != StatusInterrupted || stopped.sess.LastError != "" {
		t.Fatalf("Stop = %+v", stopped)
	}
	testwait.Recv(t, "the spawned app-server to end", srv.exited)
	if sv := saved(t, f, s.SessionID); sv.Status != StatusInterrupted {
		t.Errorf("saved status %q, want interrupted", sv.Status)
	}
}

// TestSpawnFailures: a codex binary that is missing, exits, or never
// listens fails the start clearly, within the wait, and is not left
// running.
func TestSpawnFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		bin     string
		want    string
		timeout bool // the full wait passes
		exits   bool // the clock waits for it to exit
	}{
		{"missing binary", "/nonexistent/codex", "LETAGENTS_CODEX_BIN", false, false},
		{"exits at once", exitBin, "exit status 3", false, true},
		{"never listens", hangBin, "did not become ready within 15s", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, f, clk := newManager(t, Config{Bin: tc.bin})
			t0 := clk.Now()
			var exited func() bool
			if tc.exits {
				// However slow the exit, no waited-for time passes before it.
				exited = func() bool {
					m.mu.Lock()
					defer m.mu.Unlock()
					for _, s := range m.spawned {
						select {
						case <-s.exited:
							return true
						default:
						}
					}
					return false
				}
			}
			got := startAlone(t, m, clk, startInput(t, freeURL(t)), exited)
			if got.err == nil || !strings.Contains(got.err.Error(), tc.want) {
				t.Fatalf("Start = %v, want an error saying %q", got.err, tc.want)
			}
			if waited := clk.Now().Sub(t0); (waited >= serverWait) != tc.timeout {
				t.Errorf("waited %v; want the full %v: %v", waited, serverWait, tc.timeout)
			}
			m.mu.Lock()
			spawned := make([]*server, 0, len(m.spawned))
			for _, s := range m.spawned {
				spawned = append(spawned, s)
			}
			m.mu.Unlock()
			for _, s := range spawned {
				testwait.Recv(t, "the spawned process to end", s.exited)
			}
			if st, _ := f.Load(); len(st.CodexLiveSessions) != 0 {
				t.Errorf("saved %v, want nothing", st.CodexLiveSessions)
			}
		})
	}
}

// TestStartTriesAnotherPort: a start that picked its app-server's port
// and finds it taken by the time the server binds it (the server exits
// saying its address is in use) tries a new port, serverTries times in
// all; it then fails saying so, with the server's own words.
func TestStartTriesAnotherPort(t *testing.T) {
	t.Parallel()
	tries := func(bin string) func() int {
		if err := os.Remove(bin + ".tries"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return func() int {
			b, _ := os.ReadFile(bin + ".tries")
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return n
		}
	}
	t.Run("taken twice", func(t *testing.T) {
		t.Parallel()
		ran := tries(takenBin)
		m, _, clk := newManager(t, Config{Bin: takenBin})
		// No time passes before the third server listens: the first two
		// exit without it.
		third := func() bool { return ran() == 3 && slices.ContainsFunc(spawned(m), listens) }
		got := start(t, m, clk, startInput(t, ""), third)
		if got.err != nil {
			t.Fatalf("Start = %v, want it started on a third port", got.err)
		}
		if n := ran(); n != 3 {
			t.Errorf("the codex binary ran %d times, want 3", n)
		}
		if !got.sess.LaunchedServer || !listening(got.sess.ServerURL)() {
			t.Errorf("session = %+v, want it on the server that listens", got.sess)
		}
	})
	t.Run("always taken", func(t *testing.T) {
		t.Parallel()
		m, f, clk := newManager(t, Config{Bin: alwaysTakenBin})
		// A port the start was given is the caller's: tried once. One it
		// picked, serverTries times.
		for _, tc := range []struct {
			url  string
			runs int
		}{{freeURL(t), 1}, {"", serverTries}} {
			ran := tries(alwaysTakenBin)
			allExited := func() bool {
				if ran() < tc.runs {
					return false
				}
				for _, s := range spawned(m) {
					select {
					case <-s.exited:
					default:
						return false
					}
				}
				return true
			}
			got := startAlone(t, m, clk, startInput(t, tc.url), allExited)
			if !errors.Is(got.err, errPortTaken) || !strings.Contains(got.err.Error(), "exited (exit status 1)") ||
				!strings.HasSuffix(got.err.Error(), ": Error: Address in use (os error 98)") {
				t.Fatalf("given %q, Start = %v, want a failure ending with the server's error", tc.url, got.err)
			}
			if n := ran(); n != tc.runs {
				t.Errorf("given %q, the codex binary ran %d times, want %d", tc.url, n, tc.runs)
			}
		}
		if st, _ := f.Load(); len(st.CodexLiveSessions) != 0 {
			t.Errorf("saved %v, want nothing", st.CodexLiveSessions)
		}
	})
}

// TestInspect: an inspection reads the worker's state from its server,
// and says what it can when the server is gone or will not talk.
func TestInspect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      codextest.Options
		down      bool
		prev      string
		want      string
		reachable bool
		lastError string
	}{
		{"running", codextest.Options{}, false, StatusStarting, StatusRunning, true, ""},
		{"completed", codextest.Options{TurnStatus: "completed"}, false, StatusRunning, StatusCompleted, true, ""},
		{"handshake refused", codextest.Options{RefuseWebSocket: true}, false, StatusRunning, StatusUnknown, true, "connect to codex app-server"},
		{"server gone", codextest.Options{}, true, StatusRunning, StatusUnknown, false, "does not answer"},
		{"server gone after completing", codextest.Options{}, true, StatusCompleted, StatusCompleted, false, ""},
		{"failed stays failed", codextest.Options{}, false, StatusFailed, StatusFailed, true, ""},
		{"a failed turn's error", codextest.Options{TurnStatus: "failed", TurnError: "stream disconnected"}, false, StatusRunning, StatusFailed, true,
			"stream disconnected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := codextest.New(t, tc.opts)
			if tc.down {
				fake.Close()
			}
			m, f, _ := newManager(t, Config{})
			sess := state.CodexLiveSession{SessionID: "s1", RoomID: testRoom, ThreadID: codextest.ThreadID, TurnID: codextest.TurnID,
				ServerURL: fake.URL, Status: tc.prev}
			if err := f.Update(context.Background(), func(st *state.State) error {
				st.CodexLiveSessions["s1"], st.CurrentCodexLiveSessions[testRoom] = sess, "s1"
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got, err := m.inspect(context.Background(), sess)
			if err != nil || got.Session.Status != tc.want || got.ServerReachable != tc.reachable ||
				!strings.Contains(got.Session.LastError, tc.lastError) || (tc.lastError == "") != (got.Session.LastError == "") {
				t.Fatalf("Inspect = %s reachable %v error %q, %v; want %s reachable %v error %q", got.Session.Status, got.ServerReachable,
					got.Session.LastError, err, tc.want, tc.reachable, tc.lastError)
			}
			if sv := saved(t, f, "s1"); sv.Status != tc.want {
				t.Errorf("saved status %q, want %q", sv.Status, tc.want)
			}
			if tc.want == StatusRunning {
				items, _ := json.Marshal(got.RecentItems)
				if len(got.RecentItems) != 4 || !strings.Contains(string(items), "Joined the room.") || strings.Contains(string(items), "raw reasoning") ||
					strings.Contains(string(items), "Joining") || !strings.Contains(string(items), `{"tool":"","type":"mcpToolCall"}`) {
					t.Errorf("recent items = %s, want the messages and only the kind of the reasoning", items)
				}
				if statusName(got.TurnStatus) != "inProgress" || statusName(got.ThreadStatus) != "active" {
					t.Errorf("statuses = %s / %s", got.ThreadStatus, got.TurnStatus)
				}
			}
		})
	}
	m, _, _ := newManager(t, Config{})
	if _, err := m.Inspect(context.Background(), "nope", ""); !errors.Is(err, ErrNoSession) {
		t.Errorf("Inspect of no session = %v, want ErrNoSession", err)
	}
	if _, err := m.Stop(context.Background(), "", testRoom); !errors.Is(err, ErrNoSession) {
		t.Errorf("Stop of no session = %v, want ErrNoSession", err)
	}
}

// TestStop: a stop interrupts the worker's turn, or marks it interrupted
// anyway when its server is gone.
func TestStop(t *testing.T) {
	t.Parallel()
	for _, down := range []bool{false, true} {
		fake := codextest.New(t, codextest.Options{})
		m, f, clk := newManager(t, Config{})
		got := start(t, m, clk, startInput(t, fake.URL), nil)
		if got.err != nil {
			t.Fatal(got.err)
		}
		wantStatus, wantErr := StatusInterrupted, ""
		if down {
			// The worker's bridge tells the room the server went away: the
			// failure stays, the stop does not make it a stop.
			fake.Close()
			testwait.Until(t, "the bridge to tell the room the server went away", func() bool { return saved(t, f, got.sess.SessionID).EndedAt != "" })
			wantStatus, wantErr = StatusFailed, "the codex app-server went away"
		}
		got2 := stop(t, m, clk, got.sess.SessionID, "")
		stopped, err := got2.sess, got2.err
		if err != nil || stopped.Status != wantStatus || stopped.LastError != wantErr || stopped.EndedAt == "" {
			t.Errorf("server down %v: Stop = %s %q ended %q, %v; want %s %q, ended", down, stopped.Status, stopped.LastError,
				stopped.EndedAt, err, wantStatus, wantErr)
		}
		if !down {
			var p map[string]string
			if err := json.Unmarshal(waitCall(t, fake, "turn/interrupt").Params, &p); err != nil ||
				p["threadId"] != codextest.ThreadID || p["turnId"] != codextest.TurnID {
				t.Errorf("turn/interrupt params = %v, %v", p, err)
			}
		}
	}
}

// stop runs m.Stop, driving the clock through its waits.
func stop(t *testing.T, m *Manager, clk *testclock.Clock, id, roomID string) started {
	t.Helper()
	return drive(t, clk, nil, func() started {
		s, err := m.Stop(context.Background(), id, roomID)
		return started{sess: s, err: err}
	})
}

func TestDerive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prev         string
		reachable    bool
		thread, turn string
		want         string
	}{
		{StatusRunning, true, "systemError", "completed", StatusFailed},
		{StatusRunning, true, "active", "completed", StatusCompleted},
		{StatusRunning, true, "idle", "interrupted", StatusInterrupted},
		{StatusStarting, true, "active", "", StatusRunning},
		{StatusStarting, true, "", "inProgress", StatusRunning},
		{StatusStarting, true, "", "", StatusStarting},
		{StatusRunning, false, "", "", StatusUnknown},
		{StatusInterrupted, false, "", "", StatusInterrupted},
		{StatusRunning, true, "", "failed", StatusFailed},
		{StatusFailed, true, "active", "inProgress", StatusFailed},
		{StatusCompleted, false, "", "", StatusCompleted},
	}
	for _, tc := range tests {
		if got := derive(tc.prev, tc.reachable, tc.thread, tc.turn); got != tc.want {
			t.Errorf("derive(%s, %v, %q, %q) = %s, want %s", tc.prev, tc.reachable, tc.thread, tc.turn, got, tc.want)
		}
	}
}

func TestServerURLs(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, probe string }{
		{"ws://127.0.0.1:4500", "http://127.0.0.1:4500/readyz"},
		{"wss://codex.example:443/path?q=1", "https://codex.example:443/readyz"},
		{"http://127.0.0.1:4500", ""},
		{"ws://", ""},
		{"", ""},
	}
	for _, tc := range tests {
		got, err := readyURL(tc.in)
		if got != tc.probe || (err != nil) != (tc.probe == "") {
			t.Errorf("readyURL(%q) = %q, %v; want %q", tc.in, got, err, tc.probe)
		}
	}
	u, err := freeServerURL()
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(strings.TrimPrefix(u, "ws://"))
	if err != nil || host != loopback || CheckServerURL(u) != nil {
		t.Errorf("freeServerURL = %q, %v; want a loopback ws:// address", u, err)
	}
}

// TestStartOptions: a stop phrase and a time limit reach the session and
// its prompt; the deadline is written as the original wrote it.
func TestStartOptions(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{})
	m, _, clk := newManager(t, Config{})
	in := startInput(t, fake.URL)
	in.StopPhrase, in.MaxMinutes = "/halt", 90
	got := start(t, m, clk, in, nil)
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.sess.StopPhrase != "/halt" || got.sess.MaxMinutes != 90 || got.sess.DeadlineUTC != "2026-05-01 13:30:00 UTC" {
		t.Errorf("session = %+v", got.sess)
	}
	var tp struct {
		Input []struct{ Text string } `json:"input"`
	}
	if err := json.Unmarshal(fake.Calls("turn/start")[0].Params, &tp); err != nil || len(tp.Input) != 1 ||
		!strings.Contains(tp.Input[0].Text, "exactly /halt") || !strings.Contains(tp.Input[0].Text, "2026-05-01 13:30:00 UTC") {
		t.Errorf("prompt = %+v, %v", tp, err)
	}
}

// TestStarterEnding: when the starter tells a room a session ended and no
// bridge posted for it, the turn's summaries, read over the starter's own
// connection, go with the ending; when a bridge did, the ending alone
// (the bridge posted its summaries); with the server gone, the ending
// still goes.
func TestStarterEnding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reasoning string // the reasoning session a bridge saved
		down      bool
		want      []string
	}{
		{"no bridge posted", "", false, []string{"**Joining**", "Codex worker stopped (stop_local_codex_session)."}},
		{"a bridge posted", "rs_9", false, []string{"Codex worker stopped (stop_local_codex_session)."}},
		{"server gone", "", true, []string{"Codex worker stopped (stop_local_codex_session)."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := codextest.New(t, codextest.Options{TurnStatus: "interrupted"})
			if tc.down {
				fake.Close()
			}
			e := newEnv(t, Config{})
			saveAgent(t, e.f, worker, e.clk.Now())
			saveLive(t, e.f, state.CodexLiveSession{SessionID: "s1", RoomID: testRoom, ThreadID: codextest.ThreadID, TurnID: codextest.TurnID,
				ServerURL: fake.URL, Status: StatusInterrupted, AgentSessionID: worker.SessionID, ReasoningSessionID: tc.reasoning})
			e.m.tell(context.Background(), "s1", stoppedOutcome)
			e.room.mu.Lock()
			defer e.room.mu.Unlock()
			if got := summaries(e.room.posts); !slices.Equal(got, tc.want) {
				t.Errorf("posted %q, want %q", got, tc.want)
			}
			if len(e.room.ended) != 1 || saved(t, e.f, "s1").ToldAt == "" {
				t.Errorf("ended %v, told %q; want the worker's session ended and the telling saved", e.room.ended, saved(t, e.f, "s1").ToldAt)
			}
		})
	}
}

// TestLastWords: a failed server's words are its last error line, else
// its last line, without a terminal's colours.
func TestLastWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, stderr, want string }{
		{"nothing", "", ""},
		{"an error before a backtrace", "\x1b[31mERROR\x1b[0m warm-up\nError: Address in use (os error 98)\n\nStack backtrace:\n   0: <unknown>\n", "Error: Address in use (os error 98)"},
		{"a coloured log line", "\x1b[2m2026-12-07T04:15:45Z\x1b[0m \x1b[31mERROR\x1b[0m codex_app_server: no config\n", "2026-12-07T04:15:45Z ERROR codex_app_server: no config"},
		{"a long line", strings.Repeat("x", 400), strings.Repeat("x", 300) + "…"},
	} {
		f, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(tc.stderr); err != nil {
			t.Fatal(err)
		}
		s := &server{stderr: f}
		if got := s.lastWords(); got != tc.want {
			t.Errorf("%s: lastWords = %q, want %q", tc.name, got, tc.want)
		}
		s.forgetStderr()
		if _, err := os.Stat(f.Name()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the file is still there after forgetStderr (%v)", tc.name, err)
		}
	}
}
