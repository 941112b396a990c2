package letagents

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The board's cast: the agent holding task_1's work lease, another agent,
// a reviewer, a room admin's agent, a person and a room admin.
var (
	holder     = Actor{Label: "Ann | ann's agent | vscode", AgentKey: "ann/ann", InstanceID: "i1", SessionID: 1}
	holderTwin = Actor{Label: "Ann | ann's agent | cli", AgentKey: "ann/ann", InstanceID: "i2", SessionID: 5}
	other      = Actor{Label: "Bob | bob's agent | cli", AgentKey: "bob/bob", SessionID: 2}
	reviewer   = Actor{Label: "Rev | rev's agent | cli", AgentKey: "rev/rev", SessionID: 3}
	adminAgent = Actor{Label: "Ada | ada's agent | cli", AgentKey: "ada/ada", SessionID: 4, Admin: true}
	person     = Actor{Label: "pat"}
	admin      = Actor{Label: "alice", Admin: true}
)

const pr1, pr2 = "https://example.test/pr/1", "https://example.test/pr/2"

var (
	workLease = Lease{ID: "tl_work", RoomID: "room", TaskSeq: 1, Kind: LeaseWork, Status: LeaseActive, AgentKey: "ann/ann",
		InstanceID: "i1", SessionID: 1, ActorLabel: holder.Label, BranchRef: "letagents/task_1/ann-ann", PRURL: pr1, TTL: time.Minute}
	reviewLease = Lease{ID: "tl_review", RoomID: "room", TaskSeq: 1, Kind: LeaseReview, Status: LeaseActive, AgentKey: "rev/rev",
		SessionID: 3, ActorLabel: reviewer.Label, BranchRef: "letagents/task_1/ann-ann", PRURL: pr1}
	// selfReview is a review lease of the work holder's agent (another
	// instance): it does not count as someone else's review.
	selfReview = Lease{ID: "tl_self", RoomID: "room", TaskSeq: 1, Kind: LeaseReview, Status: LeaseActive, AgentKey: "ann/ann",
		InstanceID: "i2", SessionID: 5, ActorLabel: holderTwin.Label}
)

// boardTask is task_1 in a status with leases; a work lease makes its
// holder the assignee.
func boardTask(status TaskStatus, leases ...Lease) Task {
	t := Task{RoomID: "room", Seq: 1, Title: "Fix login", Status: status, PRURL: pr1, ActiveLeases: leases}
	if work, held := t.WorkLease(); held {
		t.Assignee, t.AssigneeAgentKey = work.ActorLabel, work.AgentKey
	}
	return t
}

// byName is task_1 claimed by name (no lease) by the person pat.
func byName(status TaskStatus) Task {
	t := boardTask(status)
	t.Assignee = person.Label
	return t
}

func ptr[T any](v T) *T { return &v }

// wantErr is an *Error a rule must return: its code, machine-readable
// reason and message, all of which clients see.
type wantErr struct {
	code   ErrorKind
	reason string
	msg    string
}

// checkErr reports whether err is want (nil for none), failing t when not.
func checkErr(t *testing.T, err error, want *wantErr) bool {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("error %v, want none", err)
			return false
		}
		return true
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != want.code || e.Code != want.reason || e.Message != want.msg {
		t.Errorf("error %#v,\nwant %s %q %q", err, want.code, want.reason, want.msg)
		return false
	}
	return true
}

func notHolder(label string) *wantErr {
	return &wantErr{Conflict, CodeWrongActor,
		"task_1 is held by " + label + ": only the holder of its work lease can change it (ask them to release or hand it off)"}
}

var (
	reviewDecisionOnly = &wantErr{Conflict, CodeReviewDecisionOnly,
		"A reviewer of task_1 can only change its status (request changes with blocked, or move it on)"}
	reviewRequired = &wantErr{Conflict, CodeReviewRequired,
		"Merging task_1 needs an active review lease held by an agent other than the one that did the work (claim_task_review)"}
	ttlNotHolder = &wantErr{Invalid, "", "lease_ttl_seconds renews the work lease of its holder; this caller holds none on task_1"}
)

func assigneeEdit(field string) *wantErr {
	return &wantErr{Invalid, "", field +
		" cannot be edited: an agent takes a task by claiming it (status assigned), and a held task changes hands by a lease handoff"}
}

