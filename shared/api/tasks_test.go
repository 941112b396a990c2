package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// boardEnv is a room "board" administered by ann (the first to join it),
// with bob's agents working in it. Its board asks for worker sessions, as
// a repo room's does (board_compat_test.go has the boards that do not).
type boardEnv struct {
	*env
	ann, bob string // owner tokens
}

func newBoardEnv(t *testing.T) *boardEnv {
	t.Helper()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000000"}) // 20 agents join
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	b := &boardEnv{env: e, ann: e.signIn(t, "ann"), bob: e.signIn(t, "bob")}
	e.as(t, b.ann, http.MethodPost, "/rooms/board/join", "").want(t, 200, "")
	e.as(t, b.ann, http.MethodPatch, "/rooms/board/board-settings", `{"require_worker_sessions": true}`).want(t, 200, "")
	return b
}

// agent registers one of bob's agents in the room.
func (b *boardEnv) agent(t *testing.T, name string) session {
	t.Helper()
	return b.register(t, b.bob, "board", name, `{"actor_key": "bob/`+name+`", "display_name": "`+name+`"}`)
}

// task reads a task field out of an answer (the answer itself, or its
// "task" member).
func taskOf(r reply) map[string]any {
	if t, ok := r.obj["task"].(map[string]any); ok {
		return t
	}
	return r.obj
}

func leasesOf(task map[string]any) []map[string]any {
	list, _ := task["active_leases"].([]any)
	out := make([]map[string]any, len(list))
	for i, l := range list {
		out[i], _ = l.(map[string]any)
	}
	return out
}

// wantCode fails unless the answer is status with the machine-readable code.
func (r reply) wantCode(t *testing.T, status int, code string) reply {
	t.Helper()
	if r.status != status || r.str("code") != code || r.str("error") == "" {
		t.Fatalf("answer %d %s, want %d with code %q", r.status, r.raw, status, code)
	}
	return r
}

// newTask creates an accepted task as ann, the room's admin.
func (b *boardEnv) newTask(t *testing.T, title string) string {
	t.Helper()
	r := b.as(t, b.ann, http.MethodPost, "/rooms/board/tasks", `{"title": "`+title+`"}`).want(t, 201, "")
	if r.str("status") != "accepted" {
		t.Fatalf("the admin's task = %s, want accepted", r.raw)
	}
	return r.str("id")
}

func (b *boardEnv) patch(t *testing.T, token, task, body string) reply {
	t.Helper()
	return b.as(t, token, http.MethodPatch, "/rooms/board/tasks/"+task, body)
}

func (b *boardEnv) statusLines(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range b.call(t, http.MethodGet, "/rooms/board/messages?limit=500", "").want(t, 200, "").messages(t) {
		if m["source"] == "system" {
			out = append(out, m["text"].(string))
		}
	}
	return out
}

