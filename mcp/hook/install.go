package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
)

// runtime is an agent runtime whose hooks Install configures.
type runtime struct {
	// file is its project configuration, under the project directory.
	file string
	// localFile is its personal project configuration, kept out of the
	// repository ("" when it has none).
	localFile string
	// events are its hook events a run answers, in order, with the
	// matcher of tool events ("" for none).
	events []runtimeEvent
	// timeout is the hook's time limit in the runtime's unit.
	timeout int
	// named: the runtime's hook entries carry a name.
	named bool
	// note is printed after the file is written: what else to do, with
	// %[1]s the project's absolute path.
	note string
}

type runtimeEvent struct{ name, matcher string }

// hookSeconds is how long a runtime gives a hook: far more than a run
// takes (DefaultTimeout bounds it), so the run ends itself, quietly,
// before the runtime would report a failed hook.
const hookSeconds = 10

// Runtimes are the agent runtimes Install knows, by the name --agent
// takes.
var runtimes = map[string]runtime{
	"claude": {file: filepath.Join(".claude", "settings.json"), localFile: filepath.Join(".claude", "settings.local.json"),
		timeout: hookSeconds, events: []runtimeEvent{
			{"SessionStart", ""}, {"UserPromptSubmit", ""}, {"PostToolUse", "*"}, {"Stop", ""}}},
	// Codex (0.171) has hooks on by default ([features].hooks; the old
	// codex_hooks is deprecated), but runs a project's hooks only in a
	// trusted project and only those a person reviewed, and codex exec
	// skips the others without a word.
	"codex": {file: filepath.Join(".codex", "hooks.json"), timeout: hookSeconds, events: []runtimeEvent{
		{"SessionStart", ""}, {"UserPromptSubmit", ""}, {"PostToolUse", ""}, {"Stop", ""}},
		note: "Codex runs these hooks only once you trust them, and skips them silently until then (codex exec too):\n" +
			"  1. trust the project: start `codex` in %[1]s and accept, or add to ~/.codex/config.toml:\n" +
			"       [projects.%[1]q]\n       trust_level = \"trusted\"\n" +
			"  2. review and trust the hooks: in codex, run /hooks and trust the letagents hooks (again after each install that changes them).\n" +
			"Hooks are on by default ([features] hooks = true); `codex_hooks` is deprecated and not needed."},
	"gemini": {file: filepath.Join(".gemini", "settings.json"), timeout: hookSeconds * 1000, named: true, events: []runtimeEvent{
		{"SessionStart", ""}, {"BeforeAgent", ""}, {"AfterTool", ".*"}, {"AfterAgent", ""}}},
}

