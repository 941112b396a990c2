package letagents

import (
	"strings"
	"testing"
	"time"
)

// allowed is the transition table as the behaviour reference writes it;
// the test holds the code to it pair by pair.
var allowed = map[TaskStatus][]TaskStatus{
	TaskProposed:   {TaskAccepted, TaskCancelled},
	TaskAccepted:   {TaskAssigned, TaskCancelled},
	TaskAssigned:   {TaskInProgress, TaskInReview, TaskCancelled},
	TaskInProgress: {TaskBlocked, TaskInReview, TaskDone, TaskCancelled},
	TaskBlocked:    {TaskInProgress, TaskInReview, TaskCancelled},
	TaskInReview:   {TaskMerged, TaskInProgress, TaskBlocked, TaskDone, TaskCancelled},
	TaskMerged:     {TaskDone, TaskAccepted},
	TaskDone:       {TaskAccepted},
	TaskCancelled:  {TaskAccepted},
}

func TestTransitionTable(t *testing.T) {
	t.Parallel()
	if len(TaskStatuses) != 9 {
		t.Fatalf("%d statuses, want 9", len(TaskStatuses))
	}
	pairs := 0
	for _, from := range TaskStatuses {
		for _, to := range TaskStatuses {
			want := false
			for _, a := range allowed[from] {
				want = want || a == to
			}
			pairs++
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
			err := CheckTransition(from, to)
			switch {
			case want && err != nil:
				t.Errorf("CheckTransition(%s, %s) = %v, want nil", from, to, err)
			case !want && (!IsKind(err, Invalid) || !strings.HasPrefix(err.Error(), "Invalid transition: "+string(from)+" → "+string(to)+". Allowed: ")):
				t.Errorf("CheckTransition(%s, %s) = %v, want Invalid \"Invalid transition: …\"", from, to, err)
			}
		}
	}
	if pairs != 81 {
		t.Errorf("checked %d pairs, want 81", pairs)
	}
	if got := CanTransition("nonsense", TaskAccepted); got {
		t.Error("an unknown status may move")
	}
}

func TestStatusClasses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s                              TaskStatus
		open, adminOnly, held, closing bool
	}{
		{TaskProposed, true, false, false, false},
		{TaskAccepted, true, true, false, false},
		{TaskAssigned, true, false, true, false},
		{TaskInProgress, true, false, true, false},
		{TaskBlocked, true, false, true, false},
		{TaskInReview, true, false, true, false},
		{TaskMerged, true, true, false, true},
		{TaskDone, false, true, false, true},
		{TaskCancelled, false, true, false, true},
	}
	for _, tt := range tests {
		if tt.s.Open() != tt.open || tt.s.AdminOnly() != tt.adminOnly || tt.s.Held() != tt.held || tt.s.Closing() != tt.closing {
			t.Errorf("%s: open %v adminOnly %v held %v closing %v, want %v %v %v %v", tt.s, tt.s.Open(), tt.s.AdminOnly(),
				tt.s.Held(), tt.s.Closing(), tt.open, tt.adminOnly, tt.held, tt.closing)
		}
		if got, err := ParseTaskStatus(string(tt.s)); err != nil || got != tt.s {
			t.Errorf("ParseTaskStatus(%s) = %q, %v", tt.s, got, err)
		}
	}
	for _, bad := range []string{"", "Done", "open", "in-progress"} {
		if _, err := ParseTaskStatus(bad); !IsKind(err, Invalid) {
			t.Errorf("ParseTaskStatus(%q) = %v, want Invalid", bad, err)
		}
	}
}

