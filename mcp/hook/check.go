package hook

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file reads back what Install writes, for `letagents doctor`: which
// of a runtime's configuration files hold letagents' hooks, for which
// events, and whether the runtime switched hooks off there. It knows the
// files a runtime reads, which are more than the one Install writes.

// Homes are the directories a runtime keeps its user-wide configuration
// in, beside the project's.
type Homes struct {
	// Home is the user's home directory.
	Home string
	// Claude is CLAUDE_CONFIG_DIR (default Home/.claude).
	Claude string
	// Codex is CODEX_HOME (default ~/.codex).
	Codex string
	// Gemini is GEMINI_CLI_HOME (default Home): Gemini CLI reads
	// <Gemini>/.gemini.
	Gemini string
}

// Scopes of a ConfigFile.
const (
	ScopeProject = "project" // shared with the team through the repository
	ScopeLocal   = "local"   // the project's, not shared (.claude/settings.local.json)
	ScopeUser    = "user"    // every project of the user
)

// ConfigFile is a file a runtime reads hooks from.
type ConfigFile struct {
	Path  string
	Scope string
}

// ConfigFiles are the files agent reads hooks from for a project at
// project: the runtime merges the hooks of all of them.
func ConfigFiles(agent, project string, h Homes) ([]ConfigFile, error) {
	rt, ok := runtimes[agent]
	if !ok {
		return nil, fmt.Errorf("agent %q: want one of %s", agent, strings.Join(Agents(), ", "))
	}
	files := []ConfigFile{{filepath.Join(project, rt.file), ScopeProject}}
	if rt.localFile != "" {
		files = append(files, ConfigFile{filepath.Join(project, rt.localFile), ScopeLocal})
	}
	switch agent {
	case "claude":
		if dir := cmp.Or(h.Claude, joinIf(h.Home, ".claude")); dir != "" {
			files = append(files, ConfigFile{filepath.Join(dir, "settings.json"), ScopeUser})
		}
	case "codex":
		if h.Codex != "" {
			files = append(files, ConfigFile{filepath.Join(h.Codex, "hooks.json"), ScopeUser})
		}
	case "gemini":
		if home := cmp.Or(h.Gemini, h.Home); home != "" {
			files = append(files, ConfigFile{filepath.Join(home, ".gemini", "settings.json"), ScopeUser})
		}
	}
	return files, nil
}

// joinIf is dir/name, or "" when dir is.
func joinIf(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}

// Found is what one configuration file holds of letagents' hooks.
type Found struct {
	ConfigFile
	// Events are the events Install writes that run a letagents hook
	// here, in Install's order; Missing the others.
	Events, Missing []string
	// Commands are the distinct letagents hook commands; Names the
	// distinct names their entries carry (Gemini CLI's).
	Commands, Names []string
	// HooksOff names the setting of this file that turns every hook off
	// ("disableAllHooks", "hooksConfig.enabled"), "" when none does.
	HooksOff string
	// Disabled is the file's list of hooks switched off one by one, by
	// name or command (Gemini CLI's hooksConfig.disabled, which it merges
	// over every file).
	Disabled []string
}

// Inspect reads f as agent's configuration. A file that does not exist
// gives an error wrapping fs.ErrNotExist; one that is not the JSON the
// runtime reads, an error saying where.
func Inspect(agent string, f ConfigFile) (Found, error) {
	rt, ok := runtimes[agent]
	if !ok {
		return Found{}, fmt.Errorf("agent %q: want one of %s", agent, strings.Join(Agents(), ", "))
	}
	found := Found{ConfigFile: f}
	raw, err := os.ReadFile(f.Path)
	if err != nil {
		return found, fmt.Errorf("read %s: %w", f.Path, err)
	}
	var file struct {
		Hooks           map[string][]hookGroup `json:"hooks"`
		DisableAllHooks bool                   `json:"disableAllHooks"`
		HooksConfig     struct {
			Enabled  *bool    `json:"enabled"`
			Disabled []string `json:"disabled"`
		} `json:"hooksConfig"`
	}
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &file); err != nil {
			return found, fmt.Errorf("%s is not the JSON %s reads: %w", f.Path, agent, err)
		}
	}
	for _, ev := range rt.events {
		had := false
		for _, g := range file.Hooks[ev.name] {
			for _, e := range g.Hooks {
				if isOurs(e.Command) {
					had = true
					if !slices.Contains(found.Commands, e.Command) {
						found.Commands = append(found.Commands, e.Command)
					}
					if e.Name != "" && !slices.Contains(found.Names, e.Name) {
						found.Names = append(found.Names, e.Name)
					}
				}
			}
		}
		if had {
			found.Events = append(found.Events, ev.name)
		} else {
			found.Missing = append(found.Missing, ev.name)
		}
	}
	if agent == "gemini" {
		found.Disabled = file.HooksConfig.Disabled
	}
	switch {
	case agent == "claude" && file.DisableAllHooks:
		found.HooksOff = "disableAllHooks"
	case agent == "gemini" && file.HooksConfig.Enabled != nil && !*file.HooksConfig.Enabled:
		found.HooksOff = "hooksConfig.enabled"
	}
	return found, nil
}

// hookGroup is one matcher's hooks, as the runtimes write them.
type hookGroup struct {
	Hooks []struct {
		Command string `json:"command"`
		Name    string `json:"name"`
	} `json:"hooks"`
}

// Events are the events Install writes for agent, in order.
func Events(agent string) []string {
	var out []string
	for _, ev := range runtimes[agent].events {
		out = append(out, ev.name)
	}
	return out
}

// CommandName is the program a hook command runs: its first word,
// unquoted as Install quotes it (shellWord).
func CommandName(command string) string {
	command = strings.TrimSpace(command)
	rest, quoted := strings.CutPrefix(command, "'")
	if !quoted {
		name, _, _ := strings.Cut(command, " ")
		return name
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(rest, '\'')
		if i < 0 {
			return b.String() + rest
		}
		b.WriteString(rest[:i])
		after, ok := strings.CutPrefix(rest[i+1:], `\''`)
		if !ok {
			return b.String()
		}
		b.WriteByte('\'')
		rest = after
	}
}

// Ours reports whether a hook command is a run of letagents hook, as
// Install writes it.
func Ours(command string) bool { return isOurs(command) }
