//go:build unix

package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/testwait"
)

// These tests drive the real Codex CLI (npm @openai/codex, 0.171.0;
// .ci/ensure-agent-clients installs it; LETAGENTS_CLIENT_TESTS=off skips) through `codex app-server`, against a
// fake model: the Responses API over SSE on loopback.

// reply is one answer of the fake model.
type reply struct {
	status    int      // an HTTP error status; 0 for a streamed answer
	summaries []string // one reasoning item with these summary parts
	command   string   // a shell step (exec_command), else
	message   string   // the final answer
	hold      bool     // wait for the test's release (or the request's end) first
}

// rawReasoning is the raw reasoning the fake model thinks alongside each
// summary.
const rawReasoning = "RAW chain of thought, never posted"

// fakeModel is a Responses API that answers the n-th request with
// replies[n] (the last one from then on).
type fakeModel struct {
	*httptest.Server
	replies []reply
	release chan struct{}

	mu       sync.Mutex
	requests int
}

func newFakeModel(t *testing.T, replies ...reply) *fakeModel {
	t.Helper()
	m := &fakeModel{replies: replies, release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	t.Cleanup(m.unblock)
	return m
}

// unblock lets held answers go.
func (m *fakeModel) unblock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.release:
	default:
		close(m.release)
	}
}

