package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/testclock"
)

// env is the whole API (every group) on a private schema, over real HTTP.
type env struct {
	url string
	svc *service.Service
	db  *pgtest.DB
	// Set by newAuthEnv: the fake GitHub and the clock of the sign-in flows.
	gh    *githubtest.Server
	clock *testclock.Clock
	cfg   config.Config
}

func newEnv(t testing.TB, vars map[string]string) *env {
	t.Helper()
	// Unless a test is about them, repo rooms are open and rate limits
	// out of reach.
	defaults := map[string]string{"LETAGENTS_REPO_ACCESS": "open", "LETAGENTS_JOIN_LIMIT": "1000000",
		"LETAGENTS_INVITE_ROOM_LIMIT": "1000000", "LETAGENTS_SEND_LIMIT": "1000000"}
	cfg, err := config.Load(func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return defaults[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: pgtest.New(t), cfg: cfg}
	e.serve(t)
	return e
}

// newAuthEnv is an env with sign-in: GitHub is a fake, tokens are sealed
// with a key file of the test's, repo rooms follow GitHub, and the clock
// of the sign-in flows moves only when the test says.
func newAuthEnv(t testing.TB, vars map[string]string) *env {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	gh := githubtest.New(t)
	cfg.GitHub = gh.Config()
	cfg.TokenKeyFile = filepath.Join(t.TempDir(), "token.key")
	clock := testclock.New(time.Now().Truncate(time.Millisecond))
	cfg.Now = clock.Now
	e := &env{db: pgtest.New(t), cfg: cfg, gh: gh, clock: clock}
	e.serve(t)
	return e
}

// twin is a second instance of e's service on the same database, GitHub
// and clock: another Lambda instance, as far as anything can tell.
func (e *env) twin(t testing.TB) *env {
	t.Helper()
	other := *e
	other.serve(t)
	return &other
}

func (e *env) serve(t testing.TB) {
	t.Helper()
	e.cfg.LogLevel = slog.LevelError // a failing test still shows what broke
	svc, err := service.FromPool(context.Background(), e.cfg, e.db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(func() {
		svc.Drain()
		srv.Close()
		svc.Close()
	})
	e.url, e.svc = srv.URL, svc
}

type reply struct {
	status int
	header http.Header
	raw    string
	obj    map[string]any
}

// call sends body (JSON text, or "" for none) and decodes a JSON object answer.
func (e *env) call(t *testing.T, method, path, body string) reply {
	t.Helper()
	return e.callCtx(context.Background(), t, method, path, body)
}

func (e *env) callCtx(ctx context.Context, t *testing.T, method, path, body string) reply {
	t.Helper()
	return e.callWith(ctx, t, method, path, body, nil)
}

// as calls with an owner token (Authorization: Bearer).
func (e *env) as(t *testing.T, token, method, path, body string) reply {
	t.Helper()
	return e.callWith(context.Background(), t, method, path, body, http.Header{"Authorization": {"Bearer " + token}})
}

// callWith is call with extra request headers. It never follows redirects.
func (e *env) callWith(ctx context.Context, t *testing.T, method, path, body string, h http.Header) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	// A Host header is the request's Host (the client sends no other).
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.obj); err != nil {
			t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, raw)
		}
	}
	return r
}

// want fails unless the answer has the status; for errors it also checks
// the JSON error body carries msg.
func (r reply) want(t *testing.T, status int, msg string) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if status >= 400 {
		e, ok := r.obj["error"].(string)
		if !ok || !strings.Contains(e, msg) {
			t.Fatalf("error body %s, want {\"error\": ...%q...}", r.raw, msg)
		}
	}
	return r
}

func (r reply) str(key string) string { s, _ := r.obj[key].(string); return s }

func (r reply) num(key string) float64 { n, _ := r.obj[key].(float64); return n }

// noRedirects is a client that hands redirects back, so tests see them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (r reply) messages(t *testing.T) []map[string]any {
	t.Helper()
	list, ok := r.obj["messages"].([]any)
	if !ok {
		t.Fatalf("no messages list in %s", r.raw)
	}
	out := make([]map[string]any, len(list))
	for i, m := range list {
		out[i] = m.(map[string]any)
	}
	return out
}

func ids(msgs []map[string]any) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i], _ = m["id"].(string)
	}
	return out
}

func (e *env) send(t *testing.T, room, sender, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sender": sender, "text": text})
	return e.call(t, http.MethodPost, "/rooms/"+room+"/messages", string(body)).want(t, 201, "").str("id")
}

func (e *env) join(t *testing.T, room string) {
	t.Helper()
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
}

// isTimestamp checks the wire's RFC 3339 UTC milliseconds form.
func isTimestamp(s string) bool {
	ts, err := time.Parse("2006-01-02T15:04:05.000Z", s)
	return err == nil && !ts.IsZero()
}
