package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
)

// asRunner makes the test binary run main instead of the tests.
const asRunner = "LETAGENTS_LOCALDEV_TEST_AS_RUNNER"

func TestMain(m *testing.M) {
	if os.Getenv(asRunner) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStopsWhenItsParentExits plays `go run ./localdev` killed by a
// script's `kill $!`: sh starts the runner and waits for it, and is
// killed. The runner must notice, and stop itself and its PostgreSQL.
func TestStopsWhenItsParentExits(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := embeddedDir(t)
	cmd := exec.Command("sh", "-c", `"$0" & echo "pid $!"; wait`, exe)
	cmd.Env = append(os.Environ(), asRunner+"=1", "DB_URL=", "DB_SECRET_ARN=", "PORT=0", "LETAGENTS_LOCALDEV_DIR="+dir)
	logs := &testwait.Buffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The runner's stdout closes when it exits: lines then closes.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	pid, url := 0, ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runner's log:\n%s", logs)
		}
		if pid != 0 && syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM) // stops its PostgreSQL too
		}
	})
	for ready := time.After(120 * time.Second); pid == 0 || url == ""; {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("the runner exited before listening")
			}
			if p, ok := strings.CutPrefix(line, "pid "); ok {
				if pid, err = strconv.Atoi(p); err != nil {
					t.Fatalf("sh printed %q", line)
				}
			}
			if u, ok := strings.CutPrefix(line, "export LETAGENTS_API_URL="); ok {
				url = u
			}
		case <-ready:
			_ = cmd.Process.Kill()
			t.Fatal("the runner did not listen within 120 s")
		}
	}
	if status, _, b := call(t, "GET", url+"/api/health", nil); status != http.StatusOK {
		t.Fatalf("health: %d %s", status, b)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	stopped := time.After(60 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-lines:
		case <-stopped:
			t.Fatal("the runner still runs 60 s after its parent was killed")
		}
	}
	_ = cmd.Wait()
	if _, err := http.Get(url + "/api/health"); err == nil {
		t.Error("the runner still answers after its stdout closed")
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); err == nil {
		t.Error("its PostgreSQL still runs")
	}
	if !strings.Contains(logs.String(), "the process that started localdev has exited") {
		t.Errorf("the runner did not say why it stopped:\n%s", logs)
	}
}
