package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/doctor"
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
		// Flags after the event are read, not taken for more events.
		{"hook, bad filter after the event", []string{"hook", "Stop", "--filter", "mentions"}, nil, "--filter"},
		{"hook, bad limit after the event", []string{"hook", "Stop", "--limit", "x"}, nil, "invalid value"},
		{"hook, flags after the event", []string{"hook", "UserPromptSubmit", "--filter", "addressed", "--cwd", t.TempDir()}, map[string]string{"LETAGENTS_API_URL": "http://127.0.0.1:1"}, ""},
		{"hook, two events around a flag", []string{"hook", "Stop", "--limit", "3", "SessionStart"}, nil, "one event at most"},
		{"hook, -- ends the flags", []string{"hook", "--cwd", t.TempDir(), "--", "--limit"}, nil, "unknown hook event"},
		{"unexpected argument", []string{"--cwd", t.TempDir(), "serve"}, nil, "unexpected argument"},
		{"hook install, unexpected argument", []string{"hook", "install", "--dir", t.TempDir(), "codex"}, nil, "unexpected argument"},
		{"hook install, unknown agent after the flag", []string{"hook", "install", "--dir", t.TempDir(), "--agent", "cursor"}, nil, "want one of"},
		{"hook, bad API URL", []string{"hook", "--cwd", t.TempDir(), "Stop"}, map[string]string{"LETAGENTS_API_URL": "ftp://x"}, "LETAGENTS_API_URL"},
		{"hook install, unknown agent", []string{"hook", "install", "--agent", "cursor", "--dir", t.TempDir()}, nil, "want one of"},
		{"hook install --local last", []string{"hook", "install", "--dir", t.TempDir(), "--local"}, nil, ""},
		{"hook install --local for gemini", []string{"hook", "install", "--local", "--agent", "gemini", "--dir", t.TempDir()}, nil, "--local"},
		{"doctor, unexpected argument", []string{"doctor", "--cwd", t.TempDir(), "codex"}, nil, "unexpected argument"},
		{"doctor, no such directory", []string{"doctor", "--json", "--cwd", filepath.Join(t.TempDir(), "missing")}, nil, "not a directory"},
		{"doctor, bad flag", []string{"doctor", "--fix"}, nil, "flag provided but not defined"},
		{"doctor, bad API URL", []string{"doctor", "--cwd", t.TempDir()}, map[string]string{"LETAGENTS_API_URL": "ftp://x"}, "LETAGENTS_API_URL"},
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

// TestRunHookSaysWhyNothingWasDelivered: a hook that finds no session
// delivers nothing and says so on stderr at the binary's own log level.
func TestRunHookSaysWhyNothingWasDelivered(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"LETAGENTS_STATE_PATH": filepath.Join(t.TempDir(), "state.json"), "LETAGENTS_API_URL": "http://127.0.0.1:1"}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"hook", "--cwd", t.TempDir(), "UserPromptSubmit"}, func(k string) string { return vars[k] },
		strings.NewReader(`{"session_id": "s-1"}`), &stdout, &stderr)
	if err != nil || stdout.Len() != 0 {
		t.Fatalf("run = %v, stdout %q; want no error and nothing delivered", err, stdout.String())
	}
	if got := stderr.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "nothing delivered: no agent session saved") ||
		!strings.Contains(got, "claude:s-1") {
		t.Errorf("stderr = %q; want a warning that nothing was delivered, naming the runtime keys looked for", got)
	}
}

// TestRunHelp: --help and -h print the command's usage and succeed (exit
// status 0), wherever they stand, and nothing reaches stdout.
func TestRunHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"server --help", []string{"--help"}, "usage: letagents [--cwd DIR]"},
		{"server -h", []string{"-h"}, "usage: letagents [--cwd DIR]"},
		{"hook --help", []string{"hook", "--help"}, "usage: letagents hook [--filter"},
		{"hook -h", []string{"hook", "-h"}, "usage: letagents hook [--filter"},
		{"hook --help after the event", []string{"hook", "Stop", "--help"}, "usage: letagents hook [--filter"},
		{"hook install --help", []string{"hook", "install", "--help"}, "usage: letagents hook install"},
		{"hook install -h after a flag", []string{"hook", "install", "--agent", "codex", "-h"}, "usage: letagents hook install"},
		{"doctor --help", []string{"doctor", "--help"}, "usage: letagents doctor [--cwd DIR] [--json]"},
		{"doctor -h after a flag", []string{"doctor", "--json", "-h"}, "usage: letagents doctor [--cwd DIR] [--json]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
			if err != nil {
				t.Fatalf("run = %v; want nil (exit 0)", err)
			}
			if !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "-cwd") && !strings.Contains(stderr.String(), "-agent") {
				t.Errorf("stderr = %q; want the usage %q and the flags", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q; want nothing", stdout.String())
			}
		})
	}
}

// TestRunDoctor: letagents doctor prints one line per check (or the
// report as JSON, with the flags anywhere), and fails when a check does.
func TestRunDoctor(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	vars := map[string]string{"HOME": home, "LETAGENTS_STATE_PATH": filepath.Join(home, "state.json"), "LETAGENTS_API_URL": "http://127.0.0.1:1",
		"LETAGENTS_CODEX_BIN": filepath.Join(home, "no-codex")}
	tests := []struct {
		name string
		args []string
		json bool
	}{
		{"lines", []string{"doctor", "--cwd", dir}, false},
		{"json first", []string{"doctor", "--json", "--cwd", dir}, true},
		{"json last", []string{"doctor", "--cwd", dir, "--json"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := run(ctx, tt.args, func(k string) string { return vars[k] }, strings.NewReader(""), &stdout, &stderr)
			if !errors.Is(err, doctor.ErrFailed) {
				t.Fatalf("run = %v; want the server check to fail (doctor.ErrFailed)", err)
			}
			if !tt.json {
				if !strings.Contains(stdout.String(), "fail  server") || !strings.Contains(stdout.String(), "fix: start the server") {
					t.Errorf("stdout = %q; want the failing server check and its fix", stdout.String())
				}
				return
			}
			var r doctor.Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
			}
			if r.OK || r.Dir != dir || len(r.Checks) == 0 || r.Checks[0].Name != "server" || r.Checks[0].Status != doctor.Fail || r.Checks[0].Fix == "" {
				t.Errorf("report = %+v; want the failing server check first, with its fix", r)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		wantRest  []string
		wantLimit int
		wantErr   error
	}{
		{"nothing", nil, nil, 0, nil},
		{"flag first", []string{"--limit", "2", "Stop"}, []string{"Stop"}, 2, nil},
		{"flag last", []string{"Stop", "--limit", "2"}, []string{"Stop"}, 2, nil},
		{"flag between", []string{"a", "-limit=3", "b"}, []string{"a", "b"}, 3, nil},
		{"last value wins", []string{"--limit", "1", "a", "--limit", "4"}, []string{"a"}, 4, nil},
		{"-- ends flags", []string{"a", "--", "--limit", "5"}, []string{"a", "--limit", "5"}, 0, nil},
		{"lone dash is an argument", []string{"-", "--limit", "6"}, []string{"-"}, 6, nil},
		{"help after arguments", []string{"a", "--help"}, nil, 0, flag.ErrHelp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags := newFlags("test", io.Discard)
			limit := flags.Int("limit", 0, "")
			rest, err := parseFlags(flags, tt.args)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			}
			if !slices.Equal(rest, tt.wantRest) || *limit != tt.wantLimit {
				t.Errorf("rest, limit = %q, %d; want %q, %d", rest, *limit, tt.wantRest, tt.wantLimit)
			}
		})
	}
}
