package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/letagents/letagents-go/shared/wire"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
)

// sseEvent is one block of an event stream: an event, or a comment.
type sseEvent struct {
	name, id, data string
	hasID          bool
	comment        string
}

// sseStream is an open event stream whose blocks a goroutine reads.
type sseStream struct {
	resp   *http.Response
	blocks chan sseEvent
	ended  chan error // the body's end: nil for a clean end
	cancel context.CancelFunc
}

// openStream opens path as an event stream with headers h and fails the
// test unless it is one.
func (e *env) openStream(t *testing.T, path string, h http.Header) *sseStream {
	t.Helper()
	s, r := e.tryStream(t, path, h)
	if s == nil {
		t.Fatalf("GET %s = %d %s, want an event stream", path, r.status, r.raw)
	}
	return s
}

// tryStream opens path; an answer that is not a stream comes back as a reply.
func (e *env) tryStream(t *testing.T, path string, h http.Header) (*sseStream, reply) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		defer cancel()
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
		_ = json.Unmarshal(raw, &r.obj)
		return nil, r
	}
	return newSSEStream(t, resp, cancel), reply{}
}

// newSSEStream reads the events of resp, an open stream, until the test
// ends; cancel is its request's.
func newSSEStream(t *testing.T, resp *http.Response, cancel context.CancelFunc) *sseStream {
	s := &sseStream{resp: resp, blocks: make(chan sseEvent, 10000), ended: make(chan error, 1), cancel: cancel}
	go s.read()
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) read() {
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			s.blocks <- ev
			ev = sseEvent{}
		case field == "":
			ev.comment = value
		case field == "event":
			ev.name = value
		case field == "id":
			ev.id, ev.hasID = value, true
		case field == "data":
			ev.data += value
		}
	}
	s.ended <- sc.Err()
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next block.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	return s.nextBy(t, time.Now().Add(testwait.Bound))
}

func (s *sseStream) nextBy(t *testing.T, deadline time.Time) sseEvent {
	t.Helper()
	select {
	case ev := <-s.blocks:
		// Every stream test checks that the stream sends only the live
		// events the registry lists, which the page and clients know.
		if ev.name != "" && !slices.Contains(wire.Events, ev.name) {
			t.Errorf("the stream sent event %q, which is not in wire.Events", ev.name)
		}
		return ev
	case err := <-s.ended:
		s.ended <- err // for whoever waits for the end
		// The reader sends every block before the end: take one it sent.
		select {
		case ev := <-s.blocks:
			return ev
		default:
		}
		t.Fatalf("the stream ended (%v) while an event was awaited", err)
	case <-time.After(time.Until(deadline)):
		t.Fatalf("waited %v for an event", testwait.Bound)
	}
	return sseEvent{}
}

// event returns the next event that carries data, skipping comments and
// id-only events (heartbeats do not extend the wait).
func (s *sseStream) event(t *testing.T) (sseEvent, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(testwait.Bound)
	for {
		ev := s.nextBy(t, deadline)
		if ev.data == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(ev.data), &obj); err != nil {
			t.Fatalf("event data is not a JSON object: %v: %s", err, ev.data)
		}
		return ev, obj
	}
}

// subsPerStream is how many subscriptions an open stream holds on the hub
// at least: its room's event log, and the access channel of its room (one
// more, its account's, when signed in).
const subsPerStream = 2

// streamsOpen waits until n streams are subscribed to the hub on a
// listening connection.
func (e *env) streamsOpen(t *testing.T, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d streams to open on a listening hub", n), func() bool {
		st := e.svc.Hub.Stats()
		return st.Subscribers >= subsPerStream*n && st.Listening == st.Channels && st.BackendPID != 0
	})
}

