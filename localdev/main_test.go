package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// stdoutWatch is run's stdout: it keeps what was written and hands over the
// URL of the export line once it appears.
type stdoutWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	url  chan string
}

func (s *stdoutWatch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for line := range strings.SplitSeq(s.buf.String(), "\n") {
		if u, ok := strings.CutPrefix(line, "export LETAGENTS_API_URL="); ok && strings.Contains(s.buf.String(), "\ndatabase: ") {
			s.once.Do(func() { s.url <- u })
		}
	}
	return len(p), nil
}

func (s *stdoutWatch) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// instance is one `run` serving in the background.
type instance struct {
	URL    string
	stdout *stdoutWatch
	stderr *testwait.Buffer
	stop   context.CancelFunc
	done   chan error
}

// start runs run with env until the test ends (or stop is called). Its
// logs are shown only if the test fails.
func start(t *testing.T, env map[string]string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{stdout: &stdoutWatch{url: make(chan string, 1)}, stderr: &testwait.Buffer{}, stop: cancel, done: make(chan error, 1)}
	go func() { in.done <- run(ctx, func(k string) string { return env[k] }, in.stdout, in.stderr) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run's log:\n%s", in.stderr)
		}
	})
	select {
	case in.URL = <-in.stdout.url:
	case err := <-in.done:
		cancel()
		t.Fatalf("run returned before listening: %v\nstdout:\n%s", err, in.stdout)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("run did not print its URL within 60s; stdout:\n%s", in.stdout)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-in.done:
		case <-time.After(30 * time.Second):
			t.Errorf("run did not return within 30s of cancel")
		}
	})
	return in
}

// stopped stops in and returns run's error, failing the test if run does
// not return within a bound only a hung shutdown would reach.
func (in *instance) stopped(t *testing.T) error {
	t.Helper()
	in.stop()
	select {
	case err := <-in.done:
		in.done <- nil // for the cleanup in start
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of cancel")
		return nil
	}
}

// dbEnv is the environment of a run on a fresh test schema.
func dbEnv(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{"DB_URL": pgtest.New(t).URL, "PORT": "0", "LETAGENTS_LOCALDEV_DIR": t.TempDir()}
}

// githubEnv is dbEnv with sign-in through a fake GitHub, returned too.
func githubEnv(t *testing.T) (map[string]string, *githubtest.Server) {
	t.Helper()
	gh := githubtest.New(t)
	env := dbEnv(t)
	gc := gh.Config()
	env["GITHUB_CLIENT_ID"], env["GITHUB_CLIENT_SECRET"] = gc.ClientID, gc.ClientSecret
	env["GITHUB_OAUTH_URL"], env["GITHUB_API_URL"] = gc.OAuthURL, gc.APIURL
	return env, gh
}

var client = &http.Client{Timeout: 30 * time.Second}

// call sends a request and returns the status, content type and body.
func call(t *testing.T, method, url string, body io.Reader) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, b)
	}
	return m
}

type pollPage struct {
	RoomID   string `json:"room_id"`
	Messages []struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	} `json:"messages"`
}

type pollResult struct {
	status int
	page   pollPage
	err    error
	after  time.Duration
}

// parkPoll starts a long-poll in the background.
func parkPoll(req *http.Request) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() {
		begin := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			ch <- pollResult{err: err}
			return
		}
		defer resp.Body.Close()
		var p pollPage
		err = json.NewDecoder(resp.Body).Decode(&p)
		ch <- pollResult{status: resp.StatusCode, page: p, err: err, after: time.Since(begin)}
	}()
	return ch
}

