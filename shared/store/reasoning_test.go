package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// snapshot reads a snapshot as a write's body gives it.
func snapshot(t *testing.T, body string) letagents.ReasoningSnapshot {
	t.Helper()
	var f letagents.ReasoningFields
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func payloadJSON(t *testing.T, s letagents.ReasoningSnapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func reasoningRoom(t *testing.T, s *store.Store, id string) {
	t.Helper()
	if _, _, err := s.EnsureRoom(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

var reasoningIDs = map[string]*regexp.Regexp{
	letagents.ReasoningSessionPrefix: regexp.MustCompile(`^rs_[0-9a-f]{32}$`),
	letagents.ReasoningUpdatePrefix:  regexp.MustCompile(`^ru_[0-9a-f]{32}$`),
}

// A session opens with its first snapshot as its first update, both
// stamped with the room's first change number (after 0.12.9's
// "createReasoningSession persists an initial session and update").
func TestCreateReasoningSession(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	reasoningRoom(t, s, "github.com/brosincode/letagents")
	now := time.Now()
	c, err := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: "github.com/brosincode/letagents", TaskID: "task_2",
		AnchorMessageID: "msg_70", ActorLabel: "ForestDune | EmmyMay's agent | Agent", AgentKey: "EmmyMay/forestdune",
		Snapshot: snapshot(t, `{"summary": "mapping backend data model", "goal": "ship reasoning sessions", "status": "working", "milestone": "schema"}`)}, now)
	if err != nil {
		t.Fatal(err)
	}
	got, u := c.Session, c.Update
	if !reasoningIDs["rs_"].MatchString(got.ID) || u == nil || !reasoningIDs["ru_"].MatchString(u.ID) {
		t.Fatalf("ids = %q, %+v", got.ID, u)
	}
	if got.TaskID != "task_2" || got.AnchorMessageID != "msg_70" || got.Status != "working" || got.Summary != "mapping backend data model" ||
		got.AgentKey != "EmmyMay/forestdune" || !got.Open() || got.ChangeSeq != 1 || !got.CreatedAt.Equal(got.UpdatedAt) ||
		got.CreatedAt.Sub(now).Abs() > time.Millisecond {
		t.Errorf("session = %+v", got)
	}
	if u.SessionID != got.ID || u.ActorLabel != got.ActorLabel || u.Status != "working" || u.Milestone != "schema" || u.ChangeSeq != 1 {
		t.Errorf("update = %+v", u)
	}
	want := `{"summary":"mapping backend data model","goal":"ship reasoning sessions","milestone":"schema","status":"working"}`
	if p := payloadJSON(t, got.LatestPayload); p != want {
		t.Errorf("latest payload = %s, want %s", p, want)
	}
	read, err := s.ReasoningSession(ctx, "github.com/brosincode/letagents", got.ID)
	if err != nil || payloadJSON(t, read.LatestPayload) != want || read.ChangeSeq != 1 {
		t.Errorf("read back = %+v, %v", read, err)
	}
	ups, err := s.ReasoningUpdates(ctx, "github.com/brosincode/letagents", got.ID, 10)
	if err != nil || len(ups) != 1 || ups[0].ID != u.ID || payloadJSON(t, ups[0].Payload) != want {
		t.Errorf("updates = %+v, %v", ups, err)
	}

	_, err = s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: "nowhere", ActorLabel: "x", Snapshot: snapshot(t, `{"summary": "s"}`)}, now)
	if codeOf(err) != letagents.NotFound {
		t.Errorf("create in a missing room = %v, want NotFound", err)
	}
}