func (m *fakeModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	n := m.requests
	m.requests++
	m.mu.Unlock()
	rep := m.replies[min(n, len(m.replies)-1)]
	if rep.hold {
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
	}
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"error":{"message":"fake model says %d","type":"server_error"}}`, rep.status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	id := fmt.Sprintf("resp_%d", n)
	event := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
	}
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	out := 0
	if len(rep.summaries) > 0 {
		parts := make([]map[string]string, len(rep.summaries))
		for i, s := range rep.summaries {
			parts[i] = map[string]string{"type": "summary_text", "text": s}
		}
		// With raw reasoning, which must never leave the machine.
		event(map[string]any{"type": "response.output_item.done", "output_index": out,
			"item": map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%d", n), "summary": parts,
				"content": []map[string]string{{"type": "reasoning_text", "text": rawReasoning}}}})
		out++
	}
	switch {
	case rep.command != "":
		args, _ := json.Marshal(map[string]any{"cmd": rep.command, "login": false})
		event(map[string]any{"type": "response.output_item.done", "output_index": out, "item": map[string]any{"type": "function_call",
			"id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n), "name": "exec_command", "arguments": string(args)}})
	case rep.message != "":
		event(map[string]any{"type": "response.output_item.done", "output_index": out, "item": map[string]any{"type": "message",
			"id": fmt.Sprintf("msg_%d", n), "role": "assistant", "content": []map[string]any{{"type": "output_text", "text": rep.message}}}})
	}
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

// realEnv is a Manager that spawns the real codex app-server, pointed at
// model, and the in-process bridge of its worker: the worker "registers"
// (its agent session saved, its bridge told) as soon as the session is
// saved, as the worker's MCP server would once the model called
// register_agent_session.
type realEnv struct {
	m    *Manager
	b    *Bridges
	f    *state.File
	room *fakeRoom
	in   StartInput
}

func newRealEnv(t *testing.T, model *fakeModel) realEnv {
	t.Helper()
	if os.Getenv("LETAGENTS_CLIENT_TESTS") == "off" {
		t.Skip("LETAGENTS_CLIENT_TESTS=off: the tests of the real agent clients are off")
	}
	codexBin, err := exec.LookPath("codex")
	if err != nil {
		t.Fatalf("the codex CLI is not on PATH (bash .ci/ensure-agent-clients installs @openai/codex@0.171.0; LETAGENTS_CLIENT_TESTS=off skips these tests): %v", err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "LETAGENTS_FAKE_MODEL_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, model.URL)
	bin := filepath.Join(dir, "codex")
	script := fmt.Sprintf("#!/bin/sh\nCODEX_HOME='%s' LETAGENTS_FAKE_MODEL_KEY=fake exec '%s' \"$@\"\n", home, codexBin)
	for path, body := range map[string]string{filepath.Join(home, "config.toml"): config, bin: script} {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := realEnv{f: state.Open(filepath.Join(dir, "mcp-state.json")), room: &fakeRoom{}}
	room := Room{Activity: e.room, Reasoning: e.room, Sessions: e.room}
	log := slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.m = NewManager(e.f, Config{Bin: bin, Room: room, Logger: log.With("in", "starter")})
	e.b = NewBridges(BridgeConfig{State: e.f, Activity: e.room, Reasoning: e.room, Sessions: e.room, Logger: log.With("in", "bridge")})
	t.Cleanup(e.b.Close)
	t.Cleanup(e.m.Close)
	registerWorker(t, e.m, e.b)
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	e.in = StartInput{RoomID: testRoom, RoomIdentifier: testRoom, JoinedVia: state.JoinedViaJoinRoom, Cwd: work}
	return e
}

// startHeard starts a live session and waits for the worker's bridge to
// hear its thread.
func (e realEnv) startHeard(t *testing.T) state.CodexLiveSession {
	t.Helper()
	heard := make(chan struct{})
	e.b.subscribed = func(string) { close(heard) }
	sess, _, err := e.m.Start(context.Background(), e.in)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the bridge to hear the worker's thread", heard)
	return sess
}

// ending waits for the room to be told the session ended, and answers
// the session as saved then.
func (e realEnv) ending(t *testing.T, id string) state.CodexLiveSession {
	t.Helper()
	testwait.Until(t, "the room to be told the session ended", func() bool { return saved(t, e.f, id).ToldAt != "" })
	return saved(t, e.f, id)
}

// told checks the room heard the end: a final reasoning update of
// presence, saying why, the reasoning session closed, and the worker's
// agent session ended.
func (e realEnv) told(t *testing.T, presence, why string) []ReasoningPost {
	t.Helper()
	e.room.mu.Lock()
	defer e.room.mu.Unlock()
	posts := slices.Clone(e.room.posts)
	if len(posts) == 0 {
		t.Fatal("nothing posted")
	}
	final := posts[len(posts)-1]
	if final.Status != presence || !strings.Contains(final.Summary, why) {
		t.Errorf("final post %+v, want %s saying %q", final, presence, why)
	}
	if len(e.room.closed) != 1 || !slices.Equal(e.room.ended, []string{"as_" + strings.TrimPrefix(final.AgentSessionID, "as_")}) {
		t.Errorf("closed %v, ended %v; want the reasoning session closed and the worker's session ended", e.room.closed, e.room.ended)
	}
	return posts
}

func TestRealCodex(t *testing.T) {
	t.Parallel()
	t.Run("ten fast steps", func(t *testing.T) {
		t.Parallel()
		var replies []reply
		var want []string
		for i := range 10 {
			parts := []string{fmt.Sprintf("**Step %d**", i), fmt.Sprintf("Running check %d", i)}
			want = append(want, parts...)
			// The first step waits until the bridge hears the thread: what
			// this case holds to is the stream's queue at full speed (a
			// turn that ends before the bridge binds is not its subject).
			replies = append(replies, reply{summaries: parts, command: "true", hold: i == 0})
		}
		model := newFakeModel(t, append(replies, reply{message: "done"})...)
		e := newRealEnv(t, model)
		sess := e.startHeard(t)
		model.unblock()
		defer func() { t.Logf("model requests: %d", model.count()) }()
		testwait.Until(t, "the ten steps", func() bool { return model.count() >= 11 })
		e.ending(t, sess.SessionID)
		got := summaries(e.told(t, idle, "finished its turn"))
		if !slices.Equal(got[:len(got)-1], want) {
			t.Errorf("posted %q, want every part of the ten steps, in order, then the ending", got)
		}
	})
	t.Run("a normal turn", func(t *testing.T) {
		t.Parallel()
		// Joining (before the bridge hears the thread: its summaries are
		// read back), then a step the bridge hears as it runs (it lasts
		// long enough for a report past the 750 ms limit), then the answer.
		model := newFakeModel(t,
			reply{summaries: []string{"**Joining the room**", "Calling join_room"}, command: "true"},
			reply{summaries: []string{"**Checking the build**"}, command: "sleep 2", hold: true},
			reply{summaries: []string{"**Answering**"}, message: "The build passes."})
		e := newRealEnv(t, model)
		sess := e.startHeard(t)
		model.unblock()
		end := e.ending(t, sess.SessionID)
		if end.Status != StatusCompleted || end.LastError != "" {
			t.Errorf("ended %s %q, want completed", end.Status, end.LastError)
		}
		got := summaries(e.told(t, idle, "finished its turn"))
		want := []string{"**Joining the room**", "Calling join_room", "**Checking the build**", "**Answering**", "Codex worker finished its turn."}
		if !slices.Equal(got, want) {
			t.Errorf("posted %q, want %q", got, want)
		}
		e.room.mu.Lock()
		defer e.room.mu.Unlock()
		ran := false
		for _, a := range e.room.activity {
			ran = ran || (strings.HasPrefix(a.Text, "running ") && strings.Contains(a.Text, "sleep 2"))
			if strings.Contains(a.Text, "RAW") {
				t.Errorf("native activity %+v carries raw reasoning", a)
			}
		}
		if !ran {
			t.Errorf("native activity %+v; want the shell step reported", e.room.activity)
		}
		for _, p := range e.room.posts {
			if strings.Contains(p.Summary, "RAW") {
				t.Errorf("post %+v carries raw reasoning", p)
			}
		}
	})
	// A turn that registers, thinks once and answers: it may end before
	// the start's watch looks again, and, when no bridge could bind its
	// session, the starter tells the room, as the worker.
	for _, bridge := range []bool{true, false} {
		t.Run(fmt.Sprintf("a short turn, bridge binds %v", bridge), func(t *testing.T) {
			t.Parallel()
			model := newFakeModel(t, reply{summaries: []string{"**Nothing to do**"}, message: "Done."})
			e := newRealEnv(t, model)
			if !bridge {
				registerWorker(t, e.m, nil)
			}
			sess, _, err := e.m.Start(context.Background(), e.in)
			if err != nil {
				t.Fatalf("Start = %v, want a start whose worker registered", err)
			}
			end := e.ending(t, sess.SessionID)
			if end.Status != StatusCompleted || end.LastError != "" {
				t.Errorf("ended %s %q, want completed", end.Status, end.LastError)
			}
			got := summaries(e.told(t, idle, "finished its turn"))
			if want := []string{"**Nothing to do**", "Codex worker finished its turn."}; !slices.Equal(got, want) {
				t.Errorf("posted %q, want %q", got, want)
			}
		})
	}
	t.Run("a model error at start", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			status int
			kind   FailKind
		}{{http.StatusInternalServerError, FailModel}} {
			model := newFakeModel(t, reply{status: tc.status})
			e := newRealEnv(t, model)
			e.m.saved = nil // the model fails before the worker could register
			sess, _, err := e.m.Start(context.Background(), e.in)
			var se *StartError
			// The turn's own error, not only the thread's status.
			if !errors.As(err, &se) || se.Kind != tc.kind || sess.Status != StatusFailed || sess.LastError == "" ||
				strings.Contains(sess.LastError, "codex thread is in status") {
				t.Errorf("model answering %d: Start = %+v, %v; want a failed start of kind %d with the turn's error", tc.status, sess, err, tc.kind)
			}
			if sv := saved(t, e.f, sess.SessionID); sv.Status != StatusFailed || sv.LastError == "" {
				t.Errorf("model answering %d: saved %s %q, want failed with the error", tc.status, sv.Status, sv.LastError)
			}
		}
	})
	t.Run("a model error mid-turn", func(t *testing.T) {
		t.Parallel()
		model := newFakeModel(t, reply{summaries: []string{"**Working**"}, command: "true"}, reply{hold: true, status: http.StatusInternalServerError})
		e := newRealEnv(t, model)
		sess, _, err := e.m.Start(context.Background(), e.in)
		if err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "the model's second request", func() bool { return model.count() >= 2 })
		model.unblock()
		end := e.ending(t, sess.SessionID)
		if end.Status != StatusFailed || end.LastError == "" {
			t.Errorf("ended %s %q, want failed with the model's error", end.Status, end.LastError)
		}
		e.told(t, blocked, end.LastError)
		if st, err := e.m.Inspect(context.Background(), sess.SessionID, ""); err != nil || st.Session.Status != StatusFailed || st.Session.LastError != end.LastError {
			t.Errorf("status after = %+v, %v; want failed stays, with its error", st.Session, err)
		}
	})
	t.Run("a stop", func(t *testing.T) {
		t.Parallel()
		model := newFakeModel(t, reply{summaries: []string{"**Waiting**"}, command: "true"}, reply{hold: true, message: "never"})
		e := newRealEnv(t, model)
		sess, _, err := e.m.Start(context.Background(), e.in)
		if err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "the model's second request", func() bool { return model.count() >= 2 })
		stopped, err := e.m.Stop(context.Background(), sess.SessionID, "")
		if err != nil || stopped.Status != StatusInterrupted || stopped.ToldAt == "" {
			t.Fatalf("Stop = %+v, %v; want interrupted, the room told", stopped, err)
		}
		e.told(t, idle, "stopped")
		e.m.mu.Lock()
		srv := e.m.spawned[sess.ServerPID]
		e.m.mu.Unlock()
		testwait.Recv(t, "the app-server to end", srv.exited)
	})
	t.Run("a SIGKILL", func(t *testing.T) {
		t.Parallel()
		model := newFakeModel(t, reply{summaries: []string{"**Busy**"}, command: "true"}, reply{hold: true, message: "never"})
		e := newRealEnv(t, model)
		sess, _, err := e.m.Start(context.Background(), e.in)
		if err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "the model's second request", func() bool { return model.count() >= 2 })
		// Its process group: npm's codex is a launcher with the server as its child.
		if err := syscall.Kill(-sess.ServerPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		end := e.ending(t, sess.SessionID)
		if end.Status != StatusFailed || !strings.Contains(end.LastError, "killed") {
			t.Errorf("ended %s %q, want failed with the exit status", end.Status, end.LastError)
		}
		e.told(t, blocked, "killed")
	})
}

// logWriter sends a log to the test's, shown when it fails.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
