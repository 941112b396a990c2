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
	scripts := map[string]string{
		serveBin: fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", fakeEnv, strings.ReplaceAll(exe, "'", `'\''`)),
		hangBin:  "#!/bin/sh\nexec sleep 600\n",
		exitBin:  "#!/bin/sh\nexit 3\n",
	}
	for path, body := range scripts {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
