package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// Every change to a task or its leases is an event of the room's log: a
// reader of the log from the previous cursor finds exactly that task, as
// it now is. A refused change logs nothing.
func TestTaskChangesNumberEveryChange(t *testing.T) {
	t.Parallel()
	b := newTaskBoard(t)
	ctx := context.Background()
	first := b.create(t, "first", true)
	second := b.create(t, "second", true)
	var workLease letagents.Lease
	steps := []struct {
		name   string
		change func() error
		task   int64                // the task that must come back; 0: none (refused)
		want   letagents.TaskStatus // its status as read
		leases int
	}{
		{"claim", func() error { workLease = b.claim(t, first.Seq, workerA, time.Minute); return nil }, first.Seq, letagents.TaskAssigned, 1},
		{"update", func() error { b.move(t, first.Seq, letagents.TaskInReview, workerA); return nil }, first.Seq, letagents.TaskInReview, 1},
		{"refused update", func() error {
			_, err := b.s.UpdateTask(ctx, b.room, first.Seq, store.TaskChange{Status: letagents.TaskDone, Actor: workerB}, b.now)
			return wantErr(err)
		}, 0, "", 0},
		{"review claim", func() error {
			_, _, err := b.s.ClaimReview(ctx, b.room, first.Seq, store.Claim{Actor: workerB}, b.now)
			return err
		}, first.Seq, letagents.TaskInReview, 2},
		{"review release", func() error {
			_, _, err := b.s.ReleaseReview(ctx, b.room, first.Seq, store.LeaseRelease{Actor: workerB}, b.now)
			return err
		}, first.Seq, letagents.TaskInReview, 1},
		{"work release", func() error {
			_, _, err := b.s.ReleaseWorkLease(ctx, b.room, first.Seq, store.LeaseRelease{Actor: workerA, LeaseID: workLease.ID}, b.now)
			return err
		}, first.Seq, letagents.TaskAccepted, 0},
		{"claim with a time to live", func() error { b.claim(t, second.Seq, workerB, 30*time.Second); return nil }, second.Seq, letagents.TaskAssigned, 1},
		{"expiry, found by a reader", func() error {
			b.now = b.now.Add(31 * time.Second)
			_, err := b.s.Tasks(ctx, b.room, store.TaskQuery{Limit: 10}, b.now)
			return err
		}, second.Seq, letagents.TaskAccepted, 0},
		{"create", func() error { b.create(t, "third", false); return nil }, 3, letagents.TaskProposed, 0},
	}
	at, err := b.s.EventStart(ctx, b.room, -1)
	cursor := at.Cursor
	if err != nil || cursor == 0 {
		t.Fatalf("the log's head after two creations = %d, %v", cursor, err)
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := taskEvents(ctx, b.s, b.room, cursor, 10, b.now)
		if err != nil {
			t.Fatalf("%s: RoomEvents: %v", st.name, err)
		}
		var seqs []int64
		for _, task := range got.Tasks {
			seqs = append(seqs, task.Seq)
		}
		if st.task == 0 {
			if len(seqs) != 0 || got.Last != cursor {
				t.Errorf("%s: changes %v up to %d, want none", st.name, seqs, got.Last)
			}
			continue
		}
		if !slices.Equal(seqs, []int64{st.task}) || got.Last <= cursor || got.HasMore {
			t.Fatalf("%s: changes %v up to %d (after %d), want only task_%d", st.name, seqs, got.Last, cursor, st.task)
		}
		if task := got.Tasks[0]; task.Status != st.want || len(task.ActiveLeases) != st.leases {
			t.Errorf("%s: task_%d is %s with %d leases, want %s with %d", st.name, task.Seq, task.Status, len(task.ActiveLeases), st.want, st.leases)
		}
		cursor = got.Last
		if at, err := b.s.EventStart(ctx, b.room, -1); err != nil || at.Cursor != cursor {
			t.Errorf("%s: the log's head = %d, %v, want %d", st.name, at.Cursor, err, cursor)
		}
	}

	// A task changed twice since the cursor comes once, as it now is; the
	// limit cuts the list and says so.
	from := cursor
	b.move(t, 3, letagents.TaskAccepted, roomAdmin)
	b.claim(t, first.Seq, workerA, 0)
	b.move(t, 3, letagents.TaskCancelled, roomAdmin)
	// Page by page, one event at a time (status lines are events too).
	var got []letagents.Task
	for cursor, more, pages := from, true, 0; more; pages++ {
		p, err := taskEvents(ctx, b.s, b.room, cursor, 1, b.now)
		if err != nil || len(p.Tasks) > 1 || pages > 20 {
			t.Fatalf("a page of one after %d = %+v, %v", cursor, p, err)
		}
		got = append(got, p.Tasks...)
		cursor, more = p.Last, p.HasMore
	}
	if len(got) != 2 || got[0].Seq != first.Seq || got[1].Seq != 3 || got[1].Status != letagents.TaskCancelled {
		t.Errorf("two changed tasks = %+v, want task_1 then task_3 cancelled", got)
	}
	if _, err := b.s.EventStart(ctx, "no such room", -1); !letagents.IsKind(err, letagents.NotFound) {
		t.Errorf("EventStart of a missing room: %v, want NotFound", err)
	}
}

// wantErr turns a refusal into success and success into a failure, for
// steps that must be refused.
func wantErr(err error) error {
	if err == nil {
		return errUnexpectedSuccess
	}
	return nil
}

var errUnexpectedSuccess = letagents.Errorf(letagents.Internal, "the change went through; it should have been refused")

// taskPage is the task events of a page of a room's events.
type taskPage struct {
	Tasks   []letagents.Task
	Last    int64
	HasMore bool
}

// taskEvents reads a page of a room's events and keeps its tasks (a
// change may log a status line beside it).
func taskEvents(ctx context.Context, s *store.Store, room string, after int64, limit int, now time.Time) (taskPage, error) {
	p, err := s.RoomEvents(ctx, room, after, limit, now)
	out := taskPage{Last: p.Last, HasMore: p.HasMore}
	for _, e := range p.Events {
		if e.Task != nil {
			out.Tasks = append(out.Tasks, *e.Task)
		}
	}
	return out, err
}
