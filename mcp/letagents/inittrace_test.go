package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookSkipsServerInit: the built binary answers a hook event before
// the MCP server's packages (mcp-go and the JSON-schema library it links)
// are initialised (package hookcmd), and still initialises them for
// everything else: GODEBUG=inittrace=1 lists each package as the runtime
// initialises it. How long a hook takes is make bench's to measure.
func TestHookSkipsServerInit(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "letagents")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	heavy := []string{"init github.com/mark3labs/", "init github.com/santhosh-tekuri/"}
	tests := []struct {
		name      string
		args      []string
		wantHeavy bool
	}{
		{"hook event", []string{"hook", "SessionStart"}, false},
		{"hook, flags first", []string{"hook", "--filter", "addressed", "PostToolUse"}, false},
		{"hook, the event from the input", []string{"hook"}, false},
		{"hook --help", []string{"hook", "--help"}, false},
		{"hook install --help", []string{"hook", "install", "--help"}, true},
		{"server --help", []string{"--help"}, true},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "LETAGENTS_STATE_PATH="+filepath.Join(t.TempDir(), "state.json"))
		cmd.Stdin = strings.NewReader(`{"session_id": "s-1", "hook_event_name": "Stop"}`)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("%s: %v\n%s", tt.name, err, stderr.String())
			continue
		}
		trace := stderr.String()
		if !strings.Contains(trace, "init github.com/letagents/letagents-go/mcp/hook ") {
			t.Errorf("%s: no init trace of mcp/hook on stderr: %q", tt.name, trace)
		}
		for _, h := range heavy {
			if got := strings.Contains(trace, h); got != tt.wantHeavy {
				t.Errorf("%s: %q initialised: %v; want %v", tt.name, h, got, tt.wantHeavy)
			}
		}
	}
}
