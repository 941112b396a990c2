package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/service/servicetest"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
)

// backend is the real API on a private schema, over real HTTP.
type backend struct {
	url   string
	svc   *service.Service
	db    *pgtest.DB
	gh    *githubtest.Server // nil unless sign-in is on
	clock *testclock.Clock
	// hold, when set, ends every long-poll after this long, as an API
	// gateway does at 30 s.
	hold time.Duration
	mu   sync.Mutex
	// hits are the requests by path, but for the long-polls of the
	// resource watchers (those without ?limit): tests count the waits'.
	hits map[string]int
}

// newBackend starts the API. signIn turns GitHub sign-in on (a fake
// GitHub, a clock the test moves) and repo rooms follow GitHub.
func newBackend(t *testing.T, signIn bool) *backend {
	t.Helper()
	vars := map[string]string{"LETAGENTS_JOIN_LIMIT": "100000", "LETAGENTS_REPO_ACCESS": "open"}
	b := &backend{hits: map[string]int{}}
	if signIn {
		delete(vars, "LETAGENTS_REPO_ACCESS")
	}
	svc, d := servicetest.Start(t, vars, func(cfg *config.Config) {
		if signIn {
			b.gh = githubtest.New(t)
			b.clock = testclock.New(time.Now())
			cfg.GitHub, cfg.Now = b.gh.Config(), b.clock.Now
			cfg.TokenKeyFile = filepath.Join(t.TempDir(), "token.key")
		}
	})
	b.svc, b.db = svc, d
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		if !fromWatcher(r) {
			b.hits[r.URL.Path]++
		}
		hold := b.hold
		b.mu.Unlock()
		if hold > 0 && strings.HasSuffix(r.URL.Path, "/poll") {
			r = r.WithContext(api.WithHoldLimit(r.Context(), hold))
		}
		svc.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(svc.Drain)
	b.url = srv.URL
	return b
}

// fromWatcher reports whether r comes from a resource watcher: a stream, or
// a long-poll without ?limit (the waits' have one).
func fromWatcher(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/messages/stream") ||
		strings.HasSuffix(r.URL.Path, "/messages/poll") && !r.URL.Query().Has("limit")
}

func (b *backend) count(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits[path]
}

// agent is one MCP server under test, with an in-process MCP client.
type agent struct {
	srv    *Server
	client *client.Client
	state  string
	notes  chan mcp.JSONRPCNotification
}

// newAgent starts an MCP server against b in dir (a temporary directory
// outside any repository when ""), with env as its environment.
func newAgent(t *testing.T, b *backend, dir string, env map[string]string) *agent {
	t.Helper()
	return newAgentWith(t, b, dir, env, nil)
}

// newAgentWith is newAgent with the configuration changed by change.
func newAgentWith(t *testing.T, b *backend, dir string, env map[string]string, change func(*Config)) *agent {
	t.Helper()
	return startAgent(t, b, dir, env, mcp.LATEST_PROTOCOL_VERSION, change)
}

// newAgentSpeaking is newAgent with a client of that protocol version.
func newAgentSpeaking(t *testing.T, b *backend, dir string, env map[string]string, protocol string) *agent {
	t.Helper()
	return startAgent(t, b, dir, env, protocol, nil)
}

func startAgent(t *testing.T, b *backend, dir string, env map[string]string, protocol string, change func(*Config)) *agent {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	statePath := filepath.Join(t.TempDir(), "state", "mcp-state.json")
	// Waits the tests wake must outlast testwait.Bound: a busy machine may
	// take that long to wake them, and a wait that timed out first would
	// answer empty.
	vars := map[string]string{"LETAGENTS_API_URL": b.url, "LETAGENTS_STATE_PATH": statePath, "LETAGENTS_POLL_MAX_MS": "120000",
		"LETAGENTS_AGENT_INSTANCE_ID": "test-" + t.Name()}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := LoadConfig(func(k string) string { return vars[k] }, dir, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close) // after the client's close: cleanups run last first
	c, err := client.NewInProcessClient(s.MCP())
	if err != nil {
		t.Fatal(err)
	}
	a := connect(t, c, protocol)
	a.srv, a.state = s, statePath
	return a
}

// connect completes c's MCP handshake in protocol, the notifications it
// gets kept in the agent's notes; c closes when the test ends.
func connect(t *testing.T, c *client.Client, protocol string) *agent {
	t.Helper()
	a := &agent{client: c, notes: make(chan mcp.JSONRPCNotification, 100)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case a.notes <- n:
		default:
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = protocol
	init.Params.ClientInfo = mcp.Implementation{Name: "server-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return a
}

// testWriter sends the server's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// answer is a decoded tool result.
type answer struct {
	isError bool
	raw     string
	obj     map[string]any
}

func (a answer) str(key string) string { s, _ := a.obj[key].(string); return s }

func (a answer) list(key string) []map[string]any {
	raw, _ := a.obj[key].([]any)
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		out[i], _ = v.(map[string]any)
	}
	return out
}

// call calls a tool and decodes its JSON text.
func (a *agent) call(t *testing.T, name string, args map[string]any) answer {
	t.Helper()
	return a.callWith(t, name, args, nil)
}

func (a *agent) callWith(t *testing.T, name string, args map[string]any, meta *mcp.Meta) answer {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments, req.Params.Meta = name, args, meta
	ctx, cancel := context.WithTimeout(context.Background(), 2*testwait.Bound) // a woken wait may take testwait.Bound
	defer cancel()
	res, err := a.client.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T, want text", name, res.Content[0])
	}
	out := answer{isError: res.IsError, raw: text.Text}
	_ = json.Unmarshal([]byte(text.Text), &out.obj) // validation errors are plain text
	return out
}

// ok fails unless the tool succeeded.
func (r answer) ok(t *testing.T) answer {
	t.Helper()
	if r.isError {
		t.Fatalf("tool failed: %s", r.raw)
	}
	return r
}

// failed fails unless the tool failed with msg in its text.
func (r answer) failed(t *testing.T, msg string) answer {
	t.Helper()
	if !r.isError || !strings.Contains(r.raw, msg) {
		t.Fatalf("got %s (error %v), want a failure saying %q", r.raw, r.isError, msg)
	}
	return r
}

func readState(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("state file: %v", err)
	}
	return m
}
