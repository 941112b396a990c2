package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// The messages resource of a room: its whole history. The template is
// the original client's; the joined room's is also listed as a resource.
const (
	messagesTemplate = "letagents://rooms/{room_id}/messages"
	messagesPrefix   = "letagents://rooms/"
	messagesSuffix   = "/messages"
)

// messagesURI is a room's messages resource: the template expanded as
// RFC 6570 says (every byte but the unreserved percent-encoded, so
// github.com/o/r becomes github.com%2Fo%2Fr).
func messagesURI(roomID string) string {
	var b strings.Builder
	b.WriteString(messagesPrefix)
	for _, c := range []byte(roomID) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	b.WriteString(messagesSuffix)
	return b.String()
}

// roomOfURI is the room whose messages uri names, normalised. It also
// takes a room id written without encoding its slashes, as people do
// (letagents://rooms/github.com/o/r/messages), though the template, and
// so resources/read, does not.
func roomOfURI(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, messagesPrefix)
	if ok {
		rest, ok = strings.CutSuffix(rest, messagesSuffix)
	}
	if !ok || rest == "" {
		return "", fmt.Errorf("%q is not a room's messages (%s): %w", uri, messagesTemplate, mcpserver.ErrResourceNotFound)
	}
	id, err := url.PathUnescape(rest)
	if err == nil {
		id, err = rooms.Normalize(id)
	}
	if err != nil {
		return "", fmt.Errorf("%q: room id: %w", uri, err)
	}
	return id, nil
}

// resourceOptions turn on resources, with subscriptions and list
// changes, and track who subscribed to what: by resources/subscribe, or
// from protocol 2026-07-28 on in a subscriptions/listen request, which
// holds its subscriptions for as long as it stays open. serverOf is the
// server whose subscriptions a request's are (nil: none to keep): the
// one server of a local process, a hosted session's own.
func resourceOptions(serverOf func(context.Context) *Server) []mcpserver.ServerOption {
	subs := func(ctx context.Context, fn func(*subscriptions)) {
		if s := serverOf(ctx); s != nil {
			fn(&s.subs)
		}
	}
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if s := serverOf(ctx); s != nil {
			s.subscribe(ctx, req.Params.URI, true)
		}
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if s := serverOf(ctx); s != nil {
			s.subscribe(ctx, req.Params.URI, false)
		}
	})
	hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		// The endpoint's list is every hosted session's: the joined room's
		// resource is added to each session's answer instead.
		if s := serverOf(ctx); s != nil && s.cfg.Hosted != nil {
			if room := s.load().CurrentRoom; room != "" {
				res.Resources = append(res.Resources, joinedResource(room))
			}
		}
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
		subs(ctx, func(ss *subscriptions) {
			for _, uri := range req.Params.Notifications.ResourceSubscriptions {
				ss.add(ctx, id, uri)
			}
		})
	})
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, id any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		subs(ctx, func(ss *subscriptions) { ss.remove(ctx, id, "") })
	})
	hooks.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodSubscriptionsListen {
			subs(ctx, func(ss *subscriptions) { ss.remove(ctx, id, "") })
		}
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, sess mcpserver.ClientSession) {
		subs(ctx, func(ss *subscriptions) { ss.drop(sess.SessionID()) })
	})
	return []mcpserver.ServerOption{mcpserver.WithResourceCapabilities(true, true), mcpserver.WithHooks(hooks)}
}

// addResources registers the messages template on m, read by read.
func addResources(m *mcpserver.MCPServer, read mcpserver.ResourceTemplateHandlerFunc) {
	m.AddResourceTemplate(mcp.NewResourceTemplate(messagesTemplate, "room_messages",
		mcp.WithTemplateDescription("The whole message history of a room, oldest first, as JSON {\"messages\": [...]}. "+
			"Subscribe to the joined room's to hear of each new message."),
		mcp.WithTemplateMIMEType("application/json")),
		read)
}

