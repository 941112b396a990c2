package hook_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/hook"
)

// installed reads back a configuration file Install wrote.
func installed(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", path, err, raw)
	}
	return v
}

// commands lists the hook commands of an event, in order.
func commands(settings map[string]any, event string) []string {
	var out []string
	hooks, _ := settings["hooks"].(map[string]any)
	groups, _ := hooks[event].([]any)
	for _, g := range groups {
		entries, _ := g.(map[string]any)["hooks"].([]any)
		for _, e := range entries {
			cmd, _ := e.(map[string]any)["command"].(string)
			out = append(out, cmd)
		}
	}
	return out
}

func TestInstall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agent, file string
		events      []string
		timeout     float64
		note        string
	}{
		{"claude", ".claude/settings.json", []string{"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}, 10, ""},
		{"codex", ".codex/hooks.json", []string{"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}, 10, "run /hooks and trust the letagents hooks"},
		{"gemini", ".gemini/settings.json", []string{"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"}, 10000, ""},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		var out bytes.Buffer
		if err := hook.Install(hook.InstallConfig{Agent: tt.agent, Dir: dir, Command: "/opt/my tools/letagents", Filter: "addressed"}, &out); err != nil {
			t.Fatalf("%s: %v", tt.agent, err)
		}
		path := filepath.Join(dir, tt.file)
		got := installed(t, path)
		for _, ev := range tt.events {
			want := "'/opt/my tools/letagents' hook --filter addressed " + ev
			if cmds := commands(got, ev); len(cmds) != 1 || cmds[0] != want {
				t.Errorf("%s: %s commands = %q, want [%q]", tt.agent, ev, cmds, want)
			}
			if !strings.Contains(out.String(), ev+": added") {
				t.Errorf("%s: the report does not say %s was added:\n%s", tt.agent, ev, out.String())
			}
		}
		entry := got["hooks"].(map[string]any)[tt.events[0]].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
		if entry["type"] != "command" || entry["timeout"] != tt.timeout {
			t.Errorf("%s: entry %v; want a command with timeout %v", tt.agent, entry, tt.timeout)
		}
		if !strings.Contains(out.String(), tt.note) {
			t.Errorf("%s: the report lacks %q:\n%s", tt.agent, tt.note, out.String())
		}
		if tt.agent == "codex" && (!strings.Contains(out.String(), "[projects."+strconv.Quote(dir)+"]\n       trust_level = \"trusted\"") ||
			strings.Contains(out.String(), "codex_hooks = true")) {
			t.Errorf("codex: the report does not name the project's trust_level, or still asks for the deprecated codex_hooks:\n%s", out.String())
		}
		// Again: nothing changes.
		before, _ := os.ReadFile(path)
		out.Reset()
		if err := hook.Install(hook.InstallConfig{Agent: tt.agent, Dir: dir, Command: "/opt/my tools/letagents", Filter: "addressed"}, &out); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) || strings.Contains(out.String(), "added") || !strings.Contains(out.String(), ": kept ") {
			t.Errorf("%s: a second install changed the file or says it did:\n%s", tt.agent, out.String())
		}
	}
}

func TestInstallKeepsTheRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	const existing = `{
	"permissions": {"allow": ["Bash(go test:*)"]},
	"hooks": {
		"PostToolUse": [
			{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "gofmt -w ."}]},
			{"matcher": "*", "hooks": [{"type": "command", "command": "letagents hook PostToolUse", "timeout": 10}]}
		],
		"Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
	}
}`
	if err := os.WriteFile(path, []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := hook.Install(hook.InstallConfig{Dir: dir}, &out); err != nil {
		t.Fatal(err)
	}
	got := installed(t, path)
	if perms, _ := got["permissions"].(map[string]any); perms == nil {
		t.Errorf("the permissions were lost: %v", got)
	}
	if cmds := commands(got, "PostToolUse"); len(cmds) != 2 || cmds[0] != "gofmt -w ." || cmds[1] != "letagents hook PostToolUse" {
		t.Errorf("PostToolUse = %q; want the user's hook kept and ours once", cmds)
	}
	if cmds := commands(got, "Notification"); len(cmds) != 1 || cmds[0] != "notify-send done" {
		t.Errorf("Notification = %q; want it untouched", cmds)
	}
	if !strings.Contains(out.String(), "PostToolUse: kept ") || !strings.Contains(out.String(), "Stop: added ") {
		t.Errorf("report:\n%s\nwant PostToolUse kept and Stop added", out.String())
	}
	// A new filter updates the entries.
	out.Reset()
	if err := hook.Install(hook.InstallConfig{Dir: dir, Filter: "addressed"}, &out); err != nil {
		t.Fatal(err)
	}
	if cmds := commands(installed(t, path), "PostToolUse"); len(cmds) != 2 || cmds[1] != "letagents hook --filter addressed PostToolUse" ||
		!strings.Contains(out.String(), "PostToolUse: updated ") {
		t.Errorf("after a new filter: PostToolUse = %q, report:\n%s", cmds, out.String())
	}
}

func TestInstallRefusals(t *testing.T) {
	t.Parallel()
	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, ".claude", "settings.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	badHooks := t.TempDir()
	if err := os.MkdirAll(filepath.Join(badHooks, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badHooks, ".claude", "settings.json"), []byte(`{"hooks": {"Stop": "no"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  hook.InstallConfig
		want string
	}{
		{"unknown agent", hook.InstallConfig{Agent: "cursor", Dir: t.TempDir()}, "want one of claude, codex, gemini"},
		{"bad filter", hook.InstallConfig{Dir: t.TempDir(), Filter: "mentions"}, "--filter"},
		{"not JSON", hook.InstallConfig{Dir: broken}, "is not a JSON object"},
		{"hooks of another shape", hook.InstallConfig{Dir: badHooks}, "hooks.Stop is not a list"},
		{"local for a runtime without", hook.InstallConfig{Agent: "gemini", Dir: t.TempDir(), Local: true}, "no personal project configuration"},
	} {
		if err := hook.Install(tt.cfg, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Install = %v, want an error with %q", tt.name, err, tt.want)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(broken, ".claude", "settings.json")); string(raw) != "{not json" {
		t.Errorf("a file Install refused was changed: %q", raw)
	}
}

// TestInstallLocal: --local writes Claude Code's personal file, which the
// team does not share, and leaves the shared one alone.
func TestInstallLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out bytes.Buffer
	if err := hook.Install(hook.InstallConfig{Agent: "claude", Dir: dir, Local: true}, &out); err != nil {
		t.Fatal(err)
	}
	if cmds := commands(installed(t, filepath.Join(dir, ".claude", "settings.local.json")), "Stop"); !slices.Equal(cmds, []string{"letagents hook Stop"}) {
		t.Errorf("settings.local.json Stop = %q", cmds)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("the shared settings.json was written (stat: %v)", err)
	}
	if !strings.Contains(out.String(), "settings.local.json is yours alone") {
		t.Errorf("the report does not say the file is personal:\n%s", out.String())
	}
}
