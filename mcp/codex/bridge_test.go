package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
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
	closed                []string        // reasoning sessions closed
	ended                 []string        // agent sessions ended
	failAdd, failActivity bool
}

func (f *fakeRoom) CloseReasoning(_ context.Context, roomID, id string, creds wire.SessionCredentials) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if creds.AgentSessionID == "" {
		return errors.New("no credentials")
	}
	f.closed = append(f.closed, id)
	return nil
}

func (f *fakeRoom) DisconnectSession(_ context.Context, roomID string, creds wire.SessionCredentials) (wire.Disconnected, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, creds.AgentSessionID)
	return wire.Disconnected{}, nil
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
	b := NewBridges(BridgeConfig{State: f, Activity: room, Reasoning: room, Sessions: room, Clock: clk})
	t.Cleanup(b.Close)
	return b, room, clk, f, live
}

// saveLive saves live as its room's current session; t nil panics on
// failure.
func saveLive(t *testing.T, f *state.File, live state.CodexLiveSession) {
	if err := f.Update(context.Background(), func(st *state.State) error {
		st.CodexLiveSessions[live.SessionID], st.CurrentCodexLiveSessions[live.RoomID] = live, live.SessionID
		return nil
	}); err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
}

func saveAgent(t *testing.T, f state.Store, a state.AgentSession, created time.Time) state.AgentSession {
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
// updates, at most one post per 750 ms; what comes sooner is queued and
// goes merged at the next chance (nothing is lost); a summary posted in
// the last 30 s is not posted again, whatever came between; raw
// reasoning never goes.
func TestReasoningPosts(t *testing.T) {
	t.Parallel()
	b, room, clk, _, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
	s := newStreamer(b, live, worker)
	ctx := context.Background()
	delta := func(text string, index int) Notification {
		return note("item/reasoning/summaryTextDelta", map[string]any{"itemId": "r1", "summaryIndex": index, "delta": text})
	}
	handle := func(n Notification) { s.handle(ctx, n) }
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
			handle(delta("**Reading** ", 0))
			handle(delta("the board", 0))
			handle(note("item/reasoning/textDelta", map[string]any{"itemId": "r1", "delta": "secret raw chain of thought"}))
		}},
		{what: "the next part begins: the first opens the session", do: func() {
			handle(note("item/reasoning/summaryPartAdded", map[string]any{"itemId": "r1", "summaryIndex": 1}))
		}, opened: 1, lastSummary: "**Reading** the board"},
		{what: "the item ends 100 ms later: queued", advance: 100 * time.Millisecond, do: func() {
			handle(reasoningDone("r1", "**Reading** the board", "**Planning** the fix"))
		}, opened: 1},
		{what: "another item 100 ms later: queued too", advance: 100 * time.Millisecond, do: func() {
			handle(reasoningDone("r2", "**Testing**"))
		}, opened: 1},
		{what: "749 ms after the last post: still waiting", advance: 549 * time.Millisecond, do: func() { s.flush(ctx) }, opened: 1},
		{what: "750 ms after the last post: both go, merged", advance: time.Millisecond, do: func() { s.flush(ctx) },
			opened: 1, added: 1, lastSummary: "**Planning** the fix\n\n**Testing**"},
		{what: "the same again a second later: dropped", advance: time.Second, do: func() {
			handle(reasoningDone("r3", "**Planning** the fix"))
			s.flush(ctx)
		}, opened: 1, added: 1},
		{what: "an older one 20 s later, others between: dropped", advance: 20 * time.Second, do: func() {
			handle(reasoningDone("r4", "**Reading** the board"))
			s.flush(ctx)
		}, opened: 1, added: 1},
		{what: "30 s after it was posted: posted", advance: 9 * time.Second, do: func() {
			handle(reasoningDone("r5", "**Reading** the board"))
		}, opened: 1, added: 2, lastSummary: "**Reading** the board"},
		{what: "an update fails: a new session opens", advance: time.Second, failAddFromNow: true, do: func() {
			handle(reasoningDone("r6", "**Fixing**"))
		}, opened: 2, added: 3, lastSummary: "**Fixing**"},
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