// Updates merge sparse snapshots into the session; a close keeps late
// updates from reopening it (after 0.12.9's "appendReasoningSessionUpdate
// merges sparse patches and updateReasoningSession can close a session").
func TestReasoningUpdatesMerge(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	const room = "merge"
	reasoningRoom(t, s, room)
	now := time.Now()
	c, err := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: room, ActorLabel: "ForestDune | agent",
		Snapshot: snapshot(t, `{"summary": "starting implementation", "goal": "persist reasoning history", "status": "working", "confidence": 0.4}`)}, now)
	if err != nil {
		t.Fatal(err)
	}
	id := c.Session.ID

	steps := []struct {
		name, actor, body string
		wantActor         string
		wantStatus        string // the session's, and the update's, status after
		wantLatest        string
		wantPayload       string
	}{
		{"sparse: status kept", "", `{"summary": "checking route registration", "blocker": "waiting on contract confirmation"}`,
			"ForestDune | agent", "working",
			`{"summary":"checking route registration","goal":"persist reasoning history","blocker":"waiting on contract confirmation","status":"working","confidence":0.4}`,
			`{"summary":"checking route registration","blocker":"waiting on contract confirmation"}`},
		{"null clears, new status, other writer", "Reviewer | agent", `{"summary": "unblocked", "blocker": null, "status": "reviewing", "confidence": null}`,
			"Reviewer | agent", "reviewing",
			`{"summary":"unblocked","goal":"persist reasoning history","blocker":null,"status":"reviewing","confidence":null}`,
			`{"summary":"unblocked","blocker":null,"status":"reviewing","confidence":null}`},
		{"status null clears the session's", "", `{"summary": "pausing", "status": null}`,
			"ForestDune | agent", "",
			`{"summary":"pausing","goal":"persist reasoning history","blocker":null,"status":null,"confidence":null}`,
			`{"summary":"pausing","status":null}`},
	}
	for i, st := range steps {
		now = now.Add(time.Second)
		c, err := s.AddReasoningUpdate(ctx, room, id, st.actor, snapshot(t, st.body), now)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		u := c.Update
		if c.Session.Status != st.wantStatus || u.Status != st.wantStatus || u.ActorLabel != st.wantActor ||
			c.Session.ActorLabel != "ForestDune | agent" || c.Session.ChangeSeq != int64(i+2) || u.ChangeSeq != c.Session.ChangeSeq ||
			!c.Session.UpdatedAt.Equal(u.CreatedAt) || c.Session.Summary != u.Summary {
			t.Errorf("%s: session %+v, update %+v", st.name, c.Session, u)
		}
		if got := payloadJSON(t, c.Session.LatestPayload); got != st.wantLatest {
			t.Errorf("%s: latest payload\n got %s\nwant %s", st.name, got, st.wantLatest)
		}
		if got := payloadJSON(t, u.Payload); got != st.wantPayload {
			t.Errorf("%s: update payload\n got %s\nwant %s", st.name, got, st.wantPayload)
		}
	}

	closedAt := now.Add(time.Minute).Truncate(time.Millisecond)
	ch, err := s.ChangeReasoningSession(ctx, room, id, letagents.ReasoningSessionChange{AnchorMessageID: letagents.Some("msg_88"),
		ClosedAt: letagents.Some(closedAt)}, now)
	if err != nil || ch.Session.AnchorMessageID != "msg_88" || !ch.Session.ClosedAt.Equal(closedAt) || ch.Update != nil || ch.Session.ChangeSeq != 5 {
		t.Fatalf("close = %+v, %v", ch, err)
	}
	late, err := s.AddReasoningUpdate(ctx, room, id, "", snapshot(t, `{"summary": "late update after close"}`), now)
	if err != nil || !late.Session.ClosedAt.Equal(closedAt) {
		t.Fatalf("late update = %+v, %v; want the session still closed", late.Session, err)
	}
	open, err := s.ReasoningSessions(ctx, room, store.ReasoningQuery{Limit: 10, OpenOnly: true})
	if err != nil || len(open) != 0 {
		t.Errorf("open sessions = %+v, %v; want none", open, err)
	}
	ups, err := s.ReasoningUpdates(ctx, room, id, 500)
	if err != nil || len(ups) != 5 || ups[0].Summary != "starting implementation" || ups[4].Summary != "late update after close" {
		t.Errorf("updates = %d %v", len(ups), err)
	}
	if first, err := s.ReasoningUpdates(ctx, room, id, 2); err != nil || len(first) != 2 || first[1].Summary != "checking route registration" {
		t.Errorf("first 2 updates = %+v, %v", first, err)
	}

	// Reopening (closed_at null) and clearing the task.
	re, err := s.ChangeReasoningSession(ctx, room, id, letagents.ReasoningSessionChange{ClosedAt: letagents.Null[time.Time](),
		TaskID: letagents.Null[string]()}, now)
	if err != nil || !re.Session.Open() || re.Session.AnchorMessageID != "msg_88" || re.Session.TaskID != "" {
		t.Errorf("reopen = %+v, %v", re.Session, err)
	}

	for _, c := range []struct {
		name, room, id, msg string
	}{
		{"missing session", room, "rs_00000000000000000000000000000000", "Reasoning session not found"},
		{"missing room", "nowhere", id, "Room not found"},
	} {
		_, err1 := s.AddReasoningUpdate(ctx, c.room, c.id, "", snapshot(t, `{"summary": "x"}`), now)
		_, err2 := s.ChangeReasoningSession(ctx, c.room, c.id, letagents.ReasoningSessionChange{TaskID: letagents.Some("task_1")}, now)
		_, err3 := s.ReasoningSession(ctx, c.room, c.id)
		for _, err := range []error{err1, err2, err3} {
			var e *letagents.Error
			if codeOf(err) != letagents.NotFound || !errors.As(err, &e) || e.Message != c.msg {
				t.Errorf("%s: %v, want NotFound %q", c.name, err, c.msg)
			}
		}
	}
	// A refused write logs no event.
	if at, err := s.EventStart(ctx, room, -1); err != nil || at.Cursor != 7 {
		t.Errorf("head after refused writes = %d, %v; want 7", at.Cursor, err)
	}
}