// readMessagesResource reads a room's whole history, page by page.
func (s *Server) readMessagesResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	room, err := roomOfURI(req.Params.URI)
	if err != nil {
		return nil, err
	}
	room = s.knownRoomID(room)
	msgs := []wire.Message{}
	after := ""
	for {
		p, err := s.api.Messages(ctx, room, apiclient.Query{After: after, Limit: letagents.MaxPageSize})
		if err != nil {
			return nil, fmt.Errorf("read the messages of %s: %w", room, err)
		}
		msgs = append(msgs, p.Messages...)
		if !p.HasMore || len(p.Messages) == 0 {
			break
		}
		after = p.Messages[len(p.Messages)-1].ID
	}
	text, err := json.MarshalIndent(struct {
		Messages []wire.Message `json:"messages"`
	}{msgs}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the messages of %s: %w", room, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)}}, nil
}

// watcher follows the joined room's new messages for the subscribers of
// its resource.
type watcher struct {
	room   string
	cancel context.CancelFunc
	done   chan struct{}
}

// running reports whether the watcher still follows its room: it gives
// up on an answer that says the room cannot be watched.
func (w *watcher) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// stop ends the watcher and waits for its goroutine (nil: nothing).
func (w *watcher) stop() {
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
}

// watchRoom makes room the one whose new messages are announced, each
// one sent after watchRoom returns, and lists its messages resource
// instead of the last room's (which tells the client the list changed).
// Nothing changes for the room already watched, or once the server is
// closed.
func (s *Server) watchRoom(ctx context.Context, room string) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	same := s.watch != nil && s.watch.room == room
	if s.life.Err() != nil || (same && s.watch.running()) {
		return
	}
	s.watch.stop()
	// The cursor is taken now, not when the watcher gets to it, so that
	// what is sent once the join has answered is announced.
	after, err := s.api.LatestID(ctx, room)
	if err != nil {
		s.log.Debug("no cursor for the room yet; the watcher will take one", "room", room, "error", err)
	}
	wctx, cancel := context.WithCancel(s.life)
	w := &watcher{room: room, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		err := s.api.Watch(wctx, room, after, func([]wire.Message) { s.announce(room) })
		if wctx.Err() == nil {
			s.log.Warn("stopped following the room for resource updates", "room", room, "error", err)
		}
	}()
	s.watch = w
	if same || s.cfg.Hosted != nil {
		// A watcher that gave up, started again: the list stands. A
		// hosted session's room is not listed: the endpoint's resource
		// list is every session's.
		return
	}
	s.mcp.SetResources(mcpserver.ServerResource{Resource: joinedResource(room), Handler: s.readMessagesResource})
}

// joinedResource is the messages resource of the joined room, as listed.
func joinedResource(room string) mcp.Resource {
	return mcp.NewResource(messagesURI(room), "room_messages",
		mcp.WithResourceDescription("The whole message history of the joined room, "+room+", oldest first."),
		mcp.WithMIMEType("application/json"))
}

// subscribe records (on) or ends the request's session's subscription to
// uri: a local server keeps it in memory, where its watcher finds it; a
// hosted session keeps it in its saved state, where the task holding the
// session's stream finds it (Hosted.follow), whichever task took it.
func (s *Server) subscribe(ctx context.Context, uri string, on bool) {
	if s.cfg.Hosted == nil {
		if on {
			s.subs.add(ctx, nil, uri)
		} else {
			s.subs.remove(ctx, nil, uri)
		}
		return
	}
	room, err := roomOfURI(uri)
	if err != nil {
		return // names no room: it never changes
	}
	after := ""
	if on {
		// The cursor is taken now, so that whatever is sent once the
		// subscription has answered is announced, however late the task
		// holding the stream starts to watch.
		if after, err = s.api.LatestID(ctx, s.knownRoomID(room)); err != nil {
			s.log.Debug("no cursor for the subscribed room; updates start when it is watched", "room", room, "error", err)
		}
	}
	s.update(ctx, func(st *state.State) error {
		st.ResourceSubscriptions = slices.DeleteFunc(st.ResourceSubscriptions, func(sub state.ResourceSubscription) bool { return sub.URI == uri })
		if on {
			st.ResourceSubscriptions = append(st.ResourceSubscriptions, state.ResourceSubscription{URI: uri, After: after})
		}
		return nil
	})
}

