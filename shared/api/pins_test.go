package api_test

import (
	"net/http"
	"testing"

	"github.com/letagents/letagents-go/shared/wire"
)

// Room admins pin and unpin messages; reads, the pins list and the event
// stream show it; everyone else is refused, and bad ids are 404s.
func TestPins(t *testing.T) {
	t.Parallel()
	e, ann, bob, _ := intentRoom(t, "pins")
	first := e.as(t, ann, http.MethodPost, "/rooms/pins/messages", `{"sender": "ann", "text": "the plan"}`).want(t, 201, "").str("id")
	second := e.as(t, ann, http.MethodPost, "/rooms/pins/messages", `{"sender": "ann", "text": "the other plan"}`).want(t, 201, "").str("id")
	if r := e.as(t, ann, http.MethodGet, "/rooms/pins/messages", "").want(t, 200, ""); len(r.messages(t)) != 2 || r.messages(t)[0]["pinned_at"] != nil {
		t.Fatalf("an unpinned message carries pinned_at: %s", r.raw)
	}
	stream := e.openStream(t, "/rooms/pins/messages/stream", http.Header{"Authorization": {"Bearer " + ann}})
	defer stream.close()

	for _, c := range []struct {
		name, token, method, path string
		status                    int
		msg                       string
	}{
		{"nobody", "", http.MethodPost, "/rooms/pins/messages/" + first + "/pin", 401, "Authentication required"},
		{"a participant", bob, http.MethodPost, "/rooms/pins/messages/" + first + "/pin", 403, "Admin privileges required"},
		{"a participant unpins", bob, http.MethodDelete, "/rooms/pins/messages/" + first + "/pin", 403, "Admin privileges required"},
		{"no such message", ann, http.MethodPost, "/rooms/pins/messages/msg_99/pin", 404, "Message not found"},
		{"not a message id", ann, http.MethodPost, "/rooms/pins/messages/task_1/pin", 404, "Message not found"},
		{"msg_0", ann, http.MethodDelete, "/rooms/pins/messages/msg_0/pin", 404, "Message not found"},
		{"the admin pins", ann, http.MethodPost, "/rooms/pins/messages/" + first + "/pin", 200, ""},
		{"again, which keeps the first pin", ann, http.MethodPost, "/rooms/pins/messages/" + first + "/pin", 200, ""},
		{"the admin pins another", ann, http.MethodPost, "/rooms/pins/messages/" + second + "/pin", 200, ""},
		{"and unpins it", ann, http.MethodDelete, "/rooms/pins/messages/" + second + "/pin", 200, ""},
	} {
		var r reply
		if c.token == "" {
			r = e.call(t, c.method, c.path, "").want(t, c.status, c.msg)
		} else {
			r = e.as(t, c.token, c.method, c.path, "").want(t, c.status, c.msg)
		}
		if c.status != 200 {
			continue
		}
		pinned := c.method == http.MethodPost
		if (r.str("pinned_at") != "") != pinned || (r.str("pinned_by") == "ann") != pinned {
			t.Errorf("%s: answer %s, want pinned %v by ann", c.name, r.raw, pinned)
		}
		// Each change is a message_update event carrying the message.
		for {
			ev, data := stream.event(t)
			if ev.name != wire.EventMessageUpdate {
				continue
			}
			if data["id"] != r.str("id") || (data["pinned_by"] == "ann") != pinned || ev.id != "" {
				t.Errorf("%s: event %+v %v, want the message, pinned %v, with no id", c.name, ev, data, pinned)
			}
			break
		}
	}
	pins := e.as(t, bob, http.MethodGet, "/rooms/pins/pins", "").want(t, 200, "")
	if list := pins.messages(t); len(list) != 1 || list[0]["id"] != first || list[0]["pinned_by"] != "ann" || !isTimestamp(list[0]["pinned_at"].(string)) {
		t.Errorf("pins = %s, want %s alone, pinned by ann", pins.raw, first)
	}
	if r := e.as(t, bob, http.MethodGet, "/rooms/pins/messages", "").want(t, 200, ""); r.messages(t)[0]["pinned_by"] != "ann" || r.messages(t)[1]["pinned_at"] != nil {
		t.Errorf("reads after the pins = %s, want %s pinned and %s not", r.raw, first, second)
	}
	e.as(t, ann, http.MethodGet, "/rooms/nowhere/pins", "").want(t, 404, "")
}
