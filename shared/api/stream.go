package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// Event streams: GET …/messages/stream answers text/event-stream, as the
// original does. A new message is an event of the default type (no event
// line) whose data is the message as reads give it, with its id (msg_N)
// as the event id; a change to a task or its leases is a task_update
// event whose data is the task as GET …/tasks/{id} gives it. Comments
// say the stream is open (": connected") and keep it open (": heartbeat",
// every letagents.StreamHeartbeat); with ?heartbeat=event the heartbeat
// is a wire.EventHeartbeat event instead, one at once and one each beat,
// so that a page can tell a silent, dead stream from a quiet one. Every
// event name is in wire.Events.
//
// A stream resumes after the message the Last-Event-ID header names (an
// EventSource sends it when it reconnects), else after ?after, else at the
// newest message; a resumed stream also sends the tasks and reasoning
// sessions changed since that message, as they now are. With
// ?render=html a message event carries its text rendered, as reads give
// it (the room page shows that, not the Markdown). Right
// after ": connected" the stream sends an event holding only the id of
// where it starts, which sets the client's last event id without firing
// anything: a client that reconnects before any message came still
// resumes with no gap.
//
// Every kind of event comes from the room's one event log (feed), whose
// doorbell is the room's channel. A ring only says to read again: the
// stream reads, from PostgreSQL, every event after its cursor and each
// item as it now is, so a missed or merged notification loses nothing.

// streamRetryAfter is the Retry-After of a stream refused for a cap.
const streamRetryAfter = 10 * time.Second

// streamEventPage is how many events a stream reads at a time.
const streamEventPage = 100

var (
	errCannotStream = &letagents.Error{Kind: letagents.NotImplemented, Code: letagents.CodeStreamUnavailable,
		Message: "This endpoint cannot stream: it answers through Lambda, which sends an answer only once it is whole. " +
			"Open the stream on the long-running poll server (LETAGENTS_POLL_URL), or long-poll …/messages/poll here."}
	errDraining = &letagents.Error{Kind: letagents.Unavailable, Code: letagents.CodeServerDraining, RetryAfter: time.Second,
		Message: "This server is stopping; reconnect and another will answer."}
)

// event is one event of a stream.
type event struct {
	name string // its type; "" is the default type, a message
	id   string // "" leaves the client's last event id as it was
	data any    // sent as one line of JSON
}

// feed is a stream's place in its room's event log (store.RoomEvents),
// the one feed of every kind of event, and the doorbell rung when the log
// grows.
type feed struct {
	s      *server
	room   string
	render bool                    // messages with their text rendered as html
	sess   *letagents.AgentSession // the agent whose delivery connection this is, or nil
	// own is the presence event this stream's opening logged (its agent
	// reached now), left out of what it sends: the agent knows it opened
	// its stream, and its first event is what others did.
	own    int64
	cursor int64
	sub    *notify.Subscription
	due    bool // rung, or just opened: read before waiting again
}

// open subscribes to the room's doorbell and only then reads where the
// stream starts, after message after (-1: from now on), so anything
// logged later rings. It returns the message the stream starts after.
func (f *feed) open(ctx context.Context, after int64) (int64, error) {
	sub, err := f.s.listen(ctx, f.s.Store.RoomChannel(f.room))
	if err != nil {
		return 0, err
	}
	f.sub = sub
	at, heard := f.heardStart(after)
	if !heard {
		if at, err = f.s.Store.EventStart(ctx, f.room, after); err != nil {
			return 0, err
		}
	}
	// Started from the ring, the stream is at the newest event heard, and
	// whatever is logged after it rings the subscription taken above: it
	// has nothing to catch up on until then, and reads nothing.
	f.cursor, f.due = at.Cursor, !heard
	return at.Seq, nil
}

// heardStart is where a stream resuming after message after starts, as
// the room's latest ring tells it without a read (store.EventStart's
// answer): when that ring is the send of message after itself, the
// stream starts just after the message's event, which the ring carries.
// Nothing logged after it has been heard, and whatever is rings the
// feed's subscription, taken before this look. The room exists: it rang.
func (f *feed) heardStart(after int64) (letagents.EventStart, bool) {
	r := latestRing(f.sub, f.s.Store.RoomChannel(f.room))
	if r.Message == nil || after < 1 || r.Last != after {
		return letagents.EventStart{}, false
	}
	return letagents.EventStart{Cursor: r.Event, Seq: after}, true
}