func TestTaskClaimRace(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	task := b.newTask(t, "Contested")
	const agents = 20
	sessions := make([]session, agents)
	for i := range sessions {
		sessions[i] = b.agent(t, fmt.Sprintf("racer%d", i))
	}
	type answer struct {
		status int
		code   string
		err    error
	}
	answers := make([]answer, agents)
	release := b.db.HoldLock(t, `SELECT 1 FROM tasks WHERE room_id = 'board' FOR UPDATE`)
	b.db.Race(t, agents, release, func(i int) {
		s := sessions[i]
		status, obj, err := rawCall(http.MethodPatch, b.url+"/rooms/board/tasks/"+task, `{"status": "assigned", `+s.creds()+`}`,
			http.Header{"Authorization": {"Bearer " + s.owner}})
		code, _ := obj["code"].(string)
		answers[i] = answer{status, code, err}
	})
	won := 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("claim %d: %v", i, a.err)
		case a.status == 200:
			won++
		case a.status != 409 || a.code != "coordination_wrong_actor":
			t.Errorf("claim %d: %d code %q, want 409 coordination_wrong_actor", i, a.status, a.code)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want exactly 1", won)
	}
	var active int
	if err := b.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM task_leases WHERE kind = 'work' AND status = 'active'`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 1 {
		t.Errorf("%d active work leases, want 1", active)
	}
	got := b.call(t, http.MethodGet, "/rooms/board/tasks/"+task, "").want(t, 200, "")
	if got.str("status") != "assigned" || len(leasesOf(got.obj)) != 1 {
		t.Errorf("task after the race = %s", got.raw)
	}
}

// rawCall is an HTTP call for goroutines, which must not stop the test.
func rawCall(method, url, body string, h http.Header) (int, map[string]any, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var obj map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, obj, nil
}

func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	builder, helper := b.agent(t, "builder"), b.agent(t, "helper")

	// An agent's task is its own and waits for the admin.
	created := b.as(t, b.bob, http.MethodPost, "/rooms/board/tasks",
		`{"title": "Fix login", "description": "the form loops", "source_message_id": "msg_1", "created_by": "someone else", `+builder.creds()+`}`).want(t, 201, "")
	if created.str("id") != "task_1" || created.str("status") != "proposed" || created.str("created_by") != builder.label ||
		created.str("room_id") != "board" || created.str("description") != "the form loops" || created.str("source_message_id") != "msg_1" ||
		created.obj["assignee"] != nil || len(leasesOf(created.obj)) != 0 || !isTimestamp(created.str("created_at")) ||
		fmt.Sprint(created.obj["workflow_artifacts"]) != "[]" {
		t.Fatalf("agent's task = %s", created.raw)
	}
	// bob's owner token without a session is no trusted creator either.
	if r := b.as(t, b.bob, http.MethodPost, "/rooms/board/tasks", `{"title": "Bob's idea"}`).want(t, 201, ""); r.str("status") != "proposed" || !strings.HasPrefix(r.str("created_by"), "bob") {
		t.Errorf("bob's task = %s, want proposed, by bob", r.raw)
	}
	b.patch(t, builder.owner, "task_1", `{"status": "assigned", `+builder.creds()+`}`).want(t, 400, "Invalid transition: proposed → assigned")
	b.patch(t, b.bob, "task_1", `{"status": "accepted", `+builder.creds()+`}`).want(t, 403, "Admin privileges required")
	b.call(t, http.MethodPatch, "/rooms/board/tasks/task_1", `{"status": "accepted"}`).want(t, 401, "Authentication required")
	b.patch(t, b.bob, "task_1", `{"pr_url": "https://github.com/o/r/pull/1"}`).wantCode(t, 403, "WORKER_SESSION_REQUIRED")
	if r := b.patch(t, b.ann, "task_1", `{"status": "accepted"}`).want(t, 200, ""); r.str("status") != "accepted" {
		t.Fatalf("accepted = %s", r.raw)
	}

	// Claim, and the ownership guard.
	claimed := b.patch(t, builder.owner, "task_1", `{"status": "assigned", "assignee": "`+builder.label+`", `+builder.creds()+`}`).want(t, 200, "")
	leases := leasesOf(claimed.obj)
	if claimed.str("assignee") != builder.label || claimed.str("assignee_agent_key") != "bob/builder" || len(leases) != 1 ||
		leases[0]["kind"] != "work" || leases[0]["status"] != "active" || leases[0]["agent_session_id"] != builder.id ||
		leases[0]["task_id"] != "task_1" || leases[0]["expires_at"] != nil || !strings.HasPrefix(leases[0]["id"].(string), "tl_") {
		t.Fatalf("claimed = %s", claimed.raw)
	}
	b.patch(t, helper.owner, "task_1", `{"status": "in_progress", `+helper.creds()+`}`).wantCode(t, 409, "coordination_wrong_actor")
	b.patch(t, helper.owner, "task_1", `{"status": "assigned", `+helper.creds()+`}`).wantCode(t, 409, "coordination_wrong_actor")
	b.patch(t, builder.owner, "task_1", `{"status": "in_progress", `+builder.creds()+`}`).want(t, 200, "")
	r := b.patch(t, builder.owner, "task_1", `{"status": "in_review", "pr_url": "https://github.com/o/r/pull/7", `+builder.creds()+`}`).want(t, 200, "")
	if r.str("pr_url") != "https://github.com/o/r/pull/7" || leasesOf(r.obj)[0]["pr_url"] != "https://github.com/o/r/pull/7" {
		t.Errorf("in review = %s", r.raw)
	}
	// The original's clients read the PR as a workflow artifact too.
	if got := fmt.Sprint(r.obj["workflow_artifacts"]); got != "[map[kind:pull_request number:7 provider:github url:https://github.com/o/r/pull/7]]" {
		t.Errorf("workflow_artifacts = %s", got)
	}
	b.patch(t, builder.owner, "task_1", `{"status": "done", `+builder.creds()+`}`).want(t, 403, "Admin privileges required")

	// Review, then merge.
	b.patch(t, b.ann, "task_1", `{"status": "merged"}`).wantCode(t, 409, "coordination_board_review_required")
	review := func(s session, body string) reply {
		t.Helper()
		return b.as(t, s.owner, http.MethodPost, "/rooms/board/tasks/task_1/review-lease-action", body)
	}
	review(builder, `{"action": "claim", `+builder.creds()+`}`).wantCode(t, 409, "coordination_self_review")
	review(builder, `{"action": "claim"}`).wantCode(t, 403, "WORKER_SESSION_REQUIRED")
	rc := review(helper, `{"action": "claim", `+helper.creds()+`}`).want(t, 200, "")
	lease, _ := rc.obj["lease"].(map[string]any)
	if rc.str("action") != "claim" || rc.str("room_id") != "board" || lease["kind"] != "review" || lease["agent_key"] != "bob/helper" ||
		len(leasesOf(taskOf(rc))) != 2 {
		t.Fatalf("review claim = %s", rc.raw)
	}
	review(helper, `{"action": "claim", `+helper.creds()+`}`).wantCode(t, 409, "coordination_review_claimed")
	// The reviewer asks for changes (status only), the builder answers.
	b.patch(t, helper.owner, "task_1", `{"status": "blocked", "pr_url": "https://x.test/2", `+helper.creds()+`}`).wantCode(t, 409, "coordination_review_decision_only")
	b.patch(t, helper.owner, "task_1", `{"status": "blocked", `+helper.creds()+`}`).want(t, 200, "")
	b.patch(t, builder.owner, "task_1", `{"status": "in_review", `+builder.creds()+`}`).want(t, 200, "")
	if r := b.patch(t, b.ann, "task_1", `{"status": "merged"}`).want(t, 200, ""); r.str("status") != "merged" {
		t.Errorf("merged = %s", r.raw)
	}
	if r := b.patch(t, b.ann, "task_1", `{"status": "done"}`).want(t, 200, ""); r.str("status") != "done" || len(leasesOf(r.obj)) != 0 {
		t.Errorf("done = %s, want no active leases", r.raw)
	}
	b.patch(t, b.ann, "task_1", `{"status": "in_progress"}`).want(t, 400, "Invalid transition: done → in_progress. Allowed: accepted")

	lines := b.statusLines(t)
	want := []string{"task_1 is accepted", "builder claimed task_1: Fix login", "builder started work on task_1", "task_1 is ready for review",
		"task_1 is blocked", "task_1 is ready for review", "task_1 has been merged", "task_1 is complete"}
	if len(lines) != len(want) {
		t.Fatalf("status lines = %q, want %d", lines, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "[status] ") || !strings.Contains(lines[i], w) {
			t.Errorf("status line %d = %q, want it to say %q", i, lines[i], w)
		}
	}
	// The legacy path serves the same board.
	if r := b.call(t, http.MethodGet, "/projects/board/tasks/task_1", "").want(t, 200, ""); r.str("status") != "done" {
		t.Errorf("legacy read = %s", r.raw)
	}
}

// A task's created_by is what the request sent, as the original keeps
// it (white space around it trimmed, as a sender's is); a worker
// session's task is its actor label's, and a signed-in person who sends
// none is named by their account.
func TestTaskCreatedBy(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	builder := b.agent(t, "builder")
	tests := []struct {
		name, token, body string
		status            int
		createdBy, state  string
	}{
		{"anonymous", "", `{"title": "t", "created_by": "  Sam  "}`, 201, "Sam", "proposed"},
		{"owner token", b.bob, `{"title": "t", "created_by": "Robert"}`, 201, "Robert", "proposed"},
		{"owner token, none sent", b.bob, `{"title": "t"}`, 201, "bob Name", "proposed"}, // the fake GitHub's name
		{"admin", b.ann, `{"title": "t", "created_by": "Ops lead"}`, 201, "Ops lead", "accepted"},
		{"worker session", b.bob, `{"title": "t", "created_by": "someone else", ` + builder.creds() + `}`, 201, builder.label, "proposed"},
		{"anonymous, none sent", "", `{"title": "t"}`, 400, "", ""},
		{"too long", "", `{"title": "t", "created_by": "` + strings.Repeat("x", letagents.MaxSenderBytes+1) + `"}`, 400, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r reply
			if tt.token == "" {
				r = b.call(t, http.MethodPost, "/rooms/board/tasks", tt.body)
			} else {
				r = b.as(t, tt.token, http.MethodPost, "/rooms/board/tasks", tt.body)
			}
			r.want(t, tt.status, "created_by")
			if tt.status == 201 && (r.str("created_by") != tt.createdBy || r.str("status") != tt.state) {
				t.Errorf("created_by %q, status %s; want %q, %s", r.str("created_by"), r.str("status"), tt.createdBy, tt.state)
			}
		})
	}
}

func TestTaskHandoffAndRelease(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	builder, helper, other := b.agent(t, "builder"), b.agent(t, "helper"), b.agent(t, "other")
	task := b.newTask(t, "Ship it")
	claimed := b.patch(t, builder.owner, task, `{"status": "assigned", `+builder.creds()+`}`).want(t, 200, "")
	leaseID := leasesOf(claimed.obj)[0]["id"].(string)
	branch := leasesOf(claimed.obj)[0]["branch_ref"]

	act := func(s session, body string) reply {
		t.Helper()
		return b.as(t, s.owner, http.MethodPost, "/rooms/board/tasks/"+task+"/lease-action", body)
	}
	act(builder, `{"action": "handoff", `+builder.creds()+`}`).want(t, 400, "target_actor_key is required")
	act(builder, `{"action": "steal", `+builder.creds()+`}`).want(t, 400, "action must be release or handoff")
	act(builder, `{"action": "handoff", "target_actor_key": "bob/nobody", `+builder.creds()+`}`).want(t, 404, "bob/nobody")
	act(builder, `{"action": "handoff", "target_actor_key": "bob/helper", `+builder.creds()+`}`).wantCode(t, 409, "coordination_target_session_unreachable")
	act(builder, `{"action": "release", "lease_id": "tl_00000000000000000000000000000000", `+builder.creds()+`}`).wantCode(t, 409, "coordination_stale_lease_reference")
	act(other, `{"action": "release", `+other.creds()+`}`).wantCode(t, 403, "coordination_lease_holder_required")
	act(other, `{"action": "release"}`).want(t, 403, "Admin privileges required")

	// A poll that just ended leaves helper reachable for the grace.
	b.callWith(context.Background(), t, http.MethodGet, "/rooms/board/messages/poll?after=msg_0&timeout=0", "", helper.headers()).want(t, 200, "")
	b.deliveryClosed(t, helper.id)
	// A second live session of helper's makes the target ambiguous.
	second := b.register(t, b.bob, "board", "helper", `{"actor_key": "bob/helper", "display_name": "helper"}`)
	act(builder, `{"action": "handoff", "target_actor_key": "bob/helper", `+builder.creds()+`}`).wantCode(t, 409, "coordination_target_session_required")
	act(builder, `{"action": "handoff", "target_actor_key": "bob/helper", "target_agent_session_id": "`+second.id+`", `+builder.creds()+`}`).
		wantCode(t, 409, "coordination_target_session_unreachable")
	h := act(builder, `{"action": "handoff", "target_actor_key": "bob/helper", "target_agent_session_id": "`+helper.id+`", "lease_id": "`+leaseID+`", `+
		builder.creds()+`}`).want(t, 200, "")
	released, _ := h.obj["released_lease"].(map[string]any)
	next, _ := h.obj["new_lease"].(map[string]any)
	got := taskOf(h)
	if h.str("action") != "handoff" || h.str("room_id") != "board" || released["status"] != "released" || released["id"] != leaseID ||
		next["agent_key"] != "bob/helper" || next["agent_session_id"] != helper.id || next["status"] != "active" || next["branch_ref"] != branch ||
		got["assignee"] != helper.label || got["status"] != "assigned" || len(leasesOf(got)) != 1 {
		t.Fatalf("handoff = %s", h.raw)
	}
	b.patch(t, builder.owner, task, `{"status": "in_progress", `+builder.creds()+`}`).wantCode(t, 409, "coordination_wrong_actor")
	b.patch(t, helper.owner, task, `{"status": "in_progress", `+helper.creds()+`}`).want(t, 200, "")

	// Release puts the task back on the board.
	rel := act(helper, `{"action": "release", `+helper.creds()+`}`).want(t, 200, "")
	got = taskOf(rel)
	if got["status"] != "accepted" || got["assignee"] != nil || len(leasesOf(got)) != 0 || rel.obj["new_lease"] != nil {
		t.Fatalf("release = %s", rel.raw)
	}
	act(helper, `{"action": "release", `+helper.creds()+`}`).wantCode(t, 409, "coordination_missing_lease")

	// The admin revokes someone's claim.
	b.patch(t, other.owner, task, `{"status": "assigned", `+other.creds()+`}`).want(t, 200, "")
	rev := b.as(t, b.ann, http.MethodPost, "/rooms/board/tasks/"+task+"/lease-action", `{"action": "release", "reason": "reshuffling"}`).want(t, 200, "")
	if released, _ := rev.obj["released_lease"].(map[string]any); released["status"] != "revoked" || released["revoked_reason"] != "reshuffling" ||
		taskOf(rev)["status"] != "accepted" {
		t.Errorf("revoke = %s", rev.raw)
	}
	lines := b.statusLines(t)
	joined := strings.Join(lines, "\n")
	for _, w := range []string{"builder handed " + task + " over to helper", "helper released " + task, "other's claim on " + task + " was revoked"} {
		if !strings.Contains(joined, w) {
			t.Errorf("status lines %q lack %q", lines, w)
		}
	}
}

func TestTaskLeaseExpiry(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	builder, helper := b.agent(t, "builder"), b.agent(t, "helper")
	task := b.newTask(t, "Timed")
	b.patch(t, builder.owner, task, `{"status": "assigned", "lease_ttl_seconds": 5, `+builder.creds()+`}`).want(t, 400, "lease_ttl_seconds must be from 10 to 86400")
	claimed := b.patch(t, builder.owner, task, `{"status": "assigned", "lease_ttl_seconds": 60, `+builder.creds()+`}`).want(t, 200, "")
	exp, _ := leasesOf(claimed.obj)[0]["expires_at"].(string)
	if want := b.clock.Now().Add(time.Minute); exp != want.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("expires_at = %q, want %s", exp, want)
	}
	b.clock.Advance(59 * time.Second)
	b.patch(t, helper.owner, task, `{"status": "assigned", `+helper.creds()+`}`).wantCode(t, 409, "coordination_wrong_actor")
	b.clock.Advance(2 * time.Second)
	got := b.call(t, http.MethodGet, "/rooms/board/tasks/"+task, "").want(t, 200, "")
	if got.str("status") != "accepted" || got.obj["assignee"] != nil || len(leasesOf(got.obj)) != 0 {
		t.Fatalf("after expiry = %s", got.raw)
	}
	lines := b.statusLines(t)
	if last := lines[len(lines)-1]; !strings.Contains(last, "work lease on "+task+" expired") {
		t.Errorf("last status line = %q, want the expiry", last)
	}
	if r := b.patch(t, helper.owner, task, `{"status": "assigned", `+helper.creds()+`}`).want(t, 200, ""); r.str("assignee") != helper.label {
		t.Errorf("claim after expiry = %s", r.raw)
	}
	var expired int
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM task_leases WHERE status = 'expired'`).Scan(&expired); err != nil {
		t.Fatal(err)
	}
	if expired != 1 {
		t.Errorf("%d expired leases, want 1", expired)
	}
}

