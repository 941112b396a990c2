package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
)

// poll starts a long-poll in the background and returns its future answer.
func (e *env) poll(t *testing.T, ctx context.Context, path string) <-chan reply {
	t.Helper()
	out := make(chan reply, 1)
	go func() { out <- e.callCtx(ctx, t, http.MethodGet, path, "") }()
	return out
}

// parked waits until n long-polls are subscribed to the hub and it is
// LISTENing on a live connection. A parked poll holds its room's message
// channel and its access channels, at least one.
func (e *env) parked(t *testing.T, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d long-polls to park on a listening hub", n), func() bool {
		st := e.svc.Hub.Stats()
		return st.Subscribers >= 2*n && st.Listening == st.Channels && st.BackendPID != 0
	})
}

// await returns a long-poll's answer. Polls the tests wake ask for a
// timeout of 120 s, beyond testwait.Bound, so that a slow machine never
// sees them time out before the wake-up.
func await(t *testing.T, c <-chan reply) reply {
	t.Helper()
	return testwait.Recv(t, "the long-poll to answer", c)
}

func TestPollParkedBeforeSendIsWoken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "github.com/o/r")
	e.send(t, "github.com/o/r", "a", "old")
	c := e.poll(t, context.Background(), "/rooms/github.com/o/r/messages/poll?after=msg_1&timeout=120000")
	e.parked(t, 1)
	id := e.send(t, "github.com/o/r", "b", "new")
	r := await(t, c).want(t, 200, "")
	if got := ids(r.messages(t)); !slices.Equal(got, []string{id}) || r.str("room_id") != "github.com/o/r" || r.obj["has_more"] != false {
		t.Errorf("woken poll = %s, want only %s", r.raw, id)
	}
	if m := r.messages(t)[0]; m["text"] != "new" || m["sender"] != "b" || !isTimestamp(m["timestamp"].(string)) {
		t.Errorf("woken poll message = %v", m)
	}
}

func TestPollAnswersAtOnceWhenBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "behind")
	for range 3 {
		e.send(t, "behind", "a", "x")
	}
	start := time.Now()
	r := e.call(t, http.MethodGet, "/rooms/behind/messages/poll?after=msg_1&timeout=60000&limit=1", "").want(t, 200, "")
	if got := ids(r.messages(t)); !slices.Equal(got, []string{"msg_2"}) || r.obj["has_more"] != true {
		t.Errorf("poll behind = %s", r.raw)
	}
	// Well under the poll's 60 s timeout: a busy machine can take seconds.
	if e.svc.Hub.Stats().Subscribers != 0 || time.Since(start) > 30*time.Second {
		t.Error("a poll with messages waiting subscribed or waited instead of answering")
	}
	// No cursor: from the start.
	if got := ids(e.call(t, http.MethodGet, "/rooms/behind/messages/poll", "").want(t, 200, "").messages(t)); len(got) != 3 {
		t.Errorf("poll without a cursor = %v, want all 3", got)
	}
	legacy := e.call(t, http.MethodGet, "/projects/behind/messages/poll?after=msg_2", "").want(t, 200, "")
	if legacy.str("project_id") != "behind" || !slices.Equal(ids(legacy.messages(t)), []string{"msg_3"}) {
		t.Errorf("legacy poll = %s", legacy.raw)
	}
}

func TestPollTimeoutReturnsEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"LETAGENTS_POLL_MAX_MS": "1000"})
	e.join(t, "quiet")
	for _, path := range []string{
		"/rooms/quiet/messages/poll?timeout=200",
		"/rooms/quiet/messages/poll?after=msg_0&timeout=0",
		// Over LETAGENTS_POLL_MAX_MS: clamped to 1 s, not held for an hour.
		"/rooms/quiet/messages/poll?timeout=3600000",
		// Read as the original reads them: the default (here clamped to
		// 1 s), or the whole part; a limit past 500 as 500.
		"/rooms/quiet/messages/poll?timeout=soon",
		"/rooms/quiet/messages/poll?timeout=-5",
		"/rooms/quiet/messages/poll?timeout=1.5",
		"/rooms/quiet/messages/poll?after=MSG_0&timeout=0&limit=1000",
	} {
		r := e.call(t, http.MethodGet, path, "").want(t, 200, "")
		if msgs := r.messages(t); len(msgs) != 0 || r.obj["has_more"] != false || r.str("room_id") != "quiet" {
			t.Errorf("%s = %s, want {room_id, messages: [], has_more: false}", path, r.raw)
		}
	}
	if n := e.svc.Hub.Stats().Subscribers; n != 0 {
		t.Errorf("%d subscriptions left after the polls ended", n)
	}
}

