package api_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

type countedKey struct{}

// tripCounter counts the statements and batches run for requests marked
// countedKey: each is a round trip to the database. by counts them by the request's
// countAsHeader, when it has one, as they start, and ended as they end.
type tripCounter struct {
	n         atomic.Int64
	by, ended sync.Map // countAsHeader's value → *atomic.Int64
}

// countAsHeader names a request's own count in tripCounter.by.
const countAsHeader = "X-Count-As"

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if as, ok := ctx.Value(countedKey{}).(string); ok {
		c.n.Add(1)
		bump(&c.by, as)
	}
	return ctx
}

func (c *tripCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if as, ok := ctx.Value(countedKey{}).(string); ok {
		bump(&c.ended, as)
	}
}

// A batch (a page's read: its settings, then its statement) goes in one
// round trip: it counts as one statement.
func (c *tripCounter) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return c.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{})
}

func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *tripCounter) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	c.TraceQueryEnd(ctx, conn, pgx.TraceQueryEndData{})
}

// bump adds one to counts[as], unless as is empty.
func bump(counts *sync.Map, as string) {
	if as != "" {
		n, _ := counts.LoadOrStore(as, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
}

// of is the count of the requests marked as, of statements started.
func (c *tripCounter) of(as string) int64 { return load(&c.by, as) }

// endedOf is the count of the requests marked as, of statements ended.
func (c *tripCounter) endedOf(as string) int64 { return load(&c.ended, as) }

func load(counts *sync.Map, as string) int64 {
	if n, ok := counts.Load(as); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// counted serves e's service again on a pool of its own whose statements
// are counted per request.
func (e *env) counted(t *testing.T) (url string, trips *tripCounter, svc *service.Service) {
	t.Helper()
	trips = &tripCounter{}
	url, svc = e.traced(t, trips)
	return url, trips, svc
}

// traced serves e's service again on a pool of its own whose statements
// go through tracer, each request's context marked countedKey with its
// countAsHeader.
func (e *env) traced(t *testing.T, tracer pgx.QueryTracer) (url string, svc *service.Service) {
	t.Helper()
	svc, err := service.FromPool(context.Background(), e.cfg, e.db.TracedPool(t, tracer))
	if err != nil {
		t.Fatal(err)
	}
	// The hub rings every subscriber once on its first connection's first
	// pass (anything sent before it went unheard): a poll that came before
	// it would read once more than the counts say. A subscription returns
	// only after that pass.
	first, err := svc.Hub.Subscribe(context.Background(), svc.Store.RoomChannel("the hub's first connection"))
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc.Handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), countedKey{}, r.Header.Get(countAsHeader))))
	}))
	t.Cleanup(func() {
		svc.Drain()
		srv.Close()
		svc.Close()
	})
	return srv.URL, svc
}

// pollAnswer is what a poll answered, or why it could not.
type pollAnswer struct {
	body []byte
	err  error
}

// pollAs long-polls url as a request counted under as (tripCounter),
// answering on the channel it returns.
func pollAs(ctx context.Context, url, as string) <-chan pollAnswer {
	done := make(chan pollAnswer, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- pollAnswer{err: err}
			return
		}
		req.Header.Set(countAsHeader, as)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- pollAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- pollAnswer{body, err}
	}()
	return done
}

