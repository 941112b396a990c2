// Package runnerproc builds the local runner (./localdev) and runs it as a
// child process, as a person runs it, for the commands that measure it
// (localdev/bench, localdev/costmodel). It waits for the runner to say
// where it listens and stops it with SIGINT, as Ctrl-C does.
package runnerproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Bounds of a start and a stop. Generous: they only decide how long a
// broken runner takes to be reported.
const (
	startTimeout = time.Minute
	stopTimeout  = 15 * time.Second
)

// urlLine and poolLine start the lines the runner prints on stdout once it
// listens.
const (
	urlLine  = "export LETAGENTS_API_URL="
	poolLine = "pool: "
)

// ErrTimeout says the runner did not listen in time.
var ErrTimeout = errors.New("timed out")

// Process is a running local runner.
type Process struct {
	// URL is where it serves every function.
	URL string
	// Pool is what it says of its database pool ("16 connections (…)").
	Pool string

	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// Start builds ./localdev into a temporary directory and starts it with
// the caller's environment plus env (later entries win), PORT=0 and
// LETAGENTS_LOCALDEV_DIR set to that directory unless env sets them. Its
// stderr, the JSON log with the request log in it, goes to stderr (nil:
// discarded).
func Start(ctx context.Context, env []string, stderr io.Writer) (*Process, error) {
	dir, err := os.MkdirTemp("", "letagents-runner-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "localdev")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/letagents/letagents-go/localdev")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build ./localdev: %w\n%s", err, out)
	}
	p := &Process{cmd: exec.Command(bin), dir: dir, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "PORT=0", "LETAGENTS_LOCALDEV_DIR="+dir), env...)
	var tail strings.Builder
	if stderr == nil {
		stderr = io.Discard
	}
	p.cmd.Stderr = io.MultiWriter(stderr, &limited{w: &tail, n: 8 << 10})
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	deadline := time.After(startTimeout)
	for p.URL == "" || p.Pool == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				p.Stop()
				return nil, fmt.Errorf("the runner exited before listening: %s", tail.String())
			}
			if u, ok := strings.CutPrefix(line, urlLine); ok {
				p.URL = strings.TrimSpace(u)
			}
			if d, ok := strings.CutPrefix(line, poolLine); ok {
				p.Pool = d
			}
		case <-deadline:
			p.Stop()
			return nil, fmt.Errorf("the runner did not listen within %v: %w", startTimeout, ErrTimeout)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		}
	}
	go func() {
		for range lines {
		}
	}()
	return p, nil
}

// Stop interrupts the runner, as Ctrl-C does, kills it if it has not
// drained within stopTimeout, and removes its directory.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	os.RemoveAll(p.dir)
}

// limited keeps the first n bytes written to it, for the error of a
// runner that could not start.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
