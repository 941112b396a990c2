package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/wire"
)

// recordedClient is a client's recording (make record-clients): the
// environment it starts its MCP server with, and the environment and
// input of each hook it runs.
type recordedClient struct {
	Client     string `json:"client"`
	MCPServers []struct {
		Env map[string]string `json:"env"`
	} `json:"mcp_servers"`
	Hooks []struct {
		Args  []string          `json:"args"`
		Env   map[string]string `json:"env"`
		Input json.RawMessage   `json:"input"`
	} `json:"hooks"`
}

func loadRecording(t *testing.T, client string) recordedClient {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "identity", "testdata", "clients", client+".json"))
	if err != nil {
		t.Fatalf("the %s recording (make record-clients): %v", client, err)
	}
	var r recordedClient
	if err := json.Unmarshal(raw, &r); err != nil || len(r.MCPServers) == 0 || len(r.Hooks) == 0 {
		t.Fatalf("the %s recording: %v", client, err)
	}
	return r
}

// clientAgent is one agent of a recorded client: its MCP server started
// with the client's environment, and its hooks run as the client runs
// them, with the agent's own session id in place of the recorded one.
type clientAgent struct {
	*agent
	rec               recordedClient
	recordedID, ownID string
	dir, statePath    string
	session           wire.AgentSession
	callMeta          map[string]any // _meta of each tool call (Codex's threadId)
}

// ids replaces the recorded session id by the agent's own.
func (c *clientAgent) ids(s string) string { return strings.ReplaceAll(s, c.recordedID, c.ownID) }

// env is a recorded environment made this agent's: its session id, the
// test's PATH, and the shared state file.
func (c *clientAgent) env(m map[string]string, home string) []string {
	var out []string
	for k, v := range m {
		switch k {
		case "PATH", "HOME", "PWD", "_":
			continue
		}
		out = append(out, k+"="+c.ids(strings.NewReplacer("$HOME", home, "$PROJECT", c.dir).Replace(v)))
	}
	return append(out, "PATH="+os.Getenv("PATH"), "HOME="+home, "LETAGENTS_STATE_PATH="+c.statePath)
}

// startClientAgent starts an agent of a recorded client whose session id
// is id, in dir with the shared state file.
func startClientAgent(t *testing.T, apiURL, client, name, id, dir, statePath string) *clientAgent {
	t.Helper()
	rec := loadRecording(t, client)
	var in struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(rec.Hooks[0].Input, &in); err != nil || in.SessionID == "" {
		t.Fatalf("%s recording: the first hook input has no session_id", client)
	}
	c := &clientAgent{rec: rec, recordedID: in.SessionID, ownID: id, dir: dir, statePath: statePath}
	if client == "codex" {
		c.callMeta = map[string]any{"threadId": id, "sessionId": id}
	}
	c.agent = startAgent(t, apiURL, agentConfig{Name: name, Dir: dir, StatePath: statePath, Env: c.env(rec.MCPServers[0].Env, t.TempDir())})
	return c
}

// callOK calls a tool as the client does (Codex with its _meta).
func (c *clientAgent) callOK(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	if c.callMeta != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: c.callMeta}
	}
	res, err := c.c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("agent %s: %s: %v %+v", c.name, tool, err, res)
	}
	decode(t, tool, res.Content[0].(mcp.TextContent).Text, out)
}

// hook runs `letagents hook --filter addressed <event>` as the client
// runs the recorded hook of event: its environment, its input.
func (c *clientAgent) hook(t *testing.T, event string) hookAnswer {
	t.Helper()
	for _, h := range c.rec.Hooks {
		if h.Args[len(h.Args)-1] != event {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bins.agent, "hook", "--filter", "addressed", event)
		cmd.Dir, cmd.Env = c.dir, c.env(h.Env, t.TempDir())
		cmd.Stdin = strings.NewReader(c.ids(strings.ReplaceAll(string(h.Input), "$PROJECT", c.dir)))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("agent %s: hook %s: %v\nstderr: %s", c.name, event, err, stderr.String())
		}
		t.Logf("agent %s: hook %s → %q (stderr %q)", c.name, event, stdout.String(), stderr.String())
		return decodeHook(t, stdout.String())
	}
	t.Fatalf("the %s recording has no %s hook", c.rec.Client, event)
	return hookAnswer{}
}

// brought is the context a hook answer adds ("" for none).
func brought(a hookAnswer) string {
	if a.HookSpecificOutput == nil {
		return ""
	}
	return a.HookSpecificOutput.AdditionalContext
}

