package server

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/testwait"
)

// TestHostedResourceUpdates: a hosted session lists its joined room's
// messages resource, and hears of each new message in a room it
// subscribed to on its standalone stream, whether the balancer (no
// stickiness) sends the stream and the subscription to one task or to
// two.
func TestHostedResourceUpdates(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	tasks := []*Hosted{newHostedOn(t, b), newHostedOn(t, b)}
	for _, c := range []struct {
		name          string
		stream, calls int // the task of the GET stream, of every other request
	}{
		{"one task", 0, 0},
		{"the stream on another task", 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var streams atomic.Int64
			lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					streams.Add(1)
					defer streams.Add(-1)
					tasks[c.stream].ServeHTTP(w, r)
					return
				}
				tasks[c.calls].ServeHTTP(w, r)
			}))
			t.Cleanup(lb.Close)
			tr, err := transport.NewStreamableHTTP(lb.URL+HostedPath, transport.WithContinuousListening())
			if err != nil {
				t.Fatal(err)
			}
			a := connect(t, client.NewClient(tr), mcp.ProtocolVersion20250618)
			room := "github.com/acme/follow-" + map[int]string{0: "same", 1: "other"}[c.calls]
			a.call(t, "join_room", map[string]any{"name": room}).ok(t)
			uri := messagesURI(room)
			if listed := a.listedURIs(t); !slices.Contains(listed, uri) {
				t.Fatalf("resources/list: %v, want the joined room's %s", listed, uri)
			}
			testwait.Until(t, "the session's stream open", func() bool { return streams.Load() > 0 })
			if err := a.client.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
				t.Fatal(err)
			}
			// Sent once the subscription has answered: announced however
			// late the stream's task reads the subscription.
			local := newAgent(t, b, "", nil)
			local.call(t, "join_room", map[string]any{"name": room}).ok(t)
			local.call(t, "send_message", map[string]any{"text": "news for the subscriber"}).ok(t)
			if up := a.note(t, mcp.MethodNotificationResourceUpdated); up.Params.AdditionalFields["uri"] != uri {
				t.Fatalf("resources/updated for %v, want %s", up.Params.AdditionalFields["uri"], uri)
			}
		})
	}
}