func TestTaskListing(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	for i := 1; i <= 5; i++ {
		b.newTask(t, fmt.Sprintf("Task %d", i))
	}
	b.patch(t, b.ann, "task_3", `{"status": "cancelled"}`).want(t, 200, "")
	list := func(path string) ([]string, bool, reply) {
		t.Helper()
		r := b.call(t, http.MethodGet, path, "").want(t, 200, "")
		raw, _ := r.obj["tasks"].([]any)
		var out []string
		for _, x := range raw {
			out = append(out, x.(map[string]any)["id"].(string))
		}
		return out, r.obj["has_more"] == true, r
	}
	tests := []struct {
		path    string
		want    string
		hasMore bool
	}{
		{"/rooms/board/tasks", "[task_1 task_2 task_3 task_4 task_5]", false},
		{"/rooms/board/tasks?limit=2", "[task_1 task_2]", true},
		{"/rooms/board/tasks?limit=2&after=task_2", "[task_3 task_4]", true},
		{"/rooms/board/tasks?limit=2&after=task_4", "[task_5]", false},
		{"/rooms/board/tasks?open=true", "[task_1 task_2 task_4 task_5]", false},
		{"/rooms/board/tasks?status=cancelled", "[task_3]", false},
		{"/rooms/board/tasks?status=accepted&limit=3", "[task_1 task_2 task_4]", true},
		{"/rooms/board/tasks?after=task_9", "[]", false},
		// Lenient, as the original: a cursor's prefix in any case, and a
		// limit that is no whole number from 1 to 500 read as it reads.
		{"/rooms/board/tasks?limit=2&after=TASK_2", "[task_3 task_4]", true},
		{"/rooms/board/tasks?limit=2.5", "[task_1 task_2]", true},
		{"/rooms/board/tasks?limit=0", "[task_1 task_2 task_3 task_4 task_5]", false},
		{"/rooms/board/tasks?limit=-1", "[task_1 task_2 task_3 task_4 task_5]", false},
		{"/rooms/board/tasks?limit=abc", "[task_1 task_2 task_3 task_4 task_5]", false},
		{"/rooms/board/tasks?limit=100000", "[task_1 task_2 task_3 task_4 task_5]", false},
		// An after that is no task id is no cursor; open is on only for
		// true (and 1).
		{"/rooms/board/tasks?limit=2&after=garbage", "[task_1 task_2]", true},
		{"/rooms/board/tasks?limit=2&after=msg_3", "[task_1 task_2]", true},
		{"/rooms/board/tasks?open=maybe", "[task_1 task_2 task_3 task_4 task_5]", false},
		{"/rooms/board/tasks?open=1", "[task_1 task_2 task_4 task_5]", false},
	}
	for _, tt := range tests {
		got, more, _ := list(tt.path)
		if fmt.Sprint(got) != tt.want || more != tt.hasMore {
			t.Errorf("%s: %v has_more %v, want %s %v", tt.path, got, more, tt.want, tt.hasMore)
		}
	}
	if _, _, r := list("/rooms/board/tasks"); r.str("room_id") != "board" || r.obj["project_id"] != nil {
		t.Errorf("current route = %s, want room_id only", r.raw)
	}
	if _, _, r := list("/projects/board/tasks"); r.str("project_id") != "board" || r.obj["room_id"] != nil {
		t.Errorf("legacy route = %s, want project_id only", r.raw)
	}
}

