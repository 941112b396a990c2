package server

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestSessionSavedUnderClientKey: a registered session is saved under the
// key the agent's hooks look for, whatever the client gives the MCP
// server (mcp/identity/testdata/clients): Claude Code a session variable,
// Codex only a threadId in each tool call's _meta, Gemini CLI only
// GEMINI_CLI and its own process.
func TestSessionSavedUnderClientKey(t *testing.T) {
	t.Parallel()
	codexMeta := &mcp.Meta{AdditionalFields: map[string]any{"threadId": "th-1", "sessionId": "th-1"}}
	tests := []struct {
		name    string
		env     map[string]string
		process string
		meta    *mcp.Meta
		want    string
	}{
		{"claude code", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "", "CLAUDE_CODE_SESSION_ID": "c-1"}, "", nil, "claude:c-1"},
		{"codex", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": ""}, "", codexMeta, "codex:th-1"},
		{"codex, the environment's key wins", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "mine"}, "", codexMeta, "mine"},
		{"gemini cli", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "", "GEMINI_CLI": "1"}, "process:42@7", nil, "process:42@7"},
		{"codex in gemini's place: the thread is more precise", map[string]string{"LETAGENTS_AGENT_INSTANCE_ID": "", "GEMINI_CLI": "1"},
			"process:42@7", codexMeta, "codex:th-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, true)
			b.gh.AddRepo("acme/app", false)
			env := map[string]string{"LETAGENTS_AGENT_NAME": "builder"}
			for k, v := range tt.env {
				env[k] = v
			}
			a := newAgentWith(t, b, "", env, func(c *Config) { c.ClientProcess = tt.process })
			a.call(t, "join_room", map[string]any{"name": "github.com/acme/app"}).ok(t)
			a.signIn(t, b, "ann")
			id := a.callWith(t, "register_agent_session", nil, tt.meta).ok(t).str("agent_session_id")
			sessions, _ := readState(t, a.state)["agent_sessions"].(map[string]any)
			saved, _ := sessions[id].(map[string]any)
			if saved["runtime_key"] != tt.want {
				t.Errorf("session %s saved under runtime_key %v; want %q (state: %v)", id, saved["runtime_key"], tt.want, sessions)
			}
		})
	}
}