func TestStreamEventShapes(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	builder := b.agent(t, "builder")
	b.send(t, "board", "a", "before the stream")

	for _, path := range []string{"/rooms/board/messages/stream", "/projects/board/messages/stream?include_prompt_only=1"} {
		s := b.openStream(t, path, http.Header{"Authorization": {"Bearer " + b.ann}})
		h := s.resp.Header
		if h.Get("Cache-Control") != "no-cache, no-transform" || h.Get("X-Accel-Buffering") != "no" {
			t.Errorf("%s: headers %v", path, h)
		}
		if ev := s.next(t); ev.comment != "connected" {
			t.Fatalf("%s: first block %+v, want the comment connected", path, ev)
		}
		// The cursor it starts at, as an id alone: sets the client's last
		// event id, fires nothing.
		start := s.next(t)
		if !start.hasID || start.data != "" || start.name != "" || !strings.HasPrefix(start.id, "msg_") {
			t.Fatalf("%s: second block %+v, want an id alone", path, start)
		}
		b.streamsOpen(t, 1)

		id := b.send(t, "board", "b", "during <the> stream")
		ev, m := s.event(t)
		if ev.name != "" || ev.id != id || m["id"] != id || m["room_id"] != "board" || m["sender"] != "b" ||
			m["text"] != "during <the> stream" || !isTimestamp(m["timestamp"].(string)) {
			t.Errorf("%s: message event %+v", path, ev)
		}
		s.close()
		testwait.Until(t, "the stream to close", func() bool { return b.svc.Hub.Stats().Subscribers == 0 })
	}

	s := b.openStream(t, "/rooms/board/messages/stream", http.Header{"Authorization": {"Bearer " + b.ann}})
	b.streamsOpen(t, 1)
	// Changes read together come as one event of the task as it then is:
	// each change is awaited before the next is made.
	taskEvent := func() map[string]any {
		t.Helper()
		for {
			ev, obj := s.event(t)
			switch ev.name {
			case "task_update":
				if ev.hasID {
					t.Errorf("task_update with an id %q: it would move the client's resume point", ev.id)
				}
				return obj
			case "":
				if obj["source"] != "system" {
					t.Errorf("unexpected message %s", ev.data)
				}
			default:
				t.Fatalf("unexpected event %+v", ev)
			}
		}
	}
	task := b.newTask(t, "ship it") // accepted: a status line and a task change
	if got := taskEvent(); got["id"] != task || got["status"] != "accepted" || got["room_id"] != "board" || got["title"] != "ship it" {
		t.Errorf("created task event = %v", got)
	}
	claimed := b.patch(t, builder.owner, task, `{"status": "assigned", `+builder.creds()+`}`).want(t, 200, "")
	got, want := taskEvent(), taskOf(claimed)
	if got["status"] != "assigned" || got["assignee"] != builder.label || len(leasesOf(got)) != 1 || leasesOf(got)[0]["id"] != leasesOf(want)[0]["id"] {
		t.Errorf("claimed task event = %v, want %v", got, want)
	}
}

// Reasoning writes go out as 0.12.9 sends them: reasoning_update with the
// session and the update written, reasoning_remove when a session closes.
func TestStreamReasoningEvents(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	s := b.openStream(t, "/rooms/board/messages/stream", http.Header{"Authorization": {"Bearer " + b.ann}})
	b.streamsOpen(t, 1)
	next := func() (sseEvent, map[string]any) {
		t.Helper()
		for {
			ev, obj := s.event(t)
			if ev.name != "" { // messages (status lines) are not what this test is about
				return ev, obj
			}
		}
	}
	created := b.call(t, http.MethodPost, "/rooms/board/reasoning-sessions",
		`{"actor_label": "Scout", "summary": "reading the logs", "status": "working"}`).want(t, 201, "")
	id := created.obj["session"].(map[string]any)["id"].(string)
	ev, obj := next()
	session, _ := obj["session"].(map[string]any)
	update, _ := obj["update"].(map[string]any)
	if ev.name != "reasoning_update" || ev.hasID || obj["room_id"] != "board" || session["id"] != id || session["summary"] != "reading the logs" ||
		update["summary"] != "reading the logs" {
		t.Errorf("event %+v %v, want reasoning_update of %s", ev, obj, id)
	}
	b.call(t, http.MethodPatch, "/rooms/board/reasoning-sessions/"+id, `{"closed_at": "2026-12-03T12:00:00Z"}`).want(t, 200, "")
	if ev, obj := next(); ev.name != "reasoning_remove" || obj["session_id"] != id || obj["room_id"] != "board" {
		t.Errorf("event %+v %v, want reasoning_remove of %s", ev, obj, id)
	}
}

