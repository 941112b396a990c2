// Package api is the HTTP face of the service: the route table, JSON in and
// out, and the thin handlers that decode a request, call the store and
// encode the answer. Every function serves a Group of these routes.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/leasecheck"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// Deps are what the handlers need. Hub is used only by GroupPoll.
type Deps struct {
	Store  *store.Store
	Hub    *notify.Hub
	Auth   *auth.Service // nil: nobody signs in and every room is open
	Logger *slog.Logger
	// BaseURL is the service's public URL (LETAGENTS_BASE_URL), for links
	// and the OAuth callback; empty derives it from each request.
	BaseURL string
	// MCPURL is the hosted MCP endpoint's public URL where it is not on
	// BaseURL's origin (LETAGENTS_MCP_URL): a resource OAuth tokens are
	// issued for besides <base URL>/mcp.
	MCPURL string
	// Origins are the browser origins, besides the one a request was sent
	// to, taken for the service's own: CORS allows them with credentials,
	// and their pages may write with the session cookie. Lower case.
	Origins []string
	// PollMax clamps ?timeout of a long-poll (LETAGENTS_POLL_MAX_MS).
	PollMax time.Duration
	// Draining, once closed, makes parked long-polls answer at once (with
	// what they have, usually nothing) so a stopping server drains quickly.
	Draining <-chan struct{}
	// Now is the clock of agent sessions, presence and the board (tests
	// set it; nil is time.Now).
	Now func() time.Time
	// StreamMax and RoomStreamMax cap the event streams this process
	// holds open, in all and per room (LETAGENTS_STREAM_MAX and
	// LETAGENTS_STREAM_ROOM_MAX; 0 is letagents.DefaultStreamMax and
	// DefaultRoomStreamMax).
	StreamMax, RoomStreamMax int
	// StreamHeartbeat is how often a stream sends a heartbeat comment (0 is
	// letagents.StreamHeartbeat; tests shorten it).
	StreamHeartbeat time.Duration
	// GitHubWebhookSecret checks the signature of GitHub's webhook
	// deliveries (GITHUB_WEBHOOK_SECRET); empty answers them 503.
	GitHubWebhookSecret []byte
	// GitHubApp is the GitHub App the service acts as (GITHUB_APP_ID,
	// GITHUB_APP_PRIVATE_KEY, GITHUB_APP_SLUG); nil writes no checks.
	GitHubApp *github.App
	// LeaseMode is how the letagents-lease check is enforced
	// (LETAGENTS_GITHUB_ENFORCEMENT_MODE); "" is leasecheck.Checks.
	LeaseMode leasecheck.Mode
}

type server struct {
	Deps
	pages   readGroup[pageKey, letagents.MessagePage] // long-polls' shared reads
	events  readGroup[eventKey, letagents.EventPage]  // streams' shared reads; keeps no read begun before a wake
	streams streamSlots
}

// New returns the handler for the given groups (all groups when none are
// named): exactly what one deployed function serves.
func New(d Deps, groups ...Group) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.PollMax <= 0 {
		d.PollMax = letagents.DefaultPollMax
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.StreamMax <= 0 {
		d.StreamMax = letagents.DefaultStreamMax
	}
	if d.RoomStreamMax <= 0 {
		d.RoomStreamMax = letagents.DefaultRoomStreamMax
	}
	if d.StreamHeartbeat <= 0 {
		d.StreamHeartbeat = letagents.StreamHeartbeat
	}
	if d.LeaseMode == "" {
		d.LeaseMode = leasecheck.Checks
	}
	if d.Auth == nil {
		d.Auth = auth.New(d.Store, auth.Config{Logger: d.Logger})
	}
	s := &server{Deps: d, pages: readGroup[pageKey, letagents.MessagePage]{keep: hasMessages}}
	rs := router{s: s}
	for _, rt := range s.routes() {
		if len(groups) == 0 || slices.Contains(groups, rt.Group) {
			rs.routes = append(rs.routes, rt)
		}
	}
	return s.middleware(rs)
}

func (s *server) now() time.Time { return s.Now() }

