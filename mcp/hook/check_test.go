package hook_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/hook"
)

func TestConfigFiles(t *testing.T) {
	t.Parallel()
	h := hook.Homes{Home: "/home/a", Codex: "/opt/codex", Gemini: "/srv/g"}
	tests := []struct {
		agent string
		want  []hook.ConfigFile
	}{
		{"claude", []hook.ConfigFile{{Path: "/p/.claude/settings.json", Scope: hook.ScopeProject},
			{Path: "/p/.claude/settings.local.json", Scope: hook.ScopeLocal}, {Path: "/home/a/.claude/settings.json", Scope: hook.ScopeUser}}},
		{"codex", []hook.ConfigFile{{Path: "/p/.codex/hooks.json", Scope: hook.ScopeProject}, {Path: "/opt/codex/hooks.json", Scope: hook.ScopeUser}}},
		{"gemini", []hook.ConfigFile{{Path: "/p/.gemini/settings.json", Scope: hook.ScopeProject}, {Path: "/srv/g/.gemini/settings.json", Scope: hook.ScopeUser}}},
	}
	for _, tt := range tests {
		got, err := hook.ConfigFiles(tt.agent, "/p", h)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ConfigFiles(%s) = %v, %v; want %v", tt.agent, got, err, tt.want)
		}
	}
	if _, err := hook.ConfigFiles("cursor", "/p", h); err == nil {
		t.Error("ConfigFiles(cursor): no error for a runtime it does not know")
	}
}

// Inspect reads back what Install wrote, and what a person changed.
func TestInspect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, agent string
		edit        func(t *testing.T, path string) // after Install; nil for none
		events      []string
		off         string
		disabled    []string
		wantErr     string
	}{
		{"claude as installed", "claude", nil, hook.Events("claude"), "", nil, ""},
		{"codex as installed", "codex", nil, hook.Events("codex"), "", nil, ""},
		{"gemini as installed", "gemini", nil, hook.Events("gemini"), "", nil, ""},
		{"claude, hooks off", "claude", func(t *testing.T, path string) {
			replace(t, path, `"hooks"`, `"disableAllHooks": true, "hooks"`)
		}, hook.Events("claude"), "disableAllHooks", nil, ""},
		{"gemini, hooks off and one disabled", "gemini", func(t *testing.T, path string) {
			replace(t, path, `"hooks"`, `"hooksConfig": {"enabled": false, "disabled": ["letagents"]}, "hooks"`)
		}, hook.Events("gemini"), "hooksConfig.enabled", []string{"letagents"}, ""},
		{"claude, another tool's hook only", "claude", func(t *testing.T, path string) {
			write(t, path, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`)
		}, nil, "", nil, ""},
		{"not JSON", "codex", func(t *testing.T, path string) { write(t, path, "{") }, nil, "", nil, "is not the JSON codex reads"},
		{"absent", "claude", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, nil, "", nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := hook.Install(hook.InstallConfig{Agent: tt.agent, Dir: dir}, io.Discard); err != nil {
				t.Fatal(err)
			}
			files, err := hook.ConfigFiles(tt.agent, dir, hook.Homes{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(t, files[0].Path)
			}
			got, err := hook.Inspect(tt.agent, files[0])
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Inspect = %v, want an error containing %q", err, tt.wantErr)
				}
				if tt.name == "absent" && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Inspect of an absent file = %v, want fs.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Events, tt.events) || len(got.Events)+len(got.Missing) != len(hook.Events(tt.agent)) {
				t.Errorf("events %v, missing %v; want events %v", got.Events, got.Missing, tt.events)
			}
			if got.HooksOff != tt.off || !slices.Equal(got.Disabled, tt.disabled) {
				t.Errorf("hooks off %q, disabled %v; want %q, %v", got.HooksOff, got.Disabled, tt.off, tt.disabled)
			}
			if len(tt.events) > 0 && (len(got.Commands) != len(tt.events) || !hook.Ours(got.Commands[0])) {
				t.Errorf("commands %v; want one letagents hook command per event", got.Commands)
			}
			if wantNames := tt.agent == "gemini"; wantNames != slices.Equal(got.Names, []string{"letagents"}) {
				t.Errorf("names %v; want [letagents] for gemini only", got.Names)
			}
		})
	}
}

func TestCommandName(t *testing.T) {
	t.Parallel()
	tests := []struct{ command, want string }{
		{"letagents hook Stop", "letagents"},
		{"/usr/local/bin/letagents hook --filter addressed Stop", "/usr/local/bin/letagents"},
		{"'/home/a b/letagents' hook Stop", "/home/a b/letagents"},
		{`'/tmp/it'\''s/letagents' hook Stop`, "/tmp/it's/letagents"},
		{"  letagents", "letagents"},
	}
	for _, tt := range tests {
		if got := hook.CommandName(tt.command); got != tt.want {
			t.Errorf("CommandName(%q) = %q, want %q", tt.command, got, tt.want)
		}
	}
}

func replace(t *testing.T, path, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, strings.Replace(string(raw), old, new, 1))
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
