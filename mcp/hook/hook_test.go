package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/service/servicetest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// env is the real service on a private schema, a worker session of it,
// and a state file that saved the session as the MCP server does.
type env struct {
	url, statePath string
	store          *store.Store
	w              storetest.Worker
}

const room = "hook-room"

func newEnv(t *testing.T, runtimeKey string) *env {
	t.Helper()
	url, _, d := servicetest.Serve(t, map[string]string{"LETAGENTS_REPO_ACCESS": "open", "LETAGENTS_JOIN_LIMIT": "100000"}, nil)
	e := &env{url: url, statePath: filepath.Join(t.TempDir(), "state.json"), store: store.New(d.Pool)}
	e.w = e.add(t, "Builder", runtimeKey)
	err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error {
		st.Auth = &state.Auth{Token: e.w.OwnerToken, StoredAt: letagents.FormatTime(time.Now()), Source: state.AuthSourceDeviceFlow}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// add registers a worker session of the agent name in the room and saves
// it in the state file under runtimeKey, as its MCP server would.
func (e *env) add(t *testing.T, name, runtimeKey string) storetest.Worker {
	t.Helper()
	w := storetest.Register(t, e.store, room, name, letagents.SessionWorker, time.Now())
	id := letagents.WireID(letagents.AgentSessionPrefix, w.ID)
	err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error {
		st.AgentSessions[id] = state.AgentSession{SessionID: id, SessionToken: w.Token, RoomID: room, ActorLabel: w.ActorLabel,
			DisplayName: w.DisplayName, RuntimeKey: runtimeKey, CreatedAt: letagents.FormatTime(w.CreatedAt)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (e *env) send(t *testing.T, sender, text string) letagents.Message {
	t.Helper()
	m, _, err := e.store.SendMessage(context.Background(), letagents.NewMessage{RoomID: room, Sender: sender, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs one hook event in process, as the binary would, and returns
// what it printed.
func (e *env) run(t *testing.T, event, input string, env map[string]string) string {
	t.Helper()
	var out, logs bytes.Buffer
	cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(k string) string { return env[k] },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := hook.Run(context.Background(), cfg, event, strings.NewReader(input), &out); err != nil {
		t.Fatalf("Run(%s): %v (log: %s)", event, err, logs.String())
	}
	t.Logf("hook %s: out %q log %q", event, out.String(), logs.String())
	return out.String()
}

// answer is what a run prints, either form.
type answer struct {
	HookSpecificOutput *struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

func decodeAnswer(t *testing.T, out string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("the run printed %q, not one JSON answer: %v", out, err)
	}
	return a
}

func TestRunAnswersEachEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "claude:sess-1")
	tests := []struct {
		name, event, input string
		send               string // a person's message sent before the run ("" none)
		wantEvent          string // hookEventName of a context answer; "" for none
		wantBlock          bool
	}{
		{"nothing unread", "SessionStart", `{"session_id": "sess-1", "hook_event_name": "SessionStart", "source": "startup"}`, "", "", false},
		{"session start", "SessionStart", `{"session_id": "sess-1", "hook_event_name": "SessionStart", "source": "startup"}`, "hello room", "SessionStart", false},
		{"prompt", "UserPromptSubmit", `{"session_id": "sess-1", "hook_event_name": "UserPromptSubmit", "prompt": "go on"}`, "news", "UserPromptSubmit", false},
		{"tool, event from the input", "", `{"session_id": "sess-1", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": {"stdout": "ok"}}`, "more news", "PostToolUse", false},
		{"gemini's name", "AfterTool", `{"session_id": "sess-1", "hook_event_name": "AfterTool"}`, "news again", "AfterTool", false},
		{"kebab case, no event in the input", "post-tool-use", `{"session_id": "sess-1"}`, "yet more", "PostToolUse", false},
		{"stop, nobody asked", "Stop", `{"session_id": "sess-1", "hook_event_name": "Stop", "stop_hook_active": false}`, "fyi only", "", false},
		{"stop, a person asked", "Stop", `{"session_id": "sess-1", "hook_event_name": "Stop", "stop_hook_active": true}`, "@Builder which branch?", "", true},
	}
	for _, tt := range tests {
		if tt.send != "" {
			e.send(t, "ann", tt.send)
		}
		out := e.run(t, tt.event, tt.input, nil)
		switch {
		case tt.wantEvent == "" && !tt.wantBlock:
			if out != "" {
				t.Errorf("%s: printed %q, want nothing", tt.name, out)
			}
		case tt.wantBlock:
			a := decodeAnswer(t, out)
			if a.Decision != "block" || !strings.Contains(a.Reason, "which branch?") || !strings.Contains(a.Reason, "fyi only") ||
				!strings.Contains(a.Reason, "Before you stop") || a.HookSpecificOutput != nil {
				t.Errorf("%s: %+v; want a block whose reason holds both unread messages", tt.name, a)
			}
		default:
			a := decodeAnswer(t, out)
			if a.HookSpecificOutput == nil || a.HookSpecificOutput.HookEventName != tt.wantEvent ||
				!strings.Contains(a.HookSpecificOutput.AdditionalContext, tt.send) || a.Decision != "" {
				t.Errorf("%s: %s; want %s's additionalContext with %q", tt.name, out, tt.wantEvent, tt.send)
			}
		}
	}
}

func TestRunPrintsNothingItCannotServe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "claude:sess-1")
	e.send(t, "ann", "hello")
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	const noSession = "nothing delivered: no agent session saved"
	tests := []struct {
		name    string
		mutate  func(*hook.Config)
		input   string
		wantLog string // in the warnings (the binary logs at Warn): why nothing was delivered
	}{
		{"server down", func(c *hook.Config) { c.APIURL = down.URL }, `{"session_id": "sess-1"}`, "could not take the unread messages"},
		{"no saved session", func(c *hook.Config) { c.StatePath = filepath.Join(t.TempDir(), "none.json") }, `{"session_id": "sess-1"}`, noSession},
		{"another agent's session, no room here", nil, `{"session_id": "someone-else"}`, noSession},
		{"a token the server does not know", func(c *hook.Config) { c.Token = "not-a-token" }, `{"session_id": "sess-1"}`, "could not take the unread messages"},
		{"input not JSON", nil, `nonsense`, "not the hook JSON"},
	}
	for _, tt := range tests {
		var out, logs bytes.Buffer
		cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(string) string { return "" },
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		if tt.mutate != nil {
			tt.mutate(&cfg)
		}
		if err := hook.Run(context.Background(), cfg, "PostToolUse", strings.NewReader(tt.input), &out); err != nil || out.Len() != 0 {
			t.Errorf("%s: Run = %v, printed %q; want no error and nothing printed", tt.name, err, out.String())
		}
		if !strings.Contains(logs.String(), tt.wantLog) {
			t.Errorf("%s: warned %q; want %q", tt.name, logs.String(), tt.wantLog)
		}
	}
	// Nothing was taken by the failed runs (the state file's "none.json"
	// aside, every run found the session, and none could take).
	if out := e.run(t, "PostToolUse", `{"session_id": "sess-1"}`, nil); !strings.Contains(out, "hello") {
		t.Errorf("after the failed runs, a run printed %q; want the message still unread", out)
	}
	var out bytes.Buffer
	err := hook.Run(context.Background(), hook.Config{APIURL: e.url, StatePath: e.statePath}, "Notification", strings.NewReader(""), &out)
	if err == nil || !strings.Contains(err.Error(), "unknown hook event") {
		t.Errorf("an unknown event: Run = %v; want ErrUnknownEvent", err)
	}
}

func TestRunFindsItsSession(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, savedKey, input string
		env                   map[string]string
		wantFound             bool
	}{
		{"Claude's session id", "claude:abc", `{"session_id": "abc"}`, nil, true},
		{"Codex's thread id", "codex:abc", `{"session_id": "abc"}`, nil, true},
		{"the environment's instance id", "mine", `{"session_id": "abc"}`, map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "mine"}, true},
		// A key of the MCP process's own is no key of the hook's.
		{"a process key", "instance:x", `{"session_id": "abc"}`, nil, false},
	}
	for _, tt := range tests {
		e := newEnv(t, tt.savedKey)
		e.send(t, "ann", "ping")
		out := e.run(t, "UserPromptSubmit", tt.input, tt.env)
		if found := out != ""; found != tt.wantFound {
			t.Errorf("%s: printed %q; want the session found: %v", tt.name, out, tt.wantFound)
		}
	}
	// Not even when the session is the only one in the state's current
	// room: it may be another agent's.
	e := newEnv(t, "instance:x")
	if err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error { st.CurrentRoom = room; return nil }); err != nil {
		t.Fatal(err)
	}
	e.send(t, "ann", "ping")
	if out := e.run(t, "UserPromptSubmit", `{}`, nil); out != "" {
		t.Errorf("by the current room: printed %q, want nothing (no guessing)", out)
	}
}

// TestRunNeverGuesses: with two agents' sessions saved in one room, a run
// whose runtime key is neither's delivers nothing, says why, and leaves
// both agents' messages unread; each agent's own run then brings them.
func TestRunNeverGuesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "claude:alpha")
	gamma := e.add(t, "Gamma", "claude:gamma") // the newest session in the room
	// The room is the state's current one too: a run that guessed by room
	// would take gamma's session.
	if err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error { st.CurrentRoom = room; return nil }); err != nil {
		t.Fatal(err)
	}
	e.send(t, "ann", "@Builder @Gamma a message for both")
	tests := []struct {
		name, input string
		env         map[string]string
	}{
		{"another session id", `{"session_id": "beta"}`, nil},
		{"no runtime key at all", `{}`, nil},
		{"an instance id no session is saved under", `{"session_id": "beta"}`, map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "instance:beta"}},
	}
	for _, tt := range tests {
		var out, logs bytes.Buffer
		cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(k string) string { return tt.env[k] },
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		if err := hook.Run(context.Background(), cfg, "PostToolUse", strings.NewReader(tt.input), &out); err != nil || out.Len() != 0 {
			t.Errorf("%s: Run = %v, printed %q; want nothing", tt.name, err, out.String())
		}
		if l := logs.String(); !strings.Contains(l, "nothing delivered: no agent session saved") || !strings.Contains(l, "claude:gamma") {
			t.Errorf("%s: warned %q; want why, naming the keys saved", tt.name, l)
		}
	}
	if out := e.run(t, "PostToolUse", `{"session_id": "alpha"}`, nil); !strings.Contains(out, "a message for both") {
		t.Errorf("alpha's own run printed %q; want the message, still unread", out)
	}
	var out bytes.Buffer
	cfg := hook.Config{APIURL: e.url, Token: gamma.OwnerToken, StatePath: e.statePath, Getenv: func(string) string { return "" }}
	if err := hook.Run(context.Background(), cfg, "PostToolUse", strings.NewReader(`{"session_id": "gamma"}`), &out); err != nil ||
		!strings.Contains(out.String(), "a message for both") {
		t.Errorf("gamma's own run: %v, printed %q; want the message, still unread", err, out.String())
	}
}

