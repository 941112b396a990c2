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
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/localdev/fakemodel"
	"github.com/letagents/letagents-go/shared/wire"
)

// clientTestsOptOut, set to "off", skips the tests that run the real
// agent clients (installed from npm: claude); otherwise a missing client
// fails them.
const clientTestsOptOut = "LETAGENTS_CLIENT_TESTS"

// clientRunTimeout bounds one run of a real client: it only decides how
// long a broken run takes to fail.
const clientRunTimeout = 5 * time.Minute

// TestRealClaudeCodeHookReachesTheModel runs the real Claude Code
// (`claude -p`) against a fake model on loopback, with our letagents as
// its MCP server and as its hooks (installed with --local, configured
// the way a person does: LETAGENTS_API_URL only in the MCP server's
// env). The model joins a room and registers a session; a person then
// mentions the agent, and the hook after the next tool call puts the
// mention in front of the model, recorded as delivered by hook.
func TestRealClaudeCodeHookReachesTheModel(t *testing.T) {
	t.Parallel()
	if os.Getenv(clientTestsOptOut) == "off" {
		t.Skipf("%s=off", clientTestsOptOut)
	}
	claude, err := exec.LookPath("claude")
	if err != nil {
		t.Fatalf("claude (npm install -g @anthropic-ai/claude-code; %s=off skips this test): %v", clientTestsOptOut, err)
	}
	r := startRunner(t)
	r.GitHub.SetDeviceTiming(time.Second, 10*time.Minute)
	r.GitHub.AddUser("ann")
	home, project := t.TempDir(), t.TempDir()
	statePath := filepath.Join(home, ".letagents", "mcp-state.json") // where both find it by default
	signer := startAgent(t, r.URL, agentConfig{Name: "signer", Dir: t.TempDir(), StatePath: statePath})
	signer.signInDevice(t, r.GitHub, "ann")
	token := savedToken(t, statePath)

	install := exec.Command(bins.agent, "hook", "install", "--dir", project, "--command", bins.agent, "--local")
	if out, err := install.CombinedOutput(); err != nil || !strings.Contains(string(out), "settings.local.json") {
		t.Fatalf("hook install --local: %v\n%s", err, out)
	}
	mcpConfig := filepath.Join(home, "mcp.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"letagents": map[string]any{"command": bins.agent,
		"env": map[string]string{"LETAGENTS_API_URL": r.URL, "LETAGENTS_AGENT_NAME": "alpha"}}}})
	if err := os.WriteFile(mcpConfig, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	const secret = "the staging key rotates at noon"
	// The person's message is posted from the fake model's goroutine,
	// which must not fail the test itself: it hands over what happened.
	type posted struct {
		id     string
		status int
		raw    []byte
	}
	mentions := make(chan posted, 1)
	model, err := fakemodel.Start(fakemodel.Config{Script: []fakemodel.Step{
		{Tool: "join_room", Args: map[string]any{"name": hookRoom}},
		{Tool: "register_agent_session", Args: map[string]any{"runtime": "claude-code"}},
		{Tool: "get_current_room", Before: func() {
			body, _ := json.Marshal(map[string]string{"sender": "ann", "text": "@alpha " + secret})
			raw, status := postAsPerson(r.URL, token, string(body))
			var m wire.Message
			_ = json.Unmarshal(raw, &m)
			mentions <- posted{m.ID, status, raw}
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), clientRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Work in the LetAgents room.", "--mcp-config", mcpConfig, "--strict-mcp-config",
		"--allowedTools", "mcp__letagents__join_room,mcp__letagents__register_agent_session,mcp__letagents__get_current_room")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb",
		"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=fake-model-key",
		// Claude Code defers MCP tools behind a search tool the fake
		// model does not drive; and it need not call home.
		"ENABLE_TOOL_SEARCH=false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out.String())
	}
	t.Logf("claude -p said: %s", out.String())

	var mention string
	select {
	case p := <-mentions:
		if p.status != http.StatusCreated || p.id == "" {
			t.Fatalf("ann's mention: %d %s", p.status, p.raw)
		}
		mention = p.id
	default:
		t.Fatalf("the model's script never reached its third call; claude said:\n%s", out.String())
	}
	if !model.Contains("[LetAgents] 1 unread message in room "+hookRoom) || !model.Contains(secret) {
		t.Errorf("the hook's context never reached the model (%d requests)", len(model.Requests()))
	}
	var st struct {
		AgentSessions map[string]struct {
			RuntimeKey string `json:"runtime_key"`
		} `json:"agent_sessions"`
	}
	raw, err := os.ReadFile(statePath)
	if err != nil || json.Unmarshal(raw, &st) != nil || len(st.AgentSessions) != 1 {
		t.Fatalf("the state file holds %d sessions (%v); want the one Claude Code's MCP server registered:\n%s", len(st.AgentSessions), err, raw)
	}
	var session, key string
	for id, s := range st.AgentSessions {
		session, key = id, s.RuntimeKey
	}
	if !strings.HasPrefix(key, "claude:") {
		t.Errorf("the session is saved under %q; want Claude Code's session key", key)
	}
	raw, status := roomRequest(t, r.URL, token, http.MethodGet, "/messages/"+mention+"/deliveries", "", nil)
	var d wire.Deliveries
	if status != http.StatusOK || json.Unmarshal(raw, &d) != nil || len(d.Deliveries) != 1 || d.Deliveries[0].AgentSessionID != session ||
		d.Deliveries[0].Via != "hook" {
		t.Errorf("deliveries of %s: %d %s; want one, to %s via hook", mention, status, raw, session)
	}
}

// postAsPerson posts a message to hookRoom with ann's owner token, from
// any goroutine: the status and body, 0 when the request failed.
func postAsPerson(base, token, body string) ([]byte, int) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rooms/"+hookRoom+"/messages", strings.NewReader(body))
	if err != nil {
		return []byte(err.Error()), 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return []byte(err.Error()), 0
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return raw, resp.StatusCode
}
