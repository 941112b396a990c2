package codex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Timings of reaching an app-server.
const (
	// probeTimeout bounds one readiness probe.
	probeTimeout = time.Second
	// serverWait is how long a spawned app-server has to become ready,
	// probed every serverPoll.
	serverWait = 15 * time.Second
	serverPoll = 250 * time.Millisecond
	// rpcTimeout bounds connecting to the app-server and each call.
	rpcTimeout = 30 * time.Second
)

// loopback is where a spawned app-server listens.
const loopback = "127.0.0.1"

// CheckServerURL reports whether u is an app-server address this package
// can reach: ws:// or wss:// with a host.
func CheckServerURL(u string) error {
	_, err := readyURL(u)
	return err
}

// readyURL is the readiness probe of the app-server at serverURL: the
// same host and port over HTTP(S), path /readyz.
func readyURL(serverURL string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return "", fmt.Errorf("codex app-server URL %q: want ws://host:port", serverURL)
	}
	scheme := "http"
	if u.Scheme == "wss" {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: u.Host, Path: "/readyz"}).String(), nil
}

// ready reports whether the app-server at serverURL answers its
// readiness probe within probeTimeout.
func ready(ctx context.Context, hc *http.Client, serverURL string) bool {
	probe, err := readyURL(serverURL)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, probe, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// freeServerURL picks a free loopback port for a new app-server. Another
// process could take the port before the server binds it; the server then
// exits saying its address is in use, and a start that picked the port
// tries another (serverTries).
func freeServerURL() (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return "", fmt.Errorf("find a free port for the codex app-server: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return "ws://" + net.JoinHostPort(loopback, strconv.Itoa(port)), nil
}

// serverTries is how many ports a start that picks its app-server's port
// tries, each time another process took the last one first.
const serverTries = 3

// server is an app-server this process spawned.
type server struct {
	pid    int
	url    string // where it was told to listen
	exited chan struct{}
	err    error // how it exited, once exited is closed
	// stderr is what it writes to its standard error, read when it
	// exits before it listens (lastWords) and removed once its start
	// is decided (forgetStderr).
	stderr *os.File
}

// spawn starts `bin app-server --listen serverURL` in its own process
// group, its input and output discarded but for its standard error,
// which goes to a file of its own: a start that fails can then say why.
// It outlives the tool call that started it, and is ended by Stop, by a
// failed start, or when this process closes its Manager.
func spawn(bin, serverURL string) (*server, error) {
	stderr, err := os.CreateTemp("", "letagents-codex-app-server-*.log")
	if err != nil {
		return nil, &StartError{Kind: FailServer, Reason: fmt.Sprintf("start %s app-server: a file for its errors: %v", bin, err), Err: err}
	}
	cmd := exec.Command(bin, "app-server", "--listen", serverURL)
	cmd.Stderr = stderr
	detach(cmd)
	if err := cmd.Start(); err != nil {
		stderr.Close()
		os.Remove(stderr.Name())
		kind := FailServer
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			kind = FailMissing
		}
		return nil, &StartError{Kind: kind, Reason: fmt.Sprintf("start %s app-server (set LETAGENTS_CODEX_BIN to the codex binary): %v", bin, err), Err: err}
	}
	s := &server{pid: cmd.Process.Pid, url: serverURL, exited: make(chan struct{}), stderr: stderr}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// forgetStderr removes the file of the server's standard error. A server
// that runs on keeps writing to it, unnamed, until it exits: the codex
// app-server writes only its errors there.
func (s *server) forgetStderr() {
	s.stderr.Close()
	os.Remove(s.stderr.Name())
}

// lastWords is the last error the server wrote to its standard error (the
// last line that starts "Error:", else its last line), without terminal
// colours, at most a few hundred bytes; "" when it wrote nothing.
func (s *server) lastWords() string {
	const tail = 4096
	info, err := s.stderr.Stat()
	if err != nil {
		return ""
	}
	off := max(info.Size()-tail, 0)
	b := make([]byte, info.Size()-off)
	n, _ := s.stderr.ReadAt(b, off)
	var last, errLine string
	for _, line := range strings.Split(ansiEscape.ReplaceAllString(string(b[:n]), ""), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Error:"):
			errLine = line
		case line != "":
			last = line
		}
	}
	if errLine != "" {
		last = errLine
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}

// ansiEscape matches the colour codes of a terminal's output.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// errNotReady is the error of an app-server that did not become ready;
// errPortTaken of one that exited because another process held its port.
var (
	errNotReady  = errors.New("codex app-server did not become ready")
	errPortTaken = fmt.Errorf("%w: its address was in use", errNotReady)
)

// awaitReady waits for a spawned app-server to answer its readiness probe,
// for serverWait at most, failing early when it exits.
func (m *Manager) awaitReady(ctx context.Context, s *server) error {
	deadline := m.clock.Now().Add(serverWait)
	for {
		if ready(ctx, m.http, s.url) {
			return nil
		}
		select {
		case <-s.exited:
			reason, cause := fmt.Sprintf("%v: it exited (%v) before listening on %s", errNotReady, s.err, s.url), errNotReady
			if words := s.lastWords(); words != "" {
				reason += ": " + words
				if w := strings.ToLower(words); strings.Contains(w, "address in use") || strings.Contains(w, "address already in use") {
					cause = errPortTaken
				}
			}
			return &StartError{Kind: FailServer, Reason: reason, Err: cause}
		default:
		}
		if !m.clock.Now().Before(deadline) {
			return &StartError{Kind: FailServer, Reason: fmt.Sprintf("%v within %v at %s", errNotReady, serverWait, s.url), Err: errNotReady}
		}
		select {
		case <-m.clock.After(serverPoll):
		case <-s.exited:
		case <-ctx.Done():
			return fmt.Errorf("wait for codex app-server at %s: %w", s.url, ctx.Err())
		}
	}
}

// dial connects to an app-server, bounded by rpcTimeout.
func dial(ctx context.Context, serverURL string) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return Dial(ctx, serverURL)
}

// call is Conn.Call bounded by rpcTimeout.
func call(ctx context.Context, c *Conn, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return c.Call(ctx, method, params, out)
}
