package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/wire"
)

const hookRoom = "hooks-e2e"

// hookAnswer is what a hook run prints: context for the agent, or a
// block of its stop.
type hookAnswer struct {
	HookSpecificOutput *struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// hookRunner runs the letagents binary as a runtime's hook does: a fresh
// process, the hook's JSON on stdin, in the agent's environment.
type hookRunner struct {
	apiURL, statePath, instance, dir string
	// noAPIURL leaves LETAGENTS_API_URL out of the hook's environment,
	// as a runtime configured only for its MCP server starts it.
	noAPIURL bool
}

// run runs `letagents <args…>` (via sh -c when shell is set, as the
// runtimes run a configured command) with input on stdin; it wants exit
// status 0 and returns stdout and the wall time.
func (h hookRunner) run(t *testing.T, input string, shell string, args ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.agent, args...)
	if shell != "" {
		cmd = exec.CommandContext(ctx, "sh", "-c", shell)
	}
	cmd.Dir = h.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + h.dir, "GIT_CONFIG_NOSYSTEM=1",
		"LETAGENTS_STATE_PATH=" + h.statePath, "LETAGENTS_AGENT_INSTANCE_ID=" + h.instance}
	if !h.noAPIURL {
		cmd.Env = append(cmd.Env, "LETAGENTS_API_URL="+h.apiURL)
	}
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	if err != nil {
		t.Fatalf("letagents %v: %v\nstderr: %s", args, err, stderr.String())
	}
	t.Logf("hook %v %s → %q in %v (stderr %q)", args, shell, stdout.String(), took.Round(time.Millisecond), stderr.String())
	return stdout.String(), took
}

// event runs `letagents hook <event>` with a Claude Code hook input.
func (h hookRunner) event(t *testing.T, event string, extra map[string]any) hookAnswer {
	t.Helper()
	out, _ := h.run(t, claudeInput(h.dir, event, extra), "", "hook", event)
	return decodeHook(t, out)
}

// claudeInput is the JSON Claude Code gives a hook of event.
func claudeInput(dir, event string, extra map[string]any) string {
	in := map[string]any{"session_id": "0b7c1a52-claude", "transcript_path": filepath.Join(dir, "transcript.jsonl"), "cwd": dir,
		"permission_mode": "default", "hook_event_name": event}
	for k, v := range extra {
		in[k] = v
	}
	b, _ := json.Marshal(in)
	return string(b)
}

func decodeHook(t *testing.T, out string) hookAnswer {
	t.Helper()
	var a hookAnswer
	if out == "" {
		return a
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("the hook printed %q, not one JSON answer: %v", out, err)
	}
	return a
}

// roomRequest calls a route of hookRoom (path after /rooms/<room>) with
// an owner token and extra headers, and returns the body and status.
func roomRequest(t *testing.T, base, token, method, path, body string, h http.Header) ([]byte, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/rooms/"+hookRoom+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return raw, resp.StatusCode
}

// personSays posts a message as ann, a person (her owner token, no
// agent session), and returns its id.
func personSays(t *testing.T, base, token, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sender": "ann", "text": text})
	raw, status := roomRequest(t, base, token, http.MethodPost, "/messages", string(body), nil)
	var m wire.Message
	if status != http.StatusCreated || json.Unmarshal(raw, &m) != nil {
		t.Fatalf("ann's message: %d %s", status, raw)
	}
	return m.ID
}

// hookedAgent starts a runner and an agent signed in as ann, joined to
// hookRoom with a worker session: what the hook tests drive. It returns
// the hook runner of that agent, ann's owner token and the session.
func hookedAgent(t *testing.T) (hookRunner, string, wire.AgentSession) {
	t.Helper()
	r := startRunner(t)
	r.GitHub.SetDeviceTiming(time.Second, 10*time.Minute)
	r.GitHub.AddUser("ann")
	dir := t.TempDir()
	statePath := filepath.Join(t.TempDir(), "state.json")
	a := startAgent(t, r.URL, agentConfig{Name: "builder", Dir: dir, StatePath: statePath})
	a.signInDevice(t, r.GitHub, "ann")
	a.callOK(t, "join_room", map[string]any{"name": hookRoom}, &struct{}{})
	sess := a.registerSession(t)
	return hookRunner{apiURL: r.URL, statePath: statePath, instance: "builder-instance", dir: dir}, savedToken(t, statePath), sess
}