// TestLongTasks: titles and descriptions the original (0.12.9) takes are
// taken here, and a board of long descriptions is listed in pages cut to
// MaxPageBytes, as message pages are.
func TestLongTasks(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	title := strings.Repeat("t", 1000)
	desc := strings.Repeat("log line\n", 1_000_000/9) + "end"
	body, _ := json.Marshal(map[string]string{"title": title, "description": desc})
	const n = 5
	for range n {
		r := b.as(t, b.ann, http.MethodPost, "/rooms/board/tasks", string(body)).want(t, 201, "")
		if r.str("title") != title || r.str("description") != desc {
			t.Fatalf("task created with a %d-byte title and %d-byte description reads back otherwise", len(title), len(desc))
		}
	}
	var seen []string
	for after, more := "task_0", true; more; after = seen[len(seen)-1] {
		r := b.call(t, http.MethodGet, "/rooms/board/tasks?after="+after, "").want(t, 200, "")
		raw, _ := r.obj["tasks"].([]any)
		if len(raw) == 0 || len(raw) == n || len(r.raw) > letagents.MaxPageBytes+1<<10 {
			t.Fatalf("page after %s = %d tasks in %d bytes; want a page cut to %d bytes", after, len(raw), len(r.raw), letagents.MaxPageBytes)
		}
		for _, x := range raw {
			seen = append(seen, x.(map[string]any)["id"].(string))
		}
		more = r.obj["has_more"] == true
	}
	if fmt.Sprint(seen) != "[task_1 task_2 task_3 task_4 task_5]" {
		t.Errorf("paged through %v, want task_1..task_5", seen)
	}
}