func TestTaskIDs(t *testing.T) {
	t.Parallel()
	if TaskID(3) != "task_3" {
		t.Errorf("TaskID(3) = %q", TaskID(3))
	}
	for in, want := range map[string]int64{"task_1": 1, "task_42": 42} {
		if got, ok := ParseTaskID(in); !ok || got != want {
			t.Errorf("ParseTaskID(%q) = %d, %v", in, got, ok)
		}
	}
	for _, bad := range []string{"task_0", "task_", "42", "msg_1", "task_-1", "task_01", "task_1x", ""} {
		if _, ok := ParseTaskID(bad); ok {
			t.Errorf("ParseTaskID(%q) ok", bad)
		}
	}
	for in, want := range map[string]int64{"task_0": 0, "task_7": 7, "7": 7, "TASK_7": 7, "Task_3": 3} {
		if got, err := ParseTaskCursor(in); err != nil || got != want {
			t.Errorf("ParseTaskCursor(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "task_", "TASK_", "task_-1", "msg_3", "task_+1", "task_7x"} {
		if _, err := ParseTaskCursor(bad); !IsKind(err, Invalid) {
			t.Errorf("ParseTaskCursor(%q) = %v, want Invalid", bad, err)
		}
	}
}

func TestTaskFields(t *testing.T) {
	t.Parallel()
	if got, err := TaskTitle("  Fix login  "); err != nil || got != "Fix login" {
		t.Errorf("TaskTitle = %q, %v", got, err)
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxTaskTitleBytes+1), "two\nlines", "nul\x00"} {
		if _, err := TaskTitle(bad); !IsKind(err, Invalid) {
			t.Errorf("TaskTitle(%q) = %v, want Invalid", bad, err)
		}
	}
	if _, err := TaskTitle(strings.Repeat("x", MaxTaskTitleBytes)); err != nil {
		t.Errorf("a title of exactly %d bytes: %v", MaxTaskTitleBytes, err)
	}
	if _, err := TaskDescription(strings.Repeat("d", MaxTaskDescriptionBytes+1)); !IsKind(err, Invalid) {
		t.Errorf("over-long description: %v", err)
	}
	if got, err := TaskDescription("line one\nline two"); err != nil || got != "line one\nline two" {
		t.Errorf("multi-line description = %q, %v", got, err)
	}
	for in, ok := range map[string]bool{"": true, "https://github.com/o/r/pull/1": true, "http://x.test/1": true,
		"ftp://x/1": false, "github.com/o/r/pull/1": false, "https://": false, "https://x y": false} {
		if _, err := PRURL(in); (err == nil) != ok {
			t.Errorf("PRURL(%q) = %v, want ok %v", in, err, ok)
		}
	}
	ptr := func(n int64) *int64 { return &n }
	if d, err := LeaseTTL(nil); d != 0 || err != nil {
		t.Errorf("LeaseTTL(nil) = %v, %v", d, err)
	}
	if d, err := LeaseTTL(ptr(60)); d != time.Minute || err != nil {
		t.Errorf("LeaseTTL(60) = %v, %v", d, err)
	}
	for _, bad := range []int64{0, 9, 86401, -5} {
		if _, err := LeaseTTL(ptr(bad)); !IsKind(err, Invalid) {
			t.Errorf("LeaseTTL(%d) = %v, want Invalid", bad, err)
		}
	}
}

func TestStatusLines(t *testing.T) {
	t.Parallel()
	task := Task{Seq: 3, Title: "Fix login"}
	tests := []struct {
		status TaskStatus
		who    string
		want   string
	}{
		{TaskAssigned, "Builder", "[status] Builder claimed task_3: Fix login"},
		{TaskAssigned, "", "[status] task_3 is now assigned: Fix login"},
		{TaskInProgress, "Builder", "[status] Builder started work on task_3: Fix login"},
		{TaskInProgress, "", "[status] task_3 is in progress: Fix login"},
		{TaskBlocked, "Builder", "[status] task_3 is blocked: Fix login"},
		{TaskInReview, "", "[status] task_3 is ready for review: Fix login"},
		{TaskMerged, "", "[status] task_3 has been merged: Fix login"},
		{TaskDone, "", "[status] task_3 is complete: Fix login"},
		{TaskCancelled, "", "[status] task_3 has been cancelled: Fix login"},
		{TaskAccepted, "", "[status] task_3 is accepted and ready to be claimed: Fix login"},
		{TaskProposed, "", "[status] task_3 is now proposed: Fix login"},
	}
	for _, tt := range tests {
		task.Status = tt.status
		if got := TaskStatusLine(task, tt.who); got != tt.want {
			t.Errorf("TaskStatusLine(%s, %q) = %q, want %q", tt.status, tt.who, got, tt.want)
		}
	}
	if got := TaskReleasedLine(task, "Builder", LeaseExpired); got != "[status] Builder's work lease on task_3 expired; it is open to claim again: Fix login" {
		t.Errorf("expired line = %q", got)
	}
	if got := TaskHandoffLine(task, "Builder", "Helper"); got != "[status] Builder handed task_3 over to Helper: Fix login" {
		t.Errorf("handoff line = %q", got)
	}
}
