package apiclient_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// boardRoom is the named room of the board tests: its first signed-in
// joiner is its admin.
const boardRoom = "board"

// signIn runs a device sign-in as login on e's fake GitHub and returns
// the owner token.
func signIn(t *testing.T, e *env, login string) string {
	t.Helper()
	e.gh.AddUser(login)
	c := e.client("")
	ctx := testContext(t)
	start, err := c.StartDevice(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	e.gh.ApproveDevice(start.UserCode, login)
	e.clock.Advance(deviceInterval)
	r, err := c.PollDevice(ctx, start.RequestID)
	if err != nil || r.Status != letagents.DeviceAuthorized {
		t.Fatalf("PollDevice after approval = %+v, %v; want authorized", r, err)
	}
	return r.Authorized.LetAgentsToken
}

// worker registers an agent of the signed-in owner and its worker session
// in room, and returns the session and a client acting as it.
func worker(t *testing.T, owner *apiclient.Client, room, name string) (wire.AgentSession, *apiclient.Client) {
	t.Helper()
	ctx := testContext(t)
	a, err := owner.RegisterAgent(ctx, wire.RegisterAgent{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	s, err := owner.RegisterSession(ctx, room, wire.RegisterSession{ActorKey: a.CanonicalKey, Runtime: "test"})
	if err != nil {
		t.Fatalf("RegisterSession(%s): %v", a.CanonicalKey, err)
	}
	if s.SessionToken == "" || s.AgentKey != a.CanonicalKey || s.SessionKind != letagents.SessionWorker {
		t.Fatalf("RegisterSession = %+v, want a worker session of %s with its token", s, a.CanonicalKey)
	}
	return s, owner.As(credsOf(s))
}

func credsOf(s wire.AgentSession) wire.SessionCredentials {
	return wire.SessionCredentials{AgentSessionID: s.SessionID, AgentSessionToken: s.SessionToken}
}

// boardEnv is a signed-in owner, admin of boardRoom, with two worker
// sessions there.
func boardEnv(t *testing.T) (e *env, owner *apiclient.Client, sa, sb wire.AgentSession, a, b *apiclient.Client) {
	t.Helper()
	e = newEnv(t, true)
	owner = e.client(signIn(t, e, "ann"))
	if j := join(t, owner, boardRoom); j.Role != string(letagents.RoleAdmin) {
		t.Fatalf("the first signed-in joiner of %s has role %q, want admin", boardRoom, j.Role)
	}
	sa, a = worker(t, owner, boardRoom, "alpha")
	sb, b = worker(t, owner, boardRoom, "bravo")
	return e, owner, sa, sb, a, b
}

// TestTaskCalls walks a task through the typed board calls: created by a
// worker, accepted by the admin, claimed, released, claimed again,
// reviewed by the other worker.
func TestTaskCalls(t *testing.T) {
	t.Parallel()
	e, owner, sa, sb, a, b := boardEnv(t)
	ctx := testContext(t)

	created, err := a.CreateTask(ctx, boardRoom, wire.CreateTask{Title: "Fix login", Description: "the test fails"})
	if err != nil {
		t.Fatal(err)
	}
	if created.ID != "task_1" || created.Status != string(letagents.TaskProposed) || created.CreatedBy != sa.ActorLabel ||
		created.Description == nil || *created.Description != "the test fails" {
		t.Fatalf("CreateTask = %+v, want task_1 proposed by %q", created, sa.ActorLabel)
	}
	if got := e.api.last(t, "/tasks"); got.Method != http.MethodPost || got.Path != "/rooms/board/tasks" ||
		got.Header.Get(wire.SessionIDHeader) != sa.SessionID {
		t.Errorf("CreateTask sent %s %s as session %q, want POST /rooms/board/tasks as %s", got.Method, got.Path, got.Header.Get(wire.SessionIDHeader), sa.SessionID)
	}

	accepted := string(letagents.TaskAccepted)
	if tk, err := owner.UpdateTask(ctx, boardRoom, created.ID, wire.UpdateTask{Status: &accepted}); err != nil || tk.Status != accepted {
		t.Fatalf("UpdateTask(accepted) by the admin = %+v, %v", tk, err)
	}
	if got := e.api.last(t, "/tasks/task_1"); got.Method != http.MethodPatch {
		t.Errorf("UpdateTask sent %s, want PATCH", got.Method)
	}

	claim := func() wire.Lease {
		t.Helper()
		assigned, ttl := string(letagents.TaskAssigned), int64(60)
		tk, err := a.UpdateTask(ctx, boardRoom, created.ID, wire.UpdateTask{Status: &assigned, LeaseTTLSeconds: &ttl})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != assigned || tk.Assignee == nil || *tk.Assignee != sa.ActorLabel || len(tk.ActiveLeases) != 1 ||
			tk.ActiveLeases[0].Kind != letagents.LeaseWork || tk.ActiveLeases[0].ExpiresAt == nil {
			t.Fatalf("claim = %+v, want assigned to %q with an expiring work lease", tk, sa.ActorLabel)
		}
		return tk.ActiveLeases[0]
	}
	lease := claim()

	list, err := owner.Tasks(ctx, boardRoom, apiclient.TaskQuery{Status: string(letagents.TaskAssigned), Open: true})
	if err != nil || list.RoomID != boardRoom || len(list.Tasks) != 1 || list.Tasks[0].ID != created.ID || list.HasMore {
		t.Errorf("Tasks(assigned, open) = %+v, %v; want task_1 alone", list, err)
	}
	if got := e.api.last(t, "/tasks"); got.Method != http.MethodGet || got.Query != "open=true&status=assigned" {
		t.Errorf("Tasks sent %s ?%s, want GET ?open=true&status=assigned", got.Method, got.Query)
	}
	if list, err := owner.Tasks(ctx, boardRoom, apiclient.TaskQuery{After: created.ID}); err != nil || len(list.Tasks) != 0 {
		t.Errorf("Tasks(after task_1) = %+v, %v; want none", list, err)
	}

	released, err := a.LeaseAction(ctx, boardRoom, created.ID, wire.LeaseAction{Action: "release", LeaseID: lease.ID, Reason: "lunch"})
	if err != nil {
		t.Fatal(err)
	}
	if released.Action != "release" || released.ReleasedLease == nil || released.ReleasedLease.ID != lease.ID ||
		released.NewLease != nil || released.Task.Status != accepted {
		t.Errorf("LeaseAction(release) = %+v, want lease %s released and the task accepted again", released, lease.ID)
	}
	if got := e.api.last(t, "/lease-action"); got.Path != "/rooms/board/tasks/task_1/lease-action" {
		t.Errorf("LeaseAction sent %s", got.Path)
	}

	claim()
	inReview, pr := string(letagents.TaskInReview), "https://github.com/o/r/pull/1"
	if tk, err := a.UpdateTask(ctx, boardRoom, created.ID, wire.UpdateTask{Status: &inReview, PRURL: &pr}); err != nil ||
		tk.Status != inReview || tk.PRURL == nil || *tk.PRURL != pr {
		t.Fatalf("UpdateTask(in_review) = %+v, %v", tk, err)
	}
	if _, err := a.ClaimReview(ctx, boardRoom, created.ID, wire.ReviewLeaseAction{}); err == nil {
		t.Error("ClaimReview by the task's own worker succeeded, want a refusal")
	}
	review, err := b.ClaimReview(ctx, boardRoom, created.ID, wire.ReviewLeaseAction{Reason: "fresh eyes"})
	if err != nil {
		t.Fatal(err)
	}
	if review.Action != "claim" || review.Lease.Kind != letagents.LeaseReview || review.Lease.AgentKey != sb.AgentKey || review.Task.ID != created.ID {
		t.Errorf("ClaimReview = %+v, want bravo's review lease on task_1", review)
	}
	done, err := b.ReleaseReview(ctx, boardRoom, created.ID, wire.ReviewLeaseAction{LeaseID: review.Lease.ID})
	if err != nil {
		t.Fatal(err)
	}
	if done.Action != "release" || done.ReleasedLease.ID != review.Lease.ID || done.ReleasedLease.Status != letagents.LeaseReleased {
		t.Errorf("ReleaseReview = %+v, want lease %s released", done, review.Lease.ID)
	}
	if got := e.api.last(t, "/review-lease-action"); got.Path != "/rooms/board/tasks/task_1/review-lease-action" {
		t.Errorf("ReleaseReview sent %s", got.Path)
	}
}

// TestIntentCalls: with intents required, a worker's action needs an
// approved intent; the typed calls register, list, approve and deny them,
// and an intent's reason may be as long as the API's limit, no longer.
func TestIntentCalls(t *testing.T) {
	t.Parallel()
	_, owner, sa, _, a, _ := boardEnv(t)
	ctx := testContext(t)

	set, err := owner.SetBoardSettings(ctx, boardRoom, wire.BoardSettingsUpdate{ManagerMode: letagents.IntentRequired})
	if err != nil || set.ManagerMode != letagents.IntentRequired || set.RoomID != boardRoom {
		t.Fatalf("SetBoardSettings = %+v, %v", set, err)
	}
	if got, err := a.BoardSettings(ctx, boardRoom); err != nil || got != set {
		t.Errorf("BoardSettings = %+v, %v; want %+v", got, err, set)
	}
	task := wire.CreateTask{Title: "Write docs"}
	if _, err := a.CreateTask(ctx, boardRoom, task); apiclient.Code(err) != "board_intent_required" {
		t.Fatalf("CreateTask without an intent: %v, want board_intent_required", err)
	}

	payload, err := json.Marshal(letagents.NewTaskCreatePayload(task.Title, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	tooLong := strings.Repeat("r", letagents.MaxIntentReasonBytes+1)
	_, err = a.RegisterIntent(ctx, boardRoom, wire.RegisterIntent{Action: letagents.IntentTaskCreate, Payload: payload, Reason: tooLong})
	if e := apiError(t, err); e.Status != http.StatusBadRequest {
		t.Errorf("RegisterIntent with a reason of %d bytes: %v, want 400", len(tooLong), err)
	}
	longest := tooLong[1:]
	intent, err := a.RegisterIntent(ctx, boardRoom, wire.RegisterIntent{Action: letagents.IntentTaskCreate, Payload: payload, Reason: longest})
	if err != nil {
		t.Fatalf("RegisterIntent with a reason of %d bytes (the limit): %v", len(longest), err)
	}
	if intent.Status != "pending" || intent.ProposerSessionID == nil || *intent.ProposerSessionID != sa.SessionID ||
		intent.Reason == nil || *intent.Reason != longest || intent.ApprovalToken != "" {
		t.Fatalf("RegisterIntent = %+v, want a pending intent of %s with its reason and no token", intent, sa.SessionID)
	}
	if list, err := owner.BoardIntents(ctx, boardRoom, "pending"); err != nil || len(list.Intents) != 1 || list.Intents[0].ID != intent.ID {
		t.Errorf("BoardIntents(pending) = %+v, %v; want %s alone", list, err, intent.ID)
	}

	approved, err := owner.ApproveIntent(ctx, boardRoom, intent.ID, "fine")
	if err != nil || approved.Status != "approved" || approved.ApprovalToken == "" {
		t.Fatalf("ApproveIntent = %+v, %v; want approved with a token", approved, err)
	}
	task.BoardIntentGrant = wire.BoardIntentGrant{BoardIntentID: intent.ID, BoardApprovalToken: approved.ApprovalToken}
	if tk, err := a.CreateTask(ctx, boardRoom, task); err != nil || tk.Title != task.Title {
		t.Fatalf("CreateTask with the approved intent = %+v, %v", tk, err)
	}

	other, err := json.Marshal(letagents.NewTaskCreatePayload("Something else", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.RegisterIntent(ctx, boardRoom, wire.RegisterIntent{Action: letagents.IntentTaskCreate, Payload: other})
	if err != nil {
		t.Fatal(err)
	}
	if denied, err := owner.DenyIntent(ctx, boardRoom, second.ID, "not now"); err != nil || denied.Status != "denied" || denied.ApprovalToken != "" {
		t.Errorf("DenyIntent = %+v, %v; want denied, no token", denied, err)
	}
	if list, err := owner.BoardIntents(ctx, boardRoom, ""); err != nil || len(list.Intents) != 2 {
		t.Errorf("BoardIntents() = %+v, %v; want both intents", list, err)
	}
}

// TestSessionCalls: presence and the end of a session, by its own
// credentials in the body.
func TestSessionCalls(t *testing.T) {
	t.Parallel()
	e, owner, sa, _, _, _ := boardEnv(t)
	ctx := testContext(t)

	p, err := owner.UpdatePresence(ctx, boardRoom, wire.PresenceUpdate{Status: "working", StatusText: "on task_1", SessionCredentials: credsOf(sa)})
	if err != nil || p.AgentSessionID != sa.SessionID || p.Status != "working" || p.StatusText == nil || *p.StatusText != "on task_1" {
		t.Errorf("UpdatePresence = %+v, %v; want %s working on task_1", p, err, sa.SessionID)
	}
	// The server's clock stands still from the env's start; a reading of
	// the wall clock runs ahead of it on a slow machine, past the 5 s of
	// skew the route allows.
	activity := wire.NativeActivity{ObservedAt: e.clock.Now().UTC().Format(time.RFC3339Nano), Sequence: 1, Method: "item/started",
		Status: "working", SessionCredentials: credsOf(sa)}
	if err := owner.ReportNativeActivity(ctx, boardRoom, activity); err != nil {
		t.Errorf("ReportNativeActivity = %v", err)
	}
	if got := e.api.last(t, "/native-activity"); got.Path != "/rooms/board/agent-sessions/"+sa.SessionID+"/native-activity" {
		t.Errorf("ReportNativeActivity sent %s", got.Path)
	}
	activity.Sequence = 0
	var refused *apiclient.APIError
	if err := owner.ReportNativeActivity(ctx, boardRoom, activity); !errors.As(err, &refused) || refused.Status != http.StatusBadRequest {
		t.Errorf("ReportNativeActivity with sequence 0 = %v, want the API's 400", err)
	}
	d, err := owner.DisconnectSession(ctx, boardRoom, credsOf(sa))
	if err != nil || d.RoomID != boardRoom || d.AgentSession.SessionID != sa.SessionID || d.AgentSession.EndedAt == nil {
		t.Errorf("DisconnectSession = %+v, %v; want %s ended", d, err, sa.SessionID)
	}
	if got := e.api.last(t, "/disconnect"); got.Path != "/rooms/board/agent-sessions/"+sa.SessionID+"/disconnect" {
		t.Errorf("DisconnectSession sent %s", got.Path)
	}
}

// TestEmptyIDs: a call without the id its route needs fails before any
// request.
func TestEmptyIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	ctx := testContext(t)
	for name, call := range map[string]func() error{
		"UpdateTask":           func() error { _, err := c.UpdateTask(ctx, boardRoom, "", wire.UpdateTask{}); return err },
		"LeaseAction":          func() error { _, err := c.LeaseAction(ctx, boardRoom, "", wire.LeaseAction{}); return err },
		"ClaimReview":          func() error { _, err := c.ClaimReview(ctx, boardRoom, "", wire.ReviewLeaseAction{}); return err },
		"ApproveIntent":        func() error { _, err := c.ApproveIntent(ctx, boardRoom, "", ""); return err },
		"DisconnectSession":    func() error { _, err := c.DisconnectSession(ctx, boardRoom, wire.SessionCredentials{}); return err },
		"ReportNativeActivity": func() error { return c.ReportNativeActivity(ctx, boardRoom, wire.NativeActivity{}) },
		"Tasks":                func() error { _, err := c.Tasks(ctx, " ", apiclient.TaskQuery{}); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s without its id succeeded", name)
		}
	}
	if reqs := e.api.requests(); len(reqs) != 0 {
		t.Errorf("requests sent: %q, want none", e.api.paths())
	}
}
