package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/doctor"
	"github.com/letagents/letagents-go/shared/testwait"
)

// TestDoctor runs the built letagents doctor against the local runner, in
// a repository whose room an agent opened: the server answers with its
// build, the room is the repository's, and the binary exits 1 with the
// fix when a check fails (Claude Code's hooks name a program not on PATH).
func TestDoctor(t *testing.T) {
	t.Parallel()
	r := startRunner(t)
	r.GitHub.AddRepo("acme/doctor-e2e", false)
	repo := newRepo(t, "https://github.com/acme/doctor-e2e.git")
	a := startAgent(t, r.URL, agentConfig{Name: "Doc", Dir: repo.Dir})
	a.waitJoined(t)

	// Hooks installed by the binary itself, run by a program the PATH
	// of this check lacks: a failure with its fix.
	home := t.TempDir()
	env := []string{"PATH=" + filepath.Dir(bins.agent) + string(os.PathListSeparator) + "/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"LETAGENTS_API_URL=" + r.URL, "LETAGENTS_STATE_PATH=" + filepath.Join(home, "state.json"), "LETAGENTS_CODEX_BIN=" + filepath.Join(home, "no-codex")}
	install := exec.Command(bins.agent, "hook", "install", "--agent", "claude", "--dir", repo.Dir, "--command", "letagents-elsewhere")
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("hook install: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.agent, "doctor", "--json")
	cmd.Dir, cmd.Env = repo.Dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("letagents doctor = %v; want exit status 1 (a check fails)\nstderr: %s", err, stderr.String())
	}
	var rep doctor.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the report: %v\n%s", err, stdout.String())
	}
	checks := map[string]doctor.Check{}
	for _, c := range rep.Checks {
		checks[c.Name] = c
	}
	tests := []struct {
		name   string
		status doctor.Status
		says   string
		fix    string
	}{
		{"server", doctor.OK, "(version ", ""},
		{"room", doctor.OK, "github.com/acme/doctor-e2e (from git-remote): exists", ""},
		{"claude hooks", doctor.Fail, "cannot run letagents-elsewhere", "--command /full/path/to/letagents"},
	}
	for _, tt := range tests {
		c := checks[tt.name]
		if c.Status != tt.status || !strings.Contains(c.Message, tt.says) || !strings.Contains(c.Fix, tt.fix) {
			t.Errorf("%s = %s %q (fix %q); want %s saying %q (fix with %q)", tt.name, c.Status, c.Message, c.Fix, tt.status, tt.says, tt.fix)
		}
	}
	if strings.Contains(checks["server"].Message, "version not reported") {
		t.Errorf("server check %q: the runner's /api/health names no version", checks["server"].Message)
	}
}
