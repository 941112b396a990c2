package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// server is run serving in the background until the test ends.
type server struct {
	base string
	stop context.CancelFunc
	done chan error
	once sync.Once
	err  error
}

// stopped stops the server and returns run's error.
func (s *server) stopped(t *testing.T) error {
	s.once.Do(func() {
		s.stop()
		s.err = testwait.Recv(t, "run to return", s.done)
	})
	return s.err
}

// start runs the container mode with env (plus a free PORT), and waits
// until it answers there. The port picked free can be taken before run
// listens on it (by another test's listener, or as a connection's own
// port): run then fails at once, and starts again on another.
func start(t *testing.T, env map[string]string) *server {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		env["PORT"], env["LOG_LEVEL"] = fmt.Sprint(port), "error"
		ctx, stop := context.WithCancel(context.Background())
		s := &server{base: fmt.Sprintf("http://127.0.0.1:%d", port), stop: stop, done: make(chan error, 1)}
		go func() { s.done <- run(ctx, func(k string) string { return env[k] }) }()
		var ended error
		testwait.Until(t, "the poll server to listen", func() bool {
			select {
			case ended = <-s.done:
				return true
			default:
			}
			code, reason := s.get(service.ReadyPath)
			return code == http.StatusOK || code == http.StatusServiceUnavailable && reason == letagents.CodeNotReady
		})
		if ended == nil {
			t.Cleanup(func() { _ = s.stopped(t) })
			return s
		}
		stop()
		if !errors.Is(ended, syscall.EADDRINUSE) {
			t.Fatalf("run ended at start: %v", ended)
		}
	}
}

// probe asks a server that should answer at once: a port's listener
// that does not (not ours) must not hold a wait that asks again.
var probe = &http.Client{Timeout: 10 * time.Second}

// get returns the status and error code of GET path (0 when the server
// does not answer).
func (s *server) get(path string) (int, string) {
	resp, err := probe.Get(s.base + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var e wire.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Code
}

// The container mode: a plain long-running server serving only long-polls.
func TestRunServesPollsUntilStopped(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if _, _, err := store.New(d.Pool).EnsureRoom(context.Background(), "container room"); err != nil {
		t.Fatal(err)
	}
	s := start(t, map[string]string{"DB_URL": d.URL})
	testwait.Until(t, "the poll server to answer", func() bool {
		code, _ := s.get("/rooms/container%20room/messages/poll?timeout=0")
		return code == http.StatusOK
	})
	if code, _ := s.get("/api/health"); code != http.StatusNotFound {
		t.Errorf("GET /api/health on the poll server = %d, want 404 (it serves only polls)", code)
	}
	testwait.Until(t, "the readiness route to pass", func() bool {
		code, _ := s.get(service.ReadyPath)
		return code == http.StatusOK
	})
	if err := s.stopped(t); err != nil {
		t.Errorf("run = %v, want nil after SIGTERM-like stop", err)
	}
}

// A configuration or a database the server cannot use stops it at start,
// with the reason as its one line (main logs it).
func TestRunRefusesToStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad configuration", map[string]string{"DB_URL": "postgres://postgres@127.0.0.1:1/x", "LETAGENTS_BASE_URL": "example.com"},
			`start poll server: configuration: LETAGENTS_BASE_URL="example.com"`},
		{"no database", map[string]string{"DB_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}, "start poll server: ping database: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := run(context.Background(), func(k string) string { return tt.env[k] })
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("run = %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

// The load balancer's health check fails while the listener is down, so no
// waiter is parked where nothing would wake it; and with DB_PROXY_HOST the
// pool goes through the proxy while the listener does not.
func TestReadinessFollowsTheListener(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// env for the server, given the direct URL and the proxy's
		env func(direct string, proxy *url.URL) map[string]string
		// listenerProxied: cutting the proxy takes the listener down
		listenerProxied bool
	}{
		{"everything through the cut connection", func(_ string, proxy *url.URL) map[string]string {
			return map[string]string{"DB_URL": proxy.String()}
		}, true},
		{"pool through DB_PROXY_HOST, listener direct", func(direct string, proxy *url.URL) map[string]string {
			return map[string]string{"DB_URL": direct, "DB_PROXY_HOST": proxy.Host}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			if _, _, err := store.New(d.Pool).EnsureRoom(context.Background(), "ready room"); err != nil {
				t.Fatal(err)
			}
			p := pgtest.NewProxy(t, d)
			pu, err := url.Parse(p.URL)
			if err != nil {
				t.Fatal(err)
			}
			s := start(t, tt.env(d.URL, pu))
			const poll = "/rooms/ready%20room/messages/poll?timeout=0"
			testwait.Until(t, "ready and serving polls", func() bool {
				ready, _ := s.get(service.ReadyPath)
				polled, _ := s.get(poll)
				return ready == http.StatusOK && polled == http.StatusOK
			})

			p.Cut()
			if tt.listenerProxied {
				testwait.Until(t, "the readiness route to fail with the listener down", func() bool {
					code, reason := s.get(service.ReadyPath)
					return code == http.StatusServiceUnavailable && reason == letagents.CodeNotReady
				})
			} else {
				// The pool's reads fail: the cut reached it.
				testwait.Until(t, "polls to fail through the cut proxy", func() bool {
					code, _ := s.get(poll)
					return code == http.StatusServiceUnavailable
				})
				if code, reason := s.get(service.ReadyPath); code != http.StatusOK {
					t.Errorf("readiness with the proxy cut = %d %s, want 200: the listener should not go through the proxy", code, reason)
				}
			}

			p.Restore()
			testwait.Until(t, "ready and serving polls again", func() bool {
				ready, _ := s.get(service.ReadyPath)
				polled, _ := s.get(poll)
				return ready == http.StatusOK && polled == http.StatusOK
			})
		})
	}
}

// The container serves event streams too, and SIGTERM ends them cleanly
// (clients reconnect elsewhere) instead of holding the shutdown.
func TestSIGTERMEndsStreams(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if _, _, err := store.New(d.Pool).EnsureRoom(context.Background(), "streamed room"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	env := map[string]string{"DB_URL": d.URL, "PORT": fmt.Sprint(port), "LOG_LEVEL": "error"}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }) }()

	var resp *http.Response
	testwait.Until(t, "the poll server to open a stream", func() bool {
		r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/rooms/streamed%%20room/messages/stream", port))
		if err != nil {
			return false
		}
		if r.StatusCode != http.StatusOK {
			r.Body.Close()
			return false
		}
		resp = r
		return true
	})
	defer resp.Body.Close()
	first := make([]byte, len(": connected\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != ": connected\n\n" {
		t.Fatalf("stream began %q, %v", first, err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	stop()
	if err := testwait.Recv(t, "the stream to end on SIGTERM", ended); err != nil {
		t.Errorf("the stream ended with %v, want a clean end", err)
	}
	if err := testwait.Recv(t, "run to return after SIGTERM", done); err != nil {
		t.Errorf("run = %v, want nil", err)
	}
}
