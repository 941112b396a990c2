package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/wire"
)

// followRecheck is how often a session's stream rereads the session's
// subscriptions unrung: a change rings HostedConfig.Watch at once, and
// this only bounds one whose ring was lost (the listener reconnecting),
// or every change where nothing rings.
const followRecheck = time.Minute

// followStream starts, for a GET of a session (its standalone stream),
// what sends that session's resource updates on it; the returned func
// ends it with the request. The load balancer may send the session's
// GET and its resources/subscribe to different tasks: the subscriptions
// are in the session's saved state, and the task holding the stream
// follows the rooms they name.
func (h *Hosted) followStream(r *http.Request) (stop func()) {
	id := r.Header.Get(mcpserver.HeaderKeySessionID)
	if r.Method != http.MethodGet || !strings.HasPrefix(id, sessionIDPrefix) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.follow(ctx, id, bearer(r))
	}()
	return func() { cancel(); <-done }
}

// streamSession stands for a session outside its requests, so that
// Hosted.server finds the session's server by its id.
type streamSession string

func (streamSession) Initialize()                                         {}
func (streamSession) Initialized() bool                                   { return true }
func (streamSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s streamSession) SessionID() string                                 { return string(s) }

// follow watches the rooms session id is subscribed to until ctx ends,
// and tells the session's stream of each new message in one. Only the
// session's own credential (the principal in ctx) is followed.
func (h *Hosted) follow(ctx context.Context, id, token string) {
	if got, found, err := h.cfg.Sessions.SessionOwner(ctx, id); err != nil || !found || got != principalOf(ctx) {
		return
	}
	s, err := h.server(context.WithValue(h.mcp.WithContext(ctx, streamSession(id)), bearerKey{}, token))
	if err != nil {
		h.log.Warn("hosted MCP: the session's subscriptions not followed", "error", err)
		return
	}
	// Listening before the first read: a change saved after it rings.
	var ring <-chan struct{}
	if h.cfg.Watch != nil {
		r, stop, err := h.cfg.Watch(ctx, id)
		if err != nil {
			h.log.Warn("hosted MCP: the session's changes not watched; read again each minute", "error", err)
		} else {
			defer stop()
			ring = r
		}
	}

	var mu sync.Mutex
	uris := map[string][]string{} // the subscribed URIs, by room
	after := map[string]string{}  // the last message announced, by room
	type roomWatch struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	watches := map[string]roomWatch{}
	defer func() {
		for _, w := range watches {
			w.cancel()
			<-w.done
		}
	}()
	for {
		want := map[string][]string{}
		subs := s.load().ResourceSubscriptions
		mu.Lock()
		for _, sub := range subs {
			if room, err := roomOfURI(sub.URI); err == nil {
				room = s.knownRoomID(room)
				want[room] = append(want[room], sub.URI)
				if _, ok := after[room]; !ok {
					after[room] = sub.After
				}
			}
		}
		uris = want
		mu.Unlock()
		for room, w := range watches {
			select {
			case <-w.done: // gave up (the room cannot be watched): tried again below
			default:
				if _, ok := want[room]; ok {
					continue
				}
				w.cancel()
				<-w.done
				mu.Lock()
				delete(after, room) // a later subscription brings its own cursor
				mu.Unlock()
			}
			delete(watches, room)
		}
		for room := range maps.Keys(want) {
			if _, ok := watches[room]; ok {
				continue
			}
			wctx, cancel := context.WithCancel(ctx)
			w := roomWatch{cancel: cancel, done: make(chan struct{})}
			watches[room] = w
			mu.Lock()
			cursor := after[room]
			mu.Unlock()
			go func() {
				defer close(w.done)
				err := s.api.Watch(wctx, room, cursor, func(msgs []wire.Message) {
					if len(msgs) == 0 {
						return
					}
					mu.Lock()
					after[room] = msgs[len(msgs)-1].ID
					subscribed := slices.Clone(uris[room])
					mu.Unlock()
					for _, uri := range subscribed {
						if err := h.mcp.SendNotificationToSpecificClient(id, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri}); err != nil {
							h.log.Debug("resource update not sent", "uri", uri, "error", err)
						}
					}
				})
				if wctx.Err() == nil {
					h.log.Debug("hosted MCP: a subscribed room cannot be watched; trying again", "room", room, "error", err)
				}
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-ring:
		case <-time.After(followRecheck):
		}
	}
}
