package server

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

func TestMessagesURI(t *testing.T) {
	t.Parallel()
	tmpl := mcp.NewResourceTemplate(messagesTemplate, "room_messages")
	tests := []struct{ room, uri string }{
		{"FEH7-YWH4-ZYT3", "letagents://rooms/FEH7-YWH4-ZYT3/messages"},
		{"github.com/acme/app", "letagents://rooms/github.com%2Facme%2Fapp/messages"},
		{"tea room", "letagents://rooms/tea%20room/messages"},
	}
	for _, tt := range tests {
		uri := messagesURI(tt.room)
		if uri != tt.uri {
			t.Errorf("messagesURI(%q) = %q, want %q", tt.room, uri, tt.uri)
		}
		// The template the client sees takes it, with the same room.
		if got := tmpl.URITemplate.Match(uri)["room_id"].String(); got != tt.room {
			t.Errorf("the template reads room %q from %q, want %q", got, uri, tt.room)
		}
		if got, err := roomOfURI(uri); err != nil || got != tt.room {
			t.Errorf("roomOfURI(%q) = %q, %v; want %q", uri, got, err, tt.room)
		}
	}
	for _, tt := range []struct{ uri, room string }{
		{"letagents://rooms/github.com/acme/app/messages", "github.com/acme/app"}, // written by hand
		{"letagents://rooms/https:%2F%2Fgithub.com%2FAcme%2Fapp.git/messages", "github.com/acme/app"},
	} {
		if got, err := roomOfURI(tt.uri); err != nil || got != tt.room {
			t.Errorf("roomOfURI(%q) = %q, %v; want %q", tt.uri, got, err, tt.room)
		}
	}
	for _, bad := range []string{"letagents://rooms//messages", "letagents://rooms/x", "file:///x", "letagents://rooms/%zz/messages"} {
		if room, err := roomOfURI(bad); err == nil {
			t.Errorf("roomOfURI(%q) = %q, want an error", bad, room)
		}
	}
}

// note waits for the next notification of method, skipping others.
func (a *agent) note(t *testing.T, method string) mcp.JSONRPCNotification {
	t.Helper()
	for {
		if n := testwait.Recv(t, method, a.notes); n.Method == method {
			return n
		}
	}
}

// noNote fails if a notification of method is already waiting.
func (a *agent) noNote(t *testing.T, method string) {
	t.Helper()
	for len(a.notes) > 0 {
		if n := <-a.notes; n.Method == method {
			t.Fatalf("unexpected %s %v", method, n.Params.AdditionalFields)
		}
	}
}

// watching returns the watcher of the joined room (nil for none).
func (a *agent) watching() *watcher {
	a.srv.watchMu.Lock()
	defer a.srv.watchMu.Unlock()
	return a.srv.watch
}

func (a *agent) listedURIs(t *testing.T) []string {
	t.Helper()
	res, err := a.client.ListResources(t.Context(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

// readMessages reads a messages resource and decodes it.
func (a *agent) readMessages(t *testing.T, uri string) []wire.Message {
	t.Helper()
	res, err := a.client.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	c, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || c.URI != uri || c.MIMEType != "application/json" {
		t.Fatalf("read %s: %#v, want JSON text of that URI", uri, res.Contents[0])
	}
	var body struct {
		Messages []wire.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(c.Text), &body); err != nil || body.Messages == nil {
		t.Fatalf("read %s: %v, want {\"messages\": [...]}:\n%s", uri, err, c.Text)
	}
	return body.Messages
}

// TestResources: the joined room's messages resource is listed, changes
// of room are announced, each new message is told to its subscribers,
// by resources/subscribe and by subscriptions/listen, and the watcher of
// a room left, or of a closed server, stops.
func TestResources(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{mcp.ProtocolVersion20251125, mcp.LATEST_PROTOCOL_VERSION} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, false)
			a := newAgentSpeaking(t, b, "", nil, protocol)
			if caps := a.client.GetServerCapabilities().Resources; caps == nil || !caps.Subscribe || !caps.ListChanged {
				t.Fatalf("resources capability %+v, want subscribe and listChanged", caps)
			}
			tmpls, err := a.client.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
			if err != nil || len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate.Raw() != messagesTemplate {
				t.Fatalf("resource templates %+v (%v), want %s", tmpls, err, messagesTemplate)
			}
			if uris := a.listedURIs(t); len(uris) != 0 || a.watching() != nil {
				t.Fatalf("in the lobby: resources %q, watcher %v; want none", uris, a.watching())
			}

			const room = "github.com/acme/app"
			uri := messagesURI(room)
			a.call(t, "join_room", map[string]any{"name": room}).ok(t)
			a.note(t, mcp.MethodNotificationResourcesListChanged)
			if uris := a.listedURIs(t); !slices.Equal(uris, []string{uri}) {
				t.Fatalf("resources %q, want the joined room's %s", uris, uri)
			}
			stopListen := func() {}
			if protocol == mcp.LATEST_PROTOCOL_VERSION {
				stop, err := a.client.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourcesListChanged: true, ResourceSubscriptions: []string{uri}},
					func(err error) { t.Errorf("listen: %v", err) })
				if err != nil {
					t.Fatal(err)
				}
				stopListen = stop
				t.Cleanup(stop)
				testwait.Until(t, "the listen to subscribe", func() bool { return len(a.srv.subs.of(room)) == 1 })
			} else if err := a.client.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
				t.Fatal(err)
			}

			other := apiclient.New(apiclient.Config{APIURL: b.url})
			sent, err := other.Send(t.Context(), room, wire.SendMessage{Sender: "ann", Text: "news"})
			if err != nil {
				t.Fatal(err)
			}
			up := a.note(t, mcp.MethodNotificationResourceUpdated)
			if up.Params.AdditionalFields["uri"] != uri {
				t.Errorf("updated %v, want uri %s", up.Params.AdditionalFields, uri)
			}
			if listening := protocol == mcp.LATEST_PROTOCOL_VERSION; listening != (up.Params.Meta[mcp.MetaKeySubscriptionID] != nil) {
				t.Errorf("updated with _meta %v, want the subscription id in it only on a listen stream", up.Params.Meta)
			}
			if msgs := a.readMessages(t, uri); len(msgs) != 1 || msgs[0].ID != sent.ID {
				t.Errorf("read %s: %v, want the one message %s", uri, msgs, sent.ID)
			}

			old := a.watching()
			a.call(t, "join_room", map[string]any{"name": "elsewhere"}).ok(t)
			a.note(t, mcp.MethodNotificationResourcesListChanged)
			if old.running() {
				t.Error("the watcher of the room left still runs")
			}
			if uris := a.listedURIs(t); !slices.Equal(uris, []string{messagesURI("elsewhere")}) {
				t.Errorf("resources %q after moving, want only elsewhere's", uris)
			}
			// Joining the same room again changes nothing.
			again := a.watching()
			a.call(t, "join_room", map[string]any{"name": "elsewhere"}).ok(t)
			if a.watching() != again || !again.running() {
				t.Error("joining the joined room again replaced its watcher")
			}
			a.noNote(t, mcp.MethodNotificationResourcesListChanged)

			if protocol == mcp.LATEST_PROTOCOL_VERSION {
				stopListen()
				testwait.Until(t, "the listen's subscriptions to end", func() bool { return len(a.srv.subs.of(room)) == 0 })
			} else {
				if err := a.client.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
					t.Fatal(err)
				}
				if subs := a.srv.subs.of(room); len(subs) != 0 {
					t.Errorf("subscriptions %v after unsubscribing", subs)
				}
			}

			a.srv.Close()
			if again.running() || a.watching() != nil {
				t.Error("a watcher still runs after Close")
			}
			a.call(t, "join_room", map[string]any{"name": "after close"}).ok(t)
			if a.watching() != nil {
				t.Error("a join after Close started a watcher")
			}
		})
	}
}

