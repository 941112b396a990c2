package doctor_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/letagents/letagents-go/mcp/doctor"
	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/shared/testwait"
)

// programs is a LookPath that finds only the names given.
func programs(names ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		if slices.Contains(names, name) {
			return "/usr/local/bin/" + name, nil
		}
		return "", exec.ErrNotFound
	}
}

// install writes agent's hooks into dir as `letagents hook install` does.
func install(t *testing.T, agent, dir string) {
	t.Helper()
	if err := hook.Install(hook.InstallConfig{Agent: agent, Dir: dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// edit changes the JSON file at path.
func edit(t *testing.T, path string, change func(m map[string]any)) {
	t.Helper()
	m := map[string]any{}
	if raw, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
	}
	change(m)
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trustClaude records dir as trusted in Claude Code's state file, as its
// trust prompt does.
func trustClaude(t *testing.T, cfg *doctor.Config, dir string) {
	t.Helper()
	edit(t, cfg.ClaudeState, func(m map[string]any) {
		m["projects"] = map[string]any{dir: map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []string{}}}
	})
}

// dropEvent removes event's hooks from the hooks file at path.
func dropEvent(t *testing.T, path, event string) {
	t.Helper()
	edit(t, path, func(m map[string]any) { delete(m["hooks"].(map[string]any), event) })
}

// The hooks of Claude Code and Gemini CLI, read from their files: no
// server is asked (the server checks fail here and are not looked at).
func TestHookChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string, cfg *doctor.Config)
		wants func(dir string) map[string]want
	}{
		{"nothing installed", func(t *testing.T, dir string, cfg *doctor.Config) {}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Skip, "not installed", ""},
				"codex hooks":  {doctor.Skip, "not installed", ""},
				"gemini hooks": {doctor.Skip, "not installed", ""},
			}
		}},
		{"runtimes without hooks", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "gemini", "letagents")
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Warn, "hooks not installed", "letagents hook install --agent claude --dir " + dir},
				"gemini hooks": {doctor.Warn, "hooks not installed", "letagents hook install --agent gemini --dir " + dir},
			}
		}},
		{"claude, settings.json", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "letagents")
			install(t, "claude", dir)
			trustClaude(t, cfg, dir)
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.OK, "hooks in " + filepath.Join(dir, ".claude", "settings.json"), ""},
			}
		}},
		{"claude, settings.local.json and the user's", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "letagents")
			install(t, "claude", dir)
			local, user := filepath.Join(dir, ".claude", "settings.local.json"), filepath.Join(cfg.Homes.Home, ".claude", "settings.json")
			for _, p := range []string{local, user} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// Split across the files Claude Code merges: still complete.
			if err := os.Rename(filepath.Join(dir, ".claude", "settings.json"), local); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(local)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(user, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			dropEvent(t, local, "Stop")
			trustClaude(t, cfg, dir)
			for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PostToolUse"} {
				dropEvent(t, user, ev)
			}
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.OK, "settings.local.json", ""},
			}
		}},
		{"claude, folder not trusted", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "letagents")
			install(t, "claude", dir)
			edit(t, cfg.ClaudeState, func(m map[string]any) {
				m["projects"] = map[string]any{dir: map[string]any{"hasTrustDialogAccepted": false}}
			})
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Warn, "not trusted in Claude Code yet", "cd " + dir + " && claude, and accept the prompt"},
			}
		}},
		{"claude, an event missing", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "letagents")
			install(t, "claude", dir)
			dropEvent(t, filepath.Join(dir, ".claude", "settings.json"), "Stop")
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Fail, "no letagents hook for Stop", "letagents hook install --agent claude"},
			}
		}},
		{"claude, every hook off", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "letagents")
			install(t, "claude", dir)
			edit(t, filepath.Join(dir, ".claude", "settings.local.json"), func(m map[string]any) { m["disableAllHooks"] = true })
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Fail, "disableAllHooks", `remove "disableAllHooks": true from ` + filepath.Join(dir, ".claude", "settings.local.json")},
			}
		}},
		{"claude, letagents not on PATH", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude")
			install(t, "claude", dir)
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Fail, "cannot run letagents", "--command /full/path/to/letagents"},
			}
		}},
		{"claude, hooks by full path", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude")
			bin := filepath.Join(t.TempDir(), "my letagents")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := hook.Install(hook.InstallConfig{Agent: "claude", Dir: dir, Command: bin}, io.Discard); err != nil {
				t.Fatal(err)
			}
			trustClaude(t, cfg, filepath.Dir(dir)) // a folder above counts
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.OK, "hooks in ", ""},
			}
		}},
		{"claude, settings not JSON", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("claude", "letagents")
			install(t, "claude", dir)
			if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.local.json"), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) map[string]want {
			return map[string]want{
				"claude hooks": {doctor.Fail, "is not the JSON claude reads", "fix the JSON"},
			}
		}},
		{"gemini, folder trusted", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			install(t, "gemini", dir)
			edit(t, cfg.GeminiTrustedFolders, func(m map[string]any) { m[dir] = "TRUST_FOLDER" })
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.OK, "hooks in " + filepath.Join(dir, ".gemini", "settings.json"), ""},
			}
		}},
		{"gemini, parent trusted", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			install(t, "gemini", dir)
			edit(t, cfg.GeminiTrustedFolders, func(m map[string]any) { m[filepath.Join(dir, "sub")] = "TRUST_PARENT" })
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.OK, "hooks in ", ""},
			}
		}},
		{"gemini, folder trust off", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			install(t, "gemini", dir)
			edit(t, filepath.Join(cfg.Homes.Gemini, ".gemini", "settings.json"), func(m map[string]any) {
				m["security"] = map[string]any{"folderTrust": map[string]any{"enabled": false}}
			})
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.OK, "hooks in ", ""},
			}
		}},
		{"gemini, folder not trusted yet", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			install(t, "gemini", dir)
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.Warn, "not trusted yet", `"` + dir + `": "TRUST_FOLDER"`},
			}
		}},
		{"gemini, folder distrusted", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			install(t, "gemini", dir)
			edit(t, cfg.GeminiTrustedFolders, func(m map[string]any) { m[dir] = "TRUST_FOLDER"; m[filepath.Dir(dir)] = "DO_NOT_TRUST" })
			edit(t, cfg.GeminiTrustedFolders, func(m map[string]any) { delete(m, dir) })
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.Fail, "says not to trust", "TRUST_FOLDER"},
			}
		}},
		{"gemini, hooks off", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			cfg.GeminiTrustWorkspace = "true"
			install(t, "gemini", dir)
			edit(t, filepath.Join(dir, ".gemini", "settings.json"), func(m map[string]any) {
				m["hooksConfig"] = map[string]any{"enabled": false, "disabled": []string{"letagents"}}
			})
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.Fail, "hooksConfig.enabled: false", `"hooksConfig": {"enabled": true}`},
			}
		}},
		{"gemini, our hooks disabled by name", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			cfg.GeminiTrustWorkspace = "true"
			install(t, "gemini", dir)
			edit(t, filepath.Join(cfg.Homes.Gemini, ".gemini", "settings.json"), func(m map[string]any) {
				m["hooksConfig"] = map[string]any{"disabled": []string{"letagents"}}
			})
			// The user's file holds no hooks but switches ours off: Gemini
			// CLI merges the lists, so a project hook named there is off.
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.Fail, `switches off the hooks "letagents"`, `remove "letagents" from hooksConfig.disabled in `},
			}
		}},
		{"gemini, GEMINI_CLI_TRUST_WORKSPACE=false", func(t *testing.T, dir string, cfg *doctor.Config) {
			cfg.LookPath = programs("gemini", "letagents")
			cfg.GeminiTrustWorkspace = "false"
			install(t, "gemini", dir)
		}, func(dir string) map[string]want {
			return map[string]want{
				"gemini hooks": {doctor.Fail, "GEMINI_CLI_TRUST_WORKSPACE=false", "unset GEMINI_CLI_TRUST_WORKSPACE"},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := baseConfig(t, dir, "http://127.0.0.1:1")
			tt.setup(t, dir, &cfg)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
			defer cancel()
			r := doctor.Diagnose(ctx, cfg)
			// The server is down in these cases: the report fails anyway.
			wants := tt.wants(dir)
			wants["server"] = want{doctor.Fail, "does not answer", "LETAGENTS_API_URL"}
			checkReport(t, r, wants)
		})
	}
}