// TestRunForgetsEndedSessions: a session the server answers as ended or
// invalid is removed from the state file, so that no later run tries it;
// one the server could not be asked about is kept.
func TestRunForgetsEndedSessions(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	tests := []struct {
		name       string
		breakIt    func(t *testing.T, e *env, cfg *hook.Config)
		wantForget bool
	}{
		{"ended", func(t *testing.T, e *env, _ *hook.Config) {
			if _, err := e.store.EndAgentSession(context.Background(), room, e.w.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a token the server does not know", func(t *testing.T, e *env, _ *hook.Config) {
			err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error {
				for id, a := range st.AgentSessions {
					a.SessionToken = "wrong"
					st.AgentSessions[id] = a
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}, true},
		{"server down", func(_ *testing.T, _ *env, cfg *hook.Config) { cfg.APIURL = down.URL }, false},
		// The owner's credential is at fault, not the session (issue 21):
		// the server answers TOKEN_INVALID or NOT_AUTHENTICATED.
		{"an owner token the server does not know", func(t *testing.T, e *env, _ *hook.Config) {
			setAuth(t, e, &state.Auth{Token: strings.Repeat("e", 64), Source: state.AuthSourceDeviceFlow})
		}, false},
		{"no owner token", func(t *testing.T, e *env, _ *hook.Config) { setAuth(t, e, nil) }, false},
	}
	for _, tt := range tests {
		e := newEnv(t, "claude:alpha")
		e.send(t, "ann", "hello")
		keep := e.add(t, "Other", "claude:other") // another agent's, never touched
		var logs bytes.Buffer
		cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(string) string { return "" },
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		tt.breakIt(t, e, &cfg)
		for range 2 {
			var out bytes.Buffer
			if err := hook.Run(context.Background(), cfg, "PostToolUse", strings.NewReader(`{"session_id": "alpha"}`), &out); err != nil || out.Len() != 0 {
				t.Errorf("%s: Run = %v, printed %q; want nothing", tt.name, err, out.String())
			}
		}
		st, err := state.Open(e.statePath).Load()
		if err != nil {
			t.Fatal(err)
		}
		_, kept := st.AgentSessions[letagents.WireID(letagents.AgentSessionPrefix, e.w.ID)]
		if kept == tt.wantForget {
			t.Errorf("%s: the session kept in the state file: %v; want %v (log %q)", tt.name, kept, !tt.wantForget, logs.String())
		}
		if _, ok := st.AgentSessions[letagents.WireID(letagents.AgentSessionPrefix, keep.ID)]; !ok {
			t.Errorf("%s: another agent's session was removed", tt.name)
		}
		// Forgotten, the second run did not ask the server again.
		if asked := strings.Count(logs.String(), "could not take the unread messages"); tt.wantForget && asked != 1 {
			t.Errorf("%s: the server was asked %d times; want once, then the session forgotten (log %q)", tt.name, asked, logs.String())
		}
	}
}

// setAuth replaces the sign-in saved in e's state file.
func setAuth(t *testing.T, e *env, a *state.Auth) {
	t.Helper()
	if err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error {
		st.Auth = a
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRunFindsTheServer: the hook's own LETAGENTS_API_URL wins; without
// it, the API the session was saved with; without that, the default.
func TestRunFindsTheServer(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	const up = "<the service>"
	tests := []struct {
		name, env, saved, def string
		wantFound             bool
	}{
		{"the saved API", "", up, down.URL, true},
		{"the environment's API wins over the saved one", up, down.URL, down.URL, true},
		{"the environment's API, none saved", up, "", down.URL, true},
		{"a wrong environment API wins too", down.URL, up, up, false},
		{"none saved, the default", "", "", up, true},
		{"none saved, a default with no server", "", "", down.URL, false},
	}
	e := newEnv(t, "claude:alpha")
	resolve := func(u string) string { return strings.ReplaceAll(u, up, e.url) }
	for _, tt := range tests {
		err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error {
			for id, a := range st.AgentSessions {
				a.APIURL = resolve(tt.saved)
				st.AgentSessions[id] = a
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		e.send(t, "ann", "news for "+tt.name)
		var out, logs bytes.Buffer
		cfg := hook.Config{APIURL: resolve(tt.env), DefaultAPIURL: resolve(tt.def), StatePath: e.statePath, Getenv: func(string) string { return "" },
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		if err := hook.Run(context.Background(), cfg, "PostToolUse", strings.NewReader(`{"session_id": "alpha"}`), &out); err != nil {
			t.Fatal(err)
		}
		if found := strings.Contains(out.String(), "news for "+tt.name); found != tt.wantFound {
			t.Errorf("%s: printed %q (log %q); want the message: %v", tt.name, out.String(), logs.String(), tt.wantFound)
		}
		if !tt.wantFound && !strings.Contains(logs.String(), down.URL) {
			t.Errorf("%s: warned %q; want the API it tried named", tt.name, logs.String())
		}
	}
}

func TestRunFilterAndLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "k")
	e.send(t, "ann", "general chatter")
	e.send(t, "ann", "@Builder this one is yours")
	var out bytes.Buffer
	cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(k string) string { return map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "k"}[k] },
		Filter: letagents.UnreadAddressed, Limit: 1}
	if err := hook.Run(context.Background(), cfg, "PostToolUse", strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	text := decodeAnswer(t, out.String()).HookSpecificOutput.AdditionalContext
	if !strings.Contains(text, "this one is yours") || strings.Contains(text, "chatter") || !strings.Contains(text, "mentioning you") {
		t.Errorf("an addressed run printed %q; want only the mention, marked as one", text)
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	sess := state.AgentSession{ActorLabel: "Builder | ann's agent | Claude"}
	str := func(s string) *string { return &s }
	long := strings.Repeat("x", 1200)
	u := wire.Unread{RoomID: "github.com/acme/app", HasMore: true, Messages: []wire.UnreadMessage{
		{Message: wire.Message{ID: "msg_3", Sender: "ann", Text: "@Builder which branch?", Source: str(letagents.SourceBrowser)}, Addressed: str("mention"), Asked: true},
		{Message: wire.Message{ID: "msg_5", Sender: "Reviewer", Text: "LGTM\nship it", Source: str(letagents.SourceAgent),
			ThreadParentID: str("msg_4"), ThreadRootID: "msg_2"}, Addressed: str("thread")},
		{Message: wire.Message{ID: "msg_6", Sender: "letagents", Text: "[status] task_1 done", Source: str(letagents.SourceSystem)}},
		{Message: wire.Message{ID: "msg_7", Sender: "bob", Text: long, ThreadParentID: str("msg_6"), ThreadRootID: "msg_6"}},
	}}
	got := hook.Context(sess, u, false)
	for _, want := range []string{
		"[LetAgents] 4 unread messages in room github.com/acme/app for Builder | ann's agent | Claude:\n",
		"- msg_3 from ann (a person), mentioning you: @Builder which branch?\n",
		"- msg_5 from Reviewer, in your thread msg_2: LGTM\n  ship it\n",
		"- msg_6 from letagents (the server): [status] task_1 done\n",
		"- msg_7 from bob, in thread msg_6: " + strings.Repeat("x", 1000) + "… (cut)\n",
		"More unread messages wait",
		"send_thread_message",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Context lacks %q:\n%s", want, got)
		}
	}
	if stop := hook.Context(sess, wire.Unread{RoomID: "r", Messages: u.Messages[:1]}, true); !strings.HasPrefix(stop, "[LetAgents] Before you stop") ||
		!strings.Contains(stop, "1 unread message for") || !strings.HasSuffix(stop, "Answer the person before you stop.") {
		t.Errorf("Context for stop = %q", stop)
	}
}

// TestRunGivesUpOnAHangingServer: a server that takes the request and
// never answers, or a runtime that never closes stdin, holds a run only to
// its own bound (DefaultTimeout; what that adds to a tool call is
// measured by make bench): it returns, delivers nothing, says why, and
// keeps the session. The wait here is only testwait's generous bound.
func TestRunGivesUpOnAHangingServer(t *testing.T) {
	t.Parallel()
	got := make(chan wire.TakeUnread, 16)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q wire.TakeUnread
		_ = json.NewDecoder(r.Body).Decode(&q)
		got <- q
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() {
		close(release)
		hang.Close()
	})
	statePath := filepath.Join(t.TempDir(), "state.json")
	const id = "as_1"
	err := state.Open(statePath).Update(context.Background(), func(st *state.State) error {
		st.AgentSessions[id] = state.AgentSession{SessionID: id, SessionToken: "tok", RoomID: room, ActorLabel: "Builder",
			RuntimeKey: "claude:sess-1", CreatedAt: letagents.FormatTime(time.Now()), APIURL: hang.URL}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	openStdin, _ := io.Pipe() // written by nobody, never closed
	tests := []struct {
		name        string
		event       string
		stdin       io.Reader
		wantRequest bool // the server is asked (the input came in time)
		wantLogs    []string
	}{
		{"server hangs", "", strings.NewReader(`{"session_id": "sess-1", "hook_event_name": "PostToolUse"}`), true,
			[]string{"could not take the unread messages", "deadline exceeded"}},
		{"stdin never closed", "PostToolUse", openStdin, false,
			[]string{"the input did not come in time", "could not take the unread messages"}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		logs := &testwait.Buffer{}
		cfg := hook.Config{StatePath: statePath, Getenv: func(k string) string { return map[string]string{"CLAUDE_CODE_SESSION_ID": "sess-1"}[k] },
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		done := make(chan error, 1)
		go func() { done <- hook.Run(context.Background(), cfg, tt.event, tt.stdin, &out) }()
		if tt.wantRequest {
			// The server may commit a take only while the run still waits
			// for its answer, less the time the answer needs back.
			q := testwait.Recv(t, "the hanging server to get the request ("+tt.name+")", got)
			if q.AnswerWithinMs <= 0 || q.AnswerWithinMs > (hook.DefaultTimeout-100*time.Millisecond).Milliseconds() {
				t.Errorf("%s: answer_within_ms %d; want within the run's %v bound, less 100 ms for the answer", tt.name, q.AnswerWithinMs, hook.DefaultTimeout)
			}
		}
		err := testwait.Recv(t, "the run to give up ("+tt.name+")", done)
		if err != nil || out.Len() != 0 {
			t.Errorf("%s: Run = %v, printed %q; want no error and nothing printed", tt.name, err, out.String())
		}
		for _, want := range tt.wantLogs {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("%s: warned %q; want %q", tt.name, logs.String(), want)
			}
		}
	}
	st, err := state.Open(statePath).Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.AgentSessions[id]; !ok {
		t.Errorf("the session was forgotten; a server that does not answer has not ended it")
	}
}
