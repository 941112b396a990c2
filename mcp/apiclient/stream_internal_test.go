package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

func TestEventReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stream string
		want         []string // type|data|last event id, per event
		wantRetry    time.Duration
	}{
		{"one message", ": connected\n\ndata: {\"id\":\"msg_1\"}\n\n", []string{`message|{"id":"msg_1"}|`}, 0},
		{"typed, with id", "event: task_update\nid: 7\ndata: x\n\n", []string{"task_update|x|7"}, 0},
		{"data lines join with LF", "data: a\ndata:\ndata: b\n\n", []string{"message|a\n\nb|"}, 0},
		{"CRLF and CR end lines", "data: a\r\n\r\ndata: b\r\rdata: c\n\r\n", []string{"message|a|", "message|b|", "message|c|"}, 0},
		{"one space cut, not two", "data:  x\ndata:y\n\n", []string{"message| x\ny|"}, 0},
		{"a field without colon is empty", "data\n\n", []string{"message||"}, 0},
		{"no data, no event; the type resets", "event: a\n\ndata: x\n\n", []string{"message|x|"}, 0},
		{"comments and unknown fields ignored", ":hi\nfoo: bar\ndata: x\n\n", []string{"message|x|"}, 0},
		{"leading BOM skipped", "\uFEFFdata: x\n\n", []string{"message|x|"}, 0},
		{"id persists, empty id clears it", "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []string{"message|a|1", "message|b|1", "message|c|"}, 0},
		{"id with NUL ignored", "id: 1\n\nid: 2\x003\ndata: a\n\n", []string{"message|a|1"}, 0},
		{"id alone moves the last id", "id: 5\n\n", nil, 0},
		{"retry sets the reconnection time", "retry: 250\n\n", nil, 250 * time.Millisecond},
		{"retry ignores non-digits", "retry: 250\n\nretry: 1s\n\nretry: -1\n\n", nil, 250 * time.Millisecond},
		{"an unfinished event is dropped", "data: a\n\ndata: b\n", []string{"message|a|"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// One byte at a time: no event may depend on how reads split it.
			r := newEventReader(iotest.OneByteReader(strings.NewReader(tt.stream)), "")
			var got []string
			for {
				ev, err := r.next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("next: %v, want io.EOF at the end", err)
					}
					break
				}
				got = append(got, ev.typ+"|"+ev.data+"|"+r.lastID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events %q, want %q", got, tt.want)
			}
			if r.retry != tt.wantRetry {
				t.Errorf("retry %v, want %v", r.retry, tt.wantRetry)
			}
		})
	}
	t.Run("last id at the end", func(t *testing.T) {
		t.Parallel()
		r := newEventReader(strings.NewReader("id: 5\n\n"), "msg_2")
		if _, err := r.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("next: %v, want io.EOF", err)
		}
		if r.lastID != "5" {
			t.Errorf("last id %q, want 5", r.lastID)
		}
		r = newEventReader(strings.NewReader(": connected\n\n"), "msg_2")
		if _, err := r.next(); !errors.Is(err, io.EOF) || r.lastID != "msg_2" {
			t.Errorf("last id %q (%v), want msg_2 kept from before", r.lastID, err)
		}
	})
}

// fakeRoom is a server for one room "r": its history, the long-poll, and
// an event stream each connection of which the test drives by hand.
type fakeRoom struct {
	srv *httptest.Server
	// stream answers a stream request; nil serves a connection the test
	// drives (see conns).
	stream func(w http.ResponseWriter, r *http.Request)
	conns  chan *streamConn

	mu    sync.Mutex
	msgs  []wire.Message
	added chan struct{} // closed and replaced when a message is added
	paths []string      // every request, "METHOD path"
	polls int
}

// streamConn is one open stream connection.
type streamConn struct {
	lastEventID string
	send        chan string   // raw event-stream text to write
	end         chan struct{} // closed by the test to end the response
	gone        chan struct{} // closed when the handler returned
}

func newFakeRoom(t *testing.T, stream func(w http.ResponseWriter, r *http.Request)) *fakeRoom {
	t.Helper()
	f := &fakeRoom{stream: stream, conns: make(chan *streamConn, 10), added: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// add appends a message (msg_N, N counting from 1) and wakes the polls.
func (f *fakeRoom) add(text string) wire.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := wire.Message{ID: letagents.MessageID(int64(len(f.msgs) + 1)), RoomID: "r", Sender: "ann", Text: text}
	f.msgs = append(f.msgs, m)
	close(f.added)
	f.added = make(chan struct{})
	return m
}

func (f *fakeRoom) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.paths)
}

