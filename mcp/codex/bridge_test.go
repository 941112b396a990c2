package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/codex/codextest"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// fakeRoom records what the bridge posts, and fails when told to.
type fakeRoom struct {
	mu                    sync.Mutex
	activity              []wire.NativeActivity
	opened, added         []ReasoningPost
	addedTo               []string
	posts                 []ReasoningPost // opened and added, in order
	failAdd, failActivity bool
}

func (f *fakeRoom) ReportNativeActivity(_ context.Context, roomID string, a wire.NativeActivity) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if roomID != testRoom {
		return fmt.Errorf("room %q", roomID)
	}
	f.activity = append(f.activity, a)
	if f.failActivity {
		return errors.New("activity refused")
	}
	return nil
}

func (f *fakeRoom) OpenReasoning(_ context.Context, roomID string, p ReasoningPost) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened, f.posts = append(f.opened, p), append(f.posts, p)
	return fmt.Sprintf("rs_%d", len(f.opened)), nil
}

func (f *fakeRoom) AddReasoning(_ context.Context, roomID, id string, p ReasoningPost) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added, f.addedTo, f.posts = append(f.added, p), append(f.addedTo, id), append(f.posts, p)
	if f.failAdd {
		return errors.New("no such reasoning session")
	}
	return nil
}

func (f *fakeRoom) counts() (activity, opened, added int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.activity), len(f.opened), len(f.added)
}

func (f *fakeRoom) lastActivity() wire.NativeActivity {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.activity[len(f.activity)-1]
}

var worker = state.AgentSession{SessionID: "as_7", SessionToken: "sess_tok", RoomID: testRoom, SessionKind: "worker", Runtime: "codex",
	ActorLabel: "Builder | Ann's agent | Codex", AgentKey: "ann/builder", RuntimeKey: "codex:1"}

// bridgeEnv is a Bridges on a state file holding a running live session
// of testRoom on serverURL, and the worker's agent session when withWorker.
func bridgeEnv(t *testing.T, serverURL string, withWorker bool) (*Bridges, *fakeRoom, *testclock.Clock, *state.File, state.CodexLiveSession) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	f := state.Open(filepath.Join(t.TempDir(), "mcp-state.json"))
	live := state.CodexLiveSession{SessionID: "live-1", RoomID: testRoom, ThreadID: codextest.ThreadID, TurnID: codextest.TurnID,
		ServerURL: serverURL, Status: StatusRunning, StartedAt: stamp(clk.Now())}
	saveLive(t, f, live)
	if withWorker {
		saveAgent(t, f, worker, clk.Now())
	}
	room := &fakeRoom{}
	b := NewBridges(BridgeConfig{State: f, Activity: room, Reasoning: room, Clock: clk})
	t.Cleanup(b.Close)
	return b, room, clk, f, live
}