// TestSendRoundTrips counts the database round trips of each kind of
// send: an agent's (owner token and worker session, or owner token and a
// name) is one statement, its identity read in it; an anonymous one is
// one statement too, the names held read in it. Only a token that signs
// nobody in costs more. Each send runs twice and the second is counted,
// so that the connection has its statements prepared.
func TestSendRoundTrips(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	// A named room: an invite code costs its resolution, on every route.
	const room = "round-trips"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	w := storetest.Register(t, store.New(e.db.Pool), room, "Ada", letagents.SessionWorker, e.clock.Now())
	url, trips, _ := e.counted(t)
	path := "/rooms/" + room + "/messages"
	session := fmt.Sprintf(`"agent_session_id": %q, "agent_session_token": %q`, letagents.WireID(letagents.AgentSessionPrefix, w.ID), w.Token)
	tests := []struct {
		name, token, body string
		status, trips     int
	}{
		{"agent with a worker session", w.OwnerToken, `{"text": "hi", ` + session + `}`, 201, 1},
		{"agent under its session's label", w.OwnerToken, fmt.Sprintf(`{"sender": %q, "text": "hi"}`, w.ActorLabel), 201, 1},
		{"agent under a plain name", w.OwnerToken, `{"sender": "helper", "text": "hi"}`, 201, 1},
		{"anonymous", "", `{"sender": "someone", "text": "hi"}`, 201, 1},
		// The statement finds no account and sends nothing; the token is
		// looked up as before, and the send judged as an anonymous one.
		{"owner token that signs nobody in", "0123456789abcdef", `{"sender": "someone else", "text": "hi"}`, 201, 3},
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

// TestParkedPollReadsOnceWhereOthersWait counts the round trips of a
// long-poll until it is parked: the first in a room reads before it
// subscribes and again after (so that one answered at once LISTENs for
// nothing), and one that joins others already waiting subscribes first
// and reads once. Then two polls parked the same way are both woken by
// one message.
func TestParkedPollReadsOnceWhereOthersWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const room = "parked-reads"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	url, trips, svc := e.counted(t)
	// A poll subscribes to its room's channel and to its access's, at
	// once: the first one parked shows how many a poll counts for.
	perPoll := 0
	parked := func(polls int) {
		testwait.Until(t, fmt.Sprintf("%d polls parked", polls), func() bool {
			n := svc.Hub.Stats().Subscribers
			if perPoll == 0 && n > 0 {
				perPoll = n
			}
			return (n > 0) == (polls > 0) && n == polls*perPoll
		})
	}
	park := func(ctx context.Context, as string, polls int) <-chan pollAnswer {
		done := pollAs(ctx, url+"/rooms/"+room+"/messages/poll?timeout=60000", as)
		parked(polls)
		return done
	}

	// Counted from start to end: a poll's statements all come before it
	// waits, and its subscription closes after them, when it leaves.
	// The second starts once the first has read twice (before and after
	// subscribing), or the two would share a read; they are cancelled
	// once the second has read, which it may do after subscribing.
	ctx, cancel := context.WithCancel(context.Background())
	a := park(ctx, "first", 1)
	testwait.Until(t, "the first poll's read after subscribing", func() bool { return trips.of("first") >= 2 })
	b := park(ctx, "second", 2)
	testwait.Until(t, "the second poll's read", func() bool { return trips.endedOf("second") >= 1 })
	cancel()
	for _, c := range []<-chan pollAnswer{a, b} {
		testwait.Recv(t, "a cancelled poll to end", c)
	}
	parked(0)
	if first, second := trips.of("first"), trips.of("second"); second != first-1 {
		t.Errorf("a poll joining a waiting room made %d round trips, the first there %d; want one fewer (one read, not two)", second, first)
	}

	a, b = park(context.Background(), "", 1), park(context.Background(), "", 2)
	e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "wake up"}`).want(t, 201, "")
	for _, c := range []<-chan pollAnswer{a, b} {
		got := testwait.Recv(t, "a parked poll's answer", c)
		if got.err != nil || !strings.Contains(string(got.body), "wake up") {
			t.Errorf("parked poll answered %s (%v), want the message", got.body, got.err)
		}
	}
}

// TestPollAtTheHeardEndParksWithoutReading: where the listener is on a
// room's channels already and last heard of the message a poll's cursor
// names, the poll that comes back for what follows parks without a round
// trip (the ring's payload is the room's newest message), and the next
// message still wakes it.
//
// Not parallel: testwait.Blocked looks at every goroutine of the process,
// and another test's parked poll would do.
func TestPollAtTheHeardEndParksWithoutReading(t *testing.T) {
	e := newEnv(t, nil)
	const room = "heard-end"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	url, trips, svc := e.counted(t)
	// Another waiter keeps the listener on the channels an anonymous
	// poll of the room waits on, as other agents' polls and streams do.
	channels := []string{svc.Store.RoomAccessChannel(room), svc.Store.RoomChannel(room)}
	keeper, err := svc.Hub.SubscribeAll(context.Background(), channels...)
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close()
	first := e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "first"}`).want(t, 201, "").str("id")
	heard(t, svc, room, first)

	done := pollAs(context.Background(), url+"/rooms/"+room+"/messages/poll?timeout=60000&after="+first, "at-end")
	// Parked is waiting for the bell: whatever it read, it read before.
	testwait.Blocked(t, "the poll parked", "select", "api.(*server).nextMessages", "")
	if n := trips.of("at-end"); n != 0 {
		t.Errorf("a poll at the heard end made %d round trips to park, want 0", n)
	}
	e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "second"}`).want(t, 201, "")
	if got := testwait.Recv(t, "the parked poll's answer", done); got.err != nil || !strings.Contains(string(got.body), "second") ||
		strings.Contains(string(got.body), `"first"`) {
		t.Errorf("parked poll answered %s (%v), want the second message only", got.body, got.err)
	}
}

// TestWokenPollAnswersFromTheRing: a parked poll woken by the send of the
// message just after its cursor answers with the message its ring
// carries, with no round trip after the wake, and what it answers is
// what a read of the room gives. A message too long for a ring's payload
// is read, and so is a message after one the poll leaves out (a
// prompt-only one, which wakes it for nothing).
//
// Not parallel, as TestPollAtTheHeardEndParksWithoutReading.
func TestWokenPollAnswersFromTheRing(t *testing.T) {
	e := newEnv(t, nil)
	const room = "ring-answers"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	url, trips, _ := e.counted(t)
	last := e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "first"}`).want(t, 201, "").str("id")
	for _, c := range []struct {
		name, body string
		// passed is sent first: a message the poll leaves out, which it
		// reads when it wakes, and parks again.
		passed string
		trips  int64 // the woken poll's round trips
	}{
		{"a message", `{"sender": "someone", "text": "plain"}`, "", 0},
		{"a reply", `{"sender": "other", "text": "re", "reply_to": "msg_1"}`, "", 0},
		{"a message too long for a ring", `{"sender": "someone", "text": "` + strings.Repeat(`\"`, 4000) + `"}`, "", 1},
		{"a message after a prompt-only one", `{"sender": "someone", "text": "after"}`,
			`{"sender": "someone", "text": "", "agent_prompt_kind": "auto"}`, 2},
	} {
		as := "woken " + c.name
		cursor := last
		done := pollAs(context.Background(), url+"/rooms/"+room+"/messages/poll?timeout=60000&after="+cursor, as)
		testwait.Blocked(t, c.name+": the poll parked", "select", "api.(*server).nextMessages", "")
		parked := trips.of(as)
		if c.passed != "" {
			e.call(t, http.MethodPost, "/rooms/"+room+"/messages", c.passed).want(t, 201, "")
			testwait.Until(t, c.name+": the poll's read or answer", func() bool { return len(done) > 0 || trips.endedOf(as) > parked })
		}
		last = e.call(t, http.MethodPost, "/rooms/"+room+"/messages", c.body).want(t, 201, "").str("id")
		got := testwait.Recv(t, c.name+": the woken poll's answer", done)
		if got.err != nil {
			t.Fatalf("%s: %v", c.name, got.err)
		}
		if n := trips.of(as) - parked; n != c.trips {
			t.Errorf("%s: the woken poll made %d round trips, want %d", c.name, n, c.trips)
		}
		var woken, read struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(got.body, &woken); err != nil {
			t.Fatalf("%s: %s: %v", c.name, got.body, err)
		}
		if err := json.Unmarshal([]byte(e.call(t, http.MethodGet, "/rooms/"+room+"/messages?after="+cursor, "").want(t, 200, "").raw), &read); err != nil {
			t.Fatal(err)
		}
		if len(woken.Messages) != 1 || woken.Messages[0]["id"] != last || !reflect.DeepEqual(woken.Messages, read.Messages) {
			t.Errorf("%s: the woken poll answered %v, a read gives %v", c.name, woken.Messages, read.Messages)
		}
	}
}