// TestHooksWakeTheAgent drives `letagents hook` as Claude Code's hooks run
// it, against the local runner: the room's messages reach the agent's
// context without a wait, once each; Stop keeps it working when a person
// asked it something; the server records each delivery; and `letagents
// hook install` writes a configuration whose commands work as written.
func TestHooksWakeTheAgent(t *testing.T) {
	t.Parallel()
	h, token, sess := hookedAgent(t)
	apiURL, dir := h.apiURL, h.dir

	// Nothing unread: the hook prints nothing.
	if got := h.event(t, "SessionStart", map[string]any{"source": "startup", "model": "claude-sonnet"}); got.HookSpecificOutput != nil || got.Decision != "" {
		t.Errorf("SessionStart with nothing unread printed %+v; want nothing", got)
	}

	// A person mentions the agent: the next tool call's hook brings it.
	asked := personSays(t, apiURL, token, "@"+sess.DisplayName+" please look at the login form")
	got := h.event(t, "PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "go test ./..."},
		"tool_response": map[string]any{"stdout": strings.Repeat("ok\n", 1000)}, "tool_use_id": "toolu_01"})
	if got.HookSpecificOutput == nil || got.HookSpecificOutput.HookEventName != "PostToolUse" ||
		!strings.Contains(got.HookSpecificOutput.AdditionalContext, asked+" from ann") ||
		!strings.Contains(got.HookSpecificOutput.AdditionalContext, "mentioning you: @"+sess.DisplayName+" please look at the login form") {
		t.Fatalf("PostToolUse after a mention printed %+v; want additionalContext with %s", got, asked)
	}
	// Once only.
	if got := h.event(t, "UserPromptSubmit", map[string]any{"prompt": "carry on"}); got.HookSpecificOutput != nil {
		t.Errorf("a second hook printed %+v; want nothing (the message was taken)", got)
	}

	// Stop: a heads-up asks nothing, so the agent may stop and the
	// message stays unread; a person's question keeps it working.
	fyi := personSays(t, apiURL, token, "fyi: the deploy is at five")
	if got := h.event(t, "Stop", map[string]any{"stop_hook_active": false}); got.Decision != "" || got.HookSpecificOutput != nil {
		t.Errorf("Stop after a heads-up printed %+v; want nothing", got)
	}
	question := personSays(t, apiURL, token, "@"+sess.DisplayName+" which branch are you on?")
	got = h.event(t, "Stop", map[string]any{"stop_hook_active": true})
	if got.Decision != "block" || !strings.Contains(got.Reason, question) || !strings.Contains(got.Reason, fyi) ||
		!strings.Contains(got.Reason, "before you stop") {
		t.Errorf("Stop after a person's question printed %+v; want a block with %s and %s", got, fyi, question)
	}

	// The server knows who surfaced what, and how.
	raw, status := roomRequest(t, apiURL, token, http.MethodGet, "/messages/"+asked+"/deliveries", "", nil)
	var d wire.Deliveries
	if status != http.StatusOK || json.Unmarshal(raw, &d) != nil || len(d.Deliveries) != 1 || d.Deliveries[0].AgentSessionID != sess.SessionID ||
		d.Deliveries[0].Via != "hook" {
		t.Errorf("deliveries of %s: %d %s; want one, %s via hook", asked, status, raw, sess.SessionID)
	}

	// Installed, the configured command works as the runtime runs it.
	out, _ := h.run(t, "", "", "hook", "install", "--dir", dir, "--command", bins.agent)
	if !strings.Contains(out, "SessionStart: added") || !strings.Contains(out, "Stop: added") {
		t.Errorf("hook install printed %q; want each event added", out)
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	if err != nil || json.Unmarshal(raw, &settings) != nil {
		t.Fatalf("read .claude/settings.json: %v\n%s", err, raw)
	}
	events := make([]string, 0, len(settings.Hooks))
	for ev := range settings.Hooks {
		events = append(events, ev)
	}
	slices.Sort(events)
	if !slices.Equal(events, []string{"PostToolUse", "SessionStart", "Stop", "UserPromptSubmit"}) {
		t.Errorf("settings.json hooks %v", events)
	}
	later := personSays(t, apiURL, token, "the build is green")
	installed := settings.Hooks["UserPromptSubmit"][0].Hooks[0]
	out, _ = h.run(t, claudeInput(dir, "UserPromptSubmit", map[string]any{"prompt": "status?"}), installed.Command)
	if a := decodeHook(t, out); a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, later) {
		t.Errorf("the installed command %q printed %q; want %s", installed.Command, out, later)
	}
}

