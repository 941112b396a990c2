package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/mcp/hook"
)

// runtimeBins are the programs of the agent runtimes, by hook.Agents'
// names (codex's is Config.CodexBin).
var runtimeBins = map[string]string{"claude": "claude", "gemini": "gemini"}

// project is the directory the runtimes read project configuration
// from: the repository's top, else the directory checked.
func (d *diagnosis) project() string {
	return cmp.Or(d.repo.RepoRoot, d.cfg.Dir)
}

// installed is what the doctor found of one runtime's hooks.
type installed struct {
	agent string
	// found are the configuration files that exist, read.
	found []hook.Found
	// broken are the files that exist but could not be read.
	broken []error
	// bin is the runtime's program, "" when not on PATH.
	bin string
}

// events are the events of Install that run letagents in some file.
func (in installed) events() []string {
	var out []string
	for _, f := range in.found {
		for _, e := range f.Events {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// inspect reads agent's configuration files; ok is false when the
// runtime is not on this machine or this project (no program, no file,
// no configuration directory).
func (d *diagnosis) inspect(agent, bin string) (installed, bool) {
	in := installed{agent: agent}
	if bin != "" {
		if path, err := d.cfg.LookPath(bin); err == nil {
			in.bin = path
		}
	}
	files, err := hook.ConfigFiles(agent, d.project(), d.cfg.Homes)
	if err != nil {
		in.broken = append(in.broken, err)
		return in, true
	}
	seen := in.bin != ""
	for _, f := range files {
		if _, err := os.Stat(filepath.Dir(f.Path)); err == nil {
			seen = true
		}
		found, err := hook.Inspect(agent, f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			in.broken = append(in.broken, err)
		default:
			in.found = append(in.found, found)
		}
	}
	return in, seen
}

// installFix is the command that writes agent's hooks into the project.
func (d *diagnosis) installFix(agent string) string {
	return fmt.Sprintf("letagents hook install --agent %s --dir %s", agent, shellQuote(d.project()))
}

// hookFiles checks what every runtime shares: the hooks are there for
// every event, not switched off, and their program runs. It adds its
// problems to p and says whether any hook is installed.
func (d *diagnosis) hookFiles(in installed, p *problems) bool {
	for _, err := range in.broken {
		p.add(Fail, err.Error(), "fix the JSON of that file (or move it aside and run: "+d.installFix(in.agent)+")")
	}
	events := in.events()
	if len(events) == 0 {
		p.add(Warn, "hooks not installed: messages reach the agent only when it calls wait_for_messages or read_messages",
			d.installFix(in.agent))
		return false
	}
	var where []string
	for _, f := range in.found {
		if len(f.Events) > 0 {
			where = append(where, f.Path)
		}
	}
	p.add(OK, fmt.Sprintf("hooks in %s", strings.Join(where, ", ")), "")
	if missing := without(hook.Events(in.agent), events); len(missing) > 0 {
		p.add(Fail, "no letagents hook for "+strings.Join(missing, ", "), d.installFix(in.agent))
	}
	for _, f := range in.found {
		switch f.HooksOff {
		case "disableAllHooks":
			p.add(Fail, fmt.Sprintf("%s turns every hook off (disableAllHooks)", f.Path), fmt.Sprintf("remove \"disableAllHooks\": true from %s", f.Path))
		case "hooksConfig.enabled":
			p.add(Fail, fmt.Sprintf("%s turns every hook off (hooksConfig.enabled: false)", f.Path),
				fmt.Sprintf("set \"hooksConfig\": {\"enabled\": true} in %s", f.Path))
		}
		// A list of disabled hooks counts for the hooks of every file.
		for _, g := range in.found {
			var off []string
			for _, n := range g.Disabled {
				if slices.Contains(f.Names, n) || slices.Contains(f.Commands, n) {
					off = append(off, n)
				}
			}
			if len(off) > 0 {
				p.add(Fail, fmt.Sprintf("%s switches off the hooks %s (hooksConfig.disabled)", g.Path, strings.Join(quoteAll(off), ", ")),
					fmt.Sprintf("remove %s from hooksConfig.disabled in %s", strings.Join(quoteAll(off), ", "), g.Path))
			}
		}
		var programs []string
		for _, c := range f.Commands {
			if program := hook.CommandName(c); !slices.Contains(programs, program) {
				programs = append(programs, program)
			}
		}
		for _, program := range programs {
			if err := d.runnable(program); err != nil {
				p.add(Fail, fmt.Sprintf("the hooks of %s cannot run %s: %v", f.Path, program, err),
					"put letagents on the PATH the agent runtime starts with (go install ./mcp/letagents), or install the hooks with its full path: "+
						d.installFix(in.agent)+" --command /full/path/to/letagents")
			}
		}
	}
	return true
}

// runnable checks that a hook's program can be found as a shell would.
func (d *diagnosis) runnable(program string) error {
	if strings.ContainsRune(program, filepath.Separator) {
		st, err := os.Stat(program)
		switch {
		case err != nil:
			return err
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			return fmt.Errorf("%s is not an executable file", program)
		}
		return nil
	}
	_, err := d.cfg.LookPath(program)
	return err
}

// clients checks each agent runtime installed here.
func (d *diagnosis) clients(ctx context.Context) []Check {
	var out []Check
	for _, agent := range hook.Agents() {
		switch agent {
		case "codex":
			out = append(out, d.codex(ctx)...)
		case "claude":
			out = append(out, d.claude())
		case "gemini":
			out = append(out, d.gemini())
		}
	}
	return out
}

// claude checks Claude Code's hooks, and that the folder is trusted:
// Claude Code skips hooks until a person accepts the folder's trust
// prompt.
func (d *diagnosis) claude() Check {
	const name = "claude hooks"
	in, ok := d.inspect("claude", runtimeBins["claude"])
	if !ok {
		return Check{Name: name, Status: Skip, Message: "Claude Code is not installed here (no claude on PATH, no .claude directory)"}
	}
	p := problems{status: OK}
	if d.hookFiles(in, &p) {
		d.claudeTrust(&p)
	}
	return p.check(name)
}

// claudeTrust checks that Claude Code's state file records the project
// (or a folder above it) as trusted (projects[path].hasTrustDialogAccepted).
func (d *diagnosis) claudeTrust(p *problems) {
	project := d.project()
	fix := fmt.Sprintf("cd %s && claude, and accept the prompt to trust the folder", shellQuote(project))
	raw, err := os.ReadFile(d.cfg.ClaudeState)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.add(Warn, fmt.Sprintf("cannot read %s to see whether the folder is trusted: %v", d.cfg.ClaudeState, err), "")
		return
	}
	var st struct {
		Projects map[string]struct {
			HasTrustDialogAccepted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &st) != nil {
		p.add(Warn, d.cfg.ClaudeState+" is not JSON: cannot see whether the folder is trusted", "")
		return
	}
	for dir := project; ; dir = filepath.Dir(dir) {
		if st.Projects[dir].HasTrustDialogAccepted {
			return
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	p.add(Warn, fmt.Sprintf("%s is not trusted in Claude Code yet: it skips hooks until a person accepts the folder's trust prompt", project), fix)
}

// gemini checks Gemini CLI's hooks, and that the folder is trusted: it
// blocks project hooks in an untrusted folder.
func (d *diagnosis) gemini() Check {
	const name = "gemini hooks"
	in, ok := d.inspect("gemini", runtimeBins["gemini"])
	if !ok {
		return Check{Name: name, Status: Skip, Message: "Gemini CLI is not installed here (no gemini on PATH, no .gemini directory)"}
	}
	p := problems{status: OK}
	if !d.hookFiles(in, &p) {
		return p.check(name)
	}
	project := false
	for _, f := range in.found {
		project = project || f.Scope == hook.ScopeProject && len(f.Events) > 0
	}
	if project {
		d.geminiTrust(in, &p)
	}
	return p.check(name)
}

// geminiTrust checks that Gemini CLI trusts the project folder, as it
// decides: GEMINI_CLI_TRUST_WORKSPACE, then security.folderTrust.enabled
// (on by default), then the longest rule of trustedFolders.json that
// holds the folder (TRUST_PARENT stands for the rule's parent).
func (d *diagnosis) geminiTrust(in installed, p *problems) {
	switch d.cfg.GeminiTrustWorkspace {
	case "true":
		return
	case "false":
		p.add(Fail, "GEMINI_CLI_TRUST_WORKSPACE=false: Gemini CLI blocks the project's hooks", "unset GEMINI_CLI_TRUST_WORKSPACE")
		return
	}
	for _, f := range in.found {
		if f.Scope != hook.ScopeUser {
			continue
		}
		var s struct {
			Security struct {
				FolderTrust struct {
					Enabled *bool `json:"enabled"`
				} `json:"folderTrust"`
			} `json:"security"`
		}
		if raw, err := os.ReadFile(f.Path); err == nil && json.Unmarshal(raw, &s) == nil && s.Security.FolderTrust.Enabled != nil &&
			!*s.Security.FolderTrust.Enabled {
			return
		}
	}
	project := d.project()
	file := d.cfg.GeminiTrustedFolders
	trustFix := fmt.Sprintf("start gemini in %s and choose to trust the folder, or add \"%s\": \"TRUST_FOLDER\" to %s", project, project, file)
	raw, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.add(Fail, fmt.Sprintf("cannot read %s: %v", file, err), trustFix)
		return
	}
	rules := map[string]string{}
	if len(raw) > 0 && json.Unmarshal(raw, &rules) != nil {
		p.add(Fail, fmt.Sprintf("%s is not JSON: Gemini CLI refuses to start", file), "fix the JSON of "+file)
		return
	}
	best, level := -1, ""
	for rule, l := range rules {
		dir := rule
		if l == "TRUST_PARENT" {
			dir = filepath.Dir(rule)
		}
		if within(project, dir) && len(rule) > best {
			best, level = len(rule), l
		}
	}
	switch level {
	case "TRUST_FOLDER", "TRUST_PARENT":
	case "DO_NOT_TRUST":
		p.add(Fail, fmt.Sprintf("%s says not to trust %s: Gemini CLI blocks the project's hooks", file, project), trustFix)
	default:
		p.add(Warn, fmt.Sprintf("%s is not trusted yet: Gemini CLI blocks the project's hooks until a person trusts the folder", project), trustFix)
	}
}

// within reports whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// without is list without the elements of drop, in order.
func without(list, drop []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// shellQuote is s as one word of a POSIX shell.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\*?[]#~;&|<>(){}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