func TestTaskBadInput(t *testing.T) {
	t.Parallel()
	b := newBoardEnv(t)
	builder := b.agent(t, "builder")
	b.newTask(t, "Only one")
	long := strings.Repeat("x", letagents.MaxTaskTitleBytes+1)
	tests := []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{http.MethodGet, "/rooms/board/tasks?status=nope", "", 400, "status must be one of"},
		{http.MethodGet, "/rooms/nowhere/tasks", "", 404, "Room not found"},
		{http.MethodGet, "/rooms/board/tasks/task_0", "", 404, "Task not found"},
		{http.MethodGet, "/rooms/board/tasks/bogus", "", 404, "Task not found"},
		{http.MethodGet, "/rooms/board/tasks/task_99", "", 404, "Task not found"},
		{http.MethodGet, "/rooms/nowhere/tasks/task_1", "", 404, "Room not found"},
		{http.MethodPost, "/rooms/board/tasks", `{"title": "x"`, 400, "not a JSON object"},
		{http.MethodPost, "/rooms/board/tasks", `{"title": 7}`, 400, "title must be a string"},
		{http.MethodPost, "/rooms/board/tasks", `{}`, 400, "title and created_by are required"},
		{http.MethodPost, "/rooms/board/tasks", `{"title": "no author"}`, 400, "title and created_by are required"},
		{http.MethodPost, "/rooms/board/tasks", `{"title": "` + long + `", "created_by": "x"}`, 400, fmt.Sprintf("title is longer than %d bytes", letagents.MaxTaskTitleBytes)},
		{http.MethodPost, "/rooms/board/tasks", `{"title": "x", "created_by": "x", "source_message_id": "task_1"}`, 400, "source_message_id"},
		{http.MethodPost, "/rooms/nowhere/tasks", `{"title": "x", "created_by": "x"}`, 404, "Room not found"},
		{http.MethodPatch, "/rooms/board/tasks/task_1", `{"status": "nope"}`, 400, "status must be one of"},
		{http.MethodPatch, "/rooms/board/tasks/task_1", `{"pr_url": "not a url"}`, 400, "pr_url must be"},
		{http.MethodPatch, "/rooms/board/tasks/task_1", `[1]`, 400, "JSON"},
		{http.MethodPatch, "/rooms/board/tasks/task_1", `{"status": "in_progress"}`, 401, "Authentication required"},
		{http.MethodPatch, "/rooms/board/tasks/task_9", `{"status": "in_progress"}`, 404, "Task not found"},
		{http.MethodPost, "/rooms/board/tasks/task_1/lease-action", `{"action": "release"}`, 401, "Authentication required"},
		{http.MethodPost, "/rooms/board/tasks/task_1/review-lease-action", `{"action": "look"}`, 400, "action must be claim or release"},
		{http.MethodPost, "/rooms/board/tasks/task_1/review-lease-action", `{"action": "claim", "lease_ttl_seconds": 1.5}`, 400, "lease_ttl_seconds"},
	}
	for _, tt := range tests {
		r := b.call(t, tt.method, tt.path, tt.body)
		if r.status != tt.status || !strings.Contains(r.str("error"), tt.msg) {
			t.Errorf("%s %s %s: %d %s, want %d with %q", tt.method, tt.path, tt.body, r.status, r.raw, tt.status, tt.msg)
		}
	}
	// As the admin and as an agent, through the same validation.
	b.patch(t, b.ann, "task_1", `{"status": "proposed"}`).want(t, 400, "Invalid transition: accepted → proposed")
	b.patch(t, b.ann, "task_99", `{"status": "cancelled"}`).want(t, 404, "Task not found")
	b.patch(t, b.ann, "task_1", `{"assignee": "Somebody"}`).want(t, 400, "assignee cannot be edited")
	b.patch(t, builder.owner, "task_1", `{"status": "assigned", "assignee": "Somebody", `+builder.creds()+`}`).want(t, 400, "own label")
	b.as(t, b.ann, http.MethodPost, "/rooms/board/tasks/task_1/lease-action", `{"action": "release"}`).wantCode(t, 409, "coordination_missing_lease")
	b.as(t, b.ann, http.MethodPost, "/rooms/board/tasks/task_1/review-lease-action", `{"action": "release"}`).wantCode(t, 409, "coordination_missing_lease")
	b.as(t, builder.owner, http.MethodPost, "/rooms/board/tasks/task_1/review-lease-action", `{"action": "claim", `+builder.creds()+`}`).
		wantCode(t, 409, "coordination_invalid_task_status")
	b.patch(t, builder.owner, "task_1", `{"status": "assigned", "agent_session_id": "`+builder.id+`", "agent_session_token": "`+strings.Repeat("0", 64)+`"}`).
		want(t, 401, "Invalid agent session credentials")
	ctl := b.register(t, b.bob, "board", "watcher", `{"actor_key": "bob/watcher", "session_kind": "controller"}`)
	b.patch(t, ctl.owner, "task_1", `{"status": "assigned", `+ctl.creds()+`}`).wantCode(t, 403, "WORKER_SESSION_REQUIRED")
}