// writeJSON writes v with status, and its length: an answer flushed
// before its handler returns (a woken long-poll's) is then whole on the
// client's side at once, where a chunked one would end only with the
// handler. Encoding our own types cannot fail, and a write error means
// the client went away; there is nobody to tell.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var body bytes.Buffer
	_ = newEncoder(&body).Encode(v)
	writeBody(w, status, body.Bytes())
}

// writeJSONList is writeJSON for v whose list under key (a field nil in
// v, so that it encodes as null) is items. encoding/json checks and
// compacts every json.RawMessage it writes, a scan of the whole list
// again: for a page of 50 messages, 0.12 ms of CPU, as long as encoding
// them had taken.
func writeJSONList(w http.ResponseWriter, status int, v any, key string, items pageItems) {
	var head bytes.Buffer
	_ = newEncoder(&head).Encode(v)
	// A quote inside a JSON string is escaped, so the key and its null
	// are found only where v's field put them.
	null := []byte(`"` + key + `":null`)
	at := bytes.Index(head.Bytes(), null)
	body := pageBuffer()
	defer releasePageBuffer(body)
	body.Grow(head.Len() - len("null") + items.listLen())
	body.Write(head.Bytes()[:at+len(null)-len("null")])
	items.writeList(body)
	body.Write(head.Bytes()[at+len(null):])
	writeBody(w, status, body.Bytes())
}

// writeBody writes body, JSON, with status and its length.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Cache-Control", "no-store")
	// Answers keep <, > and & as themselves (newEncoder); nosniff keeps
	// any browser from reading one as HTML.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newEncoder writes JSON as the original service does, with <, > and &
// as themselves: escaped as \u003c they would make a message of them six
// times its size, and a page of such messages too big to send.
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// withinPage encodes items, in order, while their JSON stays within
// letagents.MaxPageBytes, and never fewer than one, so that every page
// moves its reader on; cut says that some were left out, and they cost
// no encoding (a rendered message is rendered as it is encoded). Pages are
// what the service answers most: the items are encoded one after another
// into one buffer, which takes half the CPU of encoding each into a
// buffer of its own.
func withinPage[T any](items []T) (out pageItems, cut bool, err error) {
	buf := pageBuffer()
	enc := newEncoder(buf)
	out.ends = make([]int, 0, len(items))
	size := 0
	for i := range items {
		start := buf.Len()
		// By its address: an item given as itself is copied to the heap.
		if err := enc.Encode(&items[i]); err != nil {
			releasePageBuffer(buf)
			return pageItems{}, false, fmt.Errorf("encode item %d of a page: %w", i, err)
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		if size += buf.Len() - start; size > letagents.MaxPageBytes && i > 0 {
			cut = true
			break
		}
		out.ends = append(out.ends, buf.Len())
	}
	out.buf, out.pooled = buf.Bytes(), buf
	return out, cut, nil
}

// pageItems are the JSON of a page's items, one after another in buf,
// item i ending at ends[i]; reversed, they are listed last first.
type pageItems struct {
	buf      []byte
	ends     []int
	reversed bool
	pooled   *bytes.Buffer // buf's, for release
}

// release gives the items' buffer back to pageBuffers, once they are
// written.
func (p pageItems) release() { releasePageBuffer(p.pooled) }

// len is how many items there are.
func (p pageItems) len() int { return len(p.ends) }

// item is the JSON of item i, in the order they were encoded.
func (p pageItems) item(i int) []byte {
	start := 0
	if i > 0 {
		start = p.ends[i-1]
	}
	return p.buf[start:p.ends[i]]
}

// listLen is the length of the items as a JSON array.
func (p pageItems) listLen() int {
	if len(p.ends) == 0 {
		return len("[]")
	}
	return p.ends[len(p.ends)-1] + len(p.ends) - 1 + len("[]")
}

// writeList writes the items to b as a JSON array.
func (p pageItems) writeList(b *bytes.Buffer) {
	b.WriteByte('[')
	for k := range p.ends {
		i := k
		if p.reversed {
			i = len(p.ends) - 1 - k
		}
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(p.item(i))
	}
	b.WriteByte(']')
}

// pageBuffers are the buffers pages are encoded and put together in,
// which were most of a read's garbage. A buffer grown past
// maxPooledPageBuffer by a large page is left to the collector rather
// than kept.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledPageBuffer = 256 << 10

func pageBuffer() *bytes.Buffer {
	b := pageBuffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// releasePageBuffer returns b to pageBuffers: nothing may use its bytes
// after.
func releasePageBuffer(b *bytes.Buffer) {
	if b != nil && b.Cap() <= maxPooledPageBuffer {
		pageBuffers.Put(b)
	}
}

// encodeJSON is v as newEncoder writes it, without the final newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := newEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, wire.Error{Error: msg})
}

var statusOf = map[letagents.ErrorKind]int{
	letagents.Invalid:      http.StatusBadRequest,
	letagents.Unauthorized: http.StatusUnauthorized,
	letagents.Forbidden:    http.StatusForbidden,
	letagents.NotFound:     http.StatusNotFound,
	letagents.Gone:         http.StatusGone,
	letagents.Conflict:     http.StatusConflict,
	letagents.TooLarge:     http.StatusRequestEntityTooLarge,
	letagents.RateLimited:  http.StatusTooManyRequests,
	letagents.Unavailable:  http.StatusServiceUnavailable,

	letagents.NotImplemented: http.StatusNotImplemented,
}

// writeClientError answers with a client error: {"error": message,
// "code": reason, ...fields}, and Retry-After when it has one.
func writeClientError(w http.ResponseWriter, status int, e *letagents.Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(seconds(e.RetryAfter)))
	}
	writeJSON(w, status, clientErrorBody(e))
}