// TestMessagesResourcePages: the resource holds the whole history, read
// page by page, of any room, joined or not.
func TestMessagesResourcePages(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	a := newAgent(t, b, "", nil)
	other := apiclient.New(apiclient.Config{APIURL: b.url})
	if _, err := other.Join(t.Context(), "long room"); err != nil {
		t.Fatal(err)
	}
	n := letagents.MaxPageSize + 2
	for i := range n {
		if _, err := other.Send(t.Context(), "long room", wire.SendMessage{Sender: "ann", Text: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	reads := b.count("/rooms/long room/messages")
	msgs := a.readMessages(t, messagesURI("long room"))
	if len(msgs) != n || msgs[0].Text != "0" || msgs[n-1].Text != fmt.Sprint(n-1) {
		t.Fatalf("%d messages, want all %d in order", len(msgs), n)
	}
	if got := b.count("/rooms/long room/messages") - reads; got != 2 {
		t.Errorf("%d reads, want 2 pages of %d", got, letagents.MaxPageSize)
	}
	_, err := a.client.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: messagesURI("no such room")}})
	if err == nil || !strings.Contains(err.Error(), "no such room") {
		t.Errorf("reading a missing room: %v, want an error naming it", err)
	}
}

// TestServeStopsTheWatcher: when the MCP connection ends, Serve returns
// with the joined room's watcher stopped.
func TestServeStopsTheWatcher(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	a := newAgent(t, b, "", nil)
	stdin, feed := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- a.srv.Serve(t.Context(), stdin, io.Discard) }()
	a.call(t, "join_room", map[string]any{"name": "served"}).ok(t)
	w := a.watching()
	if w == nil || !w.running() {
		t.Fatal("no watcher runs for the joined room")
	}
	feed.Close() // the client goes away
	if err := testwait.Recv(t, "Serve to return", served); err != nil {
		t.Errorf("Serve: %v, want nil when the client goes away", err)
	}
	if w.running() || a.watching() != nil {
		t.Error("the watcher still runs after Serve returned")
	}
}

// TestResourcesOfANameShapedLikeACode: a named room whose name looks like
// an invite code (team-chat) is listed, read and announced as itself,
// though ids of that shape are normalised to upper case.
func TestResourcesOfANameShapedLikeACode(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	a := newAgentSpeaking(t, b, "", nil, mcp.ProtocolVersion20251125)
	room := a.call(t, "join_room", map[string]any{"name": "team-chat"}).ok(t).str("room_id")
	uri := messagesURI(room)
	if uris := a.listedURIs(t); !slices.Equal(uris, []string{uri}) {
		t.Fatalf("resources %q, want %s", uris, uri)
	}
	if err := a.client.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
		t.Fatal(err)
	}
	sent, err := apiclient.New(apiclient.Config{APIURL: b.url}).Send(t.Context(), room, wire.SendMessage{Sender: "ann", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if up := a.note(t, mcp.MethodNotificationResourceUpdated); up.Params.AdditionalFields["uri"] != uri {
		t.Errorf("updated %v, want %s", up.Params.AdditionalFields, uri)
	}
	if msgs := a.readMessages(t, uri); len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Errorf("read %s: %v, want the one message %s", uri, msgs, sent.ID)
	}
}