// TestHookFindsTheServerItsSessionWasSavedWith: a hook started without
// LETAGENTS_API_URL (only the MCP server was given it) reaches the server
// the session was registered with, which the state file keeps.
func TestHookFindsTheServerItsSessionWasSavedWith(t *testing.T) {
	t.Parallel()
	h, token, sess := hookedAgent(t)
	h.noAPIURL = true
	asked := personSays(t, h.apiURL, token, "@"+sess.DisplayName+" are you there?")
	if got := h.event(t, "UserPromptSubmit", map[string]any{"prompt": "go on"}); got.HookSpecificOutput == nil ||
		!strings.Contains(got.HookSpecificOutput.AdditionalContext, asked) {
		t.Errorf("a hook without LETAGENTS_API_URL printed %+v; want %s from the session's server", got, asked)
	}
}

// TestHookRoundTrip measures what a hook costs: the one request it makes
// (POST …/messages/unread) and the whole process, as the runtime waits
// for it, over the local runner with one message to bring each time.
func TestHookRoundTrip(t *testing.T) {
	t.Parallel()
	h, token, sess := hookedAgent(t)
	apiURL, dir := h.apiURL, h.dir
	creds := sessionToken(t, h.statePath, sess.SessionID)

	const runs = 30
	var request, process []time.Duration
	for i := range runs {
		personSays(t, apiURL, token, "tick")
		if i%2 == 0 {
			began := time.Now()
			raw, status := roomRequest(t, apiURL, token, http.MethodPost, "/messages/unread", "", http.Header{
				wire.SessionIDHeader: {sess.SessionID}, wire.SessionTokenHeader: {creds}})
			request = append(request, time.Since(began))
			if status != http.StatusOK || !strings.Contains(string(raw), `"tick"`) {
				t.Fatalf("POST unread: %d %s", status, raw)
			}
			continue
		}
		out, took := h.run(t, claudeInput(dir, "PostToolUse", nil), "", "hook", "PostToolUse")
		process = append(process, took)
		if !strings.Contains(out, "tick") {
			t.Fatalf("hook run %d printed %q; want the tick", i, out)
		}
	}
	slices.Sort(request)
	slices.Sort(process)
	t.Logf("hook round trip over the local runner (%d runs each): POST …/messages/unread p50 %v max %v; whole `letagents hook` process p50 %v max %v",
		len(request), request[len(request)/2].Round(10*time.Microsecond), request[len(request)-1].Round(10*time.Microsecond),
		process[len(process)/2].Round(10*time.Microsecond), process[len(process)-1].Round(10*time.Microsecond))
}

// sessionToken is a saved session's token, read from the state file.
func sessionToken(t *testing.T, path, id string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		AgentSessions map[string]struct {
			SessionToken string `json:"session_token"`
		} `json:"agent_sessions"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.AgentSessions[id].SessionToken == "" {
		t.Fatalf("the state file holds no token of %s (%v)", id, err)
	}
	return st.AgentSessions[id].SessionToken
}
