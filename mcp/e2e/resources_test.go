package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// appMessages is the messages resource of appRoom, the template
// letagents://rooms/{room_id}/messages expanded.
const appMessages = "letagents://rooms/github.com%2Facme%2Fapp/messages"

// TestResourcesFollowTheRoom: an agent's joined room is listed as a
// resource, a change of room is announced, a subscriber hears of each
// new message through the runner's event stream (not the long-poll
// fallback), and reads the whole history from the resource.
func TestResourcesFollowTheRoom(t *testing.T) {
	t.Parallel()
	r := startRunner(t)
	r.GitHub.AddRepo("acme/app", false)
	repo := newRepo(t, "https://github.com/acme/app.git")
	a := startAgent(t, r.URL, agentConfig{Name: "alpha", Dir: repo.Dir})
	b := startAgent(t, r.URL, agentConfig{Name: "bravo", Dir: repo.Dir})

	if caps := a.c.GetServerCapabilities().Resources; caps == nil || !caps.Subscribe || !caps.ListChanged {
		t.Fatalf("resources capability %+v, want subscribe and listChanged", caps)
	}
	// The auto-join may come before the handshake ends, so that its
	// list change is not sent: the list is read after it anyway.
	a.waitJoined(t)
	b.waitJoined(t)
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	list, err := a.c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != appMessages {
		t.Fatalf("resources/list: %+v (%v), want only %s", list, err, appMessages)
	}

	stop, err := a.c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourcesListChanged: true, ResourceSubscriptions: []string{appMessages}},
		func(err error) { t.Errorf("subscriptions/listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	a.note(t, mcp.MethodNotificationSubscriptionsAcknowledged)

	var sent []wire.Message
	for _, text := range []string{"first news", "second news"} {
		m := b.send(t, text)
		sent = append(sent, m.Message)
		up := a.note(t, mcp.MethodNotificationResourceUpdated)
		if up.Params.AdditionalFields["uri"] != appMessages || up.Params.Meta[mcp.MetaKeySubscriptionID] == nil {
			t.Errorf("resources/updated for %v with _meta %v, want %s tagged with the listen's subscription id",
				up.Params.AdditionalFields["uri"], up.Params.Meta, appMessages)
		}
	}

	res, err := a.c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: appMessages}})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %+v (%v)", appMessages, res, err)
	}
	text, _ := res.Contents[0].(mcp.TextResourceContents)
	var body struct {
		Messages []wire.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(text.Text), &body); err != nil {
		t.Fatalf("resources/read %s: %v:\n%s", appMessages, err, text.Text)
	}
	ids := func(msgs []wire.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.ID)
		}
		return out
	}
	if !slices.Equal(ids(body.Messages), ids(sent)) {
		t.Errorf("resources/read %s: messages %q, want %q", appMessages, ids(body.Messages), ids(sent))
	}

	a.callOK(t, "join_room", map[string]any{"name": "elsewhere"}, &struct{}{})
	a.note(t, mcp.MethodNotificationResourcesListChanged)
	// Leaving the room ends its watch, and so its stream, which the
	// runner logs then: the news came by the stream, and no long-poll of
	// the room was made (the fallback would have).
	const stream, poll = "/rooms/github.com/acme/app/messages/stream", "/rooms/github.com/acme/app/messages/poll"
	testwait.Until(t, "the runner to log the end of the app room's stream", func() bool {
		return slices.Contains(r.requests(t, "GET", stream), 200)
	})
	if polls := r.requests(t, "GET", poll); len(polls) > 0 {
		t.Errorf("GET %s logged with statuses %v: the watch fell back to long-polls", poll, polls)
	}
	list, err = a.c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "letagents://rooms/elsewhere/messages" {
		t.Errorf("resources/list after join_room elsewhere: %+v (%v), want only elsewhere's", list, err)
	}
	// The agent's close at the end wants a clean exit: the watcher of
	// elsewhere stops with the process.
}