// TestTenFastSteps: ten steps of two summary parts each, 50 ms apart,
// reach the room whole, in order, in posts at least 750 ms apart.
func TestTenFastSteps(t *testing.T) {
	t.Parallel()
	b, room, clk, _, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
	s := newStreamer(b, live, worker)
	ctx := context.Background()
	var want []string
	for i := range 10 {
		clk.Advance(50 * time.Millisecond)
		parts := []string{fmt.Sprintf("**Step %d**", i), fmt.Sprintf("Running check %d", i)}
		want = append(want, parts...)
		s.handle(ctx, reasoningDone(fmt.Sprintf("r%d", i), parts...))
		s.handle(ctx, note("item/completed", map[string]any{"item": map[string]any{"type": "commandExecution", "id": fmt.Sprintf("c%d", i)}}))
	}
	for range 10 {
		if _, ok := s.due(); !ok {
			break
		}
		clk.Advance(postGap)
		s.flush(ctx)
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	var got []string
	for _, p := range room.posts {
		got = append(got, strings.Split(p.Summary, "\n\n")...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("posted parts %q, want %q", got, want)
	}
	if len(room.posts) > 3 {
		t.Errorf("%d posts, want the parts merged into few", len(room.posts))
	}
}

// TestNativeActivity: the worker's events are reported with an increasing
// sequence, at most one per 750 ms; one that comes sooner goes late (the
// latest wins), with a heartbeat after 15 s of quiet that keeps the
// status; failures are only logged; another thread's events do not
// count.
func TestNativeActivity(t *testing.T) {
	t.Parallel()
	b, room, clk, _, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
	s := newStreamer(b, live, worker)
	ctx := context.Background()
	type want struct {
		n      int
		seq    int64
		method string
		status string
	}
	handle := func(n Notification) { s.handle(ctx, n) }
	steps := []struct {
		what    string
		advance time.Duration
		do      func()
		want    want
	}{
		{"another thread's event", 0, func() { handle(note("item/started", map[string]any{"threadId": "other"})) }, want{n: 0}},
		{"the first event", 0, func() { handle(note("item/started", nil)) }, want{1, 1, "item/started", working}},
		{"100 ms later: held", 100 * time.Millisecond, func() { handle(note("item/completed", nil)) }, want{1, 1, "item/started", working}},
		{"an error to be retried: the latest held", 100 * time.Millisecond, func() {
			handle(note("error", map[string]any{"error": map[string]any{"message": "Reconnecting... 1/5"}, "willRetry": true}))
		}, want{1, 1, "item/started", working}},
		{"749 ms after the first: still held", 549 * time.Millisecond, func() { s.flush(ctx) }, want{1, 1, "item/started", working}},
		{"750 ms after the first: it goes", time.Millisecond, func() { s.flush(ctx) }, want{2, 2, "error", working}},
		{"an error not retried, the API refusing", time.Second, func() {
			room.mu.Lock()
			room.failActivity = true
			room.mu.Unlock()
			handle(note("error", map[string]any{"error": map[string]any{"message": "stream failed"}, "willRetry": false}))
		}, want{3, 3, "error", blocked}},
		{"quiet for 14.9 s", 14900 * time.Millisecond, func() { s.tick(ctx, nil) }, want{3, 3, "error", blocked}},
		{"quiet for 15 s: a heartbeat, still blocked", 100 * time.Millisecond, func() { s.tick(ctx, nil) }, want{4, 4, HeartbeatMethod, blocked}},
		{"the next event still goes", time.Second, func() { handle(note("item/started", nil)) }, want{5, 5, "item/started", working}},
	}
	reported := 0
	for _, st := range steps {
		clk.Advance(st.advance)
		st.do()
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

// holding is a stream of live on b (clk its clock) that has posted the
// summary posted and holds held, which came within postGap of it.
func holding(b *Bridges, clk *testclock.Clock, live state.CodexLiveSession, posted, held string) *streamer {
	s := newStreamer(b, live, worker)
	ctx := context.Background()
	s.handle(ctx, reasoningDone("r1", posted))
	clk.Advance(100 * time.Millisecond)
	s.handle(ctx, reasoningDone("r2", held))
	return s
}

// TestEndings: however the session ends, the stream tells the room once:
// the summaries still queued, one final update saying idle or blocked and
// why, the reasoning session closed, a last native activity, and the
// worker's agent session ended; the state file keeps the final status
// and error.
func TestEndings(t *testing.T) {
	t.Parallel()
	turnEnd := func(status string, errMsg string) Notification {
		turn := map[string]any{"id": codextest.TurnID, "status": status}
		if errMsg != "" {
			turn["error"] = map[string]any{"message": errMsg}
		}
		return note("turn/completed", map[string]any{"turn": turn})
	}
	tests := []struct {
		name       string
		end        func(s *streamer, f *state.File, live state.CodexLiveSession)
		presence   string
		reason     string
		status     string
		lastError  string
		otherTurns bool
	}{
		{"turn completed", func(s *streamer, _ *state.File, _ state.CodexLiveSession) {
			o, ended := s.handle(context.Background(), turnEnd("completed", ""))
			if ended {
				s.end(context.Background(), o)
			}
		}, idle, "finished its turn", StatusCompleted, "", false},
		{"model error mid-turn, right after a post", func(s *streamer, _ *state.File, _ state.CodexLiveSession) {
			ctx := context.Background()
			s.handle(ctx, note("error", map[string]any{"error": map[string]any{"message": "unexpected status 500 Internal Server Error"}, "willRetry": false}))
			o, ended := s.handle(ctx, turnEnd("failed", ""))
			if ended {
				s.end(ctx, o)
			}
		}, blocked, "unexpected status 500 Internal Server Error", StatusFailed, "unexpected status 500 Internal Server Error", false},
		{"turn interrupted", func(s *streamer, _ *state.File, _ state.CodexLiveSession) {
			o, ended := s.handle(context.Background(), turnEnd("interrupted", ""))
			if ended {
				s.end(context.Background(), o)
			}
		}, idle, "stopped", StatusInterrupted, "", false},
		{"stopped from outside", func(s *streamer, f *state.File, live state.CodexLiveSession) {
			live.Status = StatusInterrupted
			saveLive(nil, f, live)
			if s.tick(context.Background(), nil) {
				panic("the stream goes on after a stop")
			}
		}, idle, "stop_local_codex_session", StatusInterrupted, "", false},
		{"app-server connection lost", func(s *streamer, _ *state.File, _ state.CodexLiveSession) {
			s.lost(context.Background())
		}, blocked, "app-server went away", StatusFailed, "the codex app-server went away", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, room, clk, f, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
			s := holding(b, clk, live, "**Working**", "**Still queued**")
			ctx := context.Background()
			tc.end(s, f, live)

			room.mu.Lock()
			defer room.mu.Unlock()
			final := room.posts[len(room.posts)-1]
			if len(room.posts) != 2 || final.Status != tc.presence || !strings.Contains(final.Summary, tc.reason) ||
				!strings.HasPrefix(final.Summary, "**Still queued**") {
				t.Errorf("posts %+v; want the queued summary and a final %s one saying %q", room.posts, tc.presence, tc.reason)
			}
			if !slices.Equal(room.closed, []string{"rs_1"}) || !slices.Equal(room.ended, []string{worker.SessionID}) {
				t.Errorf("closed %v, ended %v; want rs_1 closed and the worker's session ended", room.closed, room.ended)
			}
			if a := room.activity[len(room.activity)-1]; a.Status != tc.presence {
				t.Errorf("last native activity %+v, want %s", a, tc.presence)
			}
			sv := saved(t, f, live.SessionID)
			if sv.EndedAt == "" || sv.Status != tc.status || sv.LastError != tc.lastError {
				t.Errorf("saved %s %q ended %q; want %s %q, ended", sv.Status, sv.LastError, sv.EndedAt, tc.status, tc.lastError)
			}
			// Told once: another ending (the starter's) posts nothing.
			n := len(room.posts)
			room.mu.Unlock()
			s.end(ctx, exitOutcome(nil))
			room.mu.Lock()
			if len(room.posts) != n || len(room.ended) != 1 {
				t.Errorf("a second ending posted again")
			}
		})
	}
}

// TestNothingAfterTheEnding: once another process (the starter, seeing
// the app-server killed) has told the room the session ended, what the
// stream still holds is not posted after it, and nothing is left waiting
// to be (a stream that kept it would wake for it again and again).
func TestNothingAfterTheEnding(t *testing.T) {
	t.Parallel()
	b, room, clk, _, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
	s := holding(b, clk, live, "**Busy**", "**Held**")
	ctx := context.Background()
	if _, waits := s.due(); !waits {
		t.Fatal("nothing held before the ending")
	}
	e := b.ender()
	o := exitOutcome(errors.New("signal: killed"))
	l, a, ok, err := e.claim(ctx, live.SessionID, o)
	if err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	e.finish(ctx, l, a, "", nil, 1, o)
	room.mu.Lock()
	posts, activity := len(room.posts), len(room.activity)
	room.mu.Unlock()

	clk.Advance(postGap)
	s.flush(ctx)
	s.report(ctx, HeartbeatMethod)

	room.mu.Lock()
	defer room.mu.Unlock()
	if len(room.posts) != posts || len(room.activity) != activity {
		t.Errorf("posted after the ending: posts %+v, activity %+v", room.posts[posts:], room.activity[activity:])
	}
	if final := room.posts[len(room.posts)-1]; final.Status != blocked || !strings.Contains(final.Summary, "killed") {
		t.Errorf("final post %+v, want the ending", final)
	}
	if d, waits := s.due(); waits {
		t.Errorf("still waiting to post in %v after the ending", d)
	}
}

// TestBridgeStreams: a registering Codex worker binds to its room's live
// session, follows its thread on the app-server, posts what it thought
// before it registered, reports what happens there, beats after 15 s of
// quiet, and, when the turn fails, tells the room and ends.
func TestBridgeStreams(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{})
	b, room, clk, f, _ := bridgeEnv(t, fake.URL, true)
	b.Registered(worker)
	var resume map[string]any
	if err := json.Unmarshal(waitCall(t, fake, "thread/resume").Params, &resume); err != nil || resume["threadId"] != codextest.ThreadID {
		t.Fatalf("thread/resume params = %v, %v", resume, err)
	}
	testwait.Until(t, "the summary from before registration to be posted", func() bool {
		room.mu.Lock()
		defer room.mu.Unlock()
		return len(room.opened) == 1 && room.opened[0].Summary == "**Joining**"
	})
	testwait.Until(t, "the reasoning session to be saved", func() bool { return saved(t, f, "live-1").ReasoningSessionID == "rs_1" })
	if got := saved(t, f, "live-1"); got.AgentSessionID != worker.SessionID {
		t.Errorf("bound to %q, want %s", got.AgentSessionID, worker.SessionID)
	}
	testwait.Until(t, "the fake to hear the bridge follow its thread", func() bool { return fake.Followers() == 1 })
	fake.Notify("item/reasoning/summaryTextDelta", map[string]any{"threadId": codextest.ThreadID, "itemId": "r1", "summaryIndex": 0, "delta": "**Looking**"})
	fake.Notify("item/completed", map[string]any{"threadId": codextest.ThreadID,
		"item": map[string]any{"type": "reasoning", "id": "r1", "summary": []string{"**Looking**"}, "content": []string{"raw"}}})
	// Within 750 ms of the first post: it waits on the clock, then goes.
	testwait.Until(t, "the first native activity", func() bool { n, _, _ := room.counts(); return n > 0 })
	advanceWhenWaiting(t, clk, postGap)
	testwait.Until(t, "the queued reasoning to be posted", func() bool { _, _, added := room.counts(); return added == 1 })
	for range heartbeatAfter/tickEvery + 1 {
		advanceWhenWaiting(t, clk, tickEvery)
	}
	testwait.Until(t, "a heartbeat", func() bool { return room.lastActivity().Method == HeartbeatMethod })
	fake.Notify("turn/completed", map[string]any{"threadId": codextest.ThreadID,
		"turn": map[string]any{"id": codextest.TurnID, "status": "failed", "error": map[string]any{"message": "model overloaded"}}})
	testwait.Until(t, "the stream to end", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.streams) == 0
	})
	if sv := saved(t, f, "live-1"); sv.Status != StatusFailed || sv.LastError != "model overloaded" || sv.EndedAt == "" {
		t.Errorf("saved %+v, want failed with the turn's error, ended", sv)
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	if final := room.posts[len(room.posts)-1]; final.Status != blocked || !strings.Contains(final.Summary, "model overloaded") ||
		len(room.closed) != 1 || len(room.ended) != 1 {
		t.Errorf("final post %+v, closed %v, ended %v", final, room.closed, room.ended)
	}
	// No heartbeat after the end: nothing hears the clock any more.
	n := len(room.activity)
	room.mu.Unlock()
	clk.Advance(2 * heartbeatAfter)
	room.mu.Lock()
	if len(room.activity) != n {
		t.Errorf("activity after the end")
	}
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

// TestActivityText: native activity carries a line saying what the worker
// does, which the roster shows: the command it runs, the tool it calls,
// the summary it thought last, a model error; never raw reasoning.
func TestActivityText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    Notification
		want string
	}{
		{"a command", note("item/started", map[string]any{"item": map[string]any{"type": "commandExecution", "id": "c1",
			"command": "go test\n  ./..."}}), "running go test ./..."},
		{"a tool call", note("item/started", map[string]any{"item": map[string]any{"type": "mcpToolCall", "id": "t1", "tool": "wait_for_messages"}}),
			"calling wait_for_messages"},
		{"a summary", reasoningDone("r1", "**Checking** the board"), "thinking: **Checking** the board"},
		{"raw reasoning tells nothing", note("item/reasoning/textDelta", map[string]any{"itemId": "r1", "delta": "secret"}), "working"},
		{"a model error", note("error", map[string]any{"error": map[string]any{"message": "overloaded"}, "willRetry": true}),
			"model error (retrying): overloaded"},
		{"a long command", note("item/started", map[string]any{"item": map[string]any{"type": "commandExecution", "id": "c2",
			"command": strings.Repeat("x", 300)}}), "running " + strings.Repeat("x", maxLine-len("running ")-1) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, room, _, _, live := bridgeEnv(t, "ws://127.0.0.1:1", true)
			s := newStreamer(b, live, worker)
			s.text = "working"
			s.handle(context.Background(), tc.n)
			if got := room.lastActivity().Text; got != tc.want {
				t.Errorf("text = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBridgeFollowsLate: Codex refuses thread/resume for a moment early
// in a thread's first turn. The stream tries again every 250 ms and then
// follows the thread; one that never could still reads the turn's end on
// each tick and ends with every summary of the turn. Either way the
// ending reads back the summaries no notification told.
func TestBridgeFollowsLate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		refusals int
		follows  bool
	}{
		{"refused twice, then followed", 2, true},
		{"never followed", 1 << 30, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := codextest.New(t, codextest.Options{ResumeRefusals: tc.refusals})
			b, room, clk, f, _ := bridgeEnv(t, fake.URL, true)
			heard := make(chan struct{})
			b.subscribed = func(string) { close(heard) }
			b.Registered(worker)
			refusals := min(tc.refusals, resumeAttempts-1)
			for range refusals {
				advanceWhenWaiting(t, clk, resumeEvery)
			}
			if tc.follows {
				testwait.Recv(t, "the stream to follow the thread", heard)
				testwait.Until(t, "the fake to hear the bridge follow its thread", func() bool { return fake.Followers() == 1 })
			}
			testwait.Until(t, "the summary from before registration to be posted", func() bool { _, opened, _ := room.counts(); return opened == 1 })
			// A summary whose notification never came, then the turn's end.
			fake.SetItems(append(codextest.Items(), map[string]any{"type": "reasoning", "id": "i5", "summary": []string{"**Missed**"}}))
			fake.SetTurnStatus("completed")
			if tc.follows {
				fake.Notify("turn/completed", map[string]any{"threadId": codextest.ThreadID, "turn": map[string]any{"id": codextest.TurnID, "status": "completed"}})
			}
			testwait.Until(t, "the stream to end", func() bool {
				if tc.follows {
					return saved(t, f, "live-1").ToldAt != ""
				}
				// Unfollowed, it reads the end on its tick.
				if clk.Waiters() > 0 {
					clk.Advance(tickEvery)
				}
				return saved(t, f, "live-1").ToldAt != ""
			})
			if got := len(fake.Calls("thread/resume")); got != refusals+1 && tc.follows {
				t.Errorf("thread/resume %d times, want %d", got, refusals+1)
			}
			room.mu.Lock()
			defer room.mu.Unlock()
			if got := summaries(room.posts); !slices.Equal(got, []string{"**Joining**", "**Missed**", "Codex worker finished its turn."}) {
				t.Errorf("posted %q, want the earlier summary, the missed one, then the ending", got)
			}
			select {
			case <-heard:
				if !tc.follows {
					t.Errorf("told the thread was heard, though every thread/resume was refused")
				}
			default:
			}
		})
	}
}

// TestPack: the summaries an ending carries go out in as few updates of
// at most maxSummary characters as they fit in, in order, none clipped
// but one longer than that alone.
func TestPack(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", maxSummary-10)
	tests := []struct {
		name  string
		parts []string
		want  []string
	}{
		{"one", []string{"done"}, []string{"done"}},
		{"merged", []string{"**One**", "**Two**", "done"}, []string{"**One**\n\n**Two**\n\ndone"}},
		{"split where the next does not fit", []string{long, "**Two** is longer than ten", "done"},
			[]string{long, "**Two** is longer than ten\n\ndone"}},
		{"just fits", []string{long, "12345678"}, []string{long + "\n\n12345678"}},
		{"one too long is clipped", []string{strings.Repeat("b", maxSummary+5), "done"},
			[]string{strings.Repeat("b", maxSummary-1) + "…", "done"}},
		{"nothing", nil, nil},
	}
	for _, tc := range tests {
		if got := pack(tc.parts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: pack = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBridgeReadsEnd: a stream that follows its thread but whose
// turn/completed never comes (a full buffer drops notifications) reads
// the turn's end on its tick, and acts on it at the next tick, leaving
// the notification, which says how the turn ended, time to come first.
func TestBridgeReadsEnd(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{TurnError: "model overloaded"})
	b, _, clk, f, _ := bridgeEnv(t, fake.URL, true)
	heard := make(chan struct{})
	b.subscribed = func(string) { close(heard) }
	b.Registered(worker)
	testwait.Recv(t, "the stream to follow the thread", heard)
	testwait.Until(t, "the stream to wait for its tick", func() bool { return clk.Waiters() > 0 })
	fake.SetTurnStatus("failed")
	reads := func() int { return len(fake.Calls("thread/turns/list")) }
	n := reads()
	advanceWhenWaiting(t, clk, tickEvery)
	testwait.Until(t, "the tick to read the turn and wait again", func() bool { return reads() > n && clk.Waiters() > 0 })
	if sv := saved(t, f, "live-1"); sv.EndedAt != "" {
		t.Fatalf("ended at the first read: %+v", sv)
	}
	advanceWhenWaiting(t, clk, tickEvery)
	testwait.Until(t, "the room to be told", func() bool { return saved(t, f, "live-1").ToldAt != "" })
	if sv := saved(t, f, "live-1"); sv.Status != StatusFailed || sv.LastError != "model overloaded" {
		t.Errorf("saved %s %q, want failed with the turn's error", sv.Status, sv.LastError)
	}
}

// TestBridgeLosesServerWhileFollowing: an app-server that goes away while
// the stream waits to try thread/resume again ends the wait, and the room
// is told, without the clock moving on: a refusal can be the failed write
// of a connection that does not read as ended yet.
func TestBridgeLosesServerWhileFollowing(t *testing.T) {
	t.Parallel()
	fake := codextest.New(t, codextest.Options{ResumeRefusals: 1 << 30})
	b, room, clk, f, _ := bridgeEnv(t, fake.URL, true)
	b.Registered(worker)
	waitCall(t, fake, "thread/resume")
	testwait.Until(t, "the stream to wait to try again", func() bool { return clk.Waiters() > 0 })
	fake.Close()
	testwait.Until(t, "the room to be told the server went away", func() bool { return saved(t, f, "live-1").ToldAt != "" })
	if sv := saved(t, f, "live-1"); sv.Status != StatusFailed || !strings.Contains(sv.LastError, "went away") {
		t.Errorf("saved %s %q, want failed: the server went away", sv.Status, sv.LastError)
	}
	room.mu.Lock()
	defer room.mu.Unlock()
	if !slices.Equal(room.ended, []string{worker.SessionID}) {
		t.Errorf("ended %v, want the worker's session", room.ended)
	}
}