func TestPollCursorPastTheEndWaitsForTheNextMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "ahead")
	e.send(t, "ahead", "a", "one")
	c := e.poll(t, context.Background(), "/rooms/ahead/messages/poll?after=msg_40&timeout=120000")
	e.parked(t, 1)
	e.send(t, "ahead", "a", "two")
	if got := ids(await(t, c).want(t, 200, "").messages(t)); !slices.Equal(got, []string{"msg_2"}) {
		t.Errorf("poll from past the end got %v, want msg_2", got)
	}
}

// TestPollCursorAndMissingRoom: a cursor that is no message id is no
// cursor, as the original reads it, so the poll answers from the start.
func TestPollCursorAndMissingRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "errs")
	e.send(t, "errs", "a", "hi")
	for _, query := range []string{"?after=latest", "?after=msg_x", "?after=", "?after=garbage&include_prompt_only=1"} {
		got := ids(e.call(t, http.MethodGet, "/rooms/errs/messages/poll"+query+"&timeout=0", "").want(t, 200, "").messages(t))
		if !slices.Equal(got, []string{"msg_1"}) {
			t.Errorf("poll%s: %v, want [msg_1]", query, got)
		}
	}
	e.call(t, http.MethodGet, "/rooms/nope-room/messages/poll?timeout=50", "").want(t, 404, "Room not found")
}

func TestManyWaitersInManyRoomsGetOnlyTheirRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const roomsN, perRoom = 10, 5
	for i := range roomsN {
		e.join(t, fmt.Sprintf("room-%d", i))
	}
	var answers []<-chan reply
	for i := range roomsN {
		for range perRoom {
			answers = append(answers, e.poll(t, context.Background(), fmt.Sprintf("/rooms/room-%d/messages/poll?after=msg_0&timeout=120000", i)))
		}
	}
	e.parked(t, roomsN*perRoom)
	if st := e.svc.Hub.Stats(); st.Listening != 2*roomsN {
		t.Errorf("listening on %d channels, want two per room, messages and access (%d)", st.Listening, 2*roomsN)
	}
	for i := range roomsN {
		e.send(t, fmt.Sprintf("room-%d", i), "a", fmt.Sprintf("for room %d", i))
	}
	for k, c := range answers {
		room := k / perRoom
		r := await(t, c).want(t, 200, "")
		msgs := r.messages(t)
		if len(msgs) != 1 || msgs[0]["room_id"] != fmt.Sprintf("room-%d", room) || msgs[0]["text"] != fmt.Sprintf("for room %d", room) {
			t.Errorf("waiter %d of room-%d got %s", k, room, r.raw)
		}
	}
}

func TestPollLosesNothingWhenTheListenerDies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "fragile")
	const waiters = 5
	var answers []<-chan reply
	for range waiters {
		answers = append(answers, e.poll(t, context.Background(), "/rooms/fragile/messages/poll?after=msg_0&timeout=120000"))
	}
	e.parked(t, waiters)
	pid := e.svc.Hub.Stats().BackendPID
	var killed bool
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend: %v %v", killed, err)
	}
	// Sent while the listener is down (or just back): its NOTIFY may reach
	// no one, yet every parked poll must deliver it.
	id := e.send(t, "fragile", "a", "during the outage")
	for i, c := range answers {
		if got := ids(await(t, c).want(t, 200, "").messages(t)); !slices.Equal(got, []string{id}) {
			t.Errorf("waiter %d got %v, want %s", i, got, id)
		}
	}
	// And the doorbell works again afterwards.
	c := e.poll(t, context.Background(), "/rooms/fragile/messages/poll?after="+id+"&timeout=120000")
	e.parked(t, 1)
	next := e.send(t, "fragile", "a", "after")
	if got := ids(await(t, c).want(t, 200, "").messages(t)); !slices.Equal(got, []string{next}) {
		t.Errorf("poll after the reconnect got %v, want %s", got, next)
	}
}

func TestClientDisconnectReleasesTheWaiter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "leaving")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/rooms/leaving/messages/poll?timeout=60000", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	e.parked(t, 1)
	cancel()
	wg.Wait()
	testwait.Until(t, "the hub to drop the poll of a client that left", func() bool {
		st := e.svc.Hub.Stats()
		return st.Subscribers == 0 && st.Listening == 0
	})
}

func TestDrainAnswersParkedPolls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "draining")
	c := e.poll(t, context.Background(), "/rooms/draining/messages/poll?timeout=60000")
	e.parked(t, 1)
	start := time.Now()
	e.svc.Drain()
	r := await(t, c).want(t, 200, "")
	if len(r.messages(t)) != 0 || time.Since(start) > 30*time.Second { // well before its 60 s timeout
		t.Errorf("drained poll = %s after %v", r.raw, time.Since(start))
	}
}
