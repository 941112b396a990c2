package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
)

// post_reasoning, as 0.12.9's: the worker's open session is written to in
// place (opened by the first call), a milestone is also a message, and a
// status sets the presence.
func TestPostReasoning(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/app", false)
	a := newAgent(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "thinker", "LETAGENTS_AGENT_IDE": "Codex"})
	const room = "github.com/acme/app"
	a.call(t, "join_room", map[string]any{"name": room}).ok(t)
	a.call(t, "post_reasoning", map[string]any{"summary": "reading"}).failed(t, "register_agent_session")

	a.signIn(t, b, "ann")
	reg := a.call(t, "register_agent_session", nil).ok(t)
	label := reg.obj["agent_session"].(map[string]any)["actor_label"].(string)

	first := a.call(t, "post_reasoning", map[string]any{"summary": "  reading the login test ", "goal": "fix login", "confidence": 0.5,
		"checking": "   "}).ok(t)
	s, _ := first.obj["session"].(map[string]any)
	u, _ := first.obj["update"].(map[string]any)
	if first.str("room_id") != room || s["actor_label"] != label || s["agent_key"] != "ann/thinker" || first.obj["milestone_message_id"] != nil ||
		compactJSON(t, s["latest_payload"]) != `{"confidence":0.5,"goal":"fix login","summary":"reading the login test"}` ||
		u["session_id"] != s["id"] || first.obj["agent_identity"] == nil {
		t.Fatalf("first post_reasoning = %s", first.raw)
	}

	second := a.call(t, "post_reasoning", map[string]any{"summary": "the clock is flaky", "blocker": "no fake clock", "status": "blocked",
		"milestone": "found the cause"}).ok(t)
	s2, _ := second.obj["session"].(map[string]any)
	if s2["id"] != s["id"] || s2["status"] != "blocked" ||
		compactJSON(t, s2["latest_payload"]) != `{"blocker":"no fake clock","confidence":0.5,"goal":"fix login","milestone":"found the cause","status":"blocked","summary":"the clock is flaky"}` {
		t.Errorf("second post_reasoning = %s, want the same session, merged", second.raw)
	}
	msgID, _ := second.obj["milestone_message_id"].(string)
	var page struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(getJSON(t, b, "/rooms/"+room+"/messages", a), &page); err != nil {
		t.Fatal(err)
	}
	if n := len(page.Messages); n != 1 || page.Messages[0]["id"] != msgID || page.Messages[0]["text"] != "found the cause" ||
		page.Messages[0]["sender"] != label || page.Messages[0]["source"] != "agent" {
		t.Errorf("messages = %v, want the milestone %s signed by %s", page.Messages, msgID, label)
	}
	var roster struct {
		Participants []map[string]any `json:"participants"`
	}
	if err := json.Unmarshal(getJSON(t, b, "/rooms/"+room+"/participants", a), &roster); err != nil || len(roster.Participants) != 1 ||
		roster.Participants[0]["status"] != "blocked" || roster.Participants[0]["status_text"] != "the clock is flaky" {
		t.Errorf("roster = %v, %v; want blocked with the summary", roster.Participants, err)
	}

	// Once its session is closed, the next post opens another.
	id := s["id"].(string)
	closing := letagents.ReasoningSessionChange{ClosedAt: letagents.Some(b.clock.Now())}
	if _, err := b.svc.Store.ChangeReasoningSession(t.Context(), room, id, closing, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	third := a.call(t, "post_reasoning", map[string]any{"summary": "next task"}).ok(t)
	if s3, _ := third.obj["session"].(map[string]any); s3["id"] == id || compactJSON(t, s3["latest_payload"]) != `{"summary":"next task"}` {
		t.Errorf("after a close = %s, want a new session", third.raw)
	}

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"summary": "   "}, "summary is required"},
		{map[string]any{}, "summary"},
		{map[string]any{"summary": "s", "confidence": 1.5}, "confidence"},
		{map[string]any{"summary": "s", "status": "sleeping"}, "status"},
		{map[string]any{"summary": strings.Repeat("x", letagents.MaxReasoningTextBytes+1)}, "summary"},
	} {
		a.call(t, "post_reasoning", c.args).failed(t, c.want)
	}
}

func TestGetRoomEvents(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	a := newAgent(t, b, "", nil)
	a.call(t, "get_room_events", nil).failed(t, "not in a room")
	a.call(t, "join_room", map[string]any{"name": "events"}).ok(t)
	r := a.call(t, "get_room_events", map[string]any{"event_type": "pull_request", "limit": 10}).ok(t)
	if list, ok := r.obj["events"].([]any); !ok || len(list) != 0 || r.obj["has_more"] != false {
		t.Errorf("get_room_events = %s", r.raw)
	}
	if n := b.count("/rooms/events/events"); n != 1 {
		t.Errorf("%d requests to /rooms/events/events, want 1", n)
	}
	a.call(t, "get_room_events", map[string]any{"limit": 101}).failed(t, "limit")
}

func compactJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
