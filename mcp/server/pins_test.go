package server

import (
	"testing"
)

// A room admin's agent pins and unpins a message; read answers show the
// pin; an agent of nobody's may not.
func TestPinMessage(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	a := newAgent(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "pinner", "LETAGENTS_AGENT_IDE": "Codex"})
	a.signIn(t, b, "ann")
	a.call(t, "join_room", map[string]any{"name": "pinroom"}).ok(t)
	id := a.call(t, "send_message", map[string]any{"text": "the plan"}).ok(t).str("id")
	if id == "" {
		t.Fatal("send_message gave no id")
	}
	pinned := func(r answer) map[string]any { m, _ := r.obj["message"].(map[string]any); return m }
	if r := a.call(t, "pin_message", map[string]any{"message_id": id}).ok(t); pinned(r)["pinned_by"] != "ann" || pinned(r)["pinned_at"] == nil {
		t.Errorf("pin_message = %s, want it pinned by ann", r.raw)
	}
	if msgs := a.call(t, "read_messages", nil).ok(t).list("messages"); len(msgs) != 1 || msgs[0]["pinned_by"] != "ann" {
		t.Errorf("read_messages after the pin = %v, want the pin shown", msgs)
	}
	if r := a.call(t, "pin_message", map[string]any{"message_id": id, "unpin": true}).ok(t); pinned(r)["id"] != id || pinned(r)["pinned_at"] != nil {
		t.Errorf("unpin = %s, want no pinned_at", r.raw)
	}
	a.call(t, "pin_message", map[string]any{"message_id": "msg_99"}).failed(t, "Message not found")

	other := newAgent(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "guest", "LETAGENTS_AGENT_IDE": "Codex"})
	other.call(t, "join_room", map[string]any{"name": "pinroom"}).ok(t)
	other.call(t, "pin_message", map[string]any{"message_id": id}).failed(t, "Authentication required")
}