// clientErrorBody is the JSON body of a client error: {"error": message},
// with "code": reason and the error's fields when it has them.
func clientErrorBody(e *letagents.Error) map[string]any {
	body := map[string]any{}
	maps.Copy(body, e.Fields)
	body["error"] = e.Message
	if e.Code != "" {
		body["code"] = e.Code
	}
	return body
}

// DatabaseRetryAfter is the Retry-After of a 503 that says the database
// is unavailable: long enough for a restart's new connections, short
// enough that a waiting agent notices the end of an outage soon.
const DatabaseRetryAfter = 2 * time.Second

// errDatabaseUnavailable is the answer to a request the database could
// not serve (db.Unavailable), which the client may send again.
var errDatabaseUnavailable = &letagents.Error{
	Kind:       letagents.Unavailable,
	Message:    "The database is unavailable; try again shortly",
	Code:       letagents.CodeDatabaseUnavailable,
	RetryAfter: DatabaseRetryAfter,
}

// fail answers with err: a client error as itself, an unavailable
// database as a 503 with Retry-After, anything else as a 500 whose
// details go to the log and never to the client.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *letagents.Error
	if errors.As(err, &e) {
		if status, ok := statusOf[e.Kind]; ok {
			writeClientError(w, status, e)
			return
		}
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client left; nobody reads an answer
	}
	if db.Unavailable(err) {
		s.Logger.Warn("database unavailable", "method", r.Method, "path", LogPath(r.URL.EscapedPath()), "error", err)
		writeClientError(w, http.StatusServiceUnavailable, errDatabaseUnavailable)
		return
	}
	s.Logger.Error("request failed", "method", r.Method, "path", LogPath(r.URL.EscapedPath()), "error", err)
	writeError(w, http.StatusInternalServerError, "internal error")
}

// decode reads a JSON object body into v, bounded by MaxBodyBytes. Unknown
// fields are ignored: existing clients send fields this server does not use.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, letagents.MaxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var syntax *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return letagents.Errorf(letagents.TooLarge, "request body is larger than %d bytes", letagents.MaxBodyBytes)
		case errors.Is(err, io.EOF):
			return letagents.Errorf(letagents.Invalid, "request body must be a JSON object")
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return letagents.Errorf(letagents.Invalid, "%s must be a %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
		case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &typeErr):
			return letagents.Errorf(letagents.Invalid, "request body is not a JSON object: %v", err)
		default:
			return fmt.Errorf("read request body: %w", err)
		}
	}
	if dec.More() {
		return letagents.Errorf(letagents.Invalid, "request body must be a single JSON object")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int64", "float64":
		return "number"
	case "bool":
		return "boolean"
	}
	return "JSON " + goKind
}
