package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
)

// env is the whole API (every group) on a private schema, over real HTTP.
type env struct {
	url string
	svc *service.Service
	db  *pgtest.DB
}

func newEnv(t testing.TB, vars map[string]string) *env {
	t.Helper()
	d := pgtest.New(t)
	// Unless a test is about them, repo rooms are open and joins unlimited.
	defaults := map[string]string{"LETAGENTS_REPO_ACCESS": "open", "LETAGENTS_JOIN_LIMIT": "1000000"}
	cfg, err := service.LoadConfig(func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return defaults[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.LogLevel = slog.LevelError // a failing test still shows what broke
	svc, err := service.FromPool(context.Background(), cfg, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(func() {
		svc.Drain()
		srv.Close()
		svc.Close()
	})
	return &env{url: srv.URL, svc: svc, db: d}
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
	resp, err := http.DefaultClient.Do(req)
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
