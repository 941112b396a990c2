// Package anchorproc runs a built copy of the original LetAgents (a
// checkout after `npm ci && npm run build`) as a child process, for the
// commands that compare ours with it: localdev/compat and the bench's
// side-by-side mode. It migrates the database it is given, serves the
// original on a free loopback port and waits until it answers.
package anchorproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Bounds of a start and a stop. Generous: they only decide how long a
// broken original takes to be reported.
const (
	startTimeout = 90 * time.Second
	stopTimeout  = 10 * time.Second
)

// Process is a running original.
type Process struct {
	// URL is where it serves its API and page, on 127.0.0.1.
	URL string
	// Log is the file its stdout and stderr go to.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
}

// Start applies the original's migrations in dir to dbURL, then serves it
// with its log in work/anchor.log and work as its HOME. Its environment
// holds only what it needs, so that the caller's GitHub app or database
// settings do not leak in.
func Start(ctx context.Context, dir, dbURL, work string) (*Process, error) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "DB_URL=" + dbURL}
	migrate := exec.CommandContext(ctx, "node", "dist/api/migrate.js")
	migrate.Dir, migrate.Env = dir, env
	if out, err := migrate.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("node dist/api/migrate.js in %s: %w\n%s", dir, err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// LETAGENTS_BASE_URL: its links (device_flow_url) then name the address
	// it is reached at, as ours do; left alone it says localhost. HOST: left
	// alone, it listens on every interface.
	p := &Process{URL: "http://127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(work, "anchor.log"),
		cmd: exec.Command("node", "dist/api/server.js"), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(env, "HOST=127.0.0.1", "PORT="+strconv.Itoa(port), "LETAGENTS_BASE_URL="+p.URL)
	logFile, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start the original: %w", err)
	}
	go func() { _ = p.cmd.Wait(); logFile.Close(); close(p.done) }()
	if err := p.waitHealthy(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("the original (log %s): %w", p.Log, err)
	}
	return p, nil
}

// Pid is the original's process id, for measuring its CPU time.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop ends the original with SIGTERM, and kills it if it has not ended
// within stopTimeout.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHealthy waits for GET /api/health to answer 200.
func (p *Process) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/health", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return errors.New("exited before answering /api/health")
		case <-ctx.Done():
			return fmt.Errorf("no healthy answer within %v", startTimeout)
		case <-tick.C:
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Version reads the version of the original in dir from its package.json.
func Version(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, "package.json"), err)
	}
	return pkg.Version, nil
}
