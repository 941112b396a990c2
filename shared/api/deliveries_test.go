package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// worker registers a worker session straight in the store, at the env's
// clock (a sign-in would move it), and joins it to the room.
func (e *env) worker(t *testing.T, room, name string) session {
	t.Helper()
	w := storetest.Register(t, store.New(e.db.Pool), room, name, letagents.SessionWorker, e.clock.Now())
	e.as(t, w.OwnerToken, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	return session{id: letagents.WireID(letagents.AgentSessionPrefix, w.ID), token: w.Token, label: w.ActorLabel, owner: w.OwnerToken}
}

// deliveryClosed waits until the session id (as_N) holds no open
// delivery connection: a woken poll answers before its connection's
// close lands, so a test that moves its clock on must wait for it.
func (e *env) deliveryClosed(t *testing.T, id string) {
	t.Helper()
	n, ok := letagents.ParseWireID(letagents.AgentSessionPrefix, id)
	if !ok {
		t.Fatalf("session id %q", id)
	}
	testwait.Until(t, "the poll's delivery connection to close", func() bool {
		var open int
		if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM delivery_connections WHERE agent_session_id = $1`, n).Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open == 0
	})
}

// agentNames lists the display names of a message's agent list (mentions,
// seen_by, unread_by).
func agentNames(m map[string]any, key string) []string {
	out := []string{}
	list, _ := m[key].([]any)
	for _, a := range list {
		name, _ := a.(map[string]any)["display_name"].(string)
		out = append(out, name)
	}
	return out
}

func TestUnreadTakesAndReceipts(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	b := e.worker(t, "team", "Builder")
	r := e.worker(t, "team", "Reviewer")
	ann := r.owner // a person: her owner token, no session
	// Messages are stamped by the database's clock, surfacings by the
	// service's, here a test clock standing still: moved ahead of the
	// sends, it keeps latencies positive, as they are between real clocks.
	e.clock.Advance(30 * time.Second)

	asked := e.as(t, ann, http.MethodPost, "/rooms/team/messages", `{"sender": "ann", "text": "@Builder can you look at the test?"}`).want(t, 201, "")
	if got := agentNames(asked.obj, "mentions"); !slices.Equal(got, []string{"Builder"}) {
		t.Errorf("the send answer mentions %v, want [Builder]: %s", got, asked.raw)
	}
	plain := e.as(t, ann, http.MethodPost, "/rooms/team/messages", `{"sender": "ann", "text": "lunch at one"}`).want(t, 201, "")
	if _, ok := plain.obj["mentions"]; ok {
		t.Errorf("a message without mentions carries a mentions key: %s", plain.raw)
	}

	// Builder's hook takes what is addressed to it: the mention, asked.
	take := e.callWith(t.Context(), t, http.MethodPost, "/rooms/team/messages/unread", `{"filter": "addressed", "answer_within_ms": 60000}`, b.headers()).want(t, 200, "")
	msgs := take.messages(t)
	if len(msgs) != 1 || msgs[0]["id"] != asked.str("id") || msgs[0]["addressed"] != "mention" || msgs[0]["asked"] != true ||
		take.obj["asked"] != true || take.obj["has_more"] != false || take.str("cursor") != plain.str("id") || take.str("agent_session_id") != b.id {
		t.Fatalf("Builder's addressed take = %s; want only %s (mention, asked), cursor %s", take.raw, asked.str("id"), plain.str("id"))
	}
	// Nothing twice; and the filter passed over the plain message.
	again := e.callWith(t.Context(), t, http.MethodPost, "/rooms/team/messages/unread", "", b.headers()).want(t, 200, "")
	if len(again.messages(t)) != 0 {
		t.Errorf("Builder's second take = %s, want nothing", again.raw)
	}

	// Reviewer waits: the poll surfaces both.
	poll := e.callWith(t.Context(), t, http.MethodGet, "/rooms/team/messages/poll?after=msg_0&timeout=0", "", r.headers()).want(t, 200, "")
	if got := ids(poll.messages(t)); !slices.Equal(got, []string{asked.str("id"), plain.str("id")}) {
		t.Fatalf("Reviewer's poll = %v", got)
	}
	// A plain read by a person surfaces nothing to anyone.
	e.as(t, ann, http.MethodGet, "/rooms/team/messages", "").want(t, 200, "")

	d := e.as(t, ann, http.MethodGet, "/rooms/team/messages/"+asked.str("id")+"/deliveries", "").want(t, 200, "")
	list, _ := d.obj["deliveries"].([]any)
	var vias []string
	for _, x := range list {
		x := x.(map[string]any)
		vias = append(vias, x["display_name"].(string)+":"+x["via"].(string))
		if !isTimestamp(x["surfaced_at"].(string)) || x["latency_ms"].(float64) < 0 || !strings.HasPrefix(x["agent_session_id"].(string), "as_") {
			t.Errorf("delivery %v: want a timestamp, a latency and a session id", x)
		}
	}
	if !slices.Equal(vias, []string{"Builder:hook", "Reviewer:wait"}) || d.str("message_id") != asked.str("id") || !isTimestamp(d.str("sent_at")) {
		t.Errorf("deliveries of %s = %s; want Builder by hook, then Reviewer by wait", asked.str("id"), d.raw)
	}

	// The page's read: receipts on each message. Builder never surfaced
	// the plain message: two minutes on, it is unread by Builder.
	page := e.as(t, ann, http.MethodGet, "/rooms/team/messages?render=html", "").want(t, 200, "")
	pm := page.messages(t)
	if got := agentNames(pm[0], "seen_by"); !slices.Equal(got, []string{"Builder", "Reviewer"}) {
		t.Errorf("seen_by of %s = %v, want [Builder Reviewer]", asked.str("id"), got)
	}
	if got := agentNames(pm[1], "unread_by"); len(got) != 0 {
		t.Errorf("unread_by of a message just sent = %v, want none yet", got)
	}
	e.clock.Advance(letagents.UnreadAfter + time.Second)
	page = e.as(t, ann, http.MethodGet, "/rooms/team/messages?render=html", "").want(t, 200, "")
	pm = page.messages(t)
	if got := agentNames(pm[1], "unread_by"); !slices.Equal(got, []string{"Builder"}) {
		t.Errorf("unread_by of %s after %v = %v, want [Builder]", plain.str("id"), letagents.UnreadAfter, got)
	}
	if got := agentNames(pm[1], "seen_by"); !slices.Equal(got, []string{"Reviewer"}) {
		t.Errorf("seen_by of %s = %v, want [Reviewer]", plain.str("id"), got)
	}
	if _, ok := e.as(t, ann, http.MethodGet, "/rooms/team/messages", "").want(t, 200, "").messages(t)[0]["seen_by"]; ok {
		t.Error("an agent's read (no render) carries seen_by; want receipts only on the page's reads")
	}

	// The participants show each worker's latency.
	roster := e.as(t, ann, http.MethodGet, "/rooms/team/participants", "").want(t, 200, "")
	counts := map[string]float64{}
	for _, p := range roster.obj["participants"].([]any) {
		p := p.(map[string]any)
		if l, ok := p["delivery_latency"].(map[string]any); ok {
			counts[p["display_name"].(string)] = l["count"].(float64)
			if l["p50_ms"].(float64) < 0 || l["p99_ms"].(float64) < l["p50_ms"].(float64) {
				t.Errorf("%s's latency %v: want 0 ≤ p50 ≤ p99", p["display_name"], l)
			}
		}
	}
	if counts["Builder"] != 1 || counts["Reviewer"] != 2 {
		t.Errorf("delivery latency counts = %v; want Builder 1, Reviewer 2: %s", counts, roster.raw)
	}
}

func TestUnreadOnlyIfAsked(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	b := e.worker(t, "stop", "Builder")
	r := e.worker(t, "stop", "Reviewer")
	stop := func() reply {
		t.Helper()
		return e.callWith(t.Context(), t, http.MethodPost, "/rooms/stop/messages/unread", `{"only_if_asked": true}`, b.headers()).want(t, 200, "")
	}
	e.as(t, r.owner, http.MethodPost, "/rooms/stop/messages", `{"text": "@Builder fyi", `+r.creds()+`}`).want(t, 201, "")
	if got := stop(); len(got.messages(t)) != 0 || got.obj["asked"] != false {
		t.Fatalf("only-if-asked after an agent's mention = %s; want nothing taken, asked false", got.raw)
	}
	q := e.as(t, r.owner, http.MethodPost, "/rooms/stop/messages", `{"sender": "ann", "text": "@Builder which branch?"}`).want(t, 201, "")
	got := stop()
	if ids := ids(got.messages(t)); len(ids) != 2 || ids[1] != q.str("id") || got.obj["asked"] != true {
		t.Errorf("only-if-asked after a person's question = %s; want both unread messages, asked", got.raw)
	}
}

func TestUnreadRefusals(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	b := e.worker(t, "refuse", "Builder")
	other := e.worker(t, "elsewhere", "Other")
	msg := e.as(t, b.owner, http.MethodPost, "/rooms/refuse/messages", `{"sender": "ann", "text": "hi"}`).want(t, 201, "").str("id")
	for _, tt := range []struct {
		name, method, path, body string
		h                        http.Header
		status                   int
		msg                      string
	}{
		{"no session", http.MethodPost, "/rooms/refuse/messages/unread", "", http.Header{"Authorization": {"Bearer " + b.owner}}, 403, "agent session"},
		{"no token", http.MethodPost, "/rooms/refuse/messages/unread", "", nil, 403, "agent session"},
		{"bad filter", http.MethodPost, "/rooms/refuse/messages/unread", `{"filter": "mentions"}`, b.headers(), 400, "filter must be"},
		{"limit too big", http.MethodPost, "/rooms/refuse/messages/unread", `{"limit": 51}`, b.headers(), 400, "limit must be"},
		{"negative limit", http.MethodPost, "/rooms/refuse/messages/unread", `{"limit": -1}`, b.headers(), 400, "limit must be"},
		{"not JSON", http.MethodPost, "/rooms/refuse/messages/unread", `{"limit":`, b.headers(), 400, "not a JSON object"},
		{"answer within too long", http.MethodPost, "/rooms/refuse/messages/unread", `{"answer_within_ms": 60001}`, b.headers(), 400, "answer_within_ms must be"},
		{"answer within negative", http.MethodPost, "/rooms/refuse/messages/unread", `{"answer_within_ms": -1}`, b.headers(), 400, "answer_within_ms must be"},
		{"another room's session", http.MethodPost, "/rooms/refuse/messages/unread", "", other.headers(), 403, "another room"},
		{"no such message", http.MethodGet, "/rooms/refuse/messages/msg_999/deliveries", "", b.headers(), 404, "Message not found"},
		{"not a message id", http.MethodGet, "/rooms/refuse/messages/nonsense/deliveries", "", b.headers(), 404, "Message not found"},
		{"msg_0", http.MethodGet, "/rooms/refuse/messages/msg_0/deliveries", "", b.headers(), 404, "Message not found"},
	} {
		got := e.callWith(t.Context(), t, tt.method, tt.path, tt.body, tt.h)
		if got.status != tt.status || !strings.Contains(got.str("error"), tt.msg) {
			t.Errorf("%s: %s %s = %d %s; want %d with %q", tt.name, tt.method, tt.path, got.status, got.raw, tt.status, tt.msg)
		}
	}
	if got := e.callWith(t.Context(), t, http.MethodGet, "/rooms/refuse/messages/"+msg+"/deliveries", "", b.headers()).want(t, 200, ""); len(got.obj["deliveries"].([]any)) != 0 {
		t.Errorf("deliveries of a message nobody surfaced = %s, want an empty list", got.raw)
	}
}

// TestWokenPollAnswersBeforeItsDeliveryCloses: an agent's woken poll has
// its answer before the close of its delivery connection (a database
// write, here held at the connection's row) is done: a burst wakes
// thousands of polls, whose closes queue for the pool.
func TestWokenPollAnswersBeforeItsDeliveryCloses(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	r := e.worker(t, "flush", "Reviewer")
	last := e.as(t, r.owner, http.MethodPost, "/rooms/flush/messages", `{"sender": "ann", "text": "before"}`).want(t, 201, "").str("id")
	answer := e.pollWith(t, "/rooms/flush/messages/poll?after="+last+"&timeout=120000", r.headers())
	e.parked(t, 1)
	var open int
	if err := e.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM delivery_connections`).Scan(&open); err != nil || open != 1 {
		t.Fatalf("open delivery connections = %d, %v; want the parked poll's", open, err)
	}
	release := e.db.HoldLock(t, `SELECT 1 FROM delivery_connections FOR UPDATE`)
	id := e.as(t, r.owner, http.MethodPost, "/rooms/flush/messages", `{"sender": "ann", "text": "wake up"}`).want(t, 201, "").str("id")
	got := await(t, answer).want(t, 200, "")
	if ids := ids(got.messages(t)); !slices.Equal(ids, []string{id}) {
		t.Errorf("woken poll = %s, want %s", got.raw, id)
	}
	e.db.AwaitLockWaiters(t, 1) // the close, still waiting
	release()
}