func TestActorHolds(t *testing.T) {
	t.Parallel()
	anyInstance := workLease
	anyInstance.InstanceID = ""
	tests := []struct {
		name  string
		actor Actor
		lease Lease
		want  bool
	}{
		{"holder", holder, workLease, true},
		{"same agent, other instance", holderTwin, workLease, false},
		{"lease of no instance, any instance", holderTwin, anyInstance, true},
		{"another agent", other, workLease, false},
		{"a person", person, Lease{AgentKey: ""}, false},
		{"an admin", admin, workLease, false},
	}
	for _, tt := range tests {
		if got := tt.actor.Holds(tt.lease); got != tt.want {
			t.Errorf("%s: Holds = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDecideTaskUpdate(t *testing.T) {
	t.Parallel()
	held := boardTask(TaskInProgress, workLease)
	reviewed := boardTask(TaskInReview, workLease, reviewLease)
	tests := []struct {
		name   string
		task   Task
		change TaskChange
		want   TaskUpdate
		err    *wantErr
	}{
		// What no task takes.
		{name: "status assigned is a claim", task: boardTask(TaskAccepted), change: TaskChange{Status: TaskAssigned, Actor: admin},
			err: &wantErr{Invalid, "", "status assigned is a claim: claim the task with the claiming agent's session"}},
		{name: "unknown status", task: boardTask(TaskAccepted), change: TaskChange{Status: "open", Actor: admin},
			err: &wantErr{Invalid, "", "status must be one of proposed, accepted, assigned, in_progress, blocked, in_review, merged, done, cancelled"}},
		{name: "transition not in the table", task: boardTask(TaskAccepted), change: TaskChange{Status: TaskDone, Actor: admin},
			err: &wantErr{Invalid, "", "Invalid transition: accepted → done. Allowed: assigned, cancelled"}},
		{name: "merged cannot go back to review", task: boardTask(TaskMerged), change: TaskChange{Status: TaskInReview, Actor: admin},
			err: &wantErr{Invalid, "", "Invalid transition: merged → in_review. Allowed: done, accepted"}},

		// The assignee is not edited.
		{name: "assignee edited", task: held, change: TaskChange{Assignee: ptr(other.Label), Actor: holder}, err: assigneeEdit("assignee")},
		{name: "assignee_agent_key edited", task: held, change: TaskChange{AssigneeAgentKey: ptr(other.AgentKey), Actor: holder},
			err: assigneeEdit("assignee_agent_key")},
		{name: "assignee emptied without reopening", task: held, change: TaskChange{Assignee: ptr(""), Actor: holder},
			err: assigneeEdit("assignee")},
		{name: "reopening names someone", task: boardTask(TaskDone), change: TaskChange{Status: TaskAccepted, Assignee: ptr(other.Label), Actor: admin},
			err: assigneeEdit("assignee")},
		{name: "assignee repeated", task: held,
			change: TaskChange{Status: TaskBlocked, Assignee: ptr(holder.Label), AssigneeAgentKey: ptr(holder.AgentKey), Actor: holder},
			want:   TaskUpdate{Status: TaskBlocked, PRURL: pr1, Moved: true, Renew: &LeaseRenewal{LeaseID: "tl_work", TTL: time.Minute, PRURL: pr1}}},
		{name: "reopening empties the assignee", task: boardTask(TaskDone),
			change: TaskChange{Status: TaskAccepted, Assignee: ptr(""), AssigneeAgentKey: ptr(""), Actor: admin},
			want:   TaskUpdate{Status: TaskAccepted, PRURL: pr1, Moved: true, ClearAssignee: true}},

		// Once held, only the holder changes the task.
		{name: "another agent", task: held, change: TaskChange{Status: TaskBlocked, Actor: other}, err: notHolder(holder.Label)},
		{name: "the holder's agent on another instance", task: held, change: TaskChange{Status: TaskBlocked, Actor: holderTwin},
			err: notHolder(holder.Label)},
		{name: "an admin's agent, status not admin-only", task: held, change: TaskChange{Status: TaskInReview, Actor: adminAgent},
			err: notHolder(holder.Label)},
		{name: "an admin's agent, no status", task: held, change: TaskChange{PRURL: ptr(pr2), Actor: adminAgent}, err: notHolder(holder.Label)},
		{name: "an admin's agent cancels", task: reviewed, change: TaskChange{Status: TaskCancelled, Actor: adminAgent},
			want: TaskUpdate{Status: TaskCancelled, PRURL: pr1, Moved: true, EndLeases: []LeaseEnd{
				{Lease: workLease, How: LeaseRevoked, Reason: "task moved to cancelled"},
				{Lease: reviewLease, How: LeaseRevoked, Reason: "task moved to cancelled"}}}},
		{name: "a reviewer requests changes", task: reviewed, change: TaskChange{Status: TaskBlocked, Actor: reviewer},
			want: TaskUpdate{Status: TaskBlocked, PRURL: pr1, Moved: true}},
		{name: "a reviewer repeats the status", task: reviewed, change: TaskChange{Status: TaskInReview, Actor: reviewer},
			want: TaskUpdate{Status: TaskInReview, PRURL: pr1}},
		{name: "a reviewer sets the PR", task: reviewed, change: TaskChange{Status: TaskBlocked, PRURL: ptr(pr2), Actor: reviewer},
			err: reviewDecisionOnly},
		{name: "a reviewer sets the lease's TTL", task: reviewed, change: TaskChange{LeaseTTL: time.Hour, Actor: reviewer},
			err: reviewDecisionOnly},
		{name: "a person moves a held task", task: held, change: TaskChange{Status: TaskInReview, Actor: person}, err: notHolder(holder.Label)},
		{name: "a person edits a held task's PR", task: held, change: TaskChange{PRURL: ptr(pr2), Actor: person}, err: notHolder(holder.Label)},
		{name: "an admin edits a held task's PR", task: held, change: TaskChange{PRURL: ptr(pr2), Actor: admin},
			want: TaskUpdate{Status: TaskInProgress, PRURL: pr2, PRLease: "tl_work"}},
		{name: "an admin clears a held task's PR", task: held, change: TaskChange{PRURL: ptr(""), Actor: admin},
			want: TaskUpdate{Status: TaskInProgress, PRLease: "tl_work"}},

		// Only the holder sets its lease's time to live.
		{name: "TTL from a person", task: held, change: TaskChange{LeaseTTL: time.Hour, Actor: admin}, err: ttlNotHolder},
		{name: "TTL on a task nobody holds", task: boardTask(TaskAccepted), change: TaskChange{LeaseTTL: time.Hour, Actor: other},
			err: ttlNotHolder},

		// Merging needs someone else's review.
		{name: "merge without a review", task: boardTask(TaskInReview, workLease), change: TaskChange{Status: TaskMerged, Actor: holder},
			err: reviewRequired},
		{name: "merge reviewed only by the holder's agent", task: boardTask(TaskInReview, workLease, selfReview),
			change: TaskChange{Status: TaskMerged, Actor: adminAgent}, err: reviewRequired},
		{name: "merge reviewed by another", task: reviewed, change: TaskChange{Status: TaskMerged, Actor: adminAgent},
			want: TaskUpdate{Status: TaskMerged, PRURL: pr1, Moved: true}},
		{name: "merge by the holder, reviewed", task: reviewed, change: TaskChange{Status: TaskMerged, Actor: holder},
			want: TaskUpdate{Status: TaskMerged, PRURL: pr1, Moved: true, Renew: &LeaseRenewal{LeaseID: "tl_work", TTL: time.Minute, PRURL: pr1}}},
		{name: "merge of a task nobody holds, reviewed", task: boardTask(TaskInReview, reviewLease),
			change: TaskChange{Status: TaskMerged, Actor: admin}, want: TaskUpdate{Status: TaskMerged, PRURL: pr1, Moved: true}},

		// The holder's changes are heartbeats.
		{name: "holder heartbeat", task: held, change: TaskChange{Actor: holder},
			want: TaskUpdate{Status: TaskInProgress, PRURL: pr1, Renew: &LeaseRenewal{LeaseID: "tl_work", TTL: time.Minute, PRURL: pr1}}},
		{name: "holder sets PR and TTL", task: held, change: TaskChange{Status: TaskInReview, PRURL: ptr(pr2), LeaseTTL: time.Hour, Actor: holder},
			want: TaskUpdate{Status: TaskInReview, PRURL: pr2, Moved: true, Renew: &LeaseRenewal{LeaseID: "tl_work", TTL: time.Hour, PRURL: pr2}}},

		// Done, cancelled and accepted end every lease.
		{name: "holder finishes", task: reviewed, change: TaskChange{Status: TaskDone, Actor: holder},
			want: TaskUpdate{Status: TaskDone, PRURL: pr1, Moved: true, EndLeases: []LeaseEnd{
				{Lease: workLease, How: LeaseReleased}, {Lease: reviewLease, How: LeaseReleased}}}},
		{name: "admin finishes", task: reviewed, change: TaskChange{Status: TaskDone, Actor: admin},
			want: TaskUpdate{Status: TaskDone, PRURL: pr1, Moved: true, EndLeases: []LeaseEnd{
				{Lease: workLease, How: LeaseReleased}, {Lease: reviewLease, How: LeaseReleased}}}},
		{name: "holder cancels", task: reviewed, change: TaskChange{Status: TaskCancelled, Actor: holder},
			want: TaskUpdate{Status: TaskCancelled, PRURL: pr1, Moved: true, EndLeases: []LeaseEnd{
				{Lease: workLease, How: LeaseReleased}, {Lease: reviewLease, How: LeaseRevoked, Reason: "task moved to cancelled"}}}},
		{name: "admin reopens a merged task", task: boardTask(TaskMerged, workLease, reviewLease),
			change: TaskChange{Status: TaskAccepted, Actor: admin},
			want: TaskUpdate{Status: TaskAccepted, PRURL: pr1, Moved: true, ClearAssignee: true, EndLeases: []LeaseEnd{
				{Lease: workLease, How: LeaseRevoked, Reason: "task moved to accepted"},
				{Lease: reviewLease, How: LeaseRevoked, Reason: "task moved to accepted"}}}},
		{name: "admin cancels a proposal", task: boardTask(TaskProposed), change: TaskChange{Status: TaskCancelled, Actor: admin},
			want: TaskUpdate{Status: TaskCancelled, PRURL: pr1, Moved: true}},
		{name: "admin sets the PR of a free task", task: boardTask(TaskAccepted), change: TaskChange{PRURL: ptr(pr2), Actor: admin},
			want: TaskUpdate{Status: TaskAccepted, PRURL: pr2}},

		// A task claimed by name has no lease to guard it.
		{name: "a person moves a task claimed by name", task: byName(TaskAssigned),
			change: TaskChange{Status: TaskInProgress, Assignee: ptr("pat"), Actor: person},
			want:   TaskUpdate{Status: TaskInProgress, PRURL: pr1, Moved: true}},
		{name: "a person submits it with a PR", task: byName(TaskInProgress), change: TaskChange{Status: TaskInReview, PRURL: ptr(pr2), Actor: person},
			want: TaskUpdate{Status: TaskInReview, PRURL: pr2, Moved: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecideTaskUpdate(tt.task, tt.change)
			if checkErr(t, err, tt.err) && tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("update %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestClaimWork(t *testing.T) {
	t.Parallel()
	claimed := &wantErr{Conflict, CodeWrongActor, "task_1 is already claimed by " + holder.Label}
	leftover := boardTask(TaskAccepted, workLease)
	leftover.Assignee = ""
	mine := Lease{RoomID: "room", TaskSeq: 1, Kind: LeaseWork, AgentKey: "bob/bob", SessionID: 2, ActorLabel: other.Label,
		BranchRef: "letagents/task_1/bob-bob", PRURL: pr1, OutputIntent: "Fix login", CreatedBy: other.Label}
	withPR, withTTL := mine, mine
	withPR.PRURL = pr2
	withTTL.TTL = time.Hour
	tests := []struct {
		name  string
		task  Task
		claim Claim
		want  Lease
		err   *wantErr
	}{
		{name: "a person", task: boardTask(TaskAccepted), claim: Claim{Actor: admin},
			err: &wantErr{Invalid, "", "only an agent session can claim a task"}},
		{name: "a person by name", task: boardTask(TaskAccepted), claim: Claim{Actor: person, ByName: true}, want: Lease{PRURL: pr1}},
		{name: "a person by name, with a PR", task: boardTask(TaskAccepted), claim: Claim{Actor: person, ByName: true, PRURL: ptr(pr2)},
			want: Lease{PRURL: pr2}},
		{name: "by name, with a TTL", task: boardTask(TaskAccepted), claim: Claim{Actor: person, ByName: true, TTL: time.Hour},
			err: &wantErr{Invalid, "", "lease_ttl_seconds sets the time to live of a work lease, which a claim without a worker session does not take"}},
		{name: "by name, claimed by name", task: byName(TaskAssigned), claim: Claim{Actor: admin, ByName: true},
			err: &wantErr{Conflict, CodeWrongActor, "task_1 is already claimed by pat"}},
		{name: "by name, proposed", task: boardTask(TaskProposed), claim: Claim{Actor: person, ByName: true}, err: &wantErr{Invalid, "",
			"Invalid transition: proposed → assigned. Allowed: accepted, cancelled (task_1 is proposed: a room admin must accept it before it can be claimed)"}},
		{name: "an agent by name, held", task: boardTask(TaskInProgress, workLease), claim: Claim{Actor: other, ByName: true}, err: claimed},
		{name: "held", task: boardTask(TaskInProgress, workLease), claim: Claim{Actor: other}, err: claimed},
		{name: "held, by the holder", task: boardTask(TaskAssigned, workLease), claim: Claim{Actor: holder}, err: claimed},
		{name: "proposed", task: boardTask(TaskProposed), claim: Claim{Actor: other}, err: &wantErr{Invalid, "",
			"Invalid transition: proposed → assigned. Allowed: accepted, cancelled (task_1 is proposed: a room admin must accept it before it can be claimed)"}},
		{name: "done", task: boardTask(TaskDone), claim: Claim{Actor: other},
			err: &wantErr{Invalid, "", "Invalid transition: done → assigned. Allowed: accepted"}},
		{name: "accepted with a work lease left over", task: leftover, claim: Claim{Actor: other}, err: claimed},
		{name: "accepted", task: boardTask(TaskAccepted), claim: Claim{Actor: other}, want: mine},
		{name: "accepted, with a PR", task: boardTask(TaskAccepted), claim: Claim{Actor: other, PRURL: ptr(pr2)}, want: withPR},
		{name: "accepted, with a TTL", task: boardTask(TaskAccepted), claim: Claim{Actor: other, TTL: time.Hour}, want: withTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ClaimWork(tt.task, tt.claim)
			if checkErr(t, err, tt.err) && tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("lease %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestClaimReview(t *testing.T) {
	t.Parallel()
	review := Lease{RoomID: "room", TaskSeq: 1, Kind: LeaseReview, AgentKey: "rev/rev", SessionID: 3, ActorLabel: reviewer.Label,
		BranchRef: "letagents/task_1/ann-ann", PRURL: pr1, OutputIntent: "Review task_1: Fix login", TTL: time.Hour, CreatedBy: reviewer.Label}
	unheld := review
	unheld.BranchRef = ""
	tests := []struct {
		name  string
		task  Task
		claim Claim
		want  Lease
		err   *wantErr
	}{
		{name: "a person", task: boardTask(TaskInReview, workLease), claim: Claim{Actor: admin},
			err: &wantErr{Invalid, "", "only an agent session can review a task"}},
		{name: "a person by name", task: boardTask(TaskInReview, workLease), claim: Claim{Actor: person, ByName: true},
			err: &wantErr{Invalid, "", "only an agent session can review a task"}},
		{name: "in progress", task: boardTask(TaskInProgress, workLease), claim: Claim{Actor: reviewer},
			err: &wantErr{Conflict, CodeInvalidTaskStatus, "task_1 is in_progress: only a task in_review or blocked can be reviewed"}},
		{name: "the holder's own work", task: boardTask(TaskInReview, workLease), claim: Claim{Actor: holder},
			err: &wantErr{Conflict, CodeSelfReview, holder.Label + " holds the work lease of task_1: an agent never reviews its own work"}},
		{name: "the holder's agent, another instance", task: boardTask(TaskInReview, workLease), claim: Claim{Actor: holderTwin},
			err: &wantErr{Conflict, CodeSelfReview, holderTwin.Label + " holds the work lease of task_1: an agent never reviews its own work"}},
		{name: "in review", task: boardTask(TaskInReview, workLease), claim: Claim{Actor: reviewer, TTL: time.Hour}, want: review},
		{name: "blocked", task: boardTask(TaskBlocked, workLease), claim: Claim{Actor: reviewer, TTL: time.Hour}, want: review},
		{name: "blocked, nobody holds it", task: boardTask(TaskBlocked), claim: Claim{Actor: reviewer, TTL: time.Hour}, want: unheld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ClaimReview(tt.task, tt.claim)
			if checkErr(t, err, tt.err) && tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("lease %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestEndWork holds ReleaseWork and HandOffWork to the same refusals,
// and HandOffWork to its own: a task not in hand, and its default reason.
func TestEndWork(t *testing.T) {
	t.Parallel()
	held := boardTask(TaskInReview, workLease, reviewLease)
	merged := boardTask(TaskMerged, workLease)
	tests := []struct {
		name    string
		task    Task
		release LeaseRelease
		handoff bool
		want    LeaseEnd
		err     *wantErr
	}{
		{name: "no work lease", task: boardTask(TaskAccepted), release: LeaseRelease{Actor: holder},
			err: &wantErr{Conflict, CodeMissingLease, "task_1 has no active work lease"}},
		{name: "stale lease id", task: held, release: LeaseRelease{Actor: holder, LeaseID: "tl_old"},
			err: &wantErr{Conflict, CodeStaleLease, "lease tl_old is not the active work lease of task_1 (that is tl_work)"}},
		{name: "the review lease's id", task: held, release: LeaseRelease{Actor: admin, LeaseID: "tl_review"},
			err: &wantErr{Conflict, CodeStaleLease, "lease tl_review is not the active work lease of task_1 (that is tl_work)"}},
		{name: "another agent", task: held, release: LeaseRelease{Actor: other}, err: &wantErr{Forbidden, CodeLeaseHolderRequired,
			"Only the holder of the work lease of task_1 (" + holder.Label + ") or a room admin can release or hand it off"}},
		{name: "a reviewer", task: held, release: LeaseRelease{Actor: reviewer}, err: &wantErr{Forbidden, CodeLeaseHolderRequired,
			"Only the holder of the work lease of task_1 (" + holder.Label + ") or a room admin can release or hand it off"}},
		{name: "the holder", task: held, release: LeaseRelease{Actor: holder, Reason: "done for today"},
			want: LeaseEnd{Lease: workLease, How: LeaseReleased}},
		{name: "the holder, naming the lease", task: held, release: LeaseRelease{Actor: holder, LeaseID: "tl_work"},
			want: LeaseEnd{Lease: workLease, How: LeaseReleased}},
		{name: "an admin", task: held, release: LeaseRelease{Actor: admin},
			want: LeaseEnd{Lease: workLease, How: LeaseRevoked, Reason: "revoked by a room admin"}},
		{name: "an admin's agent, with a reason", task: held, release: LeaseRelease{Actor: adminAgent, Reason: "stalled"},
			want: LeaseEnd{Lease: workLease, How: LeaseRevoked, Reason: "stalled"}},
		{name: "a merged task's lease", task: merged, release: LeaseRelease{Actor: holder},
			want: LeaseEnd{Lease: workLease, How: LeaseReleased}},

		{name: "handoff: no work lease", task: boardTask(TaskAccepted), release: LeaseRelease{Actor: admin}, handoff: true,
			err: &wantErr{Conflict, CodeMissingLease, "task_1 has no active work lease"}},
		{name: "handoff: another agent", task: merged, release: LeaseRelease{Actor: other}, handoff: true,
			err: &wantErr{Forbidden, CodeLeaseHolderRequired,
				"Only the holder of the work lease of task_1 (" + holder.Label + ") or a room admin can release or hand it off"}},
		{name: "handoff: not in hand", task: merged, release: LeaseRelease{Actor: holder}, handoff: true,
			err: &wantErr{Conflict, CodeInvalidTaskStatus,
				"task_1 is merged: only a task that is assigned, in_progress, blocked or in_review can be handed off"}},
		{name: "handoff: the holder", task: held, release: LeaseRelease{Actor: holder, Reason: "over to you"}, handoff: true,
			want: LeaseEnd{Lease: workLease, How: LeaseReleased}},
		{name: "handoff: an admin", task: held, release: LeaseRelease{Actor: admin}, handoff: true,
			want: LeaseEnd{Lease: workLease, How: LeaseRevoked, Reason: "handed off by a room admin"}},
		{name: "handoff: an admin, with a reason", task: held, release: LeaseRelease{Actor: admin, Reason: "rebalancing"}, handoff: true,
			want: LeaseEnd{Lease: workLease, How: LeaseRevoked, Reason: "rebalancing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			end := ReleaseWork
			if tt.handoff {
				end = HandOffWork
			}
			got, err := end(tt.task, tt.release)
			if checkErr(t, err, tt.err) && tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("end %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestHandoffTarget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	connected := AgentSession{ID: 7, AgentKey: "bob/bob", ActorLabel: other.Label, OpenConnections: 1}
	justLeft := AgentSession{ID: 8, AgentKey: "bob/bob", ActorLabel: other.Label, LastDisconnectedAt: now.Add(-ReconnectGrace / 2)}
	gone := AgentSession{ID: 9, AgentKey: "bob/bob", ActorLabel: other.Label, LastDisconnectedAt: now.Add(-ReconnectGrace)}
	tests := []struct {
		name       string
		sessionID  int64
		candidates []AgentSession
		want       AgentSession
		err        *wantErr
	}{
		{name: "the named session is not live", sessionID: 7,
			err: &wantErr{Conflict, CodeTargetSessionRequired, "as_7 is not a live worker session of bob/bob in this room"}},
		{name: "no live session",
			err: &wantErr{Conflict, CodeTargetSessionRequired, "bob/bob has no live worker session in this room to hand the task to"}},
		{name: "two live sessions", candidates: []AgentSession{connected, justLeft},
			err: &wantErr{Conflict, CodeTargetSessionRequired, "bob/bob has 2 live worker sessions in this room: name one with target_agent_session_id"}},
		{name: "unreachable", candidates: []AgentSession{gone}, err: &wantErr{Conflict, CodeTargetUnreachable,
			other.Label + " (as_9) is not reachable now: its messages have no open delivery connection, so it would not learn of the handoff"}},
		{name: "connected", candidates: []AgentSession{connected}, want: connected},
		{name: "the named one, connected", sessionID: 7, candidates: []AgentSession{connected}, want: connected},
		{name: "within the reconnect grace", candidates: []AgentSession{justLeft}, want: justLeft},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := HandoffTarget("bob/bob", tt.sessionID, tt.candidates, now)
			if checkErr(t, err, tt.err) && tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("target %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReleaseReview(t *testing.T) {
	t.Parallel()
	reviewed := boardTask(TaskInReview, workLease, reviewLease)
	unreviewed := boardTask(TaskInReview, workLease)
	tests := []struct {
		name    string
		task    Task
		release LeaseRelease
		want    LeaseEnd
		err     *wantErr
	}{
		{name: "stale lease id", task: reviewed, release: LeaseRelease{Actor: reviewer, LeaseID: "tl_old"},
			err: &wantErr{Conflict, CodeStaleLease, "lease tl_old is not an active review lease of task_1"}},
		{name: "the work lease's id", task: reviewed, release: LeaseRelease{Actor: admin, LeaseID: "tl_work"},
			err: &wantErr{Conflict, CodeStaleLease, "lease tl_work is not an active review lease of task_1"}},
		{name: "an admin names none", task: reviewed, release: LeaseRelease{Actor: admin},
			err: &wantErr{Invalid, "", "lease_id is required to revoke another agent's review lease"}},
		{name: "an admin's agent names none", task: reviewed, release: LeaseRelease{Actor: adminAgent},
			err: &wantErr{Invalid, "", "lease_id is required to revoke another agent's review lease"}},
		{name: "an agent reviewing nothing", task: reviewed, release: LeaseRelease{Actor: other},
			err: &wantErr{Conflict, CodeMissingLease, other.Label + " holds no active review lease on task_1"}},
		{name: "an agent, no reviews, naming one", task: unreviewed, release: LeaseRelease{Actor: reviewer, LeaseID: "tl_review"},
			err: &wantErr{Conflict, CodeMissingLease, reviewer.Label + " holds no active review lease on task_1"}},
		{name: "an admin, no reviews", task: unreviewed, release: LeaseRelease{Actor: admin, LeaseID: "tl_review"},
			err: &wantErr{Conflict, CodeMissingLease, "task_1 has no active review lease to release"}},
		{name: "a person, reviews", task: reviewed, release: LeaseRelease{Actor: person},
			err: &wantErr{Conflict, CodeMissingLease, "task_1 has no active review lease to release"}},
		{name: "another agent names it", task: reviewed, release: LeaseRelease{Actor: other, LeaseID: "tl_review"},
			err: &wantErr{Forbidden, CodeLeaseHolderRequired, "Only the holder of review lease tl_review (" + reviewer.Label + ") or a room admin can release it"}},
		{name: "the reviewer", task: reviewed, release: LeaseRelease{Actor: reviewer, Reason: "looks fine"},
			want: LeaseEnd{Lease: reviewLease, How: LeaseReleased}},
		{name: "the reviewer names it", task: reviewed, release: LeaseRelease{Actor: reviewer, LeaseID: "tl_review"},
			want: LeaseEnd{Lease: reviewLease, How: LeaseReleased}},
		{name: "an admin names it", task: reviewed, release: LeaseRelease{Actor: admin, LeaseID: "tl_review"},
			want: LeaseEnd{Lease: reviewLease, How: LeaseRevoked, Reason: "revoked by a room admin"}},
		{name: "an admin names it, with a reason", task: reviewed, release: LeaseRelease{Actor: admin, LeaseID: "tl_review", Reason: "idle"},
			want: LeaseEnd{Lease: reviewLease, How: LeaseRevoked, Reason: "idle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReleaseReview(tt.task, tt.release)
			if checkErr(t, err, tt.err) && tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("end %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDefaultRequireWorkerSessions(t *testing.T) {
	t.Parallel()
	for kind, want := range map[RoomKind]bool{RoomInvite: false, RoomNamed: false, RoomRepo: true, RoomBranch: true} {
		if got := DefaultRequireWorkerSessions(kind); got != want {
			t.Errorf("DefaultRequireWorkerSessions(%s) = %v, want %v", kind, got, want)
		}
	}
}

func TestSessionlessBoard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		require bool
		mode    string
		want    bool
	}{
		{false, ManagerOff, true},
		{false, ManagerOptional, true},
		{false, IntentRequired, false}, // intents are registered by sessions
		{true, ManagerOff, false},
		{true, ManagerOptional, false},
		{true, IntentRequired, false},
	}
	for _, tt := range tests {
		if got := SessionlessBoard(tt.require, tt.mode); got != tt.want {
			t.Errorf("SessionlessBoard(%v, %s) = %v, want %v", tt.require, tt.mode, got, tt.want)
		}
	}
}

// The callers of the board's gate.
var (
	nobody      = BoardCaller{}
	ownerToken  = BoardCaller{SignedIn: true}
	browser     = BoardCaller{SignedIn: true, Browser: true}
	roomAdmin   = BoardCaller{SignedIn: true, Admin: true}
	worker      = BoardCaller{Worker: true, SignedIn: true}
	adminWorker = BoardCaller{Worker: true, SignedIn: true, Admin: true}
)

func sessionless(c BoardCaller) BoardCaller { c.Sessionless = true; return c }

func TestCheckTaskChange(t *testing.T) {
	t.Parallel()
	authRequired := &wantErr{Unauthorized, "NOT_AUTHENTICATED", "Authentication required"}
	adminRequired := &wantErr{Forbidden, "", "Admin privileges required"}
	workerRequired := &wantErr{Forbidden, "WORKER_SESSION_REQUIRED", "Registered worker session is required for agent write actions."}
	tests := []struct {
		name   string
		caller BoardCaller
		status TaskStatus
		err    *wantErr
	}{
		// Boards that ask for worker sessions.
		{"nobody claims", nobody, TaskAssigned, workerRequired},
		{"nobody moves", nobody, TaskInProgress, authRequired},
		{"nobody sets a PR", nobody, "", authRequired},
		{"an owner token claims", ownerToken, TaskAssigned, workerRequired},
		{"an owner token moves", ownerToken, TaskInReview, workerRequired},
		{"a browser moves", browser, TaskBlocked, workerRequired},
		{"an admin claims", roomAdmin, TaskAssigned, workerRequired},
		{"an admin moves", roomAdmin, TaskInProgress, nil},
		{"an admin accepts", roomAdmin, TaskAccepted, nil},
		{"a worker claims", worker, TaskAssigned, nil},
		{"a worker moves", worker, TaskInReview, nil},
		{"a worker closes", worker, TaskDone, adminRequired},
		{"an admin's worker closes", adminWorker, TaskDone, nil},
		{"nobody accepts", nobody, TaskAccepted, authRequired},
		{"an owner token cancels", ownerToken, TaskCancelled, adminRequired},

		// Boards that serve callers without a session.
		{"sessionless: nobody claims", sessionless(nobody), TaskAssigned, nil},
		{"sessionless: nobody moves", sessionless(nobody), TaskInReview, nil},
		{"sessionless: nobody sets a PR", sessionless(nobody), "", nil},
		{"sessionless: an owner token claims", sessionless(ownerToken), TaskAssigned, nil},
		{"sessionless: an owner token moves", sessionless(ownerToken), TaskInProgress, nil},
		{"sessionless: nobody merges", sessionless(nobody), TaskMerged, authRequired},
		{"sessionless: an owner token finishes", sessionless(ownerToken), TaskDone, adminRequired},
		{"sessionless: an admin accepts", sessionless(roomAdmin), TaskAccepted, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkErr(t, CheckTaskChange(tt.caller, tt.status), tt.err)
		})
	}
}

func TestWriterName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		caller    BoardCaller
		given     string
		want      string
		wantGiven bool
	}{
		{"nobody gives a name", nobody, " Builder ", "Builder", true},
		{"nobody gives none", nobody, "  ", "", false},
		{"an account, sessions required", ownerToken, "Builder", "Builder", true},
		{"an account gives none, sessions required", ownerToken, " ", "ann", false},
		{"an account, sessionless", sessionless(ownerToken), "Builder | ann's agent | Codex", "Builder | ann's agent | Codex", true},
		{"an account gives none, sessionless", sessionless(ownerToken), "", "ann", false},
		{"nobody, sessionless", sessionless(nobody), "pat", "pat", true},
	}
	for _, tt := range tests {
		if got, given := WriterName(tt.caller, tt.given, "ann"); got != tt.want || given != tt.wantGiven {
			t.Errorf("%s: WriterName = %q, %v; want %q, %v", tt.name, got, given, tt.want, tt.wantGiven)
		}
	}
}

func TestActorName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		err      *wantErr
	}{
		{"  Builder  |  ann's agent | Codex ", "Builder | ann's agent | Codex", nil},
		{"", "", &wantErr{Invalid, "", "assignee is required"}},
		{strings.Repeat("x", MaxSenderBytes+1), "", &wantErr{Invalid, "", fmt.Sprintf("assignee is longer than %d bytes", MaxSenderBytes)}},
		{"a\x00b", "", &wantErr{Invalid, "", "assignee must not contain control characters"}},
		{"LetAgents", "", &wantErr{Invalid, "", `assignee "LetAgents" is reserved for the server's own lines; choose another name`}},
		{"letagents | x's agent | y", "", &wantErr{Invalid, "", `assignee "letagents | x's agent | y" is reserved for the server's own lines; choose another name`}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ActorName("assignee", tt.in)
			if checkErr(t, err, tt.err) && tt.err == nil && got != tt.want {
				t.Errorf("ActorName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAcceptsNewTask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		caller BoardCaller
		by     string
		posted bool
		want   bool
	}{
		{"an admin", roomAdmin, "ann", false, true},
		{"a browser", browser, "ann", false, true},
		{"an owner token", ownerToken, "ann", true, false},
		{"nobody, heard", nobody, "pat", true, false},
		{"sessionless: nobody, heard", sessionless(nobody), "pat", true, true},
		{"sessionless: nobody, never heard", sessionless(nobody), "pat", false, false},
		{"sessionless: an owner token, heard", sessionless(ownerToken), "Builder | ann's agent | Codex", true, true},
		{"sessionless: human, heard", sessionless(nobody), " Human ", true, false},
		{"sessionless: an admin, never heard", sessionless(roomAdmin), "ann", false, true},
	}
	for _, tt := range tests {
		if got := AcceptsNewTask(tt.caller, tt.by, tt.posted); got != tt.want {
			t.Errorf("%s: AcceptsNewTask = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestBranchRef pins the original's default branch of a claim.
func TestBranchRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		seq      int64
		agentKey string
		want     string
	}{
		{1, "compat-a/bot", "letagents/task_1/compat-a-bot"},
		{12, " Ann/Worker.One_2 ", "letagents/task_12/ann-worker.one_2"},
		{3, "ann/bötchen", "letagents/task_3/ann-b-tchen"},
		{4, "--/--", "letagents/task_4/agent"},
		{5, "", "letagents/task_5/agent"},
		{6, strings.Repeat("a", 70), "letagents/task_6/" + strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		if got := BranchRef(tt.seq, tt.agentKey); got != tt.want {
			t.Errorf("BranchRef(%d, %q) = %q, want %q", tt.seq, tt.agentKey, got, tt.want)
		}
	}
}