// A stream opened with a worker session's headers is its delivery
// connection, as a parked long-poll is.
func TestStreamIsADeliveryConnection(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	w := b.agent(t, "watcher")
	connected := func() bool {
		r := b.as(t, b.ann, http.MethodGet, "/rooms/board/participants", "").want(t, 200, "")
		list, _ := r.obj["participants"].([]any)
		return len(list) == 1 && list[0].(map[string]any)["connected"] == true
	}
	if connected() {
		t.Fatal("connected before any stream")
	}
	s := b.openStream(t, "/rooms/board/messages/stream", w.headers())
	testwait.Until(t, "the stream to count as the agent's delivery connection", connected)
	// What it sends is surfaced to the agent: a receipt says so.
	id := b.send(t, "board", "b", "for the watcher")
	for ev, _ := s.event(t); ev.id != id; ev, _ = s.event(t) {
	}
	r := b.as(t, b.ann, http.MethodGet, "/rooms/board/messages/"+id+"/deliveries", "").want(t, 200, "")
	if !strings.Contains(r.raw, `"agent_session_id":"`+w.id+`"`) || !strings.Contains(r.raw, `"via":"stream"`) {
		t.Errorf("deliveries of %s = %s, want the watcher's, via stream", id, r.raw)
	}
	bad := w.headers()
	bad.Set("X-Letagents-Agent-Session-Token", strings.Repeat("1", 64))
	if s, r := b.tryStream(t, "/rooms/board/messages/stream", bad); s != nil || r.status != 401 {
		t.Errorf("stream with bad session credentials = %d %s, want 401", r.status, r.raw)
	}
}

// Resuming, by Last-Event-ID or ?after, while others send: every message
// exactly once, in order.
func TestStreamResumesWithNoGapAndNoDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "resume")
	for i := range 3 {
		e.send(t, "resume", "a", fmt.Sprint("early ", i))
	}
	for _, c := range []struct {
		name  string
		path  string
		h     http.Header
		first string // the first message it sends
	}{
		{"?after", "/rooms/resume/messages/stream?after=msg_1", nil, "msg_2"},
		{"Last-Event-ID", "/rooms/resume/messages/stream", http.Header{"Last-Event-Id": {"msg_2"}}, "msg_3"},
		{"Last-Event-ID wins over ?after", "/rooms/resume/messages/stream?after=msg_0", http.Header{"Last-Event-Id": {"msg_1"}}, "msg_2"},
		{"bare number", "/rooms/resume/messages/stream?after=0", nil, "msg_1"},
	} {
		s := e.openStream(t, c.path, c.h)
		if ev, _ := s.event(t); ev.id != c.first {
			t.Errorf("%s: first message %s, want %s", c.name, ev.id, c.first)
		}
		s.close()
	}
	for _, bad := range []struct {
		path string
		h    http.Header
	}{{"/rooms/resume/messages/stream?after=banana", nil}, {"/rooms/resume/messages/stream", http.Header{"Last-Event-Id": {"task_3"}}}} {
		if s, r := e.tryStream(t, bad.path, bad.h); s != nil || r.status != 400 || r.str("error") == "" {
			t.Errorf("GET %s %v = %d %s, want 400", bad.path, bad.h, r.status, r.raw)
		}
	}
	// A cursor past the newest message starts at the newest.
	past := e.openStream(t, "/rooms/resume/messages/stream?after=msg_99", nil)
	past.next(t)
	if ev := past.next(t); ev.id != "msg_3" {
		t.Errorf("a stream after msg_99 of 3 starts at %q, want msg_3", ev.id)
	}
	past.close()

	// Four senders; the reader drops its stream twice and resumes from the
	// last id it saw.
	const senders, each = 4, 30
	total := 3 + senders*each
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				body := fmt.Sprintf(`{"sender": "s%d", "text": "%d"}`, k, i)
				if code, _, err := rawCall(http.MethodPost, e.url+"/rooms/resume/messages", body, http.Header{}); err != nil || code != 201 {
					t.Errorf("send: %d %v", code, err)
					return
				}
			}
		}()
	}
	var got []string
	last := "msg_0"
	for round := 0; len(got) < total; round++ {
		s := e.openStream(t, "/rooms/resume/messages/stream", http.Header{"Last-Event-Id": {last}})
		if round == 0 {
			close(start)
		}
		// Leave after a few messages, twice; then read to the end.
		for n := 0; len(got) < total && (round >= 2 || n < 20+round*17); n++ {
			ev, _ := s.event(t)
			got = append(got, ev.id)
			last = ev.id
		}
		s.close()
	}
	wg.Wait()
	for i, id := range got {
		if want := fmt.Sprintf("msg_%d", i+1); id != want {
			t.Fatalf("message %d of the resumed streams is %s, want %s (got %v)", i, id, want, got)
		}
	}
}

func TestStreamHeartbeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "quiet")
	opened := time.Now()
	quiet := e.openStream(t, "/rooms/quiet/messages/stream", nil)
	quiet.next(t) // connected
	quiet.next(t) // the start id
	// The default beat is the original's 15 s: tested on a twin whose beat
	// is short, rather than by waiting for it.
	e.cfg.StreamHeartbeat = 5 * time.Millisecond
	fast := e.twin(t)
	s := fast.openStream(t, "/rooms/quiet/messages/stream", nil)
	beats := 0
	for beats < 3 {
		if ev := s.next(t); ev.comment == "heartbeat" {
			beats++
		}
	}
	select {
	case ev := <-quiet.blocks:
		if ev.comment != "heartbeat" || time.Since(opened) < 15*time.Second {
			t.Errorf("a stream on the default beat sent %+v %v after it opened", ev, time.Since(opened))
		}
	default:
	}
}

// TestStreamHeartbeatEvents: with ?heartbeat=event a stream sends its
// heartbeats as events a browser sees, the first at once, saying how often
// they come; other values are refused before the stream opens.
func TestStreamHeartbeatEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "quiet")
	e.cfg.StreamHeartbeat = 5 * time.Millisecond
	fast := e.twin(t)
	s := fast.openStream(t, "/rooms/quiet/messages/stream?heartbeat=event", nil)
	s.next(t) // connected
	s.next(t) // the start id
	for i := range 3 {
		ev := s.next(t)
		if ev.name != wire.EventHeartbeat || ev.data != `{"every_ms":5}` || ev.comment != "" {
			t.Fatalf("block %d after the start = %+v, want a heartbeat event with {\"every_ms\":5}", i, ev)
		}
	}
	for _, bad := range []string{"comment", "1", "EVENT"} {
		fast.call(t, http.MethodGet, "/rooms/quiet/messages/stream?heartbeat="+bad, "").want(t, 400, "heartbeat")
	}
}

// Streams are behind the room's gate exactly as reads are.
func TestStreamAccess(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddRepo("acme/secret", true)
	e.gh.AddUser("carol")
	e.gh.AddUser("dave")
	e.gh.Grant("acme/secret", "carol", "write")
	carol, dave := e.signIn(t, "carol"), e.signIn(t, "dave")
	e.as(t, carol, http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 200, "")
	for _, path := range []string{"/rooms/github.com/acme/secret/messages/stream", "/projects/github.com/acme/secret/messages/stream"} {
		for _, c := range []struct {
			who    string
			h      http.Header
			status int
			code   string
		}{
			{"anonymous", nil, 401, "NOT_AUTHENTICATED"},
			{"dave", http.Header{"Authorization": {"Bearer " + dave}}, 403, "PRIVATE_REPO_NO_ACCESS"},
		} {
			read := e.callWith(context.Background(), t, http.MethodGet, strings.TrimSuffix(path, "/stream"), "", c.h)
			s, r := e.tryStream(t, path, c.h)
			if s != nil || r.status != c.status || r.str("code") != c.code || read.status != c.status || r.str("error") != read.str("error") {
				t.Errorf("%s: %s = %d %s, want %d %s as the read answers (%d %s)", c.who, path, r.status, r.raw, c.status, c.code, read.status, read.raw)
			}
		}
		s := e.openStream(t, path, http.Header{"Authorization": {"Bearer " + carol}})
		s.close()
	}
	if s, r := e.tryStream(t, "/rooms/no-such-room/messages/stream", nil); s != nil || r.status != 404 {
		t.Errorf("stream of a missing room = %d %s, want 404", r.status, r.raw)
	}
}

func TestStreamCaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"LETAGENTS_STREAM_MAX": "2", "LETAGENTS_STREAM_ROOM_MAX": "1"})
	for _, room := range []string{"a", "b", "c"} {
		e.join(t, room)
	}
	refused := func(room, code string) {
		t.Helper()
		s, r := e.tryStream(t, "/rooms/"+room+"/messages/stream", nil)
		if s != nil || r.status != 503 || r.str("code") != code || r.header.Get("Retry-After") == "" || !strings.Contains(r.str("error"), "LETAGENTS_STREAM") {
			t.Fatalf("stream of %s = %d %s %v, want 503 %s with Retry-After", room, r.status, r.raw, r.header, code)
		}
	}
	a := e.openStream(t, "/rooms/a/messages/stream", nil)
	refused("a", "ROOM_STREAM_LIMIT")
	e.openStream(t, "/rooms/b/messages/stream", nil)
	refused("c", "STREAM_LIMIT")
	// Long-polls are not streams.
	e.call(t, http.MethodGet, "/rooms/c/messages/poll?timeout=0", "").want(t, 200, "")
	// A stream that ends gives its slot back.
	a.close()
	testwait.Until(t, "the closed stream's slot to be free", func() bool {
		s, _ := e.tryStream(t, "/rooms/c/messages/stream", nil)
		if s != nil {
			s.close()
		}
		return s != nil
	})
}

// Draining (SIGTERM) ends open streams cleanly and refuses new ones, so
// clients reconnect to another server.
func TestStreamDrain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "draining")
	s := e.openStream(t, "/rooms/draining/messages/stream", nil)
	e.streamsOpen(t, 1)
	e.svc.Drain()
	if err := testwait.Recv(t, "the stream to end", s.ended); err != nil {
		t.Errorf("the drained stream ended with %v, want a clean end", err)
	}
	if s, r := e.tryStream(t, "/rooms/draining/messages/stream", nil); s != nil || r.status != 503 || r.str("code") != "SERVER_DRAINING" {
		t.Errorf("stream while draining = %d %s, want 503 SERVER_DRAINING", r.status, r.raw)
	}
}

// A notification nobody heard (the listener's connection died) loses
// nothing: the hub rings every stream after it reconnects, and they read.
func TestStreamLosesNothingWhenTheListenerDies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "fragile")
	const streams = 3
	var ss []*sseStream
	for range streams {
		ss = append(ss, e.openStream(t, "/rooms/fragile/messages/stream", nil))
	}
	e.streamsOpen(t, streams)
	var killed bool
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(e.svc.Hub.Stats().BackendPID)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend: %v %v", killed, err)
	}
	first := e.send(t, "fragile", "a", "during the outage")
	second := e.send(t, "fragile", "a", "right after")
	for i, s := range ss {
		var got []string
		for len(got) < 2 {
			ev, _ := s.event(t)
			got = append(got, ev.id)
		}
		if !slices.Equal(got, []string{first, second}) {
			t.Errorf("stream %d got %v, want %s, %s", i, got, first, second)
		}
	}
}

// With ?render=html a message event carries the text rendered, as the
// page reads it; without, as agents have always read it; anything else
// is refused before the stream opens.
func TestStreamRender(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	auth := http.Header{"Authorization": {"Bearer " + b.ann}}
	if s, r := b.tryStream(t, "/rooms/board/messages/stream?render=pdf", auth); s != nil || r.status != 400 || !strings.Contains(r.str("error"), "render") {
		t.Errorf("render=pdf = %d %s, want 400 naming render", r.status, r.raw)
	}
	for _, c := range []struct {
		query    string
		wantHTML any
	}{
		{"?render=html", "<p><strong>done</strong> &lt;b&gt;</p>\n"},
		{"", nil},
	} {
		s := b.openStream(t, "/rooms/board/messages/stream"+c.query, auth)
		b.streamsOpen(t, 1)
		id := b.send(t, "board", "a", "**done** <b>")
		ev, m := s.event(t)
		if ev.id != id || m["text"] != "**done** <b>" || m["html"] != c.wantHTML {
			t.Errorf("%q: event %s, want %s with html %q", c.query, ev.data, id, c.wantHTML)
		}
		s.close()
		testwait.Until(t, "the stream to close", func() bool { return b.svc.Hub.Stats().Subscribers == 0 })
	}
}

