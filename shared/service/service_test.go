package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// A function refuses a schema older than its build, saying so in its log,
// and serves once Migrate (the deploy's step) has run.
func TestOpenChecksTheSchemaMigrateApplies(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	ctx := context.Background()
	var logs bytes.Buffer // Open logs before it returns; a rooms service starts nothing that logs later
	cfg, err := config.Load(func(k string) string { return map[string]string{"DB_URL": d.URL}[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.LogOutput = &logs
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}

	_, err = service.Open(ctx, cfg, api.GroupRooms)
	var old *db.SchemaError
	if !errors.As(err, &old) || old.Applied != 0 || old.Needed != latest {
		t.Fatalf("Open on an unmigrated database = %v, want a SchemaError (0, %d)", err, latest)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line); err != nil ||
		line["level"] != "ERROR" || !strings.Contains(fmt.Sprint(line["msg"]), "schema is older than this build") ||
		line["schema_version"] != 0.0 || line["needs_version"] != float64(latest) {
		t.Errorf("log = %q, want an ERROR line saying the schema is older, schema_version 0, needs_version %d", logs.String(), latest)
	}
	if _, err := service.OpenPool(ctx, cfg); !errors.As(err, &old) {
		t.Errorf("OpenPool on an unmigrated database = %v, want a SchemaError", err)
	}

	// The migrations connect directly: a proxy (here nowhere) is for pools.
	proxied := cfg
	proxied.DB.ProxyHost = "127.0.0.1:9"
	if v, err := service.Migrate(ctx, proxied, service.MigrateLimits{}); err != nil || v != latest {
		t.Fatalf("Migrate with DB_PROXY_HOST set = %d, %v; want %d, through the direct address", v, err, latest)
	}
	if _, err := service.Open(ctx, proxied, api.GroupRooms); err == nil {
		t.Error("Open with DB_PROXY_HOST pointing nowhere succeeded: the pool should go through the proxy")
	}
	svc, err := service.Open(ctx, cfg, api.GroupRooms)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if svc.Hub != nil {
		t.Error("a rooms-only service started a listener hub")
	}
	if _, err := svc.Store.CreateInviteRoom(ctx, 0); err != nil {
		t.Fatalf("store on the migrated schema: %v", err)
	}
	if v, err := service.Migrate(ctx, cfg, service.MigrateLimits{}); err != nil || v != latest {
		t.Errorf("Migrate again = %d, %v; want %d and nothing to do", v, err, latest)
	}
	if _, err := service.Open(ctx, config.Config{}); err == nil || !strings.Contains(err.Error(), "DB_URL") {
		t.Errorf("Open without a database = %v, want an error naming DB_URL", err)
	}
}

// Ready: not until the listener is connected, and no longer once draining.
func TestReady(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	tests := []struct {
		name  string
		group api.Group
		drain bool
		want  bool
	}{
		{"poll service, listener connected", api.GroupPoll, false, true},
		{"poll service, draining", api.GroupPoll, true, false},
		{"no listener to wait for", api.GroupRooms, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc, err := service.FromPool(context.Background(), config.Config{}, d.Pool, tt.group)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			h := svc.WithReadiness(http.NotFoundHandler())
			status := func() int {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, service.ReadyPath, nil))
				return rec.Code
			}
			if svc.Hub != nil {
				testwait.Until(t, "the listener to connect", func() bool { return svc.Hub.Stats().BackendPID != 0 })
			}
			if tt.drain {
				svc.Drain()
			}
			want := http.StatusOK
			if !tt.want {
				want = http.StatusServiceUnavailable
			}
			if got := status(); got != want || (got == http.StatusOK) != (svc.Ready() == nil) {
				t.Errorf("GET %s = %d (Ready %v), want %d", service.ReadyPath, got, svc.Ready(), want)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/elsewhere", nil))
			if rec.Code != http.StatusNotFound {
				t.Errorf("GET /elsewhere = %d, want the wrapped handler's 404", rec.Code)
			}
		})
	}
}