// FuzzTaskRoutes sends anything to the board's routes: never a 500.
func FuzzTaskRoutes(f *testing.F) {
	e := newEnv(f, nil)
	if _, _, err := e.svc.Store.EnsureRoom(context.Background(), "fuzz board"); err != nil {
		f.Fatal(err)
	}
	seeds := []struct {
		method       uint8
		suffix, body string
	}{
		{0, "tasks?status=accepted&open=true&after=task_0&limit=5", ""},
		{1, "tasks", `{"title": "t", "created_by": "a", "description": "d", "source_message_id": "msg_1"}`},
		{1, "tasks", `{"title": "t", "created_by": "\u0000"}`},
		{2, "tasks/task_1", `{"status": "accepted", "pr_url": "https://x.test/1", "lease_ttl_seconds": 60}`},
		{2, "tasks/task_1", `{"status": "assigned", "agent_session_id": "as_1", "agent_session_token": "x"}`},
		{0, "tasks/task_1", ""},
		{1, "tasks/task_1/lease-action", `{"action": "handoff", "target_actor_key": "a/\u0000", "target_agent_session_id": "as_9"}`},
		{1, "tasks/task_1/review-lease-action", `{"action": "release", "lease_id": "tl_1", "reason": "r"}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.suffix, s.body)
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPatch}
	f.Fuzz(func(t *testing.T, m uint8, suffix, body string) {
		req, err := http.NewRequest(methods[int(m)%len(methods)], "http://letagents.test/rooms/fuzz%20board/"+suffix, strings.NewReader(body))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		e.svc.Handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d: %s", req.Method, suffix, body, rec.Code, rec.Body)
		}
	})
}
