package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/gitctx"
	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/shared/testwait"
)

// fixture reads what Codex 0.171.0 answered (testdata/codex-0.171.0).
func fixture(t *testing.T) codexView {
	t.Helper()
	var view codexView
	var read struct {
		Config codexConfig `json:"config"`
	}
	var list struct {
		Data []struct {
			Hooks []codexHook `json:"hooks"`
		} `json:"data"`
	}
	for file, into := range map[string]any{"config-read.json": &read, "hooks-list.json": &list} {
		raw, err := os.ReadFile(filepath.Join("testdata", "codex-0.171.0", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	view.Config = read.Config
	for _, d := range list.Data {
		view.Hooks = append(view.Hooks, d.Hooks...)
	}
	return view
}

// What the doctor makes of Codex's recorded answers: one hook trusted,
// one never reviewed, one changed since its review, one switched off; an
// MCP server entry passing the API and the token's name.
func TestCodexFixture(t *testing.T) {
	t.Parallel()
	const project = "/tmp/fx/proj" // where the fixture was recorded
	hooksFile := hook.Found{ConfigFile: hook.ConfigFile{Path: project + "/.codex/hooks.json", Scope: hook.ScopeProject},
		Events: hook.Events("codex")}
	tests := []struct {
		name   string
		change func(v *codexView, cfg *Config)
		api    string
		check  func(d *diagnosis, v codexView) Check
		status Status
		says   []string
		fix    []string
		hidden string // what neither message nor fix may hold
	}{
		{"hooks as recorded", nil, "http://localhost:3001", review(hooksFile), Fail,
			[]string{"userPromptSubmit untrusted", "stop modified", "switched off in Codex (postToolUse)"},
			[]string{"/hooks and trust the letagents hooks", "/hooks and enable the letagents hooks"}, ""},
		{"every hook reviewed", func(v *codexView, _ *Config) {
			for i := range v.Hooks {
				v.Hooks[i].TrustStatus, v.Hooks[i].Enabled = "trusted", true
			}
		}, "http://localhost:3001", review(hooksFile), OK, []string{"Codex runs them (4 reviewed and enabled)"}, nil, ""},
		{"project not trusted", func(v *codexView, _ *Config) {
			v.Hooks, v.Config.Projects = nil, nil
		}, "http://localhost:3001", review(hooksFile), Fail, []string{"the project is not trusted"},
			[]string{"[projects.\"/tmp/fx/proj\"]\ntrust_level = \"trusted\""}, ""},
		{"MCP server passes the default API and the token's name", func(_ *codexView, cfg *Config) {
			cfg.Env = map[string]string{"LETAGENTS_TOKEN": "secret-token"}
		}, "http://localhost:3001", mcpCheck, OK, []string{"[mcp_servers.letagents] passes what the worker needs (LETAGENTS_TOKEN)"}, nil, "secret-token"},
		{"MCP server passes another API", nil, "https://api.example", mcpCheck, Fail,
			[]string{"passes another LETAGENTS_API_URL"}, []string{`env = { LETAGENTS_API_URL = "https://api.example" }`}, ""},
		{"MCP server misses the state path", func(_ *codexView, cfg *Config) {
			cfg.Env = map[string]string{"LETAGENTS_STATE_PATH": "/home/a/state.json", "LETAGENTS_TOKEN": "secret-token"}
		}, "http://127.0.0.1:3001", mcpCheck, Fail, []string{"does not pass LETAGENTS_STATE_PATH"},
			[]string{`env = { LETAGENTS_API_URL = "http://127.0.0.1:3001", LETAGENTS_STATE_PATH = "/home/a/state.json" }`,
				`env_vars = ["LETAGENTS_TOKEN"]`}, "secret-token"},
		{"MCP server has the token written in", func(v *codexView, cfg *Config) {
			s := v.Config.MCPServers["letagents"]
			s.Env["LETAGENTS_TOKEN"], s.EnvVars = "old-token", nil
			v.Config.MCPServers["letagents"] = s
			cfg.Env = map[string]string{"LETAGENTS_TOKEN": "secret-token"}
		}, "http://localhost:3001", mcpCheck, Fail, []string{"passes another LETAGENTS_TOKEN"},
			[]string{`LETAGENTS_TOKEN = "<as now>"`}, `-token"`},
		{"no MCP server", func(v *codexView, cfg *Config) {
			v.Config.MCPServers = nil
			cfg.Env = map[string]string{"LETAGENTS_TOKEN": "secret-token"}
		}, "https://api.example", mcpCheck, Warn, []string{"Codex has no letagents MCP server"},
			[]string{"codex mcp add letagents --env LETAGENTS_API_URL=https://api.example -- letagents", `env_vars = ["LETAGENTS_TOKEN"]`}, "secret-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := fixture(t)
			cfg := Config{DefaultAPIURL: "http://localhost:3001", Homes: hook.Homes{Codex: "/home/a/.codex"}}
			if tt.change != nil {
				tt.change(&v, &cfg)
			}
			d := &diagnosis{cfg: cfg, repo: gitctx.Context{Dir: project, RepoRoot: project}, api: tt.api}
			c := tt.check(d, v)
			if c.Status != tt.status {
				t.Errorf("status %s, want %s: %s (fix %q)", c.Status, tt.status, c.Message, c.Fix)
			}
			for _, s := range tt.says {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q lacks %q", c.Message, s)
				}
			}
			for _, s := range tt.fix {
				if !strings.Contains(c.Fix, s) {
					t.Errorf("fix %q lacks %q", c.Fix, s)
				}
			}
			if tt.hidden != "" && (strings.Contains(c.Message, tt.hidden) || strings.Contains(c.Fix, tt.hidden)) {
				t.Errorf("the check shows %q: %q / %q", tt.hidden, c.Message, c.Fix)
			}
		})
	}
}

// review is the hook review check of found, as a table's check.
func review(found hook.Found) func(d *diagnosis, v codexView) Check {
	return func(d *diagnosis, v codexView) Check {
		p := problems{status: OK}
		d.codexReview(installed{agent: "codex", found: []hook.Found{found}}, v, "/home/a/.codex/config.toml", &p)
		return p.check("codex hooks")
	}
}

func mcpCheck(d *diagnosis, v codexView) Check { return d.codexMCP(v, "/home/a/.codex/config.toml") }

// codexBin is the real codex: these tests drive it.
func codexBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("codex")
	if err != nil {
		t.Fatalf("codex is needed (npm install -g @openai/codex@0.171.0): %v", err)
	}
	return bin
}