func TestReasoningSessionsList(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	reasoningRoom(t, s, "list")
	reasoningRoom(t, s, "empty")
	now := time.Now()
	open := func(actor, task string) string {
		t.Helper()
		now = now.Add(time.Second)
		c, err := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: "list", ActorLabel: actor, TaskID: task,
			Snapshot: snapshot(t, `{"summary": "s"}`)}, now)
		if err != nil {
			t.Fatal(err)
		}
		return c.Session.ID
	}
	a1, b1, a2, b2 := open("A", "task_1"), open("B", "task_1"), open("A", "task_2"), open("B", "")
	now = now.Add(time.Second)
	if _, err := s.AddReasoningUpdate(ctx, "list", a1, "", snapshot(t, `{"summary": "again"}`), now); err != nil { // a1 is now the latest
		t.Fatal(err)
	}
	if _, err := s.ChangeReasoningSession(ctx, "list", b1, letagents.ReasoningSessionChange{ClosedAt: letagents.Some(now)}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    store.ReasoningQuery
		want []string
	}{
		{"all, latest update first", store.ReasoningQuery{Limit: 10}, []string{a1, b2, a2, b1}},
		{"open only", store.ReasoningQuery{Limit: 10, OpenOnly: true}, []string{a1, b2, a2}},
		{"one actor", store.ReasoningQuery{Limit: 10, ActorLabel: "B"}, []string{b2, b1}},
		{"one task", store.ReasoningQuery{Limit: 10, TaskID: "task_1", OpenOnly: true}, []string{a1}},
		{"actor and task", store.ReasoningQuery{Limit: 10, ActorLabel: "A", TaskID: "task_2"}, []string{a2}},
		{"limit", store.ReasoningQuery{Limit: 2}, []string{a1, b2}},
		{"no match", store.ReasoningQuery{Limit: 10, ActorLabel: "C"}, []string{}},
	} {
		list, err := s.ReasoningSessions(ctx, "list", c.q)
		got := []string{}
		for _, r := range list {
			got = append(got, r.ID)
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if list, err := s.ReasoningSessions(ctx, "empty", store.ReasoningQuery{Limit: 10}); err != nil || len(list) != 0 {
		t.Errorf("empty room = %v, %v", list, err)
	}
	if _, err := s.ReasoningSessions(ctx, "nowhere", store.ReasoningQuery{Limit: 10}); codeOf(err) != letagents.NotFound {
		t.Errorf("missing room = %v, want NotFound", err)
	}
}

// The room's events, as an event stream reads them, give each session
// changed after the cursor once, at its latest change, in change order.
func TestReasoningEvents(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	reasoningRoom(t, s, "changes")
	now := time.Now()
	p, err := reasoningEvents(ctx, s, "changes", 0, 10)
	if err != nil || len(p.Changes) != 0 || p.Head != 0 || p.HasMore {
		t.Fatalf("no changes yet = %+v, %v", p, err)
	}
	a, _ := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: "changes", ActorLabel: "A", Snapshot: snapshot(t, `{"summary": "a1"}`)}, now)      // 1
	b, _ := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: "changes", ActorLabel: "B", Snapshot: snapshot(t, `{"summary": "b1"}`)}, now)      // 2
	a2, _ := s.AddReasoningUpdate(ctx, "changes", a.Session.ID, "", snapshot(t, `{"summary": "a2"}`), now)                                                     // 3
	if _, err := s.ChangeReasoningSession(ctx, "changes", b.Session.ID, letagents.ReasoningSessionChange{TaskID: letagents.Some("task_1")}, now); err != nil { // 4
		t.Fatal(err)
	}
	if _, err := s.ChangeReasoningSession(ctx, "changes", a.Session.ID, letagents.ReasoningSessionChange{ClosedAt: letagents.Some(now)}, now); err != nil { // 5
		t.Fatal(err)
	}
	type change struct {
		id      string
		seq     int64
		update  string // the appended update's summary, "" for none
		removed bool
	}
	for _, c := range []struct {
		name        string
		after       int64
		limit       int
		want        []change
		wantHasMore bool
		wantLast    int64 // the cursor after the page
	}{
		{"from the start, each session once", 0, 10, []change{{b.Session.ID, 4, "", false}, {a.Session.ID, 5, "", true}}, false, 5},
		{"after b's change", 4, 10, []change{{a.Session.ID, 5, "", true}}, false, 5},
		{"limited", 0, 1, []change{{b.Session.ID, 4, "", false}}, true, 4},
		{"at the head", 5, 10, nil, false, 5},
		{"past the head", math.MaxInt64, 10, nil, false, math.MaxInt64},
	} {
		p, err := reasoningEvents(ctx, s, "changes", c.after, c.limit)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []change
		for _, ch := range p.Changes {
			g := change{id: ch.Session.ID, seq: ch.Session.ChangeSeq, removed: ch.Removed()}
			if ch.Update != nil {
				g.update = ch.Update.Summary
			}
			got = append(got, g)
		}
		if len(got) != len(c.want) || p.Head != c.wantLast || p.HasMore != c.wantHasMore {
			t.Errorf("%s: %+v last %d has_more %v; want %+v last %d has_more %v", c.name, got, p.Head, p.HasMore, c.want, c.wantLast, c.wantHasMore)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: change %d = %+v, want %+v", c.name, i, got[i], c.want[i])
			}
		}
	}
	// A change that appends a snapshot carries it, closed session or not.
	late, _ := s.AddReasoningUpdate(ctx, "changes", a.Session.ID, "", snapshot(t, `{"summary": "a3"}`), now) // 6
	p, err = reasoningEvents(ctx, s, "changes", 5, 10)
	if err != nil || len(p.Changes) != 1 || p.Changes[0].Update == nil || p.Changes[0].Update.ID != late.Update.ID ||
		p.Changes[0].Update.ID == a2.Update.ID || p.Changes[0].Removed() || p.Head != 6 {
		t.Errorf("after the late update = %+v, %v", p, err)
	}
	if _, err := s.RoomEvents(ctx, "nowhere", 0, 10, now); codeOf(err) != letagents.NotFound {
		t.Errorf("missing room = %v, want NotFound", err)
	}
	if _, err := s.RoomEvents(ctx, "changes", 0, 0, now); codeOf(err) != letagents.Invalid {
		t.Errorf("limit 0 = %v, want Invalid", err)
	}
}

