package doctor

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/mcp/hook"
)

// codex checks Codex: its hooks (installed, switched on, the project
// trusted, each hook reviewed and enabled, as Codex itself says) and its
// letagents MCP server entry, which must pass what the MCP server needs
// through its env: Codex gives MCP servers only a whitelist of the
// environment.
func (d *diagnosis) codex(ctx context.Context) []Check {
	const hooksName, mcpName = "codex hooks", "codex mcp"
	in, ok := d.inspect("codex", d.cfg.CodexBin)
	if !ok {
		return []Check{{Name: hooksName, Status: Skip, Message: "Codex is not installed here (no codex on PATH, no .codex directory, no " +
			d.cfg.Homes.Codex + ")"}}
	}
	hooks := problems{status: OK}
	installed := d.hookFiles(in, &hooks)
	if in.bin == "" {
		hooks.add(Warn, fmt.Sprintf("cannot ask Codex whether it runs them: %s is not on PATH", d.cfg.CodexBin),
			"install Codex (npm install -g @openai/codex), or set LETAGENTS_CODEX_BIN to its path")
		return []Check{hooks.check(hooksName), {Name: mcpName, Status: Skip, Message: "not checked: " + d.cfg.CodexBin + " is not on PATH"}}
	}
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	environ := d.cfg.Environ
	if d.cfg.Homes.Codex != "" {
		environ = append(slices.Clip(environ), "CODEX_HOME="+d.cfg.Homes.Codex)
	}
	view, err := askCodex(ctx, in.bin, d.project(), environ)
	if err != nil {
		hooks.add(Warn, err.Error(), "run "+in.bin+" app-server by hand to see why it fails")
		return []Check{hooks.check(hooksName), {Name: mcpName, Status: Skip, Message: "not checked: Codex did not answer"}}
	}
	config := filepath.Join(d.cfg.Homes.Codex, "config.toml")
	if view.Config.Features.CodexHooks != nil {
		hooks.add(Warn, "[features] codex_hooks is Codex's deprecated name for hooks",
			fmt.Sprintf("in %s under [features], replace codex_hooks with: hooks = true", config))
	}
	switch {
	case !view.Config.hooksOn():
		hooks.add(Fail, "Codex has hooks switched off ([features])", fmt.Sprintf("in %s under [features]: hooks = true (and no codex_hooks = false)", config))
	case installed:
		d.codexReview(in, view, config, &hooks)
	}
	return []Check{hooks.check(hooksName), d.codexMCP(view, config)}
}

// codexReview checks, as hooks/list tells, that Codex loads each file of
// letagents hooks (a project's only in a trusted project) and runs each
// hook: reviewed (its hash trusted) and enabled.
func (d *diagnosis) codexReview(in installed, view codexView, config string, p *problems) {
	project := d.project()
	reviewFix := fmt.Sprintf("cd %s && codex, then type /hooks and trust the letagents hooks (Codex asks a person to review each new or changed hook)",
		shellQuote(project))
	var waiting, off []string
	running := 0
	for _, f := range in.found {
		if len(f.Events) == 0 {
			continue
		}
		var listed []codexHook
		for _, h := range view.Hooks {
			if hook.Ours(h.Command) && sameFile(h.SourcePath, f.Path) {
				listed = append(listed, h)
			}
		}
		if len(listed) == 0 {
			if f.Scope == hook.ScopeProject {
				level := "not trusted"
				if t, ok := view.Config.Projects[project]; ok && t.TrustLevel != "" {
					level = "trust_level " + t.TrustLevel
				}
				p.add(Fail, fmt.Sprintf("Codex does not load %s: the project is %s, and Codex reads a project's hooks only once it is trusted", f.Path, level),
					fmt.Sprintf("trust the project: cd %s && codex, and accept the trust prompt; or add to %s:\n[projects.%q]\ntrust_level = \"trusted\"",
						shellQuote(project), config, project))
				continue
			}
			p.add(Warn, "Codex lists none of the hooks of "+f.Path, "")
			continue
		}
		for _, h := range listed {
			switch {
			case !h.Enabled:
				off = append(off, h.EventName)
			case !h.runs():
				waiting = append(waiting, fmt.Sprintf("%s %s", h.EventName, h.TrustStatus))
			default:
				running++
			}
		}
	}
	if len(waiting) > 0 {
		p.add(Fail, fmt.Sprintf("Codex skips letagents hooks not reviewed since they were written (%s): it runs a hook only once a person trusts it",
			strings.Join(waiting, ", ")), reviewFix)
	}
	if len(off) > 0 {
		p.add(Fail, fmt.Sprintf("letagents hooks switched off in Codex (%s)", strings.Join(off, ", ")),
			fmt.Sprintf("cd %s && codex, then type /hooks and enable the letagents hooks (or remove enabled = false from their [hooks.state.\"…\"] in %s)",
				shellQuote(project), config))
	}
	if running > 0 && len(waiting) == 0 && len(off) == 0 {
		p.add(OK, fmt.Sprintf("Codex runs them (%d reviewed and enabled)", running), "")
	}
	for _, problem := range view.Problems {
		p.add(Warn, "Codex: "+problem, "")
	}
}

