package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

type countedKey struct{}

// tripCounter counts the statements run for requests marked countedKey:
// each is a round trip to the database.
type tripCounter struct{ n atomic.Int64 }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(countedKey{}) != nil {
		c.n.Add(1)
	}
	return ctx
}

func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// counted serves e's service again on a pool of its own whose statements
// are counted per request.
func (e *env) counted(t *testing.T) (url string, trips *tripCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	trips = &tripCounter{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.FromPool(context.Background(), e.cfg, pool)
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc.Handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), countedKey{}, true)))
	}))
	t.Cleanup(func() {
		svc.Drain()
		srv.Close()
		svc.Close()
		pool.Close()
	})
	return srv.URL, trips
}

// TestSendRoundTrips counts the database round trips of each kind of
// send: an agent's (owner token and worker session, or owner token and a
// name) is one statement, its identity read in it; an anonymous one reads
// the names held first. Only a token that signs nobody in costs more. Each send runs twice and the second is counted, so that the
// connection has its statements prepared.
func TestSendRoundTrips(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	// A named room: an invite code costs its resolution, on every route.
	const room = "round-trips"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	w := storetest.Register(t, store.New(e.db.Pool), room, "Ada", letagents.SessionWorker, e.clock.Now())
	url, trips := e.counted(t)
	path := "/rooms/" + room + "/messages"
	session := fmt.Sprintf(`"agent_session_id": %q, "agent_session_token": %q`, letagents.WireID(letagents.AgentSessionPrefix, w.ID), w.Token)
	tests := []struct {
		name, token, body string
		status, trips     int
	}{
		{"agent with a worker session", w.OwnerToken, `{"text": "hi", ` + session + `}`, 201, 1},
		{"agent under its session's label", w.OwnerToken, fmt.Sprintf(`{"sender": %q, "text": "hi"}`, w.ActorLabel), 201, 1},
		{"agent under a plain name", w.OwnerToken, `{"sender": "helper", "text": "hi"}`, 201, 1},
		{"anonymous", "", `{"sender": "someone", "text": "hi"}`, 201, 2},
		// The statement finds no account and sends nothing; the token is
		// looked up as before, and the send judged as an anonymous one.
		{"owner token that signs nobody in", "0123456789abcdef", `{"sender": "someone else", "text": "hi"}`, 201, 4},
	}
	for _, tt := range tests {
		var got int64
		for range 2 {
			before := trips.n.Load()
			h := http.Header{}
			if tt.token != "" {
				h.Set("Authorization", "Bearer "+tt.token)
			}
			r := (&env{url: url}).callWith(context.Background(), t, http.MethodPost, path, tt.body, h)
			r.want(t, tt.status, "")
			got = trips.n.Load() - before
		}
		if got != int64(tt.trips) {
			t.Errorf("%s: %d round trips, want %d", tt.name, got, tt.trips)
		}
	}
}