// TestWokenStreamSendsFromTheRing: an open stream woken by the send of
// the message whose event is the next after its cursor sends that
// message with no round trip, as a read of the room gives it; a message
// too long for a ring's payload is read, and so is the prompt-only
// message the stream leaves out (the message after it then comes from
// its ring).
//
// Not parallel, as TestPollAtTheHeardEndParksWithoutReading.
func TestWokenStreamSendsFromTheRing(t *testing.T) {
	e := newEnv(t, nil)
	const room = "ring-streams"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	url, trips, _ := e.counted(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/rooms/"+room+"/messages/stream", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set(countAsHeader, "stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stream := newSSEStream(t, resp, cancel)
	for _, c := range []struct {
		name, body string
		passed     string // sent first: a message the stream leaves out
		trips      int64  // the stream's round trips for them
	}{
		{"a message", `{"sender": "someone", "text": "plain"}`, "", 0},
		{"a reply", `{"sender": "other", "text": "re", "reply_to": "msg_1"}`, "", 0},
		{"a message too long for a ring", `{"sender": "someone", "text": "` + strings.Repeat(`\"`, 4000) + `"}`, "", 1},
		{"a message after a prompt-only one", `{"sender": "someone", "text": "after"}`,
			`{"sender": "someone", "text": "", "agent_prompt_kind": "auto"}`, 1},
	} {
		// Waiting for its bell: whatever it read, it read before.
		testwait.Blocked(t, c.name+": the stream waiting", "select", "api.(*server).stream", "")
		waited := trips.endedOf("stream")
		if c.passed != "" {
			// Its read ends before the next send: a read that found the
			// next message too would leave that message's ring to be read.
			e.call(t, http.MethodPost, "/rooms/"+room+"/messages", c.passed).want(t, 201, "")
			testwait.Until(t, c.name+": the stream's read", func() bool { return trips.endedOf("stream") > waited })
		}
		id := e.call(t, http.MethodPost, "/rooms/"+room+"/messages", c.body).want(t, 201, "").str("id")
		ev, got := stream.event(t)
		if n := trips.endedOf("stream") - waited; n != c.trips {
			t.Errorf("%s: the stream made %d round trips, want %d", c.name, n, c.trips)
		}
		seq, _ := letagents.ParseMessageID(id)
		read := e.call(t, http.MethodGet, "/rooms/"+room+"/messages?after="+letagents.MessageID(seq-1), "").want(t, 200, "").messages(t)
		if ev.id != id || len(read) != 1 || !reflect.DeepEqual(got, read[0]) {
			t.Errorf("%s: the stream sent %s %v, a read gives %v", c.name, ev.id, got, read)
		}
	}
}

// TestStreamAtTheHeardSendOpensWithoutReading: where the listener is on a
// room's channels already and last heard the send of the message a
// stream resumes after, the stream starts just after that message's
// event and catches up on nothing, with no round trip (nothing after it
// has been heard), and sends what comes next. Where the latest send heard is a
// later one, the stream reads where it starts, and sends that later
// message from its ring (its catch-up then reads nothing).
//
// Not parallel, as TestPollAtTheHeardEndParksWithoutReading.
func TestStreamAtTheHeardSendOpensWithoutReading(t *testing.T) {
	e := newEnv(t, nil)
	url, trips, svc := e.counted(t)
	for _, c := range []struct {
		name  string
		later bool  // a message is sent, and heard, after the one the stream resumes after
		trips int64 // the stream's round trips until it waits
	}{
		{"at the heard send", false, 0},
		{"behind the heard send", true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			room := "heard-start-" + strings.ReplaceAll(c.name, " ", "-")
			e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
			channels := []string{svc.Store.RoomAccessChannel(room), svc.Store.RoomChannel(room)}
			keeper, err := svc.Hub.SubscribeAll(context.Background(), channels...)
			if err != nil {
				t.Fatal(err)
			}
			defer keeper.Close()
			subscribed := svc.Hub.Stats().Subscribers
			send := func(text string) string {
				return e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "`+text+`"}`).want(t, 201, "").str("id")
			}
			after := send("first")
			next := ""
			if c.later {
				next = send("second")
			}
			heard(t, svc, room, cmp.Or(next, after))

			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/rooms/"+room+"/messages/stream?after="+after, nil)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			req.Header.Set(countAsHeader, c.name)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			stream := newSSEStream(t, resp, cancel)
			defer func() {
				stream.close()
				testwait.Until(t, "the stream closed", func() bool { return svc.Hub.Stats().Subscribers <= subscribed })
			}()
			testwait.Blocked(t, "the stream waiting", "select", "api.(*server).stream", "")
			if n := trips.endedOf(c.name); n != c.trips {
				t.Errorf("the stream made %d round trips to open and catch up, want %d", n, c.trips)
			}
			if next == "" {
				next = send("next")
			}
			if ev, _ := stream.event(t); ev.id != next {
				t.Errorf("the stream's first message is %s, want %s", ev.id, next)
			}
		})
	}
}

// heard waits until svc's listener, on an anonymous poll's channels of
// room, has last heard of message id.
func heard(t *testing.T, svc *service.Service, room, id string) {
	t.Helper()
	channels := []string{svc.Store.RoomAccessChannel(room), svc.Store.RoomChannel(room)}
	testwait.Until(t, "the listener to hear of "+id, func() bool {
		s := svc.Hub.SubscribeListened(channels...)
		if s == nil {
			return false
		}
		defer s.Close()
		r, ok := store.ParseRing(s.Heard(svc.Store.RoomChannel(room)))
		return ok && letagents.MessageID(r.Last) == id
	})
}

// TestLonePollParksAgainWithoutReading: a room's only poll, answered,
// comes back for what follows and parks with no round trip: the poll
// server keeps listening on the room a while after its last waiter left
// (notify's Linger), and heard the message it answered with.
//
// Not parallel, as TestPollAtTheHeardEndParksWithoutReading.
func TestLonePollParksAgainWithoutReading(t *testing.T) {
	e := newEnv(t, nil)
	const room = "a-lone-poll"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	url, trips, svc := e.counted(t)
	poll := url + "/rooms/" + room + "/messages/poll?timeout=60000"
	first := pollAs(context.Background(), poll, "first")
	testwait.Blocked(t, "the first poll parked", "select", "api.(*server).nextMessages", "")
	id := e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "one"}`).want(t, 201, "").str("id")
	if got := testwait.Recv(t, "the first poll's answer", first); got.err != nil || !strings.Contains(string(got.body), id) {
		t.Fatalf("first poll answered %s (%v), want %s", got.body, got.err, id)
	}
	heard(t, svc, room, id) // the poll may have read it before the listener heard of it
	again := pollAs(context.Background(), poll+"&after="+id, "again")
	testwait.Blocked(t, "the poll parked again", "select", "api.(*server).nextMessages", "")
	if n := trips.of("again"); n != 0 {
		t.Errorf("the poll that came back made %d round trips to park, want 0", n)
	}
	e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "two"}`).want(t, 201, "")
	if got := testwait.Recv(t, "the second answer", again); got.err != nil || !strings.Contains(string(got.body), `"two"`) ||
		strings.Contains(string(got.body), `"one"`) {
		t.Errorf("poll answered %s (%v), want the second message only", got.body, got.err)
	}
}

// heldReads holds the statements of requests marked "held" that read a
// room's event log until it is freed, telling started of the first.
type heldReads struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldReads() *heldReads {
	return &heldReads{started: make(chan struct{}, 1), release: make(chan struct{})}
}

// free lets held reads go, and every later one through.
func (h *heldReads) free() { h.once.Do(func() { close(h.release) }) }

func (h *heldReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if as, _ := ctx.Value(countedKey{}).(string); as == "held" && strings.Contains(d.SQL, "event_page(") {
		select {
		case h.started <- struct{}{}:
		default:
		}
		<-h.release
	}
	return ctx
}

func (h *heldReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// openHeld opens the event stream at path on url (a server traced by
// held) with headers h, marked "held", and returns it once its first read
// has started and, that read still held, its 200 has come: it fails
// within testwait's bound, not hangs, if the 200 waits for the read.
func openHeld(t *testing.T, url, path string, h http.Header, held *heldReads) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set(countAsHeader, "held")
	type opened struct {
		resp *http.Response
		err  error
	}
	open := make(chan opened, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		open <- opened{resp, err}
	}()
	testwait.Recv(t, "the stream's first read", held.started)
	o := testwait.Recv(t, "the stream's 200 while its first read is held", open)
	if o.err != nil {
		cancel()
		t.Fatal(o.err)
	}
	s := newSSEStream(t, o.resp, cancel)
	if o.resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200", path, o.resp.StatusCode)
	}
	return s
}

// TestStreamOpensBeforeItsFirstRead: a stream's client hears it is open
// (its 200 and ": connected") as soon as the room's doorbell is on, while
// the read of what it has to catch up on is still under way; then the
// catch-up follows.
func TestStreamOpensBeforeItsFirstRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const room = "opens-first"
	e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	backlog := e.call(t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "someone", "text": "backlog"}`).want(t, 201, "").str("id")
	held := newHeldReads()
	url, _ := e.traced(t, held)
	t.Cleanup(held.free) // before the server's, which waits for the stream
	s := openHeld(t, url, "/rooms/"+room+"/messages/stream?after=msg_0", nil, held)
	held.free()
	for ev, _ := s.event(t); ev.id != backlog; ev, _ = s.event(t) {
	}
}
