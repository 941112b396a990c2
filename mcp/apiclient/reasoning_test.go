package apiclient_test

import (
	"net/http"
	"testing"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/wire"
)

// TestReasoningCalls walks a reasoning session through the typed calls a
// worker (the post_reasoning tool, a live-session bridge) makes.
func TestReasoningCalls(t *testing.T) {
	t.Parallel()
	e, owner, sa, _, a, _ := boardEnv(t)
	ctx := testContext(t)

	half := 0.5
	created, err := a.CreateReasoningSession(ctx, boardRoom, wire.CreateReasoningSession{ActorLabel: "not me", TaskID: "task_1",
		ReasoningSnapshot: wire.ReasoningSnapshot{Summary: "reading the login test", Goal: "fix login", Confidence: &half}})
	if err != nil {
		t.Fatal(err)
	}
	s := created.Session
	if created.RoomID != boardRoom || s.ActorLabel != sa.ActorLabel || s.AgentKey == nil || *s.AgentKey != sa.AgentKey ||
		s.TaskID == nil || *s.TaskID != "task_1" || string(s.LatestPayload) != `{"summary":"reading the login test","goal":"fix login","confidence":0.5}` ||
		created.Update.SessionID != s.ID {
		t.Fatalf("CreateReasoningSession = %+v", created)
	}
	if got := e.api.last(t, "/reasoning-sessions"); got.Method != http.MethodPost || got.Path != "/rooms/board/reasoning-sessions" ||
		got.Header.Get(wire.SessionIDHeader) != sa.SessionID {
		t.Errorf("CreateReasoningSession sent %s %s as %q", got.Method, got.Path, got.Header.Get(wire.SessionIDHeader))
	}

	up, err := a.AddReasoningUpdate(ctx, boardRoom, s.ID, wire.AddReasoningUpdate{
		ReasoningSnapshot: wire.ReasoningSnapshot{Summary: "found it", Blocker: "flaky clock", Status: "blocked"}})
	if err != nil || up.Session.Status == nil || *up.Session.Status != "blocked" || up.Update.ActorLabel != sa.ActorLabel ||
		string(up.Update.Payload) != `{"summary":"found it","blocker":"flaky clock","status":"blocked"}` {
		t.Fatalf("AddReasoningUpdate = %+v, %v", up, err)
	}

	open, err := owner.ReasoningSessions(ctx, boardRoom, apiclient.ReasoningQuery{ActorLabel: sa.ActorLabel})
	if err != nil || len(open.Sessions) != 1 || open.Sessions[0].ID != s.ID {
		t.Fatalf("ReasoningSessions = %+v, %v", open, err)
	}
	at := "2026-04-22T15:00:00.000Z"
	closed, err := a.ChangeReasoningSession(ctx, boardRoom, s.ID, wire.ChangeReasoningSession{ClosedAt: &at})
	if err != nil || closed.Session.ClosedAt == nil || *closed.Session.ClosedAt != at {
		t.Fatalf("ChangeReasoningSession = %+v, %v", closed, err)
	}
	if got := e.api.last(t, "/reasoning-sessions/"+s.ID); got.Method != http.MethodPatch {
		t.Errorf("ChangeReasoningSession sent %s", got.Method)
	}
	for _, c := range []struct {
		q    apiclient.ReasoningQuery
		want int
	}{
		{apiclient.ReasoningQuery{}, 0},
		{apiclient.ReasoningQuery{IncludeClosed: true, TaskID: "task_1"}, 1},
		{apiclient.ReasoningQuery{IncludeClosed: true, TaskID: "task_2"}, 0},
	} {
		if l, err := owner.ReasoningSessions(ctx, boardRoom, c.q); err != nil || len(l.Sessions) != c.want {
			t.Errorf("ReasoningSessions(%+v) = %d sessions, %v; want %d", c.q, len(l.Sessions), err, c.want)
		}
	}
	reopened := ""
	if r, err := a.ChangeReasoningSession(ctx, boardRoom, s.ID, wire.ChangeReasoningSession{ClosedAt: &reopened}); err != nil || r.Session.ClosedAt != nil {
		t.Errorf("reopening = %+v, %v", r, err)
	}

	detail, err := owner.ReasoningSession(ctx, boardRoom, s.ID, 1)
	if err != nil || detail.Session.ID != s.ID || len(detail.Updates) != 1 || detail.Updates[0].Summary != "reading the login test" {
		t.Errorf("ReasoningSession(limit 1) = %+v, %v", detail, err)
	}
	if _, err := owner.ReasoningSession(ctx, boardRoom, "", 0); err == nil {
		t.Error("ReasoningSession with no id did not fail")
	}
	if _, err := owner.ReasoningSession(ctx, boardRoom, "rs_missing", 0); apiError(t, err).Status != http.StatusNotFound {
		t.Errorf("missing session = %v, want 404", err)
	}
	// An owner token alone is no worker.
	if _, err := owner.CreateReasoningSession(ctx, boardRoom, wire.CreateReasoningSession{ActorLabel: "x",
		ReasoningSnapshot: wire.ReasoningSnapshot{Summary: "s"}}); apiclient.Code(err) != "WORKER_SESSION_REQUIRED" {
		t.Errorf("create with the owner token alone = %v, want WORKER_SESSION_REQUIRED", err)
	}

	ev, err := owner.RoomEvents(ctx, boardRoom, apiclient.RoomEventsQuery{EventType: "pull_request", Limit: 5})
	if err != nil || ev.RoomID != boardRoom || ev.GitHubRoomID != boardRoom || ev.Events == nil || len(ev.Events) != 0 || ev.HasMore {
		t.Errorf("RoomEvents = %+v, %v", ev, err)
	}
	if got := e.api.last(t, "/events"); got.Query != "event_type=pull_request&limit=5" {
		t.Errorf("RoomEvents query = %q", got.Query)
	}
}
