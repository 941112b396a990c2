package api

import (
	"bytes"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// TestReasoningEvent pins the stream's reasoning events to 0.12.9's:
// reasoning_update {room_id, session, update | null}, and reasoning_remove
// {room_id, session_id} for a change that closed the session.
func TestReasoningEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 4, 22, 15, 0, 0, 0, time.UTC)
	session := letagents.ReasoningSession{ID: "rs_1", RoomID: "r", ActorLabel: "A", Summary: "s",
		LatestPayload: letagents.ReasoningSnapshot{Summary: "s"}, CreatedAt: at, UpdatedAt: at}
	closed := session
	closed.ClosedAt = at
	update := &letagents.ReasoningUpdate{ID: "ru_1", RoomID: "r", SessionID: "rs_1", ActorLabel: "A", Summary: "s",
		Payload: letagents.ReasoningSnapshot{Summary: "s"}, CreatedAt: at}
	const sessionJSON = `{"id":"rs_1","room_id":"r","task_id":null,"anchor_message_id":null,"actor_label":"A","agent_key":null,"status":null,` +
		`"summary":"s","latest_payload":{"summary":"s"},"created_at":"2026-04-22T15:00:00.000Z","updated_at":"2026-04-22T15:00:00.000Z","closed_at":null}`
	for _, c := range []struct {
		name, wantName, wantData string
		change                   letagents.ReasoningChange
	}{
		{"appended", "reasoning_update", `{"room_id":"r","session":` + sessionJSON + `,"update":{"id":"ru_1","room_id":"r","session_id":"rs_1",` +
			`"actor_label":"A","status":null,"summary":"s","milestone":null,"payload":{"summary":"s"},"created_at":"2026-04-22T15:00:00.000Z"}}`,
			letagents.ReasoningChange{Session: session, Update: update}},
		{"changed alone", "reasoning_update", `{"room_id":"r","session":` + sessionJSON + `,"update":null}`,
			letagents.ReasoningChange{Session: session}},
		{"closed", "reasoning_remove", `{"room_id":"r","session_id":"rs_1"}`, letagents.ReasoningChange{Session: closed}},
	} {
		name, data := reasoningEvent("r", c.change)
		var b bytes.Buffer
		if err := newEncoder(&b).Encode(data); err != nil {
			t.Fatal(err)
		}
		if got := string(bytes.TrimSpace(b.Bytes())); name != c.wantName || got != c.wantData {
			t.Errorf("%s: event %s %s\nwant %s %s", c.name, name, got, c.wantName, c.wantData)
		}
	}
}