// A rename goes to every reader of the room as a room_update event with
// the room's id and new name and nothing else, and no id, so a client's
// resume point stays the last message.
func TestStreamRoomUpdate(t *testing.T) {
	t.Parallel()
	e, ann, bob, _ := intentRoom(t, "renamed")
	stream := e.openStream(t, "/rooms/renamed/messages/stream", http.Header{"Authorization": {"Bearer " + bob}})
	defer stream.close()
	for _, name := range []string{"Blue Otter", "Red Fox"} {
		e.as(t, ann, http.MethodPatch, "/rooms/renamed", `{"display_name": "`+name+`"}`).want(t, 200, "")
		for {
			ev, data := stream.event(t)
			if ev.name != wire.EventRoomUpdate {
				continue
			}
			if len(data) != 2 || data["room_id"] != "renamed" || data["display_name"] != name || ev.hasID {
				t.Errorf("rename to %q: event %+v %v, want room_id and display_name alone, with no id", name, ev, data)
			}
			break
		}
	}
}

// A worker's roster entry reaches readers of the room as it changes: a
// join or a new status is a presence_update carrying the entry exactly as
// GET …/presence gives it, an end a presence_remove naming the session;
// none has an id. The same presence again (the heartbeat agents send with
// every tool call) sends nothing, and a controller never shows.
func TestStreamPresence(t *testing.T) {
	t.Parallel()
	e, ann, bob, w := intentRoom(t, "roster")
	stream := e.openStream(t, "/rooms/roster/messages/stream", http.Header{"Authorization": {"Bearer " + ann}})
	defer stream.close()
	// nextPresence is the next presence event; anything of the controller
	// before it fails the test.
	nextPresence := func() (sseEvent, map[string]any) {
		t.Helper()
		for {
			ev, data := stream.event(t)
			if strings.Contains(ev.data, "Watcher") {
				t.Errorf("the stream sent the controller: %s %s", ev.name, ev.data)
			}
			if ev.name == wire.EventPresenceUpdate || ev.name == wire.EventPresenceRemove {
				if ev.hasID {
					t.Errorf("%s has id %q, want none", ev.name, ev.id)
				}
				return ev, data
			}
		}
	}
	// The worker's own stream is a delivery connection: it puts the worker
	// on GET …/presence, which the events are compared with. Messages reach
	// it now, which readers hear at once (the page's connected dot); the
	// stream that did it leaves that news out of what it sends its agent.
	own := e.openStream(t, "/rooms/roster/messages/stream", w.headers())
	defer own.close()
	e.streamsOpen(t, 2)
	if ev, data := nextPresence(); ev.name != wire.EventPresenceUpdate || data["agent_session_id"] != w.id || data["reached_by"] != "live" {
		t.Fatalf("after the worker's stream opened: %s %s, want the worker's presence_update, reached", ev.name, ev.data)
	}
	e.as(t, ann, http.MethodPost, "/rooms/roster/messages", `{"sender": "ann", "text": "first"}`).want(t, 201, "")
	if ev, data := own.event(t); ev.name != "" || data["text"] != "first" {
		t.Fatalf("the worker's own stream began with %s %s, want the message: not its own reach", ev.name, ev.data)
	}
	watcher := e.register(t, ann, "roster", "watcher", `{"actor_key": "ann/watcher", "display_name": "Watcher", "session_kind": "controller"}`)
	presence := func(status, text string) {
		t.Helper()
		e.as(t, bob, http.MethodPost, "/rooms/roster/presence", `{"status": "`+status+`", "status_text": "`+text+`", `+w.creds()+`}`).want(t, 200, "")
	}
	presence("working", "building")
	if ev, data := nextPresence(); ev.name != wire.EventPresenceUpdate || data["agent_session_id"] != w.id || data["status_text"] != "building" {
		t.Fatalf("after the first report: %s %s, want the worker's presence_update", ev.name, ev.data)
	}
	// The same report again, then a message: the message comes next.
	presence("working", "building")
	e.as(t, ann, http.MethodPost, "/rooms/roster/messages", `{"sender": "ann", "text": "marker"}`).want(t, 201, "")
	for {
		ev, data := stream.event(t)
		if ev.name == "" && data["text"] == "marker" {
			break
		}
		if ev.name == wire.EventPresenceUpdate || ev.name == wire.EventPresenceRemove {
			t.Fatalf("the same presence again sent %s %s", ev.name, ev.data)
		}
	}
	presence("reviewing", "the diff")
	ev, data := nextPresence()
	list := e.as(t, ann, http.MethodGet, "/rooms/roster/presence", "").want(t, 200, "")
	if entries, _ := list.obj["presence"].([]any); len(entries) != 1 || ev.name != wire.EventPresenceUpdate || !reflect.DeepEqual(data, entries[0]) {
		t.Errorf("after a new status: %s %v\nwant presence_update with the entry GET presence gives: %s", ev.name, data, list.raw)
	}
	e.as(t, ann, http.MethodPost, "/rooms/roster/agent-sessions/"+watcher.id+"/disconnect", `{`+watcher.creds()+`}`).want(t, 200, "")
	e.as(t, bob, http.MethodPost, "/rooms/roster/agent-sessions/"+w.id+"/disconnect", `{`+w.creds()+`}`).want(t, 200, "")
	ev, data = nextPresence()
	want := map[string]any{"room_id": "roster", "agent_session_id": w.id, "actor_label": w.label}
	if ev.name != wire.EventPresenceRemove || !reflect.DeepEqual(data, want) {
		t.Errorf("after the end: %s %v, want presence_remove %v", ev.name, data, want)
	}
}

