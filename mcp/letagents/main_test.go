package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/testwait"
)

func TestRun(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	state := filepath.Join(t.TempDir(), "state.json")
	tests := []struct {
		name    string
		args    []string
		vars    map[string]string
		wantErr string
	}{
		{"no such directory", []string{"--cwd", filepath.Join(t.TempDir(), "missing")}, nil, "not a directory"},
		{"bad flag", []string{"--nope"}, nil, "flag provided but not defined"},
		{"bad API URL", nil, map[string]string{"LETAGENTS_API_URL": "ftp://x"}, "LETAGENTS_API_URL"},
		{"bad poll max", nil, map[string]string{"LETAGENTS_POLL_MAX_MS": "5"}, "LETAGENTS_POLL_MAX_MS"},
		// The client hangs up at once: the server ends without an error.
		{"stdin closed", []string{"--cwd", t.TempDir()}, map[string]string{"LETAGENTS_API_URL": "http://127.0.0.1:1"}, ""},
		// A hook with no session saved prints nothing and lets the agent go on.
		{"hook, nothing saved", []string{"hook", "--cwd", t.TempDir(), "Stop"}, map[string]string{"LETAGENTS_API_URL": "http://127.0.0.1:1"}, ""},
		{"hook, unknown event", []string{"hook", "--cwd", t.TempDir(), "Notification"}, nil, "unknown hook event"},
		{"hook, two events", []string{"hook", "Stop", "SessionStart"}, nil, "one event at most"},
		{"hook, bad filter", []string{"hook", "--filter", "mentions", "Stop"}, nil, "--filter"},
		{"hook, bad API URL", []string{"hook", "--cwd", t.TempDir(), "Stop"}, map[string]string{"LETAGENTS_API_URL": "ftp://x"}, "LETAGENTS_API_URL"},
		{"hook install, unknown agent", []string{"hook", "install", "--agent", "cursor", "--dir", t.TempDir()}, nil, "want one of"},
	}
	for _, tt := range tests {
		vars := map[string]string{"LETAGENTS_STATE_PATH": state}
		for k, v := range tt.vars {
			vars[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound) // only a hung run reaches it
		var stdout, stderr bytes.Buffer
		err := run(ctx, tt.args, env(vars), strings.NewReader(""), &stdout, &stderr)
		cancel()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: run = %v, want error containing %q (stderr: %s)", tt.name, err, tt.wantErr, stderr.String())
		}
		if stdout.Len() != 0 && tt.wantErr != "" {
			t.Errorf("%s: wrote %q on stdout, which belongs to the protocol", tt.name, stdout.String())
		}
	}
}