// Every reasoning write rings the room's doorbell, the channel a message
// send rings, once it commits, with the room's newest message number (0:
// none yet).
func TestReasoningWritesRingTheRoom(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	reasoningRoom(t, s, "bell")
	conn := listenRoom(t, d.Pool, s, "bell")
	ring := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, testwait.Bound)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil || n.Channel != s.RoomChannel("bell") || n.Payload != "0" {
			t.Fatalf("%s: notification %+v, %v", what, n, err)
		}
	}
	now := time.Now()
	c, err := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: "bell", ActorLabel: "A", Snapshot: snapshot(t, `{"summary": "s"}`)}, now)
	if err != nil {
		t.Fatal(err)
	}
	ring("create")
	if _, err := s.AddReasoningUpdate(ctx, "bell", c.Session.ID, "", snapshot(t, `{"summary": "t"}`), now); err != nil {
		t.Fatal(err)
	}
	ring("update")
	if _, err := s.ChangeReasoningSession(ctx, "bell", c.Session.ID, letagents.ReasoningSessionChange{ClosedAt: letagents.Some(now)}, now); err != nil {
		t.Fatal(err)
	}
	ring("close")
}

// reasoningPage is the reasoning events of a page of a room's events.
type reasoningPage struct {
	Changes []letagents.ReasoningChange
	Head    int64 // the cursor after the page
	HasMore bool
}

// reasoningEvents reads a page of a room's events, all of them reasoning
// changes.
func reasoningEvents(ctx context.Context, s *store.Store, room string, after int64, limit int) (reasoningPage, error) {
	p, err := s.RoomEvents(ctx, room, after, limit, time.Now())
	out := reasoningPage{Head: p.Last, HasMore: p.HasMore}
	for _, e := range p.Events {
		if e.Reasoning == nil {
			return out, fmt.Errorf("event %d is a %s, want reasoning", e.Seq, e.Kind)
		}
		out.Changes = append(out.Changes, *e.Reasoning)
	}
	return out, err
}
