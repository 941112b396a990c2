//go:build unix

package codex

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/letagents/letagents-go/mcp/codex/codextest"
)

// fakeEnv makes the test binary a stand-in codex binary (codextest.Main).
const fakeEnv = "CODEXTEST_FAKE_APP_SERVER"

// Stand-in codex binaries, written before any test runs: a file written
// while another test forks could be held open in the child and refuse to
// run ("text file busy").
var (
	// serveBin serves a fake app-server where it is told to listen.
	serveBin string
	// hangBin starts and never listens.
	hangBin string
	// exitBin fails at once.
	exitBin string
	// takenBin fails as the codex app-server does when its port is
	// taken, the first two times it runs (counted in takenBin+".tries"),
	// and serves from then on; alwaysTakenBin always fails so.
	takenBin, alwaysTakenBin string
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := codextest.Main(ctx, os.Args[1:], codextest.Options{})
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "codex-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	serveBin, hangBin, exitBin = filepath.Join(dir, "codex-serve"), filepath.Join(dir, "codex-hang"), filepath.Join(dir, "codex-exit")
	takenBin, alwaysTakenBin = filepath.Join(dir, "codex-taken"), filepath.Join(dir, "codex-always-taken")
	serve := fmt.Sprintf("%s=1 exec '%s' \"$@\"\n", fakeEnv, strings.ReplaceAll(exe, "'", `'\''`))
	// As codex 0.171.0 fails on a taken port: a coloured log line, the
	// error, a backtrace, exit status 1.
	taken := "printf '\\033[2m2026-12-07T04:15:45Z\\033[0m \\033[31mERROR\\033[0m codex_app_server: no bubblewrap\\nError: Address in use (os error 98)\\n\\nStack backtrace:\\n   0: <unknown>\\n' >&2\nexit 1\n"
	scripts := map[string]string{
		serveBin:       "#!/bin/sh\n" + serve,
		hangBin:        "#!/bin/sh\nexec sleep 600\n",
		exitBin:        "#!/bin/sh\nexit 3\n",
		takenBin:       "#!/bin/sh\nn=$(cat \"$0.tries\" 2>/dev/null || echo 0)\necho $((n + 1)) > \"$0.tries\"\nif [ \"$n\" -ge 2 ]; then\n" + serve + "fi\n" + taken,
		alwaysTakenBin: "#!/bin/sh\nn=$(cat \"$0.tries\" 2>/dev/null || echo 0)\necho $((n + 1)) > \"$0.tries\"\n" + taken,
	}
	for path, body := range scripts {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
