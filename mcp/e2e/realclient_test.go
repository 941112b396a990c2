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
// agent clients (installed from npm: claude, codex, gemini); otherwise a
// missing client fails them.
const clientTestsOptOut = "LETAGENTS_CLIENT_TESTS"

// clientRunTimeout bounds one run of a real client: it only decides how
// long a broken run takes to fail.
const clientRunTimeout = 5 * time.Minute

// realClient is how one real client is configured and run against the
// fake model, the way a person sets it up: letagents as its MCP server
// with LETAGENTS_API_URL only in the server's env, and its hooks written
// by `letagents hook install`.
type realClient struct {
	bin, pkg string
	// install are the arguments of `letagents hook install` after --dir
	// and --command.
	install []string
	// key is how the session's runtime key begins (mcp/identity).
	key string
	// setup writes the client's configuration under home and returns the
	// command's arguments and the environment it adds.
	setup func(t *testing.T, home, project, modelURL, apiURL string) (args, env []string)
}

var realClients = map[string]realClient{
	"claude": {bin: "claude", pkg: "@anthropic-ai/claude-code", install: []string{"--agent", "claude", "--local"}, key: "claude:",
		setup: func(t *testing.T, home, project, modelURL, apiURL string) ([]string, []string) {
			mcpConfig := filepath.Join(home, "mcp.json")
			writeJSONFile(t, mcpConfig, map[string]any{"mcpServers": map[string]any{"letagents": map[string]any{"command": bins.agent,
				"env": map[string]string{"LETAGENTS_API_URL": apiURL, "LETAGENTS_AGENT_NAME": "alpha"}}}})
			return []string{"-p", "Work in the LetAgents room.", "--mcp-config", mcpConfig, "--strict-mcp-config",
					"--allowedTools", "mcp__letagents__join_room,mcp__letagents__register_agent_session,mcp__letagents__get_current_room"},
				// Claude Code defers MCP tools behind a search tool the
				// fake model does not drive; and it need not call home.
				[]string{"ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=fake-model-key", "ENABLE_TOOL_SEARCH=false",
					"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		}},
	"codex": {bin: "codex", pkg: "@openai/codex", install: []string{"--agent", "codex"}, key: "codex:",
		setup: func(t *testing.T, home, project, modelURL, apiURL string) ([]string, []string) {
			codexHome := filepath.Join(home, ".codex")
			if err := os.MkdirAll(codexHome, 0o755); err != nil {
				t.Fatal(err)
			}
			// The project is trusted as a person trusts it; the hooks
			// are not reviewed (that is /hooks, interactive), so this
			// run is told to run them anyway.
			toml := fakemodel.CodexConfig(modelURL, bins.agent, project, map[string]string{"LETAGENTS_API_URL": apiURL, "LETAGENTS_AGENT_NAME": "alpha"})
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "-C", project, "Work in the LetAgents room."},
				[]string{"CODEX_HOME=" + codexHome, fakemodel.CodexKeyVar + "=fake-model-key"}
		}},
	"gemini": {bin: "gemini", pkg: "@google/gemini-cli", install: []string{"--agent", "gemini"}, key: "process:",
		setup: func(t *testing.T, home, project, modelURL, apiURL string) ([]string, []string) {
			if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeJSONFile(t, filepath.Join(home, ".gemini", "settings.json"), map[string]any{
				"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
				"general":  map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true}, "privacy": map[string]any{"usageStatisticsEnabled": false}})
			// The MCP server joins the hooks install wrote.
			path := filepath.Join(project, ".gemini", "settings.json")
			var settings map[string]any
			if raw, err := os.ReadFile(path); err != nil || json.Unmarshal(raw, &settings) != nil {
				t.Fatalf("read %s: %v", path, err)
			}
			settings["mcpServers"] = map[string]any{"letagents": map[string]any{"command": bins.agent, "trust": true,
				"env": map[string]string{"LETAGENTS_API_URL": apiURL, "LETAGENTS_AGENT_NAME": "alpha"}}}
			writeJSONFile(t, path, settings)
			return []string{"-p", "Work in the LetAgents room.", "--yolo"},
				[]string{"GOOGLE_GEMINI_BASE_URL=" + modelURL, "GEMINI_API_KEY=fake-model-key"}
		}},
}

// TestRealClientHookReachesTheModel runs each real client against a fake
// model on loopback, with our letagents as its MCP server and its hooks.
// The model joins a room and registers a session; a person then mentions
// the agent, and the hook after the next tool call puts the mention in
// front of the model, recorded as delivered by hook to the session the
// client's MCP server registered: the server and the hook found one key.
func TestRealClientHookReachesTheModel(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"claude", "codex", "gemini"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runRealClient(t, name, realClients[name])
		})
	}
}