// TestLiveThroughADatabaseOutage: the load balancer's check (LivePath)
// passes while the database is unreachable, so no task is taken out of
// service or replaced for an outage of the database; readiness fails
// meanwhile, and a poll answers 503 DATABASE_UNAVAILABLE with
// Retry-After, which clients repeat. Once the database is back, all
// recover by themselves.
func TestLiveThroughADatabaseOutage(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if _, _, err := store.New(d.Pool).EnsureRoom(context.Background(), "failover"); err != nil {
		t.Fatal(err)
	}
	p := pgtest.NewProxy(t, d)
	// Pool and listener both reach the database through the proxy.
	svc, err := service.FromPool(context.Background(), config.Config{}, p.Pool(t, 2), api.GroupPoll)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr := make(chan net.Addr, 1)
	go func() {
		_ = httpserver.Serve(ctx, "127.0.0.1:0", svc.WithReadiness(svc.Handler), httpserver.Options{Drain: svc.Drain, Grace: 30 * time.Second,
			Ready: func(a net.Addr) { addr <- a }})
	}()
	base := httpserver.Listening(testwait.Recv(t, "the server to listen", addr))
	type answer struct {
		status     int
		retryAfter string
		code       string
	}
	get := func(path string) answer {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		var body struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return answer{resp.StatusCode, resp.Header.Get("Retry-After"), body.Code}
	}
	const poll = "/rooms/failover/messages/poll?timeout=0"
	serving := func() bool {
		return get(service.ReadyPath).status == http.StatusOK && get(poll).status == http.StatusOK
	}
	testwait.Until(t, "ready and serving polls", serving)

	p.Cut()
	testwait.Until(t, "readiness to fail with the listener down", func() bool {
		return get(service.ReadyPath).status == http.StatusServiceUnavailable
	})
	for range 3 {
		if a := get(service.LivePath); a.status != http.StatusOK {
			t.Errorf("GET %s during the outage = %d, want 200: the load balancer would take the task out of service", service.LivePath, a.status)
		}
		want := answer{http.StatusServiceUnavailable, strconv.Itoa(int(api.DatabaseRetryAfter.Seconds())), "DATABASE_UNAVAILABLE"}
		if a := get(poll); a != want {
			t.Errorf("GET %s during the outage = %+v, want %+v", poll, a, want)
		}
	}

	p.Restore()
	testwait.Until(t, "ready and serving polls again", serving)
	if a := get(service.LivePath); a.status != http.StatusOK {
		t.Errorf("GET %s after the outage = %d, want 200", service.LivePath, a.status)
	}
}

// TestBatchedSendsRingWhereAPollWaits: a service that serves polls has
// its store ring a room a poll of its own waits on with a batched send's
// message (store.Store.WaitersFrom): while the poll is parked, and no
// longer once it has answered.
func TestBatchedSendsRingWhereAPollWaits(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	svc, err := service.FromPool(context.Background(), config.Config{}, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, _, err := svc.Store.EnsureRoom(context.Background(), "waited"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	defer srv.Close()
	if svc.Store.RingsWithMessage("waited") {
		t.Error("a room nobody polls rings with its batched sends' messages")
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/rooms/waited/messages/poll?timeout=60000")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	testwait.Until(t, "the poll to park", func() bool { return svc.Store.RingsWithMessage("waited") })
	if _, _, err := svc.Store.SendMessage(context.Background(), letagents.NewMessage{RoomID: "waited", Sender: "ann", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, "the poll's answer", answered); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the room to have no waiter", func() bool { return !svc.Store.RingsWithMessage("waited") })
}

func TestServeDrainsParkedPollsOnShutdown(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	svc, err := service.FromPool(context.Background(), config.Config{}, d.Pool, api.GroupPoll)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, _, err := svc.Store.EnsureRoom(context.Background(), "shutdown"); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		// A shutdown budget only a broken drain would use up.
		done <- httpserver.Serve(ctx, "127.0.0.1:0", svc.Handler, httpserver.Options{Drain: svc.Drain, Grace: 30 * time.Second,
			Ready: func(a net.Addr) { addr <- a }})
	}()
	url := httpserver.Listening(testwait.Recv(t, "the server to listen", addr))
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/rooms/shutdown/messages/poll?timeout=60000")
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	testwait.Until(t, "the poll to park", func() bool { return svc.Hub.Stats().Subscribers > 0 })
	stop()
	if code := testwait.Recv(t, "the parked poll's answer on shutdown", answered); code != http.StatusOK {
		t.Errorf("parked poll answered %d on shutdown, want 200", code)
	}
	if err := testwait.Recv(t, "Serve to return", done); err != nil {
		t.Errorf("Serve = %v", err)
	}
}
