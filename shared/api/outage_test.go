package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// newProxiedEnv is newEnv whose pool of two connections reaches the
// database through a proxy the test can cut.
func newProxiedEnv(t *testing.T) (*env, *pgtest.Proxy) {
	t.Helper()
	direct := newEnv(t, nil)
	p := pgtest.NewProxy(t, direct.db)
	e := *direct
	e.db = &pgtest.DB{Pool: p.Pool(t, 2), URL: p.URL, Schema: direct.db.Schema}
	e.serve(t)
	return &e, p
}

// TestDatabaseOutage: while the database is unreachable every request
// that needs it answers 503 with Retry-After and says so; once it is back,
// reads and polls succeed at once, although the pool still holds the
// connections the outage killed.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	e, p := newProxiedEnv(t)
	e.join(t, "outage")
	e.send(t, "outage", "a", "before")

	p.Cut()
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/rooms/outage/messages", ""},
		{http.MethodGet, "/rooms/outage/messages/poll?after=msg_0&timeout=0", ""},
		{http.MethodPost, "/rooms/outage/messages", `{"sender": "a", "text": "lost"}`},
		{http.MethodGet, "/rooms/outage/tasks", ""},
	} {
		r := e.call(t, c.method, c.path, c.body).want(t, http.StatusServiceUnavailable, "database is unavailable")
		if got, want := r.header.Get("Retry-After"), strconv.Itoa(int(api.DatabaseRetryAfter.Seconds())); got != want {
			t.Errorf("%s %s: Retry-After %q, want %q", c.method, c.path, got, want)
		}
		if r.str("code") != "DATABASE_UNAVAILABLE" {
			t.Errorf("%s %s: code %q, want DATABASE_UNAVAILABLE", c.method, c.path, r.str("code"))
		}
	}
	p.Restore()

	for _, path := range []string{"/rooms/outage/messages", "/rooms/outage/messages/poll?after=msg_0&timeout=0"} {
		pgtest.Fill(t, e.db.Pool, 2)
		p.Restart() // both pooled connections die unnoticed
		if got := ids(e.call(t, http.MethodGet, path, "").want(t, 200, "").messages(t)); len(got) != 1 {
			t.Errorf("GET %s right after a restart = %v, want the one message", path, got)
		}
	}
}