// eventKey is what a page of a room's event log depends on. RoomEvents
// names no caller: its page is the same for everyone let into the room,
// and each stream's leash has checked its own caller's access before it
// reads, so streams share by room and cursor alone. The page size is
// streamEventPage for every stream, and ?render changes only how each
// stream writes the page, never what is read.
type eventKey struct {
	room  string
	after int64
}

// next reads the events after the cursor, each with its item as it now
// is: its events, the cursor after them, and whether more follow at once.
// Streams of the room at the same cursor share the read (readGroup), so
// the page's items are only read here, never changed.
func (f *feed) next(ctx context.Context) ([]event, int64, bool, error) {
	now := f.s.now()
	page, ok := f.ringPage()
	if !ok {
		since := f.s.events.ticket()
		var err error
		page, err = f.s.events.read(ctx, eventKey{f.room, f.cursor}, since, func(ctx context.Context) (letagents.EventPage, error) {
			return f.s.Store.RoomEvents(ctx, f.room, f.cursor, streamEventPage, now)
		})
		if err != nil {
			return nil, f.cursor, false, err
		}
	}
	evs := make([]event, 0, len(page.Events))
	var msgs []letagents.Message
	for _, e := range page.Events {
		switch {
		case e.Message != nil:
			var data any = toMessage(*e.Message)
			if f.render {
				data = renderedMessage(toMessage(*e.Message))
			}
			if e.Kind == letagents.EventPin {
				evs = append(evs, event{name: wire.EventMessageUpdate, data: data})
				continue
			}
			evs = append(evs, event{id: letagents.MessageID(e.Message.Seq), data: data})
			msgs = append(msgs, *e.Message)
		case e.Task != nil:
			evs = append(evs, event{name: wire.EventTaskUpdate, data: toTask(*e.Task)})
		case e.Reasoning != nil:
			name, data := reasoningEvent(f.room, *e.Reasoning)
			evs = append(evs, event{name: name, data: data})
		case e.Room != nil:
			evs = append(evs, event{name: wire.EventRoomUpdate, data: wire.RoomUpdate{RoomID: e.Room.ID, DisplayName: e.Room.DisplayName}})
		case e.Session != nil && e.Seq == f.own:
		case e.Session != nil && e.Session.Live():
			evs = append(evs, event{name: wire.EventPresenceUpdate, data: toPresence(*e.Session, now)})
		case e.GitHub != nil:
			evs = append(evs, event{name: wire.EventGitHub, data: toGitHubEvent(*e.GitHub)})
		case e.Session != nil:
			evs = append(evs, event{name: wire.EventPresenceRemove, data: wire.PresenceRemoved{RoomID: f.room,
				AgentSessionID: letagents.WireID(letagents.AgentSessionPrefix, e.Session.ID), ActorLabel: e.Session.ActorLabel}})
		}
	}
	f.s.surfaced(ctx, f.sess, f.room, msgs, letagents.ViaStream)
	return evs, page.Last, page.HasMore, nil
}

// ringPage is the page after the cursor as the room's latest ring tells
// it, without a read (ringPage of polls, by event number): when the ring
// is the send of a message whose event is the next after the cursor, the
// page is that event, its message as a read at its commit gives it. A
// message the log's reads leave out (prompt-only) is read.
func (f *feed) ringPage() (letagents.EventPage, bool) {
	r := latestRing(f.sub, f.s.Store.RoomChannel(f.room))
	if r.Message == nil || r.Event != f.cursor+1 || r.Message.PromptKind == letagents.PromptAuto {
		return letagents.EventPage{}, false
	}
	return letagents.EventPage{Events: []letagents.RoomEvent{{Seq: r.Event, Kind: letagents.EventMessage, Message: r.Message}}, Last: r.Event}, true
}

