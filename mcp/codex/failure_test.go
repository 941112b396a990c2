package codex

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestFailureHints: a failed start's hint matches its kind: a turn's
// refused login says `codex login`, a model error points at the model
// provider, a worker that did not register at the MCP server's env, a
// missing binary at installing Codex, anything else at the app-server.
func TestFailureHints(t *testing.T) {
	t.Parallel()
	turn := func(msg, info string) error {
		e := &turnError{Message: msg, Info: json.RawMessage(info)}
		return &StartError{Kind: failureKind(e), Reason: "turn failed: " + msg}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"login refused, by kind", turn("bad key", `"unauthorized"`), "codex login"},
		{"login refused, by kind object", turn("bad key", `{"unauthorized": {}}`), "codex login"},
		{"login refused, by message", turn("unexpected status 401 Unauthorized", `null`), "codex login"},
		{"a model error", turn("unexpected status 500", `"internalServerError"`), "model API failed"},
		{"no error given", &StartError{Kind: failureKind(nil)}, "model API failed"},
		{"not registered", &StartError{Kind: FailRegistration}, "LETAGENTS_TOKEN and LETAGENTS_API_URL in [mcp_servers.letagents] env"},
		{"no codex binary", &StartError{Kind: FailMissing}, "npm install -g @openai/codex"},
		{"the app-server", &StartError{Kind: FailServer}, "codex app-server runs"},
		{"not a start error", errors.New("boom"), "codex app-server runs"},
	}
	for _, tc := range tests {
		if got := Hint(tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("%s: Hint = %q, want it to say %q", tc.name, got, tc.want)
		}
	}
}