// Streams of one room at one cursor share each read of the room's event
// log (readGroup); whatever they share, every stream, with ?render=html or
// without, gets every message once and in order, and every task change.
func TestStreamsOfOneRoomGetEveryEvent(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	auth := http.Header{"Authorization": {"Bearer " + b.ann}}
	start := b.send(t, "board", "a", "before the streams")
	const streams = 12
	var ss []*sseStream
	for i := range streams {
		path := "/rooms/board/messages/stream"
		if i%2 == 1 {
			path += "?render=html"
		}
		ss = append(ss, b.openStream(t, path, auth))
	}
	b.streamsOpen(t, streams)

	const senders, each, tasks = 3, 20, 3
	var wg sync.WaitGroup
	for k := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Sprintf(`{"sender": "s%d", "text": "%d"}`, k, i)
				if code, _, err := rawCall(http.MethodPost, b.url+"/rooms/board/messages", body, auth.Clone()); err != nil || code != 201 {
					t.Errorf("send: %d %v", code, err)
					return
				}
			}
		}()
	}
	var taskIDs []string
	for i := range tasks {
		taskIDs = append(taskIDs, b.newTask(t, fmt.Sprint("task ", i)))
	}
	wg.Wait()
	last := b.send(t, "board", "a", "after every other")
	want := ids(b.as(t, b.ann, http.MethodGet, "/rooms/board/messages?limit=500&after="+start, "").want(t, 200, "").messages(t))
	if len(want) < senders*each+tasks+1 {
		t.Fatalf("the room has %d messages after the streams opened, want at least %d", len(want), senders*each+tasks+1)
	}

	for i, s := range ss {
		var got []string
		var gotTasks []string
		for len(got) == 0 || got[len(got)-1] != last {
			ev, obj := s.event(t)
			switch ev.name {
			case "":
				got = append(got, ev.id)
			case wire.EventTaskUpdate:
				gotTasks = append(gotTasks, obj["id"].(string))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("stream %d got messages %v, want %v", i, got, want)
		}
		for _, id := range taskIDs {
			if !slices.Contains(gotTasks, id) {
				t.Errorf("stream %d got task changes of %v, want one of %s", i, gotTasks, id)
			}
		}
	}
}