// stream serves an event stream of the room until the client leaves or
// the server drains. Everything that can refuse it does so before the
// first byte, as a JSON error; once open, a failed read is retried at the
// next ring or heartbeat, so a database outage pauses a stream without
// ending it.
func (s *server) stream(w http.ResponseWriter, r *http.Request, c call) error {
	if !canFlush(w) {
		return errCannotStream
	}
	after, err := resumeCursor(r)
	if err != nil {
		return err
	}
	render, err := renderOption(r.URL.Query())
	if err != nil {
		return err
	}
	beat, err := s.heartbeatOption(r.URL.Query())
	if err != nil {
		return err
	}
	select {
	case <-s.Draining:
		return errDraining
	default:
	}
	release, err := s.streams.take(c.room, s.StreamMax, s.RoomStreamMax, s.StreamHeartbeat)
	if err != nil {
		return err
	}
	defer release()

	// The opening reads, subscribes and writes on a goroutine of its own,
	// as each turn below does, and for the same reason: run here, it left
	// this goroutine a 16 KB stack for the stream's life (measured: a
	// stream then held 8 KB more than a parked long-poll).
	o := &openStream{f: &feed{s: s, room: c.room, render: render}}
	defer o.close()
	var open bool
	spawn(func() { open, err = s.openStream(o, w, r, c, after, beat) })()
	if !open {
		return err
	}
	ctx, f, l, told := r.Context(), o.f, o.l, o.told
	rc := http.NewResponseController(w)
	recheck := false
	for {
		// A change the store was told of rings the access channels before
		// the doorbell of whatever was written after it: one rung with the
		// room's is taken first, so nothing written after the change is sent.
		select {
		case <-told.C():
			recheck = true
		default:
		}
		// Reads and writes run on a goroutine of their own, which ends when
		// they are done: they need a deep stack (pgx, JSON, the connection's
		// write path), which the handler's goroutine, parked here for hours,
		// would otherwise keep (measured: 8 KB more per open stream).
		spawn(func() { err = s.turn(ctx, w, rc, f, l, recheck) })()
		if err != nil {
			return nil
		}
		recheck = false
		select {
		case <-told.C():
			recheck = true
		case <-f.sub.C():
			f.due = true
		case <-s.streams.heartbeat():
			if _, err := w.Write(beat); err != nil {
				return nil
			}
		case <-s.Draining:
			// Ending the answer is the signal: clients reconnect, with
			// their last event id, to a server that is not stopping.
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// openStream is what an open stream holds until it ends.
type openStream struct {
	f             *feed
	l             *leash
	told          *notify.Subscription // the leash's access channels
	closeDelivery func(time.Time)
}

// close lets go of what o holds, the delivery connection first; o may be
// partly opened.
func (o *openStream) close() {
	if o.closeDelivery != nil {
		o.closeDelivery(time.Time{})
	}
	if o.told != nil {
		o.told.Close()
	}
	if o.f.sub != nil {
		o.f.sub.Close()
	}
}

// openStream opens room c.room's stream after message after into o (its
// feed made, nothing opened): it refuses with the error, before the first
// byte, whatever may not stream, then answers with the stream's opening,
// flushed. open is false when the stream ends there (refused, a HEAD, or
// a client already gone); o is to be closed in every case, what it opened
// before a panic included.
func (s *server) openStream(o *openStream, w http.ResponseWriter, r *http.Request, c call, after int64, beat []byte) (open bool, _ error) {
	ctx := r.Context()
	// With session credentials (headers) the stream is the agent's
	// delivery connection, as a parked long-poll is, and what it sends
	// counts as surfaced to it.
	sess, err := s.agentSession(r, c.room, wire.SessionCredentials{}, false)
	if err != nil {
		return false, err
	}
	o.f.sess = sess
	start, err := o.f.open(ctx, after)
	if err != nil {
		return false, err
	}
	// The stream checks its caller's access again as long as it is open
	// (leash). It listens before it checks once more here, so that no
	// change made since the gate ran goes unseen.
	o.l = s.leash(r, c, sess, true)
	if o.told, err = s.listen(ctx, o.l.channels()...); err != nil {
		return false, err
	}
	o.l.told = o.told.C()
	if err := o.l.check(ctx); err != nil {
		return false, err
	}
	if sess != nil {
		o.closeDelivery, o.f.own = s.deliver(ctx, sess.RoomID, sess.ID)
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise buffer the stream
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return false, nil
	}
	if _, err := fmt.Fprintf(w, ": connected\n\nid: %s\n\n", letagents.MessageID(start)); err != nil {
		return false, nil
	}
	if beat[0] != ':' { // heartbeat events: the first says how often they come
		if _, err := w.Write(beat); err != nil {
			return false, nil
		}
	}
	// The stream is open: the room's doorbell rings for anything logged
	// from here on. The client hears so now, not after the catch-up's
	// read (a client moving off a dead server counts itself back then).
	return http.NewResponseController(w).Flush() == nil, nil
}

// listen subscribes to channels with one doorbell. A hub that cannot
// listen within sharedReadTimeout (its connection is down) makes the
// stream a 503 the client may retry.
func (s *server) listen(ctx context.Context, channels ...string) (*notify.Subscription, error) {
	subCtx, cancel := context.WithTimeout(ctx, sharedReadTimeout)
	defer cancel()
	sub, err := s.Hub.SubscribeAll(subCtx, channels...)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, errDatabaseUnavailable
	}
	return sub, nil
}

// turn is one round of a stream: it checks the caller's access again when
// told to, or when a check is due (leash.due), then writes what the rung
// feeds have (catchUp). A revoked caller gets the access_revoked event,
// and the error ends the stream. A check that cannot tell holds the
// events back, to be tried again at the next ring or heartbeat.
func (s *server) turn(ctx context.Context, w io.Writer, rc *http.ResponseController, f *feed, l *leash, told bool) error {
	if told || l.due() {
		if err := s.recheck(ctx, w, rc, l); err != nil {
			return err
		}
		if l.held {
			return rc.Flush() // the heartbeat, which says the stream is alive
		}
	}
	return s.catchUp(ctx, w, rc, f, l)
}

// recheck checks the caller's access again: a revoked caller gets the
// access_revoked event and the error ends the stream; a check that cannot
// tell leaves the leash held.
func (s *server) recheck(ctx context.Context, w io.Writer, rc *http.ResponseController, l *leash) error {
	err := l.check(ctx)
	var v *revocation
	switch {
	case errors.As(err, &v):
		if err := writeEvent(w, v.event()); err != nil {
			return err
		}
		_ = rc.Flush()
		return v
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		l.held = true
		s.Logger.Warn("event stream: could not check access; holding events until a check succeeds", "room", rooms.ForLog(l.c.room), "error", err)
	}
	return nil
}

// catchUp writes what the feed has after its cursor, until nothing more
// follows, and flushes it; an error means the client left. A failed read
// is logged and left due, to be retried at the next ring or heartbeat: a
// database outage pauses a stream without ending it.
func (s *server) catchUp(ctx context.Context, w io.Writer, rc *http.ResponseController, f *feed, l *leash) error {
	for f.due {
		evs, after, more, err := f.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			s.Logger.Warn("event stream: read failed; retrying at the next ring or heartbeat", "room", rooms.ForLog(f.room), "error", err)
			break
		}
		// A turn rung by an earlier write may read what was written after
		// a logout or a disconnect that rang while it read, or after its
		// access check fell due: both are looked at once more before
		// anything is sent.
		recheck := l.due()
		select {
		case <-l.told:
			recheck = true
		default:
		}
		if recheck {
			if err := s.recheck(ctx, w, rc, l); err != nil {
				return err
			}
			if l.held {
				return rc.Flush()
			}
		}
		for _, ev := range evs {
			if err := writeEvent(w, ev); err != nil {
				return err
			}
		}
		f.cursor, f.due = after, more
	}
	return rc.Flush()
}

// heartbeatOption is what a stream sends as its heartbeat: the comment
// ": heartbeat", as the original does, or with ?heartbeat=event a
// wire.EventHeartbeat event, which a browser's EventSource can see.
func (s *server) heartbeatOption(q url.Values) ([]byte, error) {
	switch q.Get("heartbeat") {
	case "":
		return []byte(": heartbeat\n\n"), nil
	case "event":
		var b bytes.Buffer
		err := writeEvent(&b, event{name: wire.EventHeartbeat, data: wire.Heartbeat{EveryMS: s.StreamHeartbeat.Milliseconds()}})
		return b.Bytes(), err
	default:
		return nil, letagents.Errorf(letagents.Invalid, "heartbeat: want event or nothing, got %q", q.Get("heartbeat"))
	}
}

// writeEvent writes one event: its type unless it is the default, its id
// if it has one, and its data as one line of JSON (which never holds a
// raw line break).
func writeEvent(w io.Writer, ev event) error {
	var b bytes.Buffer
	if ev.name != "" {
		b.WriteString("event: " + ev.name + "\n")
	}
	if ev.id != "" {
		b.WriteString("id: " + ev.id + "\n")
	}
	b.WriteString("data: ")
	if err := newEncoder(&b).Encode(ev.data); err != nil {
		return fmt.Errorf("encode %s event: %w", ev.name, err)
	}
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}

// resumeCursor is the message a stream resumes after: the Last-Event-ID
// header's, which a reconnecting EventSource sends and which is newer than
// the URL it reconnects to, else ?after's; -1 when neither is given.
func resumeCursor(r *http.Request) (int64, error) {
	for _, src := range []struct{ name, v string }{{"Last-Event-ID", r.Header.Get("Last-Event-ID")}, {"after", r.URL.Query().Get("after")}} {
		if src.v == "" {
			continue
		}
		n, err := letagents.ParseMessageID(src.v)
		if err != nil {
			return 0, letagents.Errorf(letagents.Invalid, "%s: %v", src.name, err)
		}
		return n, nil
	}
	return -1, nil
}

// canFlush reports whether w can send what was written before the
// handler returns. The Lambda adapter's writer cannot: it hands the
// runtime the whole answer at the end.
func canFlush(w http.ResponseWriter) bool {
	for {
		switch x := w.(type) {
		case http.Flusher, interface{ FlushError() error }:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return false
		}
	}
}

// streamSlots counts the event streams this process holds open, in all
// and per room, against their caps, and beats their heartbeat: one ticker
// for every stream, running while any is open, rather than a timer each.
type streamSlots struct {
	mu    sync.Mutex
	total int
	rooms map[string]int
	beats chan struct{} // closed, and replaced, at each heartbeat
	stop  chan struct{} // closed when the last stream leaves
}

// take reserves a slot for a stream of room, or refuses with a 503 that
// names the cap; the returned func gives the slot back. The first stream
// starts the heartbeat, every interval.
func (g *streamSlots) take(room string, most, roomMost int, interval time.Duration) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.total >= most:
		return nil, &letagents.Error{Kind: letagents.Unavailable, Code: letagents.CodeStreamLimit, RetryAfter: streamRetryAfter,
			Message: fmt.Sprintf("This server holds its most event streams (%d, LETAGENTS_STREAM_MAX); try again later, or long-poll …/messages/poll", most)}
	case g.rooms[room] >= roomMost:
		return nil, &letagents.Error{Kind: letagents.Unavailable, Code: letagents.CodeRoomStreamLimit, RetryAfter: streamRetryAfter,
			Message: fmt.Sprintf("This server holds its most event streams of this room (%d, LETAGENTS_STREAM_ROOM_MAX); try again later, or long-poll …/messages/poll", roomMost)}
	}
	if g.rooms == nil {
		g.rooms = map[string]int{}
	}
	if g.total == 0 {
		g.beats, g.stop = make(chan struct{}), make(chan struct{})
		go g.beat(interval, g.stop)
	}
	g.total++
	g.rooms[room]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.total--
		if g.rooms[room]--; g.rooms[room] == 0 {
			delete(g.rooms, room)
		}
		if g.total == 0 {
			close(g.stop)
		}
	}, nil
}

// beat rings the heartbeat every interval until stop closes.
func (g *streamSlots) beat(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			g.mu.Lock()
			close(g.beats)
			g.beats = make(chan struct{})
			g.mu.Unlock()
		case <-stop:
			return
		}
	}
}

// heartbeat is closed at the next heartbeat.
func (g *streamSlots) heartbeat() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.beats
}
