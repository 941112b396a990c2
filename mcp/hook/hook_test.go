package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
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
	cfg, err := service.LoadConfig(func(k string) string {
		return map[string]string{"LETAGENTS_REPO_ACCESS": "open", "LETAGENTS_JOIN_LIMIT": "100000"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.LogLevel = slog.LevelError
	d := pgtest.New(t)
	svc, err := service.FromPool(context.Background(), cfg, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(func() {
		svc.Drain()
		srv.Close()
		svc.Close()
	})
	e := &env{url: srv.URL, statePath: filepath.Join(t.TempDir(), "state.json"), store: store.New(d.Pool)}
	e.w = storetest.Register(t, e.store, room, "Builder", letagents.SessionWorker, time.Now())
	err = state.Open(e.statePath).Update(context.Background(), func(st *state.State) error {
		st.Auth = &state.Auth{Token: e.w.OwnerToken, StoredAt: letagents.FormatTime(time.Now()), Source: state.AuthSourceDeviceFlow}
		st.AgentSessions[letagents.WireID(letagents.AgentSessionPrefix, e.w.ID)] = state.AgentSession{
			SessionID: letagents.WireID(letagents.AgentSessionPrefix, e.w.ID), SessionToken: e.w.Token, RoomID: room,
			ActorLabel: e.w.ActorLabel, DisplayName: e.w.DisplayName, RuntimeKey: runtimeKey, CreatedAt: letagents.FormatTime(e.w.CreatedAt)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
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
	cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(k string) string { return env[k] }, Dir: t.TempDir(),
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
		cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(string) string { return "" }, Dir: t.TempDir(),
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
		// A key of the MCP process's own: found by the room of the
		// directory, here none (a temporary directory, no repository).
		{"a process key, no room", "instance:x", `{"session_id": "abc"}`, nil, false},
	}
	for _, tt := range tests {
		e := newEnv(t, tt.savedKey)
		e.send(t, "ann", "ping")
		out := e.run(t, "UserPromptSubmit", tt.input, tt.env)
		if found := out != ""; found != tt.wantFound {
			t.Errorf("%s: printed %q; want the session found: %v", tt.name, out, tt.wantFound)
		}
	}
	// With the room as the state's current one, the process key's session
	// is found by its room.
	e := newEnv(t, "instance:x")
	if err := state.Open(e.statePath).Update(context.Background(), func(st *state.State) error { st.CurrentRoom = room; return nil }); err != nil {
		t.Fatal(err)
	}
	e.send(t, "ann", "ping")
	if out := e.run(t, "UserPromptSubmit", `{}`, nil); !strings.Contains(out, "ping") {
		t.Errorf("by the current room: printed %q, want the message", out)
	}
}

func TestRunFilterAndLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "k")
	e.send(t, "ann", "general chatter")
	e.send(t, "ann", "@Builder this one is yours")
	var out bytes.Buffer
	cfg := hook.Config{APIURL: e.url, StatePath: e.statePath, Getenv: func(k string) string { return map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "k"}[k] },
		Dir: t.TempDir(), Filter: letagents.UnreadAddressed, Limit: 1}
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