func (f *fakeRoom) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

func (f *fakeRoom) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages/stream"):
		if f.stream != nil {
			f.stream(w, r)
			return
		}
		f.drive(w, r)
	case r.URL.Path == "/rooms/r/messages/poll":
		f.poll(w, r)
	case r.URL.Path == "/rooms/r/messages" && r.URL.Query().Get("before") == "latest":
		f.mu.Lock()
		page := f.msgs[max(len(f.msgs)-1, 0):]
		f.mu.Unlock()
		writePage(w, page)
	default:
		http.Error(w, `{"error": "Not Found"}`, http.StatusNotFound)
	}
}

// drive hands the connection to the test and writes what it sends.
func (f *fakeRoom) drive(w http.ResponseWriter, r *http.Request) {
	c := &streamConn{lastEventID: r.Header.Get("Last-Event-ID"), send: make(chan string), end: make(chan struct{}), gone: make(chan struct{})}
	defer close(c.gone)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, ": connected\n\n")
	w.(http.Flusher).Flush()
	f.conns <- c
	for {
		select {
		case s := <-c.send:
			io.WriteString(w, s)
			w.(http.Flusher).Flush()
		case <-c.end:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// poll answers the messages after ?after=, holding until there are some.
func (f *fakeRoom) poll(w http.ResponseWriter, r *http.Request) {
	after, err := letagents.ParseMessageID(r.URL.Query().Get("after"))
	if err != nil {
		http.Error(w, `{"error": "bad after"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.polls++
	f.mu.Unlock()
	for {
		f.mu.Lock()
		page, added := slices.Clone(f.msgs[min(int(after), len(f.msgs)):]), f.added
		f.mu.Unlock()
		if len(page) > 0 {
			writePage(w, page)
			return
		}
		select {
		case <-added:
		case <-r.Context().Done():
			return
		}
	}
}

func writePage(w http.ResponseWriter, msgs []wire.Message) {
	raw := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		raw[i], _ = json.Marshal(m)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(wire.Page{RoomID: "r", Messages: raw})
}

// eventOf is m as the stream sends it, with its id when withID.
func eventOf(m wire.Message, withID bool) string {
	b, _ := json.Marshal(m)
	id := ""
	if withID {
		id = "id: " + m.ID + "\n"
	}
	return id + "data: " + string(b) + "\n\n"
}

// watching is a Watch running in the background.
type watching struct {
	got  chan wire.Message
	done chan error
	stop context.CancelFunc
	once sync.Once
	err  error
}

// result waits for Watch to return and returns what it did.
func (w *watching) result(t *testing.T) error {
	t.Helper()
	w.once.Do(func() { w.err = testwait.Recv(t, "Watch to return", w.done) })
	return w.err
}

// startWatch runs c.Watch of room r after after until the test ends (or
// stop), collecting what it delivers.
func startWatch(t *testing.T, c *Client, after string) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	w := &watching{got: make(chan wire.Message, 100), done: make(chan error, 1), stop: cancel}
	go func() {
		w.done <- c.Watch(ctx, "r", after, func(msgs []wire.Message) {
			for _, m := range msgs {
				w.got <- m
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		w.result(t)
	})
	return w
}

// expect receives the next deliveries and wants them to be ids.
func (w *watching) expect(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if m := testwait.Recv(t, "message "+id, w.got); m.ID != id {
			t.Fatalf("delivered %s, want %s", m.ID, id)
		}
	}
}

// none fails if anything more was delivered.
func (w *watching) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-w.got:
		t.Fatalf("delivered %s, want nothing more", m.ID)
	default:
	}
}

// TestWatchResumes drops the stream mid-way: the next connection asks
// for what came after the last event id, and nothing is delivered twice
// or skipped, whether the server honours Last-Event-ID or replays.
func TestWatchResumes(t *testing.T) {
	t.Parallel()
	for _, replays := range []bool{false, true} {
		t.Run(fmt.Sprintf("server replays %v", replays), func(t *testing.T) {
			t.Parallel()
			f := newFakeRoom(t, nil)
			m1 := f.add("before the watch")
			w := startWatch(t, New(Config{APIURL: f.srv.URL}), "")

			c1 := testwait.Recv(t, "the first stream connection", f.conns)
			if c1.lastEventID != m1.ID {
				t.Errorf("first connection: Last-Event-ID %q, want %q (the newest message when the watch began)", c1.lastEventID, m1.ID)
			}
			m2, m3 := f.add("two"), f.add("three")
			// retry: makes the reconnection quick; task_update is no message.
			c1.send <- "retry: 5\n\n" + eventOf(m2, true) + "event: task_update\ndata: {\"id\":\"task_1\"}\n\n" + eventOf(m3, true)
			w.expect(t, m2.ID, m3.ID)
			close(c1.end)

			c2 := testwait.Recv(t, "the stream to reconnect", f.conns)
			if c2.lastEventID != m3.ID {
				t.Errorf("reconnection: Last-Event-ID %q, want %q", c2.lastEventID, m3.ID)
			}
			m4 := f.add("four")
			if replays {
				c2.send <- eventOf(m1, true) + eventOf(m2, true) + eventOf(m3, true)
			}
			c2.send <- eventOf(m4, true)
			w.expect(t, m4.ID)
			w.none(t)
			w.stop()
			if err := w.result(t); !errors.Is(err, context.Canceled) {
				t.Errorf("Watch returned %v, want context.Canceled", err)
			}
			testwait.Recv(t, "the stream to close when the watch stops", c2.gone)
		})
	}
}

// TestWatchWithoutIDs: a stream without id: fields (the original server's)
// is resumed from the last message delivered, and replays are dropped.
func TestWatchWithoutIDs(t *testing.T) {
	t.Parallel()
	f := newFakeRoom(t, nil)
	w := startWatch(t, New(Config{APIURL: f.srv.URL}), "")
	c1 := testwait.Recv(t, "the first stream connection", f.conns)
	if c1.lastEventID != "msg_0" {
		t.Errorf("first connection in an empty room: Last-Event-ID %q, want msg_0", c1.lastEventID)
	}
	m1 := f.add("one")
	c1.send <- "retry: 5\n\n" + eventOf(m1, false)
	w.expect(t, m1.ID)
	close(c1.end)
	c2 := testwait.Recv(t, "the stream to reconnect", f.conns)
	m2 := f.add("two")
	c2.send <- eventOf(m1, false) + eventOf(m2, false)
	w.expect(t, m2.ID)
	w.none(t)
}

// TestWatchFallsBackToPolls: a server without a stream is long-polled.
func TestWatchFallsBackToPolls(t *testing.T) {
	t.Parallel()
	status := func(code int, body string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) { http.Error(w, body, code) }
	}
	tests := []struct {
		name      string
		stream    func(w http.ResponseWriter, r *http.Request)
		wantPaths []string // the stream requests, in order
	}{
		{"no route at all", nil, []string{"/rooms/r/messages/stream", "/projects/r/messages/stream"}},
		{"405", status(http.StatusMethodNotAllowed, `{"error": "Method Not Allowed"}`), []string{"/rooms/r/messages/stream", "/projects/r/messages/stream"}},
		{"404 of the room route", status(http.StatusNotFound, `{"error": "Room not found"}`), []string{"/rooms/r/messages/stream"}},
		{"501", status(http.StatusNotImplemented, "not implemented"), []string{"/rooms/r/messages/stream"}},
		{"not an event stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>the web app</html>")
		}, []string{"/rooms/r/messages/stream"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeRoom(t, tt.stream)
			if tt.stream == nil {
				// Serve no stream at all: the default 404 of unknown paths.
				f.stream = func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, `{"error": "Not Found"}`, http.StatusNotFound)
				}
			}
			f.add("old")
			w := startWatch(t, New(Config{APIURL: f.srv.URL}), "")
			testwait.Until(t, "a long-poll", func() bool { return f.pollCount() > 0 })
			m2, m3 := f.add("two"), f.add("three")
			w.expect(t, m2.ID, m3.ID)
			m4 := f.add("four")
			w.expect(t, m4.ID)
			w.none(t)
			var streams []string
			for _, p := range f.requests() {
				if path, ok := strings.CutPrefix(p, "GET "); ok && strings.HasSuffix(path, "/stream") {
					streams = append(streams, path)
				}
			}
			if !slices.Equal(streams, tt.wantPaths) {
				t.Errorf("stream requests %q, want %q (tried once, then polls only)", streams, tt.wantPaths)
			}
		})
	}
}

// TestWatchSlowStream: a stream whose headers do not come in time (a
// buffering proxy) counts as missing: the watch long-polls instead.
func TestWatchSlowStream(t *testing.T) {
	t.Parallel()
	f := newFakeRoom(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c := New(Config{APIURL: f.srv.URL})
	c.streamOpen = 50 * time.Millisecond
	w := startWatch(t, c, "")
	testwait.Until(t, "a long-poll", func() bool { return f.pollCount() > 0 })
	m := f.add("one")
	w.expect(t, m.ID)
}

// TestWatchSilentStream: a stream silent for longer than streamIdle is
// taken for dead and reopened from the last event id.
func TestWatchSilentStream(t *testing.T) {
	t.Parallel()
	f := newFakeRoom(t, nil)
	c := New(Config{APIURL: f.srv.URL})
	c.streamIdle = 100 * time.Millisecond
	w := startWatch(t, c, "")
	c1 := testwait.Recv(t, "the first stream connection", f.conns)
	m := f.add("one")
	c1.send <- "retry: 5\n\n" + eventOf(m, true)
	w.expect(t, m.ID)
	// Send nothing more: the client gives up on the connection.
	testwait.Recv(t, "the silent connection to be dropped", c1.gone)
	c2 := testwait.Recv(t, "the stream to reconnect", f.conns)
	if c2.lastEventID != m.ID {
		t.Errorf("reconnection: Last-Event-ID %q, want %q", c2.lastEventID, m.ID)
	}
}

// TestWatchErrors: an answer that says the room cannot be watched ends
// the watch with it; one that may pass is retried.
func TestWatchErrors(t *testing.T) {
	t.Parallel()
	t.Run("forbidden", func(t *testing.T) {
		t.Parallel()
		f := newFakeRoom(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error": "not a member", "code": "FORBIDDEN"}`, http.StatusForbidden)
		})
		f.add("one")
		err := New(Config{APIURL: f.srv.URL}).Watch(t.Context(), "r", "", func([]wire.Message) { t.Error("delivered a message") })
		if !IsStatus(err, http.StatusForbidden) {
			t.Errorf("Watch returned %v, want the 403", err)
		}
	})
	t.Run("unavailable, then up", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		failures := 0
		f := newFakeRoom(t, nil)
		drive := f.drive
		f.stream = func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			failures++
			n := failures
			mu.Unlock()
			if n == 1 {
				w.Header().Set("Retry-After", "0")
				http.Error(w, `{"error": "starting"}`, http.StatusServiceUnavailable)
				return
			}
			drive(w, r)
		}
		w := startWatch(t, New(Config{APIURL: f.srv.URL}), "msg_0")
		c := testwait.Recv(t, "the stream after the 503", f.conns)
		m := f.add("one")
		c.send <- eventOf(m, true)
		w.expect(t, m.ID)
	})
	t.Run("bad cursor", func(t *testing.T) {
		t.Parallel()
		err := New(Config{APIURL: "http://127.0.0.1:1"}).Watch(t.Context(), "r", "latest", func([]wire.Message) {})
		if err == nil || !strings.Contains(err.Error(), "latest") {
			t.Errorf("Watch after \"latest\": %v, want an error naming it", err)
		}
	})
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	w := &watch{}
	tests := []struct {
		n        int
		err      error
		retry    time.Duration
		min, max time.Duration
	}{
		{1, errors.New("refused"), 0, reconnectWait / 2, reconnectWait},
		{3, errors.New("refused"), 0, 2 * reconnectWait, 4 * reconnectWait},
		{30, errors.New("refused"), 0, maxReconnectWait / 2, maxReconnectWait},
		{1, &APIError{Status: 503, RetryAfter: 10 * time.Second}, 0, 5 * time.Second, 10 * time.Second},
		{1, &APIError{Status: 503, RetryAfter: time.Hour}, 0, maxReconnectWait / 2, maxReconnectWait},
		{2, errors.New("refused"), 10 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		w.retry = tt.retry
		for range 20 {
			if d := w.backoff(tt.n, tt.err); d < tt.min || d > tt.max {
				t.Errorf("backoff(%d, %v) with retry %v = %v, want %v to %v", tt.n, tt.err, tt.retry, d, tt.min, tt.max)
			}
		}
	}
}
