package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/localdev/fakemodel"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// TestRealCodexShortTurn starts a live Codex session through
// start_local_codex_session, with the real codex app-server against the
// fake model and the worker's own letagents MCP server, whose turn joins,
// registers and finishes at once: the start succeeds (the worker
// registered), and the room is told the ending, whoever tells it: the
// live session ends completed and told, the worker's reasoning session
// closes on an idle update, and its agent session ends.
func TestRealCodexShortTurn(t *testing.T) {
	t.Parallel()
	if os.Getenv(clientTestsOptOut) == "off" {
		t.Skipf("%s=off", clientTestsOptOut)
	}
	if _, err := exec.LookPath("codex"); err != nil {
		t.Fatalf("codex (npm install -g @openai/codex; %s=off skips this test): %v", clientTestsOptOut, err)
	}
	r := startRunner(t)
	r.GitHub.SetDeviceTiming(time.Second, 10*time.Minute)
	r.GitHub.AddUser("ann")
	home, project := t.TempDir(), t.TempDir()
	statePath := filepath.Join(home, "mcp-state.json")
	model, err := fakemodel.Start(fakemodel.Config{Script: []fakemodel.Step{
		{Tool: "join_room", Args: map[string]any{"name": hookRoom}},
		{Tool: "register_agent_session", Args: map[string]any{"runtime": "codex"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	// The worker's MCP server shares the starter's state file: its sign-in,
	// and the live session its bridge binds.
	toml := fakemodel.CodexConfig(model.URL, bins.agent, project,
		map[string]string{"LETAGENTS_API_URL": r.URL, "LETAGENTS_STATE_PATH": statePath, "LETAGENTS_AGENT_NAME": "worker"})
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	starter := startAgent(t, r.URL, agentConfig{Name: "starter", Dir: project, StatePath: statePath,
		Env: []string{"CODEX_HOME=" + codexHome, fakemodel.CodexKeyVar + "=fake-model-key", "LETAGENTS_AGENT_INSTANCE_ID=starter-instance"}})
	starter.signInDevice(t, r.GitHub, "ann")
	token := savedToken(t, statePath)

	var start struct {
		Success bool `json:"success"`
		Live    struct {
			SessionID string `json:"session_id"`
			Status    string `json:"status"`
		} `json:"local_codex_session"`
	}
	ans := starter.call(t, "start_local_codex_session", map[string]any{"room": hookRoom, "cwd": project})
	if ans.IsError || json.Unmarshal([]byte(ans.Text), &start) != nil || !start.Success || start.Live.SessionID == "" {
		t.Fatalf("start_local_codex_session = %s; want a start whose worker registered", ans.Text)
	}
	type liveSaved struct {
		Status         string `json:"status"`
		AgentSessionID string `json:"agent_session_id"`
		ToldAt         string `json:"told_at"`
	}
	var live liveSaved
	testwait.Until(t, "the room to be told the session ended", func() bool {
		var st struct {
			Live map[string]liveSaved `json:"codex_live_sessions"`
		}
		raw, err := os.ReadFile(statePath)
		if err != nil || json.Unmarshal(raw, &st) != nil {
			return false
		}
		live = st.Live[start.Live.SessionID]
		return live.ToldAt != ""
	})
	if live.Status != "completed" || live.AgentSessionID == "" {
		t.Fatalf("live session ended %+v; want completed, bound to the worker", live)
	}
	raw, status := roomRequest(t, r.URL, token, http.MethodGet, "/reasoning-sessions?open=false", "", nil)
	var rs wire.ReasoningSessions
	if status != http.StatusOK || json.Unmarshal(raw, &rs) != nil || len(rs.Sessions) != 1 {
		t.Fatalf("reasoning sessions: %d %s; want the worker's one", status, raw)
	}
	if s := rs.Sessions[0]; s.ClosedAt == nil || s.Status == nil || *s.Status != "idle" || !strings.Contains(s.Summary, "finished its turn") ||
		s.AgentKey == nil || *s.AgentKey != "ann/worker" {
		t.Errorf("reasoning session %s; want the worker's, closed on an idle update saying it finished", raw)
	}
	// The worker's agent session has ended: its credentials report nothing
	// more.
	var st struct {
		Agents map[string]struct {
			Token string `json:"session_token"`
		} `json:"agent_sessions"`
	}
	if raw, err := os.ReadFile(statePath); err != nil || json.Unmarshal(raw, &st) != nil || st.Agents[live.AgentSessionID].Token == "" {
		t.Fatalf("the state file holds no worker session %s (%v)", live.AgentSessionID, err)
	}
	body, _ := json.Marshal(wire.NativeActivity{ObservedAt: time.Now().UTC().Format(time.RFC3339Nano), Sequence: 1 << 40, Method: "e2e.probe",
		SessionCredentials: wire.SessionCredentials{AgentSessionID: live.AgentSessionID, AgentSessionToken: st.Agents[live.AgentSessionID].Token}})
	raw, status = roomRequest(t, r.URL, token, http.MethodPost, "/agent-sessions/"+live.AgentSessionID+"/native-activity", string(body), nil)
	if status < 400 || status >= 500 {
		t.Errorf("native activity as the worker after the ending: %d %s; want it refused, its agent session ended", status, raw)
	}
}
