package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// Bounds and pauses of Watch.
const (
	// streamOpen bounds the wait for a stream's response headers. A
	// server with a stream sends them at once (with ": connected"); one
	// behind a buffering proxy, or a function that buffers whole answers,
	// would only send them when the stream ends, so a stream that does not
	// open in time counts as missing.
	streamOpen = 30 * time.Second
	// streamIdle is how long an open stream may stay silent before it is
	// taken for a dead connection and reopened: six of the 15 s
	// heartbeats the server sends.
	streamIdle = 90 * time.Second
	// reconnectWait is the first pause before reconnecting (unless the
	// stream said otherwise with retry:), doubled after each failure up
	// to maxReconnectWait, which also caps a server's retry: and
	// Retry-After.
	reconnectWait    = time.Second
	maxReconnectWait = 30 * time.Second
	// watchHold is the timeout of each long-poll when the server has no
	// stream.
	watchHold = letagents.DefaultPollTimeout
)

// errNoStream says the server has no usable event stream for the room.
var errNoStream = errors.New("no event stream")

// Watch follows a room's new messages until ctx ends, calling deliver
// with each batch, oldest first, each message once: those after the
// message id after, or with after "", those sent from now on. It always
// returns an error: ctx's when it ends, or the answer that shows the
// room cannot be watched (such as 403 or 404 from the long-poll).
//
// It reads the room's event stream (GET …/messages/stream on the poll
// base, text/event-stream), reconnecting with Last-Event-ID after a
// dropped connection and with growing pauses after failures, and falls
// back to long-polls (see Poll) when the server has no stream: the route
// answers 404, 405 or 501, or the answer is not an event stream, or its
// headers take longer than 30 s. deliver runs on Watch's goroutine.
func (c *Client) Watch(ctx context.Context, roomID, after string, deliver func([]wire.Message)) error {
	rp, err := roomPath(roomID)
	if err != nil {
		return err
	}
	w := &watch{c: c, room: roomID, rp: rp, deliver: deliver}
	if after != "" {
		if err := w.advance(after); err != nil {
			return err
		}
		w.lastEventID = after
	}
	failures := 0
	var wait time.Duration
	for {
		if err := pause(ctx, wait); err != nil {
			return err
		}
		var next time.Duration
		switch {
		case w.cursor == "":
			err = w.start(ctx)
		case w.polling:
			next, err = w.poll(ctx)
		default:
			next, err = w.stream(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			failures, wait = 0, next
		case errors.Is(err, errNoStream):
			w.polling, wait = true, 0
		case !retryable(err):
			return err
		default:
			failures++
			wait = w.backoff(failures, err)
		}
	}
}

// watch is the state of one Watch.
type watch struct {
	c        *Client
	room, rp string
	deliver  func([]wire.Message)
	polling  bool
	// cursor is the id of the last message delivered (or the one Watch
	// started after), seq its number: messages at or before it are not
	// delivered again.
	cursor string
	seq    int64
	// lastEventID is what the stream last said with id: (at first, the
	// cursor Watch started after), sent back as Last-Event-ID.
	lastEventID string
	// retry is the stream's reconnection time (retry:), 0 until it says.
	retry time.Duration
}

// advance moves the cursor to the message id.
func (w *watch) advance(id string) error {
	n, err := letagents.ParseMessageID(id)
	if err != nil {
		return fmt.Errorf("watch %s after %q: %w", w.room, id, err)
	}
	w.cursor, w.seq = id, n
	return nil
}

// LatestID returns the id of a room's newest message, msg_0 when it has
// none: the cursor of what comes from now on.
func (c *Client) LatestID(ctx context.Context, roomID string) (string, error) {
	p, err := c.Messages(ctx, roomID, Query{Before: "latest", Limit: 1})
	if err != nil {
		return "", err
	}
	if len(p.Messages) == 0 {
		return letagents.MessageID(0), nil
	}
	return p.Messages[len(p.Messages)-1].ID, nil
}

// start sets the cursor at the room's newest message, for a Watch of the
// messages sent from now on.
func (w *watch) start(ctx context.Context) error {
	id, err := w.c.LatestID(ctx, w.room)
	if err != nil {
		return err
	}
	if err := w.advance(id); err != nil {
		return err
	}
	w.lastEventID = id
	return nil
}

// handle delivers the messages past the cursor and moves it.
func (w *watch) handle(msgs []wire.Message) {
	var fresh []wire.Message
	for _, m := range msgs {
		if n, err := letagents.ParseMessageID(m.ID); err == nil {
			if n <= w.seq {
				continue
			}
			w.seq = n
		}
		w.cursor = m.ID
		fresh = append(fresh, m)
	}
	if len(fresh) > 0 {
		w.deliver(fresh)
	}
}

// poll long-polls once and returns the pause before the next poll: none,
// unless the server answered empty at once (it should hold the poll),
// which must not turn into a busy loop.
func (w *watch) poll(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	p, err := w.c.Poll(ctx, w.room, w.cursor, watchHold, 0)
	if err != nil {
		return 0, err
	}
	w.handle(p.Messages)
	if len(p.Messages) == 0 && time.Since(start) < reconnectWait {
		return reconnectWait, nil
	}
	return 0, nil
}

// stream follows the room's event stream until the connection ends, and
// returns the pause before reconnecting. An error says it did not open.
func (w *watch) stream(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := w.open(ctx, cancel, "/rooms/"+w.rp+"/messages/stream")
	if missingRoute(err) {
		resp, err = w.open(ctx, cancel, "/projects/"+w.rp+"/messages/stream")
	}
	if IsStatus(err, http.StatusNotFound) || IsStatus(err, http.StatusMethodNotAllowed) || IsStatus(err, http.StatusNotImplemented) {
		return 0, fmt.Errorf("%w: %w", errNoStream, err)
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	idle := time.AfterFunc(w.c.streamIdle, cancel)
	defer idle.Stop()
	events := newEventReader(&idleReader{r: resp.Body, t: idle, d: w.c.streamIdle}, w.lastEventID)
	for {
		ev, err := events.next()
		w.lastEventID = events.lastID
		if events.retry > 0 {
			w.retry = min(events.retry, maxReconnectWait)
		}
		if err != nil {
			// However the connection ended (the server closed it, it went
			// silent, it broke), the next one resumes from lastEventID.
			return w.reconnectWait(), nil
		}
		if ev.typ != wire.EventMessage {
			continue // task_update and the like: not messages
		}
		var m wire.Message
		if json.Unmarshal([]byte(ev.data), &m) != nil {
			continue
		}
		w.handle([]wire.Message{m})
	}
}

// open requests the event stream at path and returns the open stream, or
// an *APIError for any other answer. abort cancels the request's context.
func (w *watch) open(ctx context.Context, abort context.CancelFunc, path string) (*http.Response, error) {
	r := request{method: http.MethodGet, base: w.c.poll, path: path}
	req, token, err := w.c.newRequest(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if w.lastEventID != "" {
		req.Header.Set("Last-Event-ID", w.lastEventID)
	}
	late := time.AfterFunc(w.c.streamOpen, abort)
	resp, err := w.c.hc.Do(req)
	if !late.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		return nil, fmt.Errorf("%s %s: %w: no answer within %v", r.method, r.path, errNoStream, w.c.streamOpen)
	}
	if err != nil {
		return nil, sendError(r, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorRaw))
		resp.Body.Close()
		return nil, w.c.check(ctx, r, resp, raw, token)
	}
	if err := w.c.check(ctx, r, resp, nil, token); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w: the answer is %q", r.method, r.path, errNoStream, resp.Header.Get("Content-Type"))
	}
	return resp, nil
}