// stopWatching stops following the joined room: no more resource
// notifications.
func (s *Server) stopWatching() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.endLife()
	s.watch.stop()
	s.watch = nil
}

// announce tells each session subscribed to room's messages that they
// changed.
func (s *Server) announce(room string) {
	for _, sub := range s.subs.of(room) {
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": sub.uri}},
		}}
		if s.cfg.Hosted != nil {
			// Over HTTP a request's session ends with the request: the
			// update goes to the session's standalone stream (its GET),
			// if one is open.
			if err := s.mcp.SendNotificationToSpecificClient(sub.session.SessionID(), n.Method, n.Params.AdditionalFields); err != nil {
				s.log.Debug("resource update not sent", "uri", sub.uri, "error", err)
			}
			continue
		}
		if sub.listen != nil {
			// It travels on that request's stream, which says so. (This
			// is why it goes to the session's channel directly: mcp-go's
			// senders take no _meta.)
			n.Params.Meta = map[string]any{mcp.MetaKeySubscriptionID: sub.listen}
		}
		select {
		case sub.session.NotificationChannel() <- n:
		default:
			s.log.Debug("resource update not sent: the client is not reading", "uri", sub.uri)
		}
	}
}

// subscriptions are the subscriptions of the MCP sessions to rooms'
// messages. URIs that name no room are not kept: they never change.
type subscriptions struct {
	mu   sync.Mutex
	list []subscription
}

// subscription is one session's subscription to a room's messages.
type subscription struct {
	session mcpserver.ClientSession
	uri     string // as the client wrote it
	room    string
	// listen is the id of the subscriptions/listen request that holds
	// it, nil for resources/subscribe.
	listen any
}

// same reports whether sub is the one of session, uri and listen; uri ""
// matches every URI.
func (sub subscription) same(session string, listen any, uri string) bool {
	return sub.session.SessionID() == session && (uri == "" || sub.uri == uri) &&
		(sub.listen == nil) == (listen == nil) && fmt.Sprint(sub.listen) == fmt.Sprint(listen)
}

// add records a subscription of the request's session.
func (ss *subscriptions) add(ctx context.Context, listen any, uri string) {
	sess := mcpserver.ClientSessionFromContext(ctx)
	room, err := roomOfURI(uri)
	if sess == nil || err != nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !slices.ContainsFunc(ss.list, func(sub subscription) bool { return sub.same(sess.SessionID(), listen, uri) }) {
		ss.list = append(ss.list, subscription{session: sess, uri: uri, room: room, listen: listen})
	}
}

// remove ends the request's session's subscription to uri ("": all those
// of the listen request).
func (ss *subscriptions) remove(ctx context.Context, listen any, uri string) {
	sess := mcpserver.ClientSessionFromContext(ctx)
	if sess == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = slices.DeleteFunc(ss.list, func(sub subscription) bool { return sub.same(sess.SessionID(), listen, uri) })
}

// drop forgets a session that ended.
func (ss *subscriptions) drop(session string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = slices.DeleteFunc(ss.list, func(sub subscription) bool { return sub.session.SessionID() == session })
}

// of lists the subscriptions to room's messages. A subscription to an
// invite-shaped id (TEAM-CHAT, as ids are normalised) is one to the named
// room it stands for when no invite room has that code (team-chat).
func (ss *subscriptions) of(room string) []subscription {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []subscription
	for _, sub := range ss.list {
		if sub.room == room || rooms.MayBeNamed(sub.room) && rooms.NamedRoomOf(sub.room) == room {
			out = append(out, sub)
		}
	}
	return out
}
