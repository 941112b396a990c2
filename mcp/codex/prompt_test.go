package codex

import (
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/state"
)

func TestStartPrompt(t *testing.T) {
	t.Parallel()
	base := state.CodexLiveSession{RoomIdentifier: "github.com/acme/app", JoinedVia: state.JoinedViaJoinRoom, Cwd: "/src/app",
		StopPhrase: "/stop-now", Token: "LOCAL_CODEX_ROOM_x"}
	tests := []struct {
		name   string
		change func(*state.CodexLiveSession)
		want   []string
		not    []string
	}{
		{"named room", func(*state.CodexLiveSession) {}, []string{
			`join_room with {"name":"github.com/acme/app","session_mode":"current"}`,
			`register_agent_session with session_kind "worker" and runtime "codex"`,
			"wait_for_messages with timeout 30000", "post_status", "exactly /stop-now", "exactly LOCAL_CODEX_ROOM_x_DONE",
			"Repository: /src/app.", "No deadline", "start_local_codex_session",
		}, []string{"branch", "join_code"}},
		{"invite code, branch and deadline", func(s *state.CodexLiveSession) {
			s.RoomIdentifier, s.JoinedVia, s.Branch, s.DeadlineUTC = "FEH7-YWH4-ZYT3", state.JoinedViaJoinCode, "feature/x", "2026-05-01 13:30:00 UTC"
		}, []string{
			`join_code with {"code":"FEH7-YWH4-ZYT3","session_mode":"current"}`, "/src/app (branch feature/x)",
			"Deadline: 2026-05-01 13:30:00 UTC",
		}, []string{"No deadline", "join_room"}},
	}
	for _, tc := range tests {
		s := base
		tc.change(&s)
		p := startPrompt(s)
		for _, w := range tc.want {
			if !strings.Contains(p, w) {
				t.Errorf("%s: prompt lacks %q:\n%s", tc.name, w, p)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(p, n) {
				t.Errorf("%s: prompt has %q:\n%s", tc.name, n, p)
			}
		}
	}
}