func runRealClient(t *testing.T, name string, c realClient) {
	if os.Getenv(clientTestsOptOut) == "off" {
		t.Skipf("%s=off", clientTestsOptOut)
	}
	bin, err := exec.LookPath(c.bin)
	if err != nil {
		t.Fatalf("%s (npm install -g %s; %s=off skips this test): %v", c.bin, c.pkg, clientTestsOptOut, err)
	}
	r := startRunner(t)
	r.GitHub.SetDeviceTiming(time.Second, 10*time.Minute)
	r.GitHub.AddUser("ann")
	home, project := t.TempDir(), t.TempDir()
	statePath := filepath.Join(home, ".letagents", "mcp-state.json") // where both find it by default
	signer := startAgent(t, r.URL, agentConfig{Name: "signer", Dir: t.TempDir(), StatePath: statePath})
	signer.signInDevice(t, r.GitHub, "ann")
	token := savedToken(t, statePath)

	install := exec.Command(bins.agent, append([]string{"hook", "install", "--dir", project, "--command", bins.agent}, c.install...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("hook install: %v\n%s", err, out)
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
		{Tool: "register_agent_session", Args: map[string]any{"runtime": name}},
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

	args, env := c.setup(t, home, project, model.URL, r.URL)
	ctx, cancel := context.WithTimeout(context.Background(), clientRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = project
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb"}, env...)
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s", c.bin, args, err, out.String())
	}
	t.Logf("%s said: %s", c.bin, out.String())

	var mention string
	select {
	case p := <-mentions:
		if p.status != http.StatusCreated || p.id == "" {
			t.Fatalf("ann's mention: %d %s", p.status, p.raw)
		}
		mention = p.id
	default:
		t.Fatalf("the model's script never reached its third call; %s said:\n%s", c.bin, out.String())
	}
	if !model.Contains("[LetAgents] ") || !model.Contains(secret) {
		t.Errorf("the hook's context never reached the model (%d requests)", len(model.Requests()))
	}
	var st struct {
		AgentSessions map[string]struct {
			RuntimeKey string `json:"runtime_key"`
		} `json:"agent_sessions"`
	}
	raw, err := os.ReadFile(statePath)
	if err != nil || json.Unmarshal(raw, &st) != nil || len(st.AgentSessions) != 1 {
		t.Fatalf("the state file holds %d sessions (%v); want the one %s's MCP server registered:\n%s", len(st.AgentSessions), err, c.bin, raw)
	}
	var session, key string
	for id, s := range st.AgentSessions {
		session, key = id, s.RuntimeKey
	}
	if !strings.HasPrefix(key, c.key) {
		t.Errorf("the session is saved under %q; want %s's key (%s…)", key, c.bin, c.key)
	}
	raw, status := roomRequest(t, r.URL, token, http.MethodGet, "/messages/"+mention+"/deliveries", "", nil)
	var d wire.Deliveries
	if status != http.StatusOK || json.Unmarshal(raw, &d) != nil || len(d.Deliveries) != 1 || d.Deliveries[0].AgentSessionID != session ||
		d.Deliveries[0].Via != "hook" {
		t.Errorf("deliveries of %s: %d %s; want one, to %s via hook", mention, status, raw, session)
	}
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
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