func TestServesEveryRoute(t *testing.T) {
	t.Parallel()
	in := start(t, dbEnv(t))
	out := in.stdout.String()
	for _, want := range []string{"export LETAGENTS_API_URL=http://127.0.0.1:", "database: DB_URL postgres://postgres@127.0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}

	tests := []struct {
		name, method, path, body string
		status                   int
		contentType              string
		check                    func(t *testing.T, b []byte)
	}{
		{"create ad-hoc room", "POST", "/projects", "", 201, "application/json", func(t *testing.T, b []byte) {
			m := decodeJSON(t, b)
			if id, _ := m["id"].(string); id == "" || m["code"] != id {
				t.Errorf("want id and code equal and set, got %s", b)
			}
		}},
		{"join named room", "POST", "/rooms/localdev%20test%20room/join", "", 200, "application/json", func(t *testing.T, b []byte) {
			if m := decodeJSON(t, b); m["room_id"] != "localdev test room" {
				t.Errorf("room_id = %v, want %q", m["room_id"], "localdev test room")
			}
		}},
		{"join repo room", "POST", "/rooms/github.com/o/r/join", "", 200, "application/json", func(t *testing.T, b []byte) {
			if m := decodeJSON(t, b); m["room_id"] != "github.com/o/r" || m["git_room"] == nil {
				t.Errorf("want room github.com/o/r with git_room, got %s", b)
			}
		}},
		{"send with slashes in path", "POST", "/rooms/github.com/o/r/messages", `{"sender":"t","text":"hello from localdev"}`, 201, "application/json", func(t *testing.T, b []byte) {
			if m := decodeJSON(t, b); m["id"] != "msg_1" || m["room_id"] != "github.com/o/r" {
				t.Errorf("want msg_1 in github.com/o/r, got %s", b)
			}
		}},
		{"read with slashes in path", "GET", "/rooms/github.com/o/r/messages?after=0", "", 200, "application/json", func(t *testing.T, b []byte) {
			var p pollPage
			if err := json.Unmarshal(b, &p); err != nil || len(p.Messages) != 1 || p.Messages[0].Text != "hello from localdev" {
				t.Errorf("want the one message, got %s (%v)", b, err)
			}
		}},
		{"poll with a message waiting", "GET", "/rooms/github.com/o/r/messages/poll?after=0&timeout=5000", "", 200, "application/json", func(t *testing.T, b []byte) {
			var p pollPage
			if err := json.Unmarshal(b, &p); err != nil || len(p.Messages) != 1 {
				t.Errorf("want the one message at once, got %s (%v)", b, err)
			}
		}},
		{"health", "GET", "/api/health", "", 200, "application/json", nil},
		{"room page", "GET", "/in/github.com/o/r", "", 200, "text/html", func(t *testing.T, b []byte) {
			if !bytes.Contains(bytes.ToLower(b), []byte("<html")) {
				t.Errorf("room page is not HTML: %.200s", b)
			}
		}},
		{"unknown path", "GET", "/no/such/route", "", 404, "application/json", func(t *testing.T, b []byte) {
			if m := decodeJSON(t, b); m["error"] == nil {
				t.Errorf("want an error field, got %s", b)
			}
		}},
		{"unknown method", "DELETE", "/rooms/github.com/o/r/messages", "", 404, "application/json", func(t *testing.T, b []byte) {
			if m := decodeJSON(t, b); m["error"] == nil {
				t.Errorf("want an error field, got %s", b)
			}
		}},
		{"body over 10 MB", "POST", "/rooms/github.com/o/r/messages", strings.Repeat("x", maxRequestBody+1), 413, "application/json", func(t *testing.T, b []byte) {
			if m := decodeJSON(t, b); m["error"] == nil {
				t.Errorf("want an error field, got %s", b)
			}
		}},
	}
	// In order: the reads expect the message sent before them.
	for _, tt := range tests {
		var body io.Reader
		if tt.body != "" {
			body = strings.NewReader(tt.body)
		}
		status, ct, b := call(t, tt.method, in.URL+tt.path, body)
		if status != tt.status || !strings.HasPrefix(ct, tt.contentType) {
			t.Errorf("%s: %s %s = %d %q, want %d %q: %.300s", tt.name, tt.method, tt.path, status, ct, tt.status, tt.contentType, b)
			continue
		}
		if tt.check != nil {
			t.Run(tt.name, func(t *testing.T) { tt.check(t, b) })
		}
	}
}

// workerPoll starts a long-poll of a fresh worker session in room (made
// on st) and returns once the runner serves it: once the session's
// delivery connection, which the poll opens before it waits, is open.
func workerPoll(t *testing.T, in *instance, st *store.Store, room string, timeout time.Duration) <-chan pollResult {
	t.Helper()
	w := storetest.Register(t, st, room, "Waiter", letagents.SessionWorker, time.Now())
	req, err := http.NewRequest("GET", fmt.Sprintf("%s/rooms/%s/messages/poll?after=0&timeout=%d",
		in.URL, url.PathEscape(room), timeout.Milliseconds()), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.OwnerToken)
	req.Header.Set(wire.SessionIDHeader, letagents.WireID(letagents.AgentSessionPrefix, w.ID))
	req.Header.Set(wire.SessionTokenHeader, w.Token)
	polled := parkPoll(req)
	testwait.Until(t, "the poll to reach the runner", func() bool {
		a, err := st.AgentSession(context.Background(), room, w.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-polled:
			t.Fatalf("poll answered before it waited: %+v", r)
		default:
		}
		return a.OpenConnections > 0
	})
	return polled
}

func TestPollWokenBySend(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	in := start(t, map[string]string{"DB_URL": d.URL, "PORT": "0", "LETAGENTS_LOCALDEV_DIR": t.TempDir()})
	const room = "localdev wake room"
	polled := workerPoll(t, in, store.New(d.Pool), room, 20*time.Second)
	if status, _, b := call(t, "POST", in.URL+"/rooms/localdev%20wake%20room/messages", strings.NewReader(`{"sender":"t","text":"wake up"}`)); status != 201 {
		t.Fatalf("send: %d %s", status, b)
	}
	// A poll nobody wakes answers at its timeout with no messages.
	select {
	case r := <-polled:
		if r.err != nil || r.status != 200 || len(r.page.Messages) != 1 || r.page.Messages[0].Text != "wake up" {
			t.Fatalf("poll got %+v, want 200 with the message", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("poll not answered within 60 s")
	}
}

func TestShutdownAnswersParkedPoll(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	in := start(t, map[string]string{"DB_URL": d.URL, "PORT": "0", "LETAGENTS_LOCALDEV_DIR": t.TempDir()})
	// Longer than httpserver.ShutdownGrace: only the drain can answer it in time.
	polled := workerPoll(t, in, store.New(d.Pool), "localdev shutdown room", 60*time.Second)
	stopping := time.Now()
	if err := in.stopped(t); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
	// Had the drain not answered the poll, shutdown would have waited out
	// its grace for it.
	if took := time.Since(stopping); took >= httpserver.ShutdownGrace {
		t.Errorf("run took %v to stop: the parked poll held the shutdown", took)
	}
	select {
	case r := <-polled:
		if r.err != nil || r.status != 200 || r.page.Messages == nil || len(r.page.Messages) != 0 {
			t.Errorf("parked poll got %+v, want 200 with no messages", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("parked poll got no answer on shutdown")
	}
}

// embeddedDir is a folder for an embedded database. As root, PostgreSQL
// runs as the postgres user, who must reach it (t.TempDir makes 0700
// folders), or the cluster would move to a folder of its own outside it
// that nobody cleans up.
func embeddedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		for _, p := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestEmbeddedDatabase runs with DB_URL unset: run starts a private
// PostgreSQL in LETAGENTS_LOCALDEV_DIR and stops it on the way out.
func TestEmbeddedDatabase(t *testing.T) {
	t.Parallel()
	dir := embeddedDir(t)
	in := start(t, map[string]string{"PORT": "0", "LETAGENTS_LOCALDEV_DIR": dir})
	if want := "database: embedded PostgreSQL, data in " + dir; !strings.Contains(in.stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, in.stdout)
	}
	status, _, b := call(t, "POST", in.URL+"/projects", nil)
	if status != 201 {
		t.Fatalf("POST /projects = %d %s, want 201", status, b)
	}
	if err := in.stopped(t); err != nil {
		t.Fatalf("run returned %v, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "embeddedpg.log")); err != nil {
		t.Errorf("no embedded database log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "PG_VERSION")); err != nil {
		t.Errorf("no cluster in %s: %v", dir, err)
	}
	// Stopped means pg_ctl removed the pid file.
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); err == nil {
		t.Errorf("embedded database still running after run returned")
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://u:secret@db:5432/x?sslmode=disable", "postgres://u:xxxxx@db:5432/x?sslmode=disable"},
		{"postgres://u@db/x", "postgres://u@db/x"},
		{"postgres://u@db/x?password=secret", "postgres://u@db/x?password=xxxxx"},
		{"host=db user=u password=secret dbname=x", "host=db user=u password=xxxxx dbname=x"},
		{"host=db password='a b\\' c' dbname=x", "host=db password=xxxxx dbname=x"},
	}
	for _, tt := range tests {
		if got := redactURL(tt.in); got != tt.want || strings.Contains(got, "secret") {
			t.Errorf("redactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PORT": "nope"}, "PORT"},
		{map[string]string{"DB_SECRET_ARN": "arn:aws:secretsmanager:x"}, "DB_URL"},
	}
	for _, tt := range tests {
		err := run(context.Background(), func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run with %v = %v, want an error naming %s", tt.env, err, tt.want)
		}
	}
}

// TestSlowBodyCut: a client that starts a body and stops sending is
// answered 408 once LETAGENTS_BODY_TIMEOUT_MS has passed, its connection
// closed, rather than holding it forever.
func TestSlowBodyCut(t *testing.T) {
	t.Parallel()
	env := dbEnv(t)
	env["LETAGENTS_BODY_TIMEOUT_MS"] = "1000"
	in := start(t, env)
	c, err := net.Dial("tcp", strings.TrimPrefix(in.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	begin := time.Now()
	if _, err := io.WriteString(c, "POST /rooms/slow/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// Only a runner that never cuts the body runs into this bound.
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer after %v: %v", time.Since(begin), err)
	}
	resp.Body.Close()
	if took := time.Since(begin); resp.StatusCode != http.StatusRequestTimeout || !resp.Close || took < time.Second {
		t.Errorf("got %d (close %v) after %v, want 408 closing the connection after the 1 s body timeout", resp.StatusCode, resp.Close, took)
	}
}

// TestLogsAreJSON: everything run logs is JSON, as docs/operations.md says, and that
// every room is open is said once, on stdout, not by each function.
func TestLogsAreJSON(t *testing.T) {
	t.Parallel()
	in := start(t, dbEnv(t))
	if status, _, b := call(t, "GET", in.URL+"/api/health", nil); status != 200 {
		t.Fatalf("health: %d %s", status, b)
	}
	if err := in.stopped(t); err != nil {
		t.Fatal(err)
	}
	logs := strings.TrimSpace(in.stderr.String())
	if logs == "" {
		t.Fatal("run logged nothing, not even the request")
	}
	for line := range strings.SplitSeq(logs, "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
	if strings.Contains(logs, "LETAGENTS_REPO_ACCESS") {
		t.Errorf("the log names LETAGENTS_REPO_ACCESS, which the user did not set:\n%s", logs)
	}
	if n := strings.Count(in.stdout.String(), "is open to anyone"); n != 1 {
		t.Errorf("stdout says %d times that every room is open, want once:\n%s", n, in.stdout)
	}
	if n := strings.Count(in.stdout.String(), localOwnerBanner); n != 1 {
		t.Errorf("stdout says %d times %q (sign-in is off, access open), want once:\n%s", n, localOwnerBanner, in.stdout)
	}
}

func TestLocalAuth(t *testing.T) {
	t.Parallel()
	// The local owner comes with sign-in off and every room open, and
	// only then; LETAGENTS_LOCAL_OWNER=off keeps it away.
	tests := []struct {
		name       string
		env        map[string]string
		open       bool
		contains   string
		localOwner bool
	}{
		{"no GitHub app", nil, true, "off (set GITHUB_CLIENT_ID", true},
		{"no GitHub app, no local owner", map[string]string{"LETAGENTS_LOCAL_OWNER": "off"}, true, "off (set GITHUB_CLIENT_ID", false},
		{"no GitHub app, repo rooms follow GitHub", map[string]string{"LETAGENTS_REPO_ACCESS": "github"}, false, "off (set GITHUB_CLIENT_ID", false},
		{"GitHub app", map[string]string{"GITHUB_CLIENT_ID": "id", "GITHUB_CLIENT_SECRET": "s"}, false, "GitHub, tokens sealed with the key file", false},
		{"GitHub app, rooms open", map[string]string{"GITHUB_CLIENT_ID": "id", "GITHUB_CLIENT_SECRET": "s", "LETAGENTS_REPO_ACCESS": "open"}, true, "GitHub", false},
	}
	for _, tt := range tests {
		getenv := func(k string) string { return tt.env[k] }
		cfg, err := config.Load(getenv)
		if err != nil {
			t.Fatal(err)
		}
		got := localAuth(&cfg, getenv, "dir")
		if cfg.RepoAccess == tt.open || !strings.Contains(got, tt.contains) || strings.Contains(got, "open to anyone") != tt.open {
			t.Errorf("%s: localAuth = %q, repo access %v; want it to say %q and open %v", tt.name, got, cfg.RepoAccess, tt.contains, tt.open)
		}
		if cfg.LocalOwner != tt.localOwner {
			t.Errorf("%s: local owner %v, want %v", tt.name, cfg.LocalOwner, tt.localOwner)
		}
	}
}