// sameFile reports whether two paths name one file, symbolic links
// resolved (Codex reports paths as it found them).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// secretVars are the variables a fix never prints the value of.
var secretVars = []string{"LETAGENTS_TOKEN"}

// codexMCP checks the letagents MCP servers of Codex's configuration: each
// passes the API this directory's agents use, and the variables set here
// that the MCP server reads (the token, the state file), through env or
// env_vars.
func (d *diagnosis) codexMCP(view codexView, config string) Check {
	const name = "codex mcp"
	need := maps.Clone(d.cfg.Env)
	if need == nil {
		need = map[string]string{}
	}
	if d.api != d.cfg.DefaultAPIURL {
		need["LETAGENTS_API_URL"] = d.api
	} else {
		delete(need, "LETAGENTS_API_URL")
	}
	var names []string
	for n, s := range view.Config.MCPServers {
		if (n == "letagents" || strings.Contains(filepath.Base(s.Command), "letagents")) && (s.Enabled == nil || *s.Enabled) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		add := "codex mcp add letagents"
		if v, ok := need["LETAGENTS_API_URL"]; ok {
			add += " --env LETAGENTS_API_URL=" + shellQuote(v)
		}
		if v, ok := need["LETAGENTS_STATE_PATH"]; ok {
			add += " --env LETAGENTS_STATE_PATH=" + shellQuote(v)
		}
		add += " -- letagents"
		if _, ok := need["LETAGENTS_TOKEN"]; ok {
			add += fmt.Sprintf("\nthen in %s under [mcp_servers.letagents]: env_vars = [\"LETAGENTS_TOKEN\"]", config)
		}
		return Check{Name: name, Status: Warn, Message: "Codex has no letagents MCP server: a Codex agent here, and a worker of " +
			"start_local_codex_session, cannot reach the room", Fix: add}
	}
	p := problems{status: OK}
	for _, n := range names {
		s := view.Config.MCPServers[n]
		var missing, wrong []string
		env := maps.Clone(s.Env)
		if env == nil {
			env = map[string]string{}
		}
		passes := s.passed()
		for _, k := range slices.Sorted(maps.Keys(need)) {
			v, set := s.Env[k]
			switch {
			case set && v == need[k]:
			case set:
				wrong = append(wrong, k)
				if !slices.Contains(secretVars, k) {
					env[k] = need[k]
				}
			case slices.Contains(s.passed(), k):
			case slices.Contains(secretVars, k):
				missing = append(missing, k)
				passes = append(passes, k)
			default:
				missing = append(missing, k)
				env[k] = need[k]
			}
		}
		if len(missing) == 0 && len(wrong) == 0 {
			p.add(OK, fmt.Sprintf("[mcp_servers.%s] passes what the worker needs (%s)", n, strings.Join(orNone(slices.Sorted(maps.Keys(need))), ", ")), "")
			continue
		}
		var msg []string
		if len(missing) > 0 {
			msg = append(msg, "does not pass "+strings.Join(missing, ", ")+" (Codex gives MCP servers only a whitelist of its environment)")
		}
		if len(wrong) > 0 {
			msg = append(msg, "passes another "+strings.Join(wrong, ", ")+" than this directory's agents use")
		}
		fix := fmt.Sprintf("in %s under [mcp_servers.%s]:\nenv = %s", config, n, tomlInline(env))
		if len(passes) > 0 {
			fix += fmt.Sprintf("\nenv_vars = %s", tomlList(passes))
		}
		p.add(Fail, fmt.Sprintf("[mcp_servers.%s] %s", n, strings.Join(msg, "; ")), fix)
	}
	return p.check(name)
}

func orNone(list []string) []string {
	if len(list) == 0 {
		return []string{"nothing beyond the defaults"}
	}
	return list
}

// tomlInline writes env as a TOML inline table, the values of secret
// variables left out.
func tomlInline(env map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := fmt.Sprintf("%q", env[k])
		if slices.Contains(secretVars, k) {
			v = `"<as now>"`
		}
		parts = append(parts, fmt.Sprintf("%s = %s", k, v))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func tomlList(list []string) string {
	return "[" + strings.Join(quoteAll(list), ", ") + "]"
}
