package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

// taskBoard is a room with a store and a clock, for task tests.
type taskBoard struct {
	s    *store.Store
	room string
	now  time.Time
}

func newTaskBoard(t *testing.T) *taskBoard {
	t.Helper()
	return newTaskBoardOn(t, newStore(t))
}

// newTaskBoardOn is newTaskBoard on a given store.
func newTaskBoardOn(t *testing.T, s *store.Store) *taskBoard {
	t.Helper()
	room, _, err := s.EnsureRoom(context.Background(), "board")
	if err != nil {
		t.Fatal(err)
	}
	return &taskBoard{s: s, room: room.ID, now: time.Now().Truncate(time.Millisecond)}
}

var (
	workerA   = store.Actor{Label: "Builder | Ann's agent | Codex", AgentKey: "ann/workerA", InstanceID: "i-1"}
	workerB   = store.Actor{Label: "Reviewer | Bob's agent | Claude", AgentKey: "bob/workerB"}
	roomAdmin = store.Actor{Label: "Ann", Admin: true}
)

// coordCode is the machine-readable code of a board error.
func coordCode(err error) string {
	var e *letagents.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func (b *taskBoard) create(t *testing.T, title string, accepted bool) letagents.Task {
	t.Helper()
	task, err := b.s.CreateTask(context.Background(), store.NewTask{RoomID: b.room, Title: title, CreatedBy: "Ann", Accepted: accepted}, b.now)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func (b *taskBoard) move(t *testing.T, seq int64, to letagents.TaskStatus, who store.Actor) letagents.Task {
	t.Helper()
	task, err := b.s.UpdateTask(context.Background(), b.room, seq, store.TaskChange{Status: to, Actor: who}, b.now)
	if err != nil {
		t.Fatalf("move task_%d to %s: %v", seq, to, err)
	}
	return task
}

func (b *taskBoard) claim(t *testing.T, seq int64, who store.Actor, ttl time.Duration) letagents.Lease {
	t.Helper()
	_, lease, err := b.s.ClaimTask(context.Background(), b.room, seq, store.Claim{Actor: who, TTL: ttl}, b.now)
	if err != nil {
		t.Fatalf("claim task_%d: %v", seq, err)
	}
	return lease
}

// statusLines returns the texts of the server's own lines in the room.
func (b *taskBoard) statusLines(t *testing.T) []string {
	t.Helper()
	page, err := b.s.Messages(context.Background(), b.room, store.MessageQuery{Limit: letagents.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Messages {
		if m.Source == letagents.SourceSystem {
			out = append(out, m.Text)
		}
	}
	return out
}

// reach puts a fresh task into status from, by the path a board would take.
func (b *taskBoard) reach(t *testing.T, from letagents.TaskStatus) letagents.Task {
	t.Helper()
	task := b.create(t, "reach "+string(from), from != letagents.TaskProposed)
	seq := task.Seq
	path := map[letagents.TaskStatus][]letagents.TaskStatus{
		letagents.TaskProposed:   nil,
		letagents.TaskAccepted:   nil,
		letagents.TaskAssigned:   {letagents.TaskAssigned},
		letagents.TaskInProgress: {letagents.TaskAssigned, letagents.TaskInProgress},
		letagents.TaskBlocked:    {letagents.TaskAssigned, letagents.TaskInProgress, letagents.TaskBlocked},
		letagents.TaskInReview:   {letagents.TaskAssigned, letagents.TaskInReview},
		letagents.TaskMerged:     {letagents.TaskAssigned, letagents.TaskInReview, letagents.TaskMerged},
		letagents.TaskDone:       {letagents.TaskAssigned, letagents.TaskInProgress, letagents.TaskDone},
		letagents.TaskCancelled:  {letagents.TaskCancelled},
	}[from]
	for _, st := range path {
		switch st {
		case letagents.TaskAssigned:
			b.claim(t, seq, workerA, 0)
		case letagents.TaskMerged:
			if _, _, err := b.s.ClaimReview(context.Background(), b.room, seq, store.Claim{Actor: workerB}, b.now); err != nil {
				t.Fatal(err)
			}
			task = b.move(t, seq, st, roomAdmin)
		default:
			task = b.move(t, seq, st, workerAdmin)
		}
	}
	if from == letagents.TaskInReview || from == letagents.TaskBlocked {
		// A workerB is at work, so that merged is possible from here.
		if _, _, err := b.s.ClaimReview(context.Background(), b.room, seq, store.Claim{Actor: workerB}, b.now); err != nil {
			t.Fatal(err)
		}
	}
	task, err := b.s.Task(context.Background(), b.room, seq, b.now)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != from {
		t.Fatalf("reached %s, want %s", task.Status, from)
	}
	return task
}

// workerAdmin is the work holder whose owner also administers the room:
// the store lets it make every move the table allows.
var workerAdmin = func() store.Actor { a := workerA; a.Admin = true; return a }()

// TestTransitionMatrix drives every (from, to) pair of statuses through
// the store: the table's moves succeed, every other is refused.
func TestTransitionMatrix(t *testing.T) {
	t.Parallel()
	b := newTaskBoard(t)
	ctx := context.Background()
	for _, from := range letagents.TaskStatuses {
		for _, to := range letagents.TaskStatuses {
			if from == to {
				continue // staying put is no transition: a field-only change
			}
			name := fmt.Sprintf("%s→%s", from, to)
			task := b.reach(t, from)
			var err error
			var got letagents.Task
			if to == letagents.TaskAssigned {
				got, _, err = b.s.ClaimTask(ctx, b.room, task.Seq, store.Claim{Actor: workerAdmin}, b.now)
			} else {
				got, err = b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{Status: to, Actor: workerAdmin}, b.now)
			}
			want := letagents.CanTransition(from, to)
			switch {
			case want && err != nil:
				t.Errorf("%s: %v, want allowed", name, err)
			case want && got.Status != to:
				t.Errorf("%s: status %s after the move", name, got.Status)
			case !want && to == letagents.TaskAssigned && from.Held():
				if coordCode(err) != letagents.CodeWrongActor {
					t.Errorf("%s: %v, want Conflict %s", name, err, letagents.CodeWrongActor)
				}
			case !want && !letagents.IsKind(err, letagents.Invalid):
				t.Errorf("%s: %v, want Invalid", name, err)
			case !want && !strings.Contains(err.Error(), "Invalid transition: "+string(from)+" → "+string(to)):
				t.Errorf("%s: error %q does not name the transition", name, err)
			}
			if !want {
				if after, _ := b.s.Task(ctx, b.room, task.Seq, b.now); after.Status != from {
					t.Errorf("%s refused, yet the task is now %s", name, after.Status)
				}
			}
		}
	}
}

func TestCreateAndList(t *testing.T) {
	t.Parallel()
	b := newTaskBoard(t)
	ctx := context.Background()
	proposed := b.create(t, "  Fix login  ", false)
	if proposed.Seq != 1 || proposed.Status != letagents.TaskProposed || proposed.Title != "Fix login" || proposed.CreatedBy != "Ann" {
		t.Errorf("created = %+v", proposed)
	}
	if lines := b.statusLines(t); len(lines) != 0 {
		t.Errorf("a proposed task was announced: %q", lines)
	}
	accepted := b.create(t, "Write docs", true)
	if accepted.Seq != 2 || accepted.Status != letagents.TaskAccepted {
		t.Errorf("created accepted = %+v", accepted)
	}
	if lines := b.statusLines(t); len(lines) != 1 || !strings.Contains(lines[0], "task_2") {
		t.Errorf("status lines = %q, want one about task_2", lines)
	}
	for i := 3; i <= 7; i++ {
		b.create(t, fmt.Sprintf("task %d", i), true)
	}
	b.move(t, 3, letagents.TaskCancelled, roomAdmin)

	tests := []struct {
		q       store.TaskQuery
		want    []int64
		hasMore bool
	}{
		{store.TaskQuery{Limit: 200}, []int64{1, 2, 3, 4, 5, 6, 7}, false},
		{store.TaskQuery{Limit: 3}, []int64{1, 2, 3}, true},
		{store.TaskQuery{After: 3, Limit: 3}, []int64{4, 5, 6}, true},
		{store.TaskQuery{After: 4, Limit: 3}, []int64{5, 6, 7}, false},
		{store.TaskQuery{Open: true, Limit: 200}, []int64{1, 2, 4, 5, 6, 7}, false},
		{store.TaskQuery{Status: letagents.TaskProposed, Limit: 200}, []int64{1}, false},
		{store.TaskQuery{Status: letagents.TaskAccepted, After: 4, Limit: 2}, []int64{5, 6}, true},
		{store.TaskQuery{After: 99, Limit: 10}, nil, false},
	}
	for _, tt := range tests {
		page, err := b.s.Tasks(ctx, b.room, tt.q, b.now)
		if err != nil {
			t.Fatalf("%+v: %v", tt.q, err)
		}
		var got []int64
		for _, task := range page.Tasks {
			got = append(got, task.Seq)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || page.HasMore != tt.hasMore {
			t.Errorf("%+v: tasks %v has_more %v, want %v %v", tt.q, got, page.HasMore, tt.want, tt.hasMore)
		}
	}
	if _, err := b.s.Tasks(ctx, "no such room", store.TaskQuery{Limit: 10}, b.now); !letagents.IsKind(err, letagents.NotFound) {
		t.Errorf("list of a missing room: %v", err)
	}
	if _, err := b.s.Task(ctx, b.room, 99, b.now); !letagents.IsKind(err, letagents.NotFound) || err.Error() != "Task not found" {
		t.Errorf("missing task: %v", err)
	}
	if _, err := b.s.CreateTask(ctx, store.NewTask{RoomID: "no such room", Title: "x", CreatedBy: "Ann"}, b.now); !letagents.IsKind(err, letagents.NotFound) {
		t.Errorf("create in a missing room: %v", err)
	}
	if _, err := b.s.CreateTask(ctx, store.NewTask{RoomID: b.room, Title: strings.Repeat("x", letagents.MaxTaskTitleBytes+1), CreatedBy: "Ann"}, b.now); !letagents.IsKind(err, letagents.Invalid) {
		t.Errorf("over-long title: %v", err)
	}
}

// TestConcurrentClaims holds the task's row until every claim the pool
// can run at once waits for it, so the claims surely contend.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	b := newTaskBoardOn(t, store.New(d.Pool))
	task := b.create(t, "contested", true)
	release := d.HoldLock(t, `SELECT 1 FROM tasks WHERE room_id = $1 AND seq = $2 FOR UPDATE`, b.room, task.Seq)
	const agents = 20
	errs := make([]error, agents)
	d.Race(t, agents, release, func(i int) {
		who := store.Actor{Label: fmt.Sprintf("Agent%d | Ann's agent | Codex", i), AgentKey: fmt.Sprintf("ann/agent%d", i)}
		_, _, errs[i] = b.s.ClaimTask(context.Background(), b.room, task.Seq, store.Claim{Actor: who}, b.now)
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case coordCode(err) != letagents.CodeWrongActor || !letagents.IsKind(err, letagents.Conflict):
			t.Errorf("claim %d: %v, want Conflict %s", i, err, letagents.CodeWrongActor)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want exactly 1", won)
	}
	got, err := b.s.Task(context.Background(), b.room, task.Seq, b.now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ActiveLeases) != 1 || got.Status != letagents.TaskAssigned || got.ActiveLeases[0].AgentKey != got.AssigneeAgentKey {
		t.Errorf("after the race: %+v", got)
	}
}

// A claim by name (a board without worker sessions) assigns the task to
// the name with no lease and no agent key; it then stops claims as any
// claim does, and a person may move the task on.
func TestClaimByName(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	b := newTaskBoardOn(t, store.New(d.Pool))
	ctx := context.Background()
	task := b.create(t, "by hand", true)
	pat := store.Actor{Label: "pat"}
	pr := "https://github.com/o/r/pull/3"
	got, lease, err := b.s.ClaimTask(ctx, b.room, task.Seq, store.Claim{Actor: pat, ByName: true, PRURL: &pr}, b.now)
	if err != nil || lease.ID != "" || got.Status != letagents.TaskAssigned || got.Assignee != "pat" || got.AssigneeAgentKey != "" ||
		got.PRURL != pr || len(got.ActiveLeases) != 0 {
		t.Fatalf("claim by name = %+v, lease %+v, %v", got, lease, err)
	}
	var key *string
	if err := d.Pool.QueryRow(ctx, `SELECT assignee_agent_key FROM tasks WHERE room_id = $1 AND seq = $2`, b.room, task.Seq).Scan(&key); err != nil || key != nil {
		t.Errorf("stored assignee_agent_key = %v, %v; want NULL", key, err)
	}
	for _, who := range []store.Claim{{Actor: workerA}, {Actor: store.Actor{Label: "sam"}, ByName: true}} {
		if _, _, err := b.s.ClaimTask(ctx, b.room, task.Seq, who, b.now); coordCode(err) != letagents.CodeWrongActor {
			t.Errorf("second claim by %+v: %v, want %s", who, err, letagents.CodeWrongActor)
		}
	}
	if got := b.move(t, task.Seq, letagents.TaskInReview, pat); got.Status != letagents.TaskInReview || got.Assignee != "pat" {
		t.Errorf("moved on = %+v", got)
	}
	if lines := b.statusLines(t); len(lines) != 3 || !strings.Contains(lines[1], "pat claimed "+task.ID()) {
		t.Errorf("status lines = %q", lines)
	}
	var leases int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM task_leases`).Scan(&leases); err != nil || leases != 0 {
		t.Errorf("%d leases, %v; want none", leases, err)
	}
}

func TestHasSent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, _ := s.EnsureRoom(ctx, "heard")
	other, _, _ := s.EnsureRoom(ctx, "elsewhere")
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "Builder | Ann's agent | Codex", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		room, sender string
		want         bool
	}{
		{room.ID, "Builder | Ann's agent | Codex", true},
		{room.ID, "builder | ann's agent | codex", true},
		{room.ID, "Builder", false},
		{other.ID, "Builder | Ann's agent | Codex", false},
	}
	for _, tt := range tests {
		if got, err := s.HasSent(ctx, tt.room, tt.sender); err != nil || got != tt.want {
			t.Errorf("HasSent(%s, %q) = %v, %v; want %v", tt.room, tt.sender, got, err, tt.want)
		}
	}
}

func TestOwnershipAndReview(t *testing.T) {
	t.Parallel()
	b := newTaskBoard(t)
	ctx := context.Background()
	task := b.create(t, "guarded", true)
	lease := b.claim(t, task.Seq, workerA, 0)
	if !strings.HasPrefix(lease.ID, "tl_") || len(lease.ID) != 35 || lease.Kind != "work" || lease.BranchRef != "letagents/task_1/ann-workera" ||
		lease.OutputIntent != "guarded" || !lease.ExpiresAt.IsZero() {
		t.Errorf("lease = %+v", lease)
	}
	pr := "https://github.com/o/r/pull/9"
	_, err := b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{PRURL: &pr, Actor: workerB}, b.now)
	if coordCode(err) != letagents.CodeWrongActor {
		t.Errorf("another agent's change: %v, want %s", err, letagents.CodeWrongActor)
	}
	other := workerA
	other.InstanceID = "i-2"
	if _, err := b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{Status: letagents.TaskInProgress, Actor: other}, b.now); coordCode(err) != letagents.CodeWrongActor {
		t.Errorf("the same agent from another instance: %v, want %s", err, letagents.CodeWrongActor)
	}
	got, err := b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{Status: letagents.TaskInReview, PRURL: &pr, Actor: workerA}, b.now)
	if err != nil || got.PRURL != pr || got.ActiveLeases[0].PRURL != pr {
		t.Fatalf("holder's change: %+v, %v", got, err)
	}
	someone := "Someone else"
	if _, err := b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{Assignee: &someone, Actor: roomAdmin}, b.now); !letagents.IsKind(err, letagents.Invalid) {
		t.Errorf("editing the assignee: %v, want Invalid", err)
	}

	if _, err := b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{Status: letagents.TaskMerged, Actor: roomAdmin}, b.now); coordCode(err) != letagents.CodeReviewRequired {
		t.Errorf("merged without review: %v, want %s", err, letagents.CodeReviewRequired)
	}
	if _, _, err := b.s.ClaimReview(ctx, b.room, task.Seq, store.Claim{Actor: other}, b.now); coordCode(err) != letagents.CodeSelfReview {
		t.Errorf("self review: %v, want %s", err, letagents.CodeSelfReview)
	}
	_, review, err := b.s.ClaimReview(ctx, b.room, task.Seq, store.Claim{Actor: workerB}, b.now)
	if err != nil || review.Kind != "review" {
		t.Fatalf("review claim: %+v, %v", review, err)
	}
	if _, _, err := b.s.ClaimReview(ctx, b.room, task.Seq, store.Claim{Actor: workerB}, b.now); coordCode(err) != letagents.CodeReviewClaimed {
		t.Errorf("second review claim: %v, want %s", err, letagents.CodeReviewClaimed)
	}
	// The workerB may decide (status only), not edit.
	if _, err := b.s.UpdateTask(ctx, b.room, task.Seq, store.TaskChange{Status: letagents.TaskBlocked, PRURL: &pr, Actor: workerB}, b.now); coordCode(err) != letagents.CodeReviewDecisionOnly {
		t.Errorf("workerB editing: %v, want %s", err, letagents.CodeReviewDecisionOnly)
	}
	if got := b.move(t, task.Seq, letagents.TaskBlocked, workerB); got.Status != letagents.TaskBlocked {
		t.Errorf("workerB requested changes: %s", got.Status)
	}
	b.move(t, task.Seq, letagents.TaskInReview, workerA)
	merged := b.move(t, task.Seq, letagents.TaskMerged, roomAdmin)
	if merged.Status != letagents.TaskMerged || len(merged.ActiveLeases) != 2 {
		t.Errorf("merged = %+v", merged)
	}
	done := b.move(t, task.Seq, letagents.TaskDone, roomAdmin)
	if len(done.ActiveLeases) != 0 {
		t.Errorf("done with active leases: %+v", done.ActiveLeases)
	}
	lines := b.statusLines(t)
	want := []string{"claimed task_1", "task_1 is ready for review", "task_1 is blocked", "task_1 is ready for review", "task_1 has been merged", "task_1 is complete"}
	if len(lines) != len(want)+1 { // +1: the accepted task's announcement
		t.Fatalf("status lines = %q", lines)
	}
	for i, w := range want {
		if !strings.Contains(lines[i+1], w) {
			t.Errorf("status line %d = %q, want it to mention %q", i+1, lines[i+1], w)
		}
	}
}

func TestReleaseAndExpiry(t *testing.T) {
	t.Parallel()
	b := newTaskBoard(t)
	ctx := context.Background()
	task := b.create(t, "short lived", true)

	if _, _, err := b.s.ReleaseWorkLease(ctx, b.room, task.Seq, store.LeaseRelease{Actor: workerA}, b.now); coordCode(err) != letagents.CodeMissingLease {
		t.Errorf("release without a lease: %v", err)
	}
	lease := b.claim(t, task.Seq, workerA, 30*time.Second)
	if !lease.ExpiresAt.Equal(b.now.Add(30 * time.Second)) {
		t.Errorf("expires_at = %v, want now+30s", lease.ExpiresAt)
	}
	if _, _, err := b.s.ReleaseWorkLease(ctx, b.room, task.Seq, store.LeaseRelease{Actor: workerA, LeaseID: "tl_" + strings.Repeat("0", 32)}, b.now); coordCode(err) != letagents.CodeStaleLease {
		t.Errorf("stale lease id: %v", err)
	}
	if _, _, err := b.s.ReleaseWorkLease(ctx, b.room, task.Seq, store.LeaseRelease{Actor: workerB}, b.now); !letagents.IsKind(err, letagents.Forbidden) {
		t.Errorf("release by another agent: %v, want Forbidden", err)
	}
	// A heartbeat by the holder pushes the expiry on.
	b.now = b.now.Add(20 * time.Second)
	b.move(t, task.Seq, letagents.TaskInProgress, workerA)
	b.now = b.now.Add(20 * time.Second)
	if got, _ := b.s.Task(ctx, b.room, task.Seq, b.now); got.Status != letagents.TaskInProgress || len(got.ActiveLeases) != 1 {
		t.Fatalf("40 s after the claim, 20 s after a heartbeat: %+v", got)
	}
	b.now = b.now.Add(11 * time.Second)
	got, err := b.s.Task(ctx, b.room, task.Seq, b.now)
	if err != nil || got.Status != letagents.TaskAccepted || got.Assignee != "" || len(got.ActiveLeases) != 0 {
		t.Fatalf("after expiry: %+v, %v", got, err)
	}
	lines := b.statusLines(t)
	if last := lines[len(lines)-1]; !strings.Contains(last, "expired") || !strings.Contains(last, "task_1") {
		t.Errorf("last status line = %q, want the expiry", last)
	}
	// Free again: another agent claims it, then the admin revokes.
	b.claim(t, task.Seq, workerB, 0)
	after, released, err := b.s.ReleaseWorkLease(ctx, b.room, task.Seq, store.LeaseRelease{Actor: roomAdmin, Reason: "reshuffle"}, b.now)
	if err != nil || released.Status != letagents.LeaseRevoked || released.RevokedReason != "reshuffle" || after.Status != letagents.TaskAccepted {
		t.Errorf("roomAdmin revoke: %+v %+v %v", after, released, err)
	}
	b.claim(t, task.Seq, workerA, 0)
	_, released, err = b.s.ReleaseWorkLease(ctx, b.room, task.Seq, store.LeaseRelease{Actor: workerA}, b.now)
	if err != nil || released.Status != letagents.LeaseReleased || released.RevokedReason != "" {
		t.Errorf("holder release: %+v %v", released, err)
	}
}
