package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

// wantRateLimited fails unless r is a 429 RATE_LIMITED naming what, with
// Retry-After retryAfter (seconds).
func wantRateLimited(t *testing.T, r reply, what, retryAfter string) {
	t.Helper()
	r.want(t, 429, "Too many "+what)
	if r.str("code") != "RATE_LIMITED" || r.header.Get("Retry-After") != retryAfter {
		t.Errorf("over the limit = %s (Retry-After %q); want code RATE_LIMITED, Retry-After %s", r.raw, r.header.Get("Retry-After"), retryAfter)
	}
}

func TestJoinRateLimit(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil) // 10 joins a minute: one every 6 s, bursts of 10
	// Half a second before a minute boundary: a calendar-minute counter
	// would let 10 more through a second later.
	now := e.clock.Now()
	e.clock.Advance(now.Truncate(time.Minute).Add(time.Minute - 500*time.Millisecond).Sub(now))
	for i := range 10 {
		e.call(t, http.MethodPost, fmt.Sprintf("/rooms/room-%d/join", i), "").want(t, 200, "")
	}
	wantRateLimited(t, e.call(t, http.MethodPost, "/rooms/one-more/join", ""), "room joins", "6")
	// The address is the connection's: a header any client can write
	// does not make it another caller.
	for _, xff := range []string{"203.0.113.1", "198.51.100.7, 127.0.0.1"} {
		r := e.callWith(context.Background(), t, http.MethodPost, "/rooms/one-more/join", "", http.Header{"X-Forwarded-For": {xff}})
		wantRateLimited(t, r, "room joins", "6")
	}
	e.clock.Advance(850 * time.Millisecond)
	wantRateLimited(t, e.call(t, http.MethodPost, "/rooms/one-more/join", ""), "room joins", "6") // 5.15 s left
	// Sending is not joining.
	e.call(t, http.MethodPost, "/rooms/room-1/messages", `{"sender": "a", "text": "b"}`).want(t, 201, "")
	e.clock.Advance(5150 * time.Millisecond)
	e.call(t, http.MethodPost, "/rooms/one-more/join", "").want(t, 200, "")
	wantRateLimited(t, e.call(t, http.MethodPost, "/rooms/two-more/join", ""), "room joins", "6")
}

// TestLegacyJoinsAreNotCounted pins the original, whose join limit counts
// POST /rooms/{room}/join alone: a dozen joins by code and named-room opens
// from one address all pass, and leave the join budget whole.
func TestLegacyJoinsAreNotCounted(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil) // 10 joins a minute
	code := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/projects/join/" + code, 200},
		{http.MethodPost, "/projects/room/legacy-room", 200}, // 201 the first time
	}
	for _, tt := range tests {
		for i := range 12 {
			if r := e.call(t, tt.method, tt.path, ""); r.status != tt.status && (i > 0 || r.status != 201) {
				t.Fatalf("%s %s, number %d: %d %s; want %d", tt.method, tt.path, i+1, r.status, r.raw, tt.status)
			}
		}
	}
	for i := range 10 {
		e.call(t, http.MethodPost, fmt.Sprintf("/rooms/room-%d/join", i), "").want(t, 200, "")
	}
	wantRateLimited(t, e.call(t, http.MethodPost, "/rooms/one-more/join", ""), "room joins", "6")
}

// TestJoinRateLimitRace sends 20 joins at once, half to each of two
// instances, with a limit of 10: exactly 10 get in. The joins line up
// behind a lock on the rate-limit table before any is decided, which
// proves they overlapped.
func TestJoinRateLimitRace(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	instances := []*env{e, e.twin(t)}
	const racers = 20
	release := e.db.HoldLock(t, `LOCK TABLE rate_buckets IN EXCLUSIVE MODE`)
	statuses := make([]int, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			resp, err := http.Post(fmt.Sprintf("%s/rooms/race-%d/join", instances[i%2].url, i), "application/json", nil)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	// Every connection of the instances' pool waits on the lock; the
	// other joins wait for a connection.
	e.db.AwaitLockWaiters(t, int(e.db.Pool.Config().MaxConns))
	release()
	wg.Wait()
	count := map[int]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		count[statuses[i]]++
	}
	if count[200] != 10 || count[429] != racers-10 {
		t.Errorf("statuses of %d racing joins with a limit of 10 = %v; want 10 × 200, %d × 429", racers, count, racers-10)
	}
}