func saveLive(t *testing.T, f *state.File, live state.CodexLiveSession) {
	t.Helper()
	if err := f.Update(context.Background(), func(st *state.State) error {
		st.CodexLiveSessions[live.SessionID], st.CurrentCodexLiveSessions[live.RoomID] = live, live.SessionID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func saveAgent(t *testing.T, f *state.File, a state.AgentSession, created time.Time) state.AgentSession {
	t.Helper()
	a.CreatedAt = stamp(created)
	if err := f.Update(context.Background(), func(st *state.State) error {
		st.AgentSessions[a.SessionID] = a
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return a
}

// note is a notification of the live session's thread.
func note(method string, params map[string]any) Notification {
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["threadId"]; !ok {
		params["threadId"] = codextest.ThreadID
	}
	b, _ := json.Marshal(params)
	return Notification{Method: method, Params: b}
}

func reasoningDone(id string, summary ...string) Notification {
	return note("item/completed", map[string]any{"turnId": codextest.TurnID,
		"item": map[string]any{"type": "reasoning", "id": id, "summary": summary, "content": []string{"secret raw chain of thought"}}})
}

// TestReasoningPosts: summaries go out as a reasoning session and then its
// updates, at most one per 750 ms (a held one goes at the next chance),
// the same one not again within 30 s, and raw reasoning never.
func TestReasoningPosts(t *testing.T) {
	t.Parallel()
	b, room, clk, _, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
	s := newStreamer(b, live, worker)
	ctx := context.Background()
	delta := func(text string, index int) Notification {
		return note("item/reasoning/summaryTextDelta", map[string]any{"itemId": "r1", "summaryIndex": index, "delta": text})
	}
	type step struct {
		what           string
		advance        time.Duration
		do             func()
		opened, added  int
		lastSummary    string
		failAddFromNow bool
	}
	steps := []step{
		{what: "a summary part still being written", do: func() {
			s.handle(ctx, delta("**Reading** ", 0))
			s.handle(ctx, delta("the board", 0))
			s.handle(ctx, note("item/reasoning/textDelta", map[string]any{"itemId": "r1", "delta": "secret raw chain of thought"}))
		}},
		{what: "the next part begins: the first opens the session", do: func() {
			s.handle(ctx, note("item/reasoning/summaryPartAdded", map[string]any{"itemId": "r1", "summaryIndex": 1}))
		}, opened: 1, lastSummary: "**Reading** the board"},
		{what: "the item ends 100 ms later: held", advance: 100 * time.Millisecond, do: func() {
			s.handle(ctx, reasoningDone("r1", "**Reading** the board", "**Planning** the fix"))
		}, opened: 1},
		{what: "650 ms later: still within 750 ms of the last post", advance: 649 * time.Millisecond, do: func() { s.tick(ctx) }, opened: 1},
		{what: "750 ms after the last post: the held one goes", advance: time.Millisecond, do: func() { s.tick(ctx) },
			opened: 1, added: 1, lastSummary: "**Planning** the fix"},
		{what: "the same again a second later: dropped", advance: time.Second, do: func() {
			s.handle(ctx, reasoningDone("r2", "**Planning** the fix"))
			s.tick(ctx)
		}, opened: 1, added: 1},
		{what: "the same 30 s after it was posted: posted", advance: 29 * time.Second, do: func() {
			s.handle(ctx, reasoningDone("r3", "**Planning** the fix"))
		}, opened: 1, added: 2, lastSummary: "**Planning** the fix"},
		{what: "an update fails: a new session opens", advance: time.Second, failAddFromNow: true, do: func() {
			s.handle(ctx, reasoningDone("r4", "**Testing**"))
		}, opened: 2, added: 3, lastSummary: "**Testing**"},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		if st.failAddFromNow {
			room.mu.Lock()
			room.failAdd = true
			room.mu.Unlock()
		}
		st.do()
		_, opened, added := room.counts()
		if opened != st.opened || added != st.added {
			t.Fatalf("%s: opened %d, added %d; want %d, %d", st.what, opened, added, st.opened, st.added)
		}
		if st.lastSummary == "" {
			continue
		}
		room.mu.Lock()
		last := room.posts[len(room.posts)-1]
		room.mu.Unlock()
		if last.Summary != st.lastSummary {
			t.Errorf("%s: posted %q, want %q", st.what, last.Summary, st.lastSummary)
		}
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	first := room.opened[0]
	if first.Goal != ReasoningGoal || first.AgentSessionID != worker.SessionID || first.AgentSessionToken != worker.SessionToken ||
		first.ActorLabel != worker.ActorLabel || first.AgentKey != worker.AgentKey || first.Status != working {
		t.Errorf("opening post = %+v", first)
	}
	if room.addedTo[0] != "rs_1" || room.added[0].Goal != "" {
		t.Errorf("first update went to %s with goal %q, want rs_1 and none", room.addedTo[0], room.added[0].Goal)
	}
	all, _ := json.Marshal([]any{room.opened, room.added})
	if strings.Contains(string(all), "secret") {
		t.Errorf("raw reasoning was posted: %s", all)
	}
}

// TestNativeActivity: the worker's events are reported with an increasing
// sequence, at most one per 750 ms, with a heartbeat after 15 s of quiet;
// failures are only logged, and another thread's events do not count.
func TestNativeActivity(t *testing.T) {
	t.Parallel()
	b, room, clk, f, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
	s := newStreamer(b, live, worker)
	ctx := context.Background()
	type want struct {
		n      int
		seq    int64
		method string
		status string
	}
	steps := []struct {
		what    string
		advance time.Duration
		do      func() bool // false when the stream should end
		want    want
		ends    bool
	}{
		{"another thread's event", 0, func() bool {
			s.handle(ctx, note("item/started", map[string]any{"threadId": "other"}))
			return true
		}, want{n: 0}, false},
		{"the first event", 0, func() bool { s.handle(ctx, note("item/started", nil)); return true },
			want{1, 1, "item/started", working}, false},
		{"100 ms later", 100 * time.Millisecond, func() bool { s.handle(ctx, note("item/completed", nil)); return true },
			want{1, 1, "item/started", working}, false},
		{"750 ms after the first", 650 * time.Millisecond, func() bool {
			s.handle(ctx, note("turn/completed", map[string]any{"turn": map[string]any{"status": "completed"}}))
			return true
		},
			want{2, 2, "turn/completed", idle}, false},
		{"quiet for 14.9 s", 14900 * time.Millisecond, func() bool { return s.tick(ctx) }, want{2, 2, "turn/completed", idle}, false},
		{"quiet for 15 s: a heartbeat", 100 * time.Millisecond, func() bool { return s.tick(ctx) }, want{3, 3, HeartbeatMethod, idle}, false},
		{"an error, the API refusing", time.Second, func() bool {
			room.mu.Lock()
			room.failActivity = true
			room.mu.Unlock()
			s.handle(ctx, note("error", map[string]any{"error": map[string]any{"message": "Reconnecting... 2/5"}, "willRetry": true}))
			return true
		}, want{4, 4, "error", blocked}, false},
		{"the next event still goes", time.Second, func() bool { s.handle(ctx, note("item/started", nil)); return true },
			want{5, 5, "item/started", working}, false},
		{"the session stopped", time.Second, func() bool {
			live.Status = StatusInterrupted
			saveLive(t, f, live)
			return s.tick(ctx)
		}, want{5, 5, "item/started", working}, true},
	}
	reported := 0
	for _, st := range steps {
		clk.Advance(st.advance)
		if goOn := st.do(); goOn == st.ends {
			t.Fatalf("%s: tick answered %v, want %v", st.what, goOn, !st.ends)
		}
		n, _, _ := room.counts()
		if n != st.want.n {
			t.Fatalf("%s: %d reports, want %d", st.what, n, st.want.n)
		}
		if n == 0 {
			continue
		}
		a := room.lastActivity()
		if a.Sequence != st.want.seq || a.Method != st.want.method || a.Status != st.want.status ||
			a.AgentSessionID != worker.SessionID || a.AgentSessionToken != worker.SessionToken {
			t.Errorf("%s: reported %+v, want %+v", st.what, a, st.want)
		}
		if now := clk.Now().UTC().Format(time.RFC3339Nano); n > reported && a.ObservedAt != now {
			t.Errorf("%s: observed_at %s, want %s", st.what, a.ObservedAt, now)
		}
		reported = n
	}
}

// TestBridgeStreams: a registering Codex worker binds to its room's live
// session, follows its thread on the app-server, reports what happens
// there, beats after 15 s of quiet, and stops when the server goes away.
func TestBridgeStreams(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{})
	b, room, clk, f, _ := bridgeEnv(t, fake.URL, true)
	b.Registered(worker)
	var resume map[string]any
	if err := json.Unmarshal(waitCall(t, fake, "thread/resume").Params, &resume); err != nil || resume["threadId"] != codextest.ThreadID {
		t.Fatalf("thread/resume params = %v, %v", resume, err)
	}
	st, _ := f.Load()
	if got := st.CodexLiveSessions["live-1"].AgentSessionID; got != worker.SessionID {
		t.Errorf("bound to %q, want %s", got, worker.SessionID)
	}
	testwait.Until(t, "the fake to hear the bridge follow its thread", func() bool { return fake.Followers() == 1 })
	fake.Notify("item/reasoning/summaryTextDelta", map[string]any{"threadId": codextest.ThreadID, "itemId": "r1", "summaryIndex": 0, "delta": "**Looking**"})
	fake.Notify("item/completed", map[string]any{"threadId": codextest.ThreadID,
		"item": map[string]any{"type": "reasoning", "id": "r1", "summary": []string{"**Looking**"}, "content": []string{"raw"}}})
	testwait.Until(t, "the reasoning to be posted", func() bool { _, opened, _ := room.counts(); return opened == 1 })
	if a := room.lastActivity(); a.Sequence != 1 || a.Method != "item/reasoning/summaryTextDelta" {
		t.Errorf("first report = %+v", a)
	}
	for range heartbeatAfter/tickEvery + 1 {
		advanceWhenWaiting(t, clk, tickEvery)
	}
	testwait.Until(t, "a heartbeat", func() bool { return room.lastActivity().Method == HeartbeatMethod })
	fake.Close()
	testwait.Until(t, "the stream to end", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.streams) == 0
	})
}

// TestBindRetries: a worker that registers before its live session is
// saved is bound when it is, trying every second; after 30 tries it gives
// up.
func TestBindRetries(t *testing.T) {
	t.Parallel()
	t.Run("bound on a later try", func(t *testing.T) {
		t.Parallel()
		fake := codextest.New(t, codextest.Options{})
		b, _, clk, f, live := bridgeEnv(t, fake.URL, true)
		if err := f.Update(context.Background(), func(st *state.State) error {
			delete(st.CodexLiveSessions, live.SessionID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		b.Registered(worker)
		for range 4 {
			advanceWhenWaiting(t, clk, bindEvery)
		}
		saveLive(t, f, live)
		advanceWhenWaiting(t, clk, bindEvery)
		waitCall(t, fake, "thread/resume")
	})
	t.Run("gives up after 30 tries", func(t *testing.T) {
		t.Parallel()
		fake := codextest.New(t, codextest.Options{})
		b, _, clk, f, live := bridgeEnv(t, fake.URL, true)
		live.Status = StatusCompleted // no live session to bind to
		saveLive(t, f, live)
		b.Registered(worker)
		for range bindAttempts - 1 {
			advanceWhenWaiting(t, clk, bindEvery)
		}
		done := make(chan struct{})
		go func() {
			b.wg.Wait()
			close(done)
		}()
		testwait.Recv(t, "the binding to give up", done)
		if n := clk.Waiters(); n != 0 {
			t.Errorf("%d waits after giving up", n)
		}
		if methods := fake.Methods(); len(methods) != 0 {
			t.Errorf("app-server got %v, want nothing", methods)
		}
	})
}

// TestPickWorker: a live session streams as the worker it is bound to,
// else the first Codex worker of its room registered since it started.
func TestPickWorker(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	live := state.CodexLiveSession{RoomID: testRoom, StartedAt: stamp(start)}
	at := func(id string, d time.Duration, change func(*state.AgentSession)) state.AgentSession {
		a := worker
		a.SessionID, a.CreatedAt = id, stamp(start.Add(d))
		if change != nil {
			change(&a)
		}
		return a
	}
	tests := []struct {
		name   string
		bound  string
		agents []state.AgentSession
		want   string
	}{
		{"earliest since the start", "", []state.AgentSession{at("as_2", 3*time.Second, nil), at("as_1", 2*time.Second, nil)}, "as_1"},
		{"a second's leeway", "", []state.AgentSession{at("as_1", -900*time.Millisecond, nil)}, "as_1"},
		{"older ones are not the worker", "", []state.AgentSession{at("as_1", -2*time.Second, nil)}, ""},
		{"the bound one first", "as_2", []state.AgentSession{at("as_1", time.Second, nil), at("as_2", 2*time.Second, nil)}, "as_2"},
		{"not Codex", "", []state.AgentSession{at("as_1", time.Second, func(a *state.AgentSession) { a.Runtime = "claude-code" })}, ""},
		{"a controller", "", []state.AgentSession{at("as_1", time.Second, func(a *state.AgentSession) { a.SessionKind = "controller" })}, ""},
		{"no credentials", "", []state.AgentSession{at("as_1", time.Second, func(a *state.AgentSession) { a.SessionToken = "" })}, ""},
		{"another room", "", []state.AgentSession{at("as_1", time.Second, func(a *state.AgentSession) { a.RoomID = "other" })}, ""},
	}
	for _, tc := range tests {
		agents := map[string]state.AgentSession{}
		for _, a := range tc.agents {
			agents[a.SessionID] = a
		}
		l := live
		l.AgentSessionID = tc.bound
		if got := pickWorker(l, agents); got != tc.want {
			t.Errorf("%s: pickWorker = %q, want %q", tc.name, got, tc.want)
		}
	}
}