// Agents lists the runtimes Install knows.
func Agents() []string {
	out := make([]string, 0, len(runtimes))
	for name := range runtimes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// InstallConfig says what Install writes.
type InstallConfig struct {
	// Agent is the runtime: claude (default), codex or gemini.
	Agent string
	// Dir is the project directory the configuration goes under.
	Dir string
	// Command runs letagents, as the runtime's shell finds it (default
	// "letagents", which works wherever the binary is on PATH).
	Command string
	// Filter, when set, is passed to every run (--filter).
	Filter string
	// Local writes the runtime's personal project configuration, which
	// is not shared with the team (Claude Code's
	// .claude/settings.local.json), instead of the shared one.
	Local bool
}

// hookMark is how Install knows its own entries again: their command
// holds it.
const hookMark = " hook "

// Install writes the hook entries of a run (`<command> hook <Event>`) for
// each event into the runtime's project configuration, keeping whatever
// else the file holds; entries of an earlier install are replaced, so
// installing twice changes nothing. It prints what it changed to out.
func Install(cfg InstallConfig, out io.Writer) error {
	name := cfg.Agent
	if name == "" {
		name = "claude"
	}
	rt, ok := runtimes[name]
	if !ok {
		return fmt.Errorf("--agent %q: want one of %s", name, strings.Join(Agents(), ", "))
	}
	if cfg.Filter != "" {
		if _, err := letagents.ParseUnreadFilter(cfg.Filter); err != nil {
			return fmt.Errorf("--filter: %w", err)
		}
	}
	command := cfg.Command
	if command == "" {
		command = "letagents"
	}
	file := rt.file
	if cfg.Local {
		if rt.localFile == "" {
			return fmt.Errorf("--local: %s has no personal project configuration; its hooks go in %s", name, rt.file)
		}
		file = rt.localFile
	}
	path := filepath.Join(cfg.Dir, file)
	settings, hooks, err := readSettings(path)
	if err != nil {
		return err
	}
	var report []string
	for _, ev := range rt.events {
		var groups []map[string]any
		if g, ok := hooks[ev.name]; ok {
			if err := json.Unmarshal(g, &groups); err != nil {
				return fmt.Errorf("%s: hooks.%s is not a list of hook groups (%w)", path, ev.name, err)
			}
		}
		line := shellWord(command) + hookMark
		if cfg.Filter != "" {
			line += "--filter " + cfg.Filter + " "
		}
		line += ev.name
		entry := map[string]any{"type": "command", "command": line, "timeout": rt.timeout}
		if rt.named {
			entry["name"] = "letagents"
		}
		group := map[string]any{"hooks": []any{entry}}
		if ev.matcher != "" {
			group["matcher"] = ev.matcher
		}
		kept, had := withoutOurs(groups)
		if hooks[ev.name], err = json.Marshal(append(kept, group)); err != nil {
			return fmt.Errorf("encode hooks.%s: %w", ev.name, err)
		}
		switch now, _ := json.Marshal(group); {
		case had == nil:
			report = append(report, "  "+ev.name+": added   "+line)
		case bytes.Equal(had, now):
			report = append(report, "  "+ev.name+": kept    "+line)
		default:
			report = append(report, "  "+ev.name+": updated "+line)
		}
	}
	if settings["hooks"], err = json.Marshal(hooks); err != nil {
		return fmt.Errorf("encode hooks: %w", err)
	}
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := writeFile(path, append(data, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(out, "letagents hook install: wrote %s (%s hooks):\n%s\n", path, name, strings.Join(report, "\n"))
	if cfg.Local {
		fmt.Fprintf(out, "%s is yours alone: keep it out of git (Claude Code git-ignores the settings.local.json it makes itself; "+
			"add %s to .gitignore if git status shows it).\n", file, filepath.ToSlash(file))
	}
	if rt.note != "" {
		abs, err := filepath.Abs(cfg.Dir)
		if err != nil {
			abs = cfg.Dir
		}
		fmt.Fprintf(out, rt.note+"\n", abs)
	}
	return nil
}

// readSettings reads a runtime's configuration file: the whole object
// and its "hooks" object, each value left undecoded so that what Install
// does not write stays as it is; both empty when there is no file.
func readSettings(path string) (settings, hooks map[string]json.RawMessage, err error) {
	settings, hooks = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	case len(bytes.TrimSpace(raw)) > 0:
		if err := json.Unmarshal(raw, &settings); err != nil {
			return nil, nil, fmt.Errorf("%s is not a JSON object (%w); fix or move it, then install again", path, err)
		}
	}
	if h, ok := settings["hooks"]; ok {
		if err := json.Unmarshal(h, &hooks); err != nil {
			return nil, nil, fmt.Errorf("%s: \"hooks\" is not an object (%w)", path, err)
		}
	}
	return settings, hooks, nil
}

// withoutOurs is an event's groups without the entries of an earlier
// install (groups left empty dropped), and the JSON of the first group
// that held one, as it was (nil for none).
func withoutOurs(groups []map[string]any) (kept []map[string]any, ours []byte) {
	for _, g := range groups {
		entries, _ := g["hooks"].([]any)
		var rest []any
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			if cmd, _ := entry["command"].(string); isOurs(cmd) {
				if ours == nil {
					ours, _ = json.Marshal(g)
				}
				continue
			}
			rest = append(rest, e)
		}
		if len(rest) == 0 && len(entries) > 0 {
			continue
		}
		g["hooks"] = rest
		kept = append(kept, g)
	}
	return kept, ours
}

// isOurs reports whether a hook command is a run of letagents hook.
func isOurs(cmd string) bool {
	before, _, ok := strings.Cut(cmd, hookMark)
	return ok && strings.Contains(filepath.Base(strings.Trim(before, `'"`)), "letagents")
}

// shellWord quotes a command for the runtime's shell when it needs it (a
// path with spaces).
func shellWord(s string) string {
	if !strings.ContainsAny(s, " \t'\"$`\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeFile replaces path with data through a temporary file, making its
// directory as needed.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("make %s: %w", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