// reconnectWait is the pause before reopening a stream that ended.
func (w *watch) reconnectWait() time.Duration {
	if w.retry > 0 {
		return w.retry
	}
	return reconnectWait
}

// backoff is the pause after the nth failure in a row: the reconnection
// time doubled n-1 times, at least the answer's Retry-After, at most
// maxReconnectWait, less up to half of it at random so that clients
// dropped together do not come back together.
func (w *watch) backoff(n int, err error) time.Duration {
	d := w.reconnectWait()
	for i := 1; i < n && d < maxReconnectWait; i++ {
		d *= 2
	}
	if e, ok := errors.AsType[*APIError](err); ok {
		d = max(d, e.RetryAfter)
	}
	d = min(d, maxReconnectWait)
	return d - rand.N(d/2+1)
}

// retryable reports whether a failed request may succeed if sent again:
// no answer, or one that says so (408, 429, 5xx). Any other answer (401,
// 403, 404 from a route that exists) says the room cannot be watched.
func retryable(err error) bool {
	e, ok := errors.AsType[*APIError](err)
	if !ok {
		return true
	}
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// idleReader pushes a timer back by d whenever bytes arrive.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.d)
	}
	return n, err
}

// event is one server-sent event.
type event struct {
	typ  string // wire.EventMessage unless the event named another type
	data string
}

