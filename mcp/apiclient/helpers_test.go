package apiclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/service/servicetest"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/wire"
)

// env is the real service on a private schema, over real HTTP twice: api
// is where the client sends everything, poll the separate long-poll base.
// Both record the requests they get.
type env struct {
	svc       *service.Service
	api, poll *recorder
	// Set with sign-in: the fake GitHub and the clock of the device flow.
	gh    *githubtest.Server
	clock *testclock.Clock
}

// newEnv serves the API with repo rooms open and joins unlimited; with
// signIn, GitHub is a fake and the sign-in clock moves only when told.
func newEnv(t *testing.T, signIn bool) *env {
	t.Helper()
	vars := map[string]string{"LETAGENTS_REPO_ACCESS": "open", "LETAGENTS_JOIN_LIMIT": "100000"}
	e := &env{}
	svc, _ := servicetest.Start(t, vars, func(cfg *config.Config) {
		if signIn {
			e.gh = githubtest.New(t)
			cfg.GitHub = e.gh.Config()
			cfg.TokenKeyFile = filepath.Join(t.TempDir(), "token.key")
			e.clock = testclock.New(time.Now().Truncate(time.Millisecond))
			cfg.Now = e.clock.Now
		}
	})
	// Cleanups run last first: drain parked polls, close the servers
	// (registered by serve), then the service (registered by Start).
	e.svc = svc
	e.api = serve(t, svc.Handler)
	e.poll = serve(t, svc.Handler)
	t.Cleanup(svc.Drain)
	return e
}

// client is a client of e with a fixed token ("" for none).
func (e *env) client(token string) *apiclient.Client {
	return apiclient.New(apiclient.Config{
		APIURL:  e.api.URL + "/", // the trailing slash is trimmed
		PollURL: e.poll.URL,
		Token:   func() string { return token },
	})
}

// seen is a request a recorder got.
type seen struct {
	Method, Path, Query string // the path escaped as sent
	Header              http.Header
}

// recorder is an httptest server in front of a handler that remembers
// every request.
type recorder struct {
	URL  string
	mu   sync.Mutex
	reqs []seen
}

func serve(t *testing.T, h http.Handler) *recorder {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone()})
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// requests returns what the server got so far.
func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

// paths lists "METHOD path" of every request so far.
func (r *recorder) paths() []string {
	var out []string
	for _, s := range r.requests() {
		out = append(out, s.Method+" "+s.Path)
	}
	return out
}

// last is the latest request whose path ends with suffix.
func (r *recorder) last(t *testing.T, suffix string) seen {
	t.Helper()
	reqs := r.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].Path, suffix) {
			return reqs[i]
		}
	}
	t.Fatalf("no request to …%s among %q", suffix, r.paths())
	return seen{}
}

// testContext bounds a test's calls, so a hang fails instead of stalling.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// send posts text as sender and returns the message.
func send(t *testing.T, c *apiclient.Client, room, text string) wire.Message {
	t.Helper()
	m, err := c.Send(testContext(t), room, wire.SendMessage{Sender: "ann", Text: text})
	if err != nil {
		t.Fatalf("Send(%q, %q): %v", room, text, err)
	}
	return m
}

// join joins room or fails the test.
func join(t *testing.T, c *apiclient.Client, room string) wire.Join {
	t.Helper()
	j, err := c.Join(testContext(t), room)
	if err != nil {
		t.Fatalf("Join(%q): %v", room, err)
	}
	return j
}

// messageIDs lists the ids of msgs.
func messageIDs(msgs []wire.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// apiError fails unless err is an *APIError and returns it.
func apiError(t *testing.T, err error) *apiclient.APIError {
	t.Helper()
	e, ok := errors.AsType[*apiclient.APIError](err)
	if !ok {
		t.Fatalf("error %v (%T), want an *apiclient.APIError", err, err)
	}
	return e
}