func TestInviteRoomAndSendLimits(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_INVITE_ROOM_LIMIT": "2", "LETAGENTS_SEND_LIMIT": "3"})
	room := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	e.call(t, http.MethodPost, "/projects", "").want(t, 201, "")
	wantRateLimited(t, e.call(t, http.MethodPost, "/projects", ""), "new invite rooms", "30")

	send := func() reply {
		t.Helper()
		return e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "a", "text": "hi"}`)
	}
	for range 3 {
		send().want(t, 201, "")
	}
	wantRateLimited(t, send(), "messages", "20")
	// The legacy path counts against the same limit.
	wantRateLimited(t, e.call(t, http.MethodPost, "/projects/"+room+"/messages", `{"sender": "a", "text": "hi"}`), "messages", "20")
	if r := e.call(t, http.MethodGet, "/rooms/"+room+"/messages", "").want(t, 200, ""); len(r.messages(t)) != 3 {
		t.Errorf("messages after 3 allowed sends and 2 refused = %s; want 3", r.raw)
	}
	// Reading is not sending, nor creating rooms.
	e.call(t, http.MethodGet, "/rooms/"+room+"/messages", "").want(t, 200, "")
	e.clock.Advance(20 * time.Second)
	send().want(t, 201, "")
	wantRateLimited(t, send(), "messages", "20")
	e.clock.Advance(10 * time.Second) // 30 s since the two rooms: one back
	e.call(t, http.MethodPost, "/projects", "").want(t, 201, "")
	wantRateLimited(t, e.call(t, http.MethodPost, "/projects", ""), "new invite rooms", "30")
}

// TestSendRateCountsRefusals: the send's token is taken in its statement,
// and a send refused before it (a bad body) or by it (a session's
// credentials that sign nothing in) still spends one; over the rate, the
// 429 comes before any other refusal, and an agent's send is refused as
// an anonymous one is.
func TestSendRateCountsRefusals(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_SEND_LIMIT": "4"})
	room := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	w := storetest.Register(t, store.New(e.db.Pool), room, "Ada", letagents.SessionWorker, e.clock.Now())
	path := "/rooms/" + room + "/messages"
	agent := func(token string) reply {
		t.Helper()
		return e.as(t, w.OwnerToken, http.MethodPost, path,
			fmt.Sprintf(`{"text": "hi", "agent_session_id": %q, "agent_session_token": %q}`, letagents.WireID(letagents.AgentSessionPrefix, w.ID), token))
	}
	e.call(t, http.MethodPost, path, `{"sender": "a", "text":`).want(t, 400, "")
	if r := agent("not the session's").want(t, 401, ""); r.str("code") != letagents.CodeAgentSessionInvalid {
		t.Errorf("wrong session token = %s; want %s", r.raw, letagents.CodeAgentSessionInvalid)
	}
	if r := agent(w.Token).want(t, 201, ""); r.str("sender") != w.ActorLabel || r.str("source") != letagents.SourceAgent {
		t.Errorf("worker's send = %s; want sent as %q, source agent", r.raw, w.ActorLabel)
	}
	e.call(t, http.MethodPost, path, `{"sender": "a", "text": "hi"}`).want(t, 201, "")
	wantRateLimited(t, e.call(t, http.MethodPost, path, `{"sender": "a", "text":`), "messages", "15")
	wantRateLimited(t, agent(w.Token), "messages", "15")
	wantRateLimited(t, e.call(t, http.MethodPost, "/rooms/"+room+"%00/messages", `{"sender": "a", "text": "hi"}`), "messages", "15")
	if r := e.call(t, http.MethodGet, path, "").want(t, 200, ""); len(r.messages(t)) != 2 {
		t.Errorf("messages after 2 sends let through = %s; want 2", r.raw)
	}
}
