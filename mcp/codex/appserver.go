package codex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
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
// fails to start, and the start reports it.
func freeServerURL() (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return "", fmt.Errorf("find a free port for the codex app-server: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return "ws://" + net.JoinHostPort(loopback, strconv.Itoa(port)), nil
}

// server is an app-server this process spawned.
type server struct {
	pid    int
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// spawn starts `bin app-server --listen serverURL` in its own process
// group, its input and output discarded: it outlives the tool call that
// started it, and is ended by Stop, by a failed start, or when this
// process closes its Manager.
func spawn(bin, serverURL string) (*server, error) {
	cmd := exec.Command(bin, "app-server", "--listen", serverURL)
	detach(cmd)
	if err := cmd.Start(); err != nil {
		kind := FailServer
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			kind = FailMissing
		}
		return nil, &StartError{Kind: kind, Reason: fmt.Sprintf("start %s app-server (set LETAGENTS_CODEX_BIN to the codex binary): %v", bin, err), Err: err}
	}
	s := &server{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// errNotReady is the error of an app-server that did not become ready.
var errNotReady = errors.New("codex app-server did not become ready")

// awaitReady waits for a spawned app-server to answer its readiness probe,
// for serverWait at most, failing early when it exits.
func (m *Manager) awaitReady(ctx context.Context, s *server, serverURL string) error {
	deadline := m.clock.Now().Add(serverWait)
	for {
		if ready(ctx, m.http, serverURL) {
			return nil
		}
		select {
		case <-s.exited:
			return &StartError{Kind: FailServer, Reason: fmt.Sprintf("%v: it exited (%v) before listening on %s", errNotReady, s.err, serverURL), Err: errNotReady}
		default:
		}
		if !m.clock.Now().Before(deadline) {
			return &StartError{Kind: FailServer, Reason: fmt.Sprintf("%v within %v at %s", errNotReady, serverWait, serverURL), Err: errNotReady}
		}
		select {
		case <-m.clock.After(serverPoll):
		case <-s.exited:
		case <-ctx.Done():
			return fmt.Errorf("wait for codex app-server at %s: %w", serverURL, ctx.Err())
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
