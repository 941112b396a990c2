package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

const localRoom = "github.com/acme/local"

// TestLocalOwnerBoard walks the whole board of a repo room on a runner
// without a GitHub app, as a new user meets it (issue 21): nobody signs
// in, yet two agents in one repository auto-join its room, register
// worker sessions as the local owner's agents, and work a task through
// proposal, acceptance, claim, update, handoff, completion, review and
// merge, a board intent and its approval included; a hook brings one
// agent its mention and the server records the delivery. The person is
// plain HTTP with no credential: the local owner at the page.
func TestLocalOwnerBoard(t *testing.T) {
	t.Parallel()
	began := time.Now()
	r := startLocalRunner(t)
	testwait.Until(t, "the runner's banner to say it acts for the local owner", func() bool {
		return strings.Contains(r.stdout.String(), "sign-in is off: everyone here acts as the local owner")
	})
	repo := newRepo(t, "https://github.com/acme/local.git")
	alphaState := filepath.Join(t.TempDir(), "alpha-state.json")
	a := startAgent(t, r.URL, agentConfig{Name: "alpha", Dir: repo.Dir, StatePath: alphaState})
	b := startAgent(t, r.URL, agentConfig{Name: "bravo", Dir: repo.Dir})
	for _, ag := range []*agent{a, b} {
		if cur := ag.waitJoined(t); cur.RoomID != localRoom {
			t.Fatalf("agent %s auto-joined %q; want the repo room %s", ag.name, cur.RoomID, localRoom)
		}
		var ob onboarding
		ag.callOK(t, "get_onboarding_status", nil, &ob)
		if !ob.Authenticated || ob.AuthSource != "local_owner" {
			t.Errorf("agent %s: get_onboarding_status says authenticated %v via %q; want the local owner", ag.name, ob.Authenticated, ob.AuthSource)
		}
	}
	human := person{t: t, base: r.URL, room: localRoom}

	sa, sb := a.registerSession(t), b.registerSession(t)
	for _, s := range []wire.AgentSession{sa, sb} {
		if !strings.HasPrefix(s.AgentKey, "local/") || s.RoomID != localRoom || !strings.Contains(s.ActorLabel, "Local owner's agent") {
			t.Errorf("session %s: key %q, label %q, room %q; want the local owner's agent in %s", s.SessionID, s.AgentKey, s.ActorLabel, s.RoomID, localRoom)
		}
	}
	withA := func(args map[string]any) map[string]any { args["agent_session_id"] = sa.SessionID; return args }
	withB := func(args map[string]any) map[string]any { args["agent_session_id"] = sb.SessionID; return args }

	// Presence: the status alpha posts is its session's, in the roster.
	var posted struct {
		Success      bool   `json:"success"`
		StatusPosted string `json:"status_posted"`
		Sender       string `json:"sender"`
	}
	a.callOK(t, "post_status", withA(map[string]any{"status": "reading the code"}), &posted)
	if !posted.Success || posted.StatusPosted != "working" || posted.Sender != sa.ActorLabel {
		t.Errorf("post_status answered %+v; want working, sent as %q", posted, sa.ActorLabel)
	}
	if p, ok := human.participant(sa.SessionID); !ok || p.Status == nil || *p.Status != "working" {
		t.Errorf("alpha in the roster: found %v, %+v; want status working", ok, p)
	}

	// Proposed by an agent, accepted by the person.
	var added boardAnswer[wire.Task]
	a.callOK(t, "add_task", withA(map[string]any{"title": taskTitle}), &added)
	if task := added.Result; task.ID != "task_1" || task.Status != "proposed" || task.CreatedBy != sa.ActorLabel {
		t.Fatalf("add_task answered %+v; want task_1 proposed by %q", task, sa.ActorLabel)
	}
	var accepted wire.Task
	human.do(http.MethodPatch, "/tasks/task_1", map[string]any{"status": "accepted"}, http.StatusOK, &accepted)

	// Claimed and updated by alpha, under its work lease.
	var claimed boardAnswer[wire.Task]
	a.callOK(t, "claim_task", withA(map[string]any{"task_id": "task_1"}), &claimed)
	if claimed.Result.Status != "assigned" || deref(claimed.Result.Assignee) != sa.ActorLabel {
		t.Fatalf("claim_task: %+v; want assigned to %q", claimed.Result, sa.ActorLabel)
	}
	firstLease := checkWorkLease(t, "after alpha's claim", claimed.Result, sa)
	b.refused(t, "claim_task", withB(map[string]any{"task_id": "task_1"}), http.StatusConflict, "coordination_wrong_actor",
		"bravo claiming the task alpha holds")
	var updated boardAnswer[wire.Task]
	a.callOK(t, "update_task", withA(map[string]any{"task_id": "task_1", "status": "in_progress"}), &updated)
	if updated.Result.Status != "in_progress" {
		t.Errorf("update_task to in_progress answered status %q", updated.Result.Status)
	}

	// Handed to bravo once it listens; its wait wakes with the news.
	var newest messagesAnswer
	b.callOK(t, "read_messages", map[string]any{"limit": 1}, &newest)
	wait := b.callAsync("wait_for_messages", withB(map[string]any{"after_message_id": newest.LastObservedMessageID, "timeout": waitMillis}),
		2*waitMillis*time.Millisecond)
	human.awaitConnected(sb.SessionID)
	var handed boardAnswer[wire.LeaseActionResult]
	a.callOK(t, "handoff_task_lease", withA(map[string]any{"task_id": "task_1", "target_agent_key": sb.AgentKey, "reason": "bravo knows it"}), &handed)
	if rel := handed.Result.ReleasedLease; rel == nil || rel.ID != firstLease.ID || deref(handed.Result.Task.Assignee) != sb.ActorLabel {
		t.Errorf("handoff_task_lease: %+v; want alpha's lease %s released and the task bravo's", handed.Result, firstLease.ID)
	} else {
		checkWorkLease(t, "after the handoff", handed.Result.Task, sb)
	}
	var woke messagesAnswer
	awaitAnswer(t, wait, "bravo's wait_for_messages", &woke)
	if len(woke.Messages) != 1 || !strings.Contains(woke.Messages[0].Text, "handed task_1 over to bravo") {
		t.Errorf("bravo woke with %s; want the handoff line", describe(woke.Messages))
	}

	// Completed by bravo, reviewed by alpha, merged and closed by the person.
	var completed boardAnswer[wire.Task]
	b.callOK(t, "complete_task", withB(map[string]any{"task_id": "task_1", "pr_url": "https://github.com/acme/local/pull/1"}), &completed)
	if completed.Result.Status != "in_review" {
		t.Errorf("complete_task answered status %q, want in_review", completed.Result.Status)
	}
	var review boardAnswer[wire.ReviewClaimed]
	a.callOK(t, "claim_task_review", withA(map[string]any{"task_id": "task_1"}), &review)
	if l := review.Result.Lease; l.Kind != "review" || l.AgentKey != sa.AgentKey {
		t.Errorf("claim_task_review: lease %+v; want alpha's review lease", l)
	}
	var merged, done wire.Task
	human.do(http.MethodPatch, "/tasks/task_1", map[string]any{"status": "merged"}, http.StatusOK, &merged)
	human.do(http.MethodPatch, "/tasks/task_1", map[string]any{"status": "done"}, http.StatusOK, &done)
	if done.Status != "done" || len(done.ActiveLeases) != 0 {
		t.Errorf("done: status %q, leases %v; want done with none active", done.Status, leaseKinds(done))
	}

	// Intents: with the board asking for them, a new task needs one that
	// the owner (here through bravo, an agent of the room's admin) approves.
	var mode boardAnswer[wire.BoardSettings]
	b.callOK(t, "set_board_manager_mode", withB(map[string]any{"manager_mode": "intent_required"}), &mode)
	a.refused(t, "add_task", withA(map[string]any{"title": "Second"}), http.StatusForbidden, "board_intent_required",
		"a task without an intent where the board requires one")
	var intent boardAnswer[wire.BoardIntent]
	a.callOK(t, "register_task_create_intent", withA(map[string]any{"title": "Second"}), &intent)
	if intent.Result.Status != "pending" || !strings.HasPrefix(intent.Result.ID, "bi_") {
		t.Fatalf("register_task_create_intent: %+v; want a pending intent", intent.Result)
	}
	var approved boardAnswer[wire.BoardIntent]
	b.callOK(t, "approve_board_intent", withB(map[string]any{"intent_id": intent.Result.ID}), &approved)
	if approved.Result.Status != "approved" || approved.Result.ApprovalToken == "" || deref(approved.Result.DecidedBy) != "local" {
		t.Fatalf("approve_board_intent: %+v; want approved by local, with a token", approved.Result)
	}
	var second boardAnswer[wire.Task]
	a.callOK(t, "add_task", withA(map[string]any{"title": "Second", "board_intent_id": intent.Result.ID,
		"board_approval_token": approved.Result.ApprovalToken}), &second)
	if second.Result.ID != "task_2" {
		t.Errorf("add_task with the approved intent answered %+v; want task_2", second.Result)
	}

	// A hook brings alpha its mention, and the server records it.
	hr := hookRunner{apiURL: r.URL, statePath: alphaState, instance: "alpha-instance", dir: repo.Dir}
	var asked wire.Message
	human.do(http.MethodPost, "/messages", map[string]any{"sender": "Sam", "text": "@" + sa.DisplayName + " is the login fixed?"}, http.StatusCreated, &asked)
	got := hr.event(t, "UserPromptSubmit", map[string]any{"prompt": "go on"})
	if got.HookSpecificOutput == nil || !strings.Contains(got.HookSpecificOutput.AdditionalContext, asked.ID) {
		t.Fatalf("alpha's hook printed %+v; want %s in its context", got, asked.ID)
	}
	var d wire.Deliveries
	human.do(http.MethodGet, "/messages/"+asked.ID+"/deliveries", nil, http.StatusOK, &d)
	if !slices.ContainsFunc(d.Deliveries, func(x wire.Delivery) bool { return x.AgentSessionID == sa.SessionID && x.Via == "hook" }) {
		raw, _ := json.Marshal(d)
		t.Errorf("deliveries of %s: %s; want alpha's session %s via hook", asked.ID, raw, sa.SessionID)
	}
	t.Logf("timing: the local owner's whole board flow took %v", time.Since(began).Round(time.Millisecond))
}
