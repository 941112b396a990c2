package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/localdev/fakemodel"
)

// TestRealClaudeCodeHosted: the real Claude Code (npm) connects to the
// local runner's hosted MCP endpoint by URL, as `claude mcp add
// --transport http` configures it, with an owner token as its bearer and
// nothing installed beside it. Its model is offered the same tools as
// over stdio; it joins a room and sends there, as the token's account.
// Claude Code speaks MCP 2026-07-28, which has no sessions: the room it
// joined is remembered for its token (Hosted.server).
func TestRealClaudeCodeHosted(t *testing.T) {
	t.Parallel()
	if os.Getenv(clientTestsOptOut) == "off" {
		t.Skipf("%s=off", clientTestsOptOut)
	}
	bin, err := exec.LookPath("claude")
	if err != nil {
		t.Fatalf("claude (npm install -g @anthropic-ai/claude-code; %s=off skips this test): %v", clientTestsOptOut, err)
	}
	r := startRunner(t)
	r.GitHub.SetDeviceTiming(time.Second, 10*time.Minute)
	r.GitHub.AddUser("ann")
	statePath := filepath.Join(t.TempDir(), "mcp-state.json")
	signer := startAgent(t, r.URL, agentConfig{Name: "signer", Dir: t.TempDir(), StatePath: statePath})
	signer.signInDevice(t, r.GitHub, "ann")
	token := savedToken(t, statePath)

	const text = "hello from Claude Code over Streamable HTTP"
	model, err := fakemodel.Start(fakemodel.Config{Script: []fakemodel.Step{
		{Tool: "join_room", Args: map[string]any{"name": hookRoom}},
		{Tool: "send_message", Args: map[string]any{"text": text}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })

	home := t.TempDir()
	mcpConfig := filepath.Join(home, "mcp.json")
	writeJSONFile(t, mcpConfig, map[string]any{"mcpServers": map[string]any{"letagents": map[string]any{
		"type": "http", "url": r.URL + "/mcp", "headers": map[string]string{"Authorization": "Bearer " + token}}}})
	ctx, cancel := context.WithTimeout(context.Background(), clientRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Work in the LetAgents room.", "--mcp-config", mcpConfig, "--strict-mcp-config",
		"--allowedTools", "mcp__letagents__join_room,mcp__letagents__send_message")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb",
		"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=fake-model-key", "ENABLE_TOOL_SEARCH=false",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\n%s", err, out.String())
	}
	local := signer.toolNames(t)
	for _, name := range local {
		if !model.Contains("mcp__letagents__" + name) {
			t.Errorf("Claude Code offered its model no mcp__letagents__%s over HTTP", name)
		}
	}
	raw, status := roomRequest(t, r.URL, token, http.MethodGet, "/messages", "", nil)
	if status != http.StatusOK || !bytes.Contains(raw, []byte(text)) || !bytes.Contains(raw, []byte("ann")) {
		t.Fatalf("the room's messages (%d): %s; want ann's agent's %q\nclaude said: %s", status, raw, text, out.String())
	}
}