// TestThreeAgentsOneMachine: alpha and gamma are Claude Code agents and
// delta a Codex agent, each started with its client's recorded
// environment, in one directory with one state file. Each hook brings
// only the mentions of its own agent, each delivery is recorded for the
// agent shown it, and a session the server ended blocks no other agent.
func TestThreeAgentsOneMachine(t *testing.T) {
	t.Parallel()
	r := startRunner(t)
	r.GitHub.SetDeviceTiming(time.Second, 10*time.Minute)
	r.GitHub.AddUser("ann")
	dir, statePath := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
	agents := []*clientAgent{
		startClientAgent(t, r.URL, "claude", "alpha", "aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa", dir, statePath),
		startClientAgent(t, r.URL, "claude", "gamma", "cccccccc-3333-4333-8333-cccccccccccc", dir, statePath),
		startClientAgent(t, r.URL, "codex", "delta", "dddddddd-4444-7444-8444-dddddddddddd", dir, statePath),
	}
	alpha, gamma, delta := agents[0], agents[1], agents[2]
	alpha.signInDevice(t, r.GitHub, "ann") // the others read the shared state file's sign-in
	token := savedToken(t, statePath)
	for _, a := range agents {
		a.callOK(t, "join_room", map[string]any{"name": hookRoom}, &struct{}{})
		var reg struct {
			AgentSession wire.AgentSession `json:"agent_session"`
		}
		a.callOK(t, "register_agent_session", map[string]any{"runtime": a.rec.Client}, &reg)
		a.session = reg.AgentSession
	}

	// deliveredTo is the sessions a message was recorded as delivered to.
	deliveredTo := func(msg string) []string {
		raw, status := roomRequest(t, r.URL, token, http.MethodGet, "/messages/"+msg+"/deliveries", "", nil)
		var d wire.Deliveries
		if status != http.StatusOK || json.Unmarshal(raw, &d) != nil {
			t.Fatalf("deliveries of %s: %d %s", msg, status, raw)
		}
		var out []string
		for _, x := range d.Deliveries {
			out = append(out, x.AgentSessionID)
		}
		return out
	}
	// Each mention reaches its agent's hook, and no other's.
	for i, to := range agents {
		msg := personSays(t, r.URL, token, "@"+to.session.DisplayName+" question "+string(rune('A'+i)))
		for _, other := range agents {
			if other == to {
				continue
			}
			if got := brought(other.hook(t, "UserPromptSubmit")); got != "" {
				t.Errorf("%s's hook brought %q; the message %s mentions %s", other.name, got, msg, to.name)
			}
		}
		got := brought(to.hook(t, "PostToolUse"))
		if !strings.Contains(got, msg+" from ann") || !strings.Contains(got, "mentioning you") {
			t.Errorf("%s's hook brought %q; want %s, which mentions it", to.name, got, msg)
		}
		if d := deliveredTo(msg); len(d) != 1 || d[0] != to.session.SessionID {
			t.Errorf("%s is recorded as delivered to %q; want only %s's session %s", msg, d, to.name, to.session.SessionID)
		}
	}

	// The server ends gamma's session (gamma's state stays, as when its
	// process died): gamma's hook forgets it, and the others go on.
	creds := sessionToken(t, statePath, gamma.session.SessionID)
	if raw, status := roomRequest(t, r.URL, token, http.MethodPost, "/agent-sessions/"+gamma.session.SessionID+"/disconnect", "",
		http.Header{wire.SessionIDHeader: {gamma.session.SessionID}, wire.SessionTokenHeader: {creds}}); status/100 != 2 {
		t.Fatalf("end gamma's session: %d %s", status, raw)
	}
	toGamma := personSays(t, r.URL, token, "@"+gamma.session.DisplayName+" still there?")
	toAlpha := personSays(t, r.URL, token, "@"+alpha.session.DisplayName+" and you?")
	if got := brought(gamma.hook(t, "UserPromptSubmit")); got != "" {
		t.Errorf("gamma's ended session brought %q; want nothing", got)
	}
	if got := brought(alpha.hook(t, "UserPromptSubmit")); !strings.Contains(got, toAlpha) {
		t.Errorf("after gamma's session ended, alpha's hook brought %q; want %s", got, toAlpha)
	}
	toDelta := personSays(t, r.URL, token, "@"+delta.session.DisplayName+" and you, delta?")
	// A person asked delta: its Stop keeps it working to answer.
	if got := delta.hook(t, "Stop"); got.Decision != "block" || !strings.Contains(got.Reason, toDelta) {
		t.Errorf("after gamma's session ended, delta's Stop printed %+v; want a block with %s", got, toDelta)
	}
	if d := deliveredTo(toGamma); len(d) != 0 {
		t.Errorf("%s, to gamma's ended session, is recorded as delivered to %q; want to nobody", toGamma, d)
	}
}