// codexProject is a git repository with letagents' Codex hooks installed,
// and a CODEX_HOME whose config.toml starts as config.
func codexProject(t *testing.T, config string) (project, home string) {
	t.Helper()
	project, home = t.TempDir(), t.TempDir()
	if real, err := filepath.EvalSymlinks(project); err == nil {
		project = real
	}
	if out, err := exec.Command("git", "init", "-q", project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := hook.Install(hook.InstallConfig{Agent: "codex", Dir: project}, io.Discard); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, home, config)
	return project, home
}

func writeConfig(t *testing.T, home, config string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
}

// trustProject is the config.toml line that trusts project.
func trustProject(project string) string {
	return fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", project)
}

// The doctor against the real Codex: it asks codex app-server, in a
// CODEX_HOME of the test's, what it makes of the project's hooks.
func TestCodexReal(t *testing.T) {
	t.Parallel()
	bin := codexBin(t)
	tests := []struct {
		name   string
		config func(project string) string
		// review trusts every hook as /hooks does, by the hash Codex gives.
		review bool
		// check is the check looked at ("" for codex hooks); env the
		// variables set where the doctor runs.
		check  string
		env    map[string]string
		status Status
		says   string
		fix    string
	}{
		{"project not trusted", func(string) string { return "" }, false, "", nil, Fail, "the project is not trusted", `trust_level = "trusted"`},
		{"hooks not reviewed", trustProject, false, "", nil, Fail, "sessionStart untrusted", "type /hooks and trust the letagents hooks"},
		{"hooks reviewed", trustProject, true, "", nil, OK, "Codex runs them (4 reviewed and enabled)", ""},
		{"hooks switched off", func(p string) string { return "[features]\nhooks = false\n\n" + trustProject(p) }, false, "", nil, Fail,
			"Codex has hooks switched off", "hooks = true"},
		{"deprecated switch", func(p string) string { return "[features]\ncodex_hooks = true\n\n" + trustProject(p) }, true, "", nil, Warn,
			"codex_hooks is Codex's deprecated name", "replace codex_hooks with: hooks = true"},
		{"MCP server given nothing", func(string) string { return "[mcp_servers.letagents]\ncommand = \"/opt/bin/letagents\"\n" }, false, "codex mcp",
			map[string]string{"LETAGENTS_TOKEN": "secret-token"}, Fail, "does not pass LETAGENTS_API_URL, LETAGENTS_TOKEN",
			"under [mcp_servers.letagents]:\nenv = { LETAGENTS_API_URL = \"http://127.0.0.1:1\" }\nenv_vars = [\"LETAGENTS_TOKEN\"]"},
		{"MCP server given what it needs", func(string) string {
			return "[mcp_servers.la]\ncommand = \"letagents\"\nenv = { LETAGENTS_API_URL = \"http://127.0.0.1:1\" }\nenv_vars = [\"LETAGENTS_TOKEN\"]\n"
		}, false, "codex mcp", map[string]string{"LETAGENTS_TOKEN": "secret-token"}, OK, "[mcp_servers.la] passes what the worker needs", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			project, home := codexProject(t, "")
			config := tt.config(project)
			writeConfig(t, home, config)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
			defer cancel()
			environ := append(os.Environ(), "CODEX_HOME="+home)
			if tt.review {
				v, err := askCodex(ctx, bin, project, environ)
				if err != nil {
					t.Fatal(err)
				}
				if len(v.Hooks) != 4 {
					t.Fatalf("codex lists %d hooks, want the 4 installed: %+v", len(v.Hooks), v.Hooks)
				}
				for _, h := range v.Hooks {
					config += fmt.Sprintf("\n[hooks.state.%q]\ntrusted_hash = %q\n", h.Key, h.CurrentHash)
				}
				writeConfig(t, home, config)
			}
			cfg := Config{Dir: project, Env: tt.env, DefaultAPIURL: "http://localhost:3001", APIURL: "http://127.0.0.1:1", StatePath: filepath.Join(home, "state.json"),
				Homes: hook.Homes{Home: home, Codex: home, Gemini: home}, CodexBin: "codex", Environ: os.Environ(), Timeout: testwait.Bound,
				LookPath: func(name string) (string, error) {
					if name == "letagents" {
						return "/usr/local/bin/letagents", nil
					}
					return exec.LookPath(name)
				}}
			r := Diagnose(ctx, cfg)
			name := cmp.Or(tt.check, "codex hooks")
			var got Check
			for _, c := range r.Checks {
				if c.Name == name {
					got = c
				}
			}
			if got.Status != tt.status || !strings.Contains(got.Message, tt.says) || !strings.Contains(got.Fix, tt.fix) {
				t.Errorf("%s = %s %q (fix %q), want %s saying %q (fix with %q)", name, got.Status, got.Message, got.Fix, tt.status, tt.says, tt.fix)
			}
			if strings.Contains(got.Message+got.Fix, "secret-token") {
				t.Errorf("%s shows the token: %q / %q", name, got.Message, got.Fix)
			}
		})
	}
}
