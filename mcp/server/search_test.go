package server

import (
	"strings"
	"testing"
)

func TestSearchMessages(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/app", false)
	a := newAgent(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "finder", "LETAGENTS_AGENT_IDE": "Codex"})
	a.call(t, "search_messages", map[string]any{"query": "deploy"}).failed(t, "not in a room")
	const room = "github.com/acme/app"
	a.call(t, "join_room", map[string]any{"name": room}).ok(t)
	for _, text := range []string{"deploy failed on staging", "deploy fixed", "lunch", "deploy " + strings.Repeat("x ", 400)} {
		a.call(t, "send_message", map[string]any{"text": text}).ok(t)
	}

	r := a.call(t, "search_messages", map[string]any{"query": "deploy -staging", "limit": 1}).ok(t)
	hits := r.list("results")
	if r.str("room_id") != room || len(hits) != 1 || r.str("next_cursor") == "" || !strings.Contains(r.str("hint"), "cursor") ||
		!strings.Contains(hits[0]["snippet"].(string), "**deploy**") || hits[0]["id"] == nil {
		t.Fatalf("search_messages = %s", r.raw)
	}
	next := a.call(t, "search_messages", map[string]any{"query": "deploy -staging", "limit": 1, "cursor": r.str("next_cursor")}).ok(t)
	more := next.list("results")
	if len(more) != 1 || more[0]["id"] == hits[0]["id"] || next.str("next_cursor") != "" {
		t.Errorf("second page = %s, want the other hit and no cursor", next.raw)
	}
	// A long text comes cut to a quote's length; the snippet says where.
	for _, h := range append(hits, more...) {
		if text := h["text"].(string); strings.HasPrefix(text, "deploy x") && (len(text) != 500 || h["text_truncated"] != true) {
			t.Errorf("long hit = %v, want its text cut to 500 characters", h)
		}
	}
	if n := a.call(t, "search_messages", map[string]any{"query": "nothing-here"}).ok(t); len(n.list("results")) != 0 || n.str("hint") == "" {
		t.Errorf("no hits = %s", n.raw)
	}

	a.call(t, "search_messages", map[string]any{"query": "deploy", "all_rooms": true}).failed(t, "Authentication required")
	a.signIn(t, b, "ann")
	a.call(t, "register_agent_session", nil).ok(t) // the account is now known in the room
	all := a.call(t, "search_messages", map[string]any{"query": `"deploy fixed"`, "all_rooms": true}).ok(t)
	if l := all.list("results"); all.str("room_id") != "" || len(l) != 1 || l[0]["room_id"] != room {
		t.Errorf("all rooms = %s", all.raw)
	}

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": "   "}, "query is empty"},
		{map[string]any{"query": "-deploy"}, "no word that must appear"},
		{map[string]any{"query": "x", "room_id": room, "all_rooms": true}, "both given"},
		{map[string]any{"query": "x", "since": "yesterday"}, "since"},
		{map[string]any{"query": "x", "cursor": "bogus"}, "cursor"},
	} {
		a.call(t, "search_messages", c.args).failed(t, c.want)
	}
}