// eventReader parses a text/event-stream as the WHATWG HTML standard
// says ("Server-sent events", interpreting an event stream): lines end
// in CRLF, LF or CR; a leading BOM is skipped; lines starting with ':'
// are comments; a blank line dispatches the event, unless it has no
// data; an event the stream ends in the middle of is dropped.
type eventReader struct {
	r *bufio.Reader
	// lastID is the last event id as of the last blank line (id: sets
	// it, ids holding NUL are ignored); retry the reconnection time the
	// stream set, 0 for none.
	lastID, idBuf string
	retry         time.Duration
	// afterCR: the last line ended in CR, so a LF next belongs to it.
	afterCR, started bool
}

// newEventReader reads the stream r, whose last event id so far (from
// the connections before) is lastID.
func newEventReader(r io.Reader, lastID string) *eventReader {
	return &eventReader{r: bufio.NewReader(r), lastID: lastID, idBuf: lastID}
}

// next returns the next event, or the error that ended the stream.
func (e *eventReader) next() (event, error) {
	var typ string
	var data strings.Builder
	for {
		line, err := e.line()
		if err != nil {
			return event{}, err
		}
		if line == "" {
			e.lastID = e.idBuf
			if data.Len() == 0 {
				typ = ""
				continue
			}
			if typ == "" {
				typ = wire.EventMessage
			}
			return event{typ: typ, data: strings.TrimSuffix(data.String(), "\n")}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			typ = value
		case "data":
			if data.Len()+len(value) >= maxAnswer {
				return event{}, fmt.Errorf("event stream: an event is larger than %d bytes", maxAnswer)
			}
			data.WriteString(value)
			data.WriteByte('\n')
		case "id":
			if !strings.ContainsRune(value, 0) {
				e.idBuf = value
			}
		case "retry":
			ms, err := strconv.ParseUint(value, 10, 32)
			switch {
			case err == nil:
				e.retry = time.Duration(ms) * time.Millisecond
			case errors.Is(err, strconv.ErrRange):
				e.retry = maxReconnectWait // digits all the same: longer than anyone waits
			}
		}
	}
}

// line reads one line, without its end.
func (e *eventReader) line() (string, error) {
	var b []byte
	for {
		c, err := e.r.ReadByte()
		if err != nil {
			return "", err
		}
		if e.afterCR {
			e.afterCR = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\r':
			e.afterCR = true
			return e.text(b), nil
		case '\n':
			return e.text(b), nil
		}
		if b = append(b, c); len(b) > maxAnswer {
			return "", fmt.Errorf("event stream: a line is longer than %d bytes", maxAnswer)
		}
	}
}

// text is a line's text, the stream's BOM cut from its first.
func (e *eventReader) text(b []byte) string {
	s := string(b)
	if !e.started {
		e.started = true
		s = strings.TrimPrefix(s, "\uFEFF")
	}
	return s
}
