package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// Every change to a task or its leases numbers the task anew: a reader of
// TaskChanges from the previous number finds exactly that task, as it now
// is. A refused change numbers nothing.
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
	cursor, err := b.s.LastTaskChange(ctx, b.room)
	if err != nil || cursor == 0 {
		t.Fatalf("LastTaskChange after two creations = %d, %v", cursor, err)
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := b.s.TaskChanges(ctx, b.room, cursor, 10, b.now)
		if err != nil {
			t.Fatalf("%s: TaskChanges: %v", st.name, err)
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
		if last, err := b.s.LastTaskChange(ctx, b.room); err != nil || last != cursor {
			t.Errorf("%s: LastTaskChange = %d, %v, want %d", st.name, last, err, cursor)
		}
	}

	// A task changed twice since the cursor comes once, as it now is; the
	// limit cuts the list and says so.
	from := cursor
	b.move(t, 3, letagents.TaskAccepted, roomAdmin)
	b.claim(t, first.Seq, workerA, 0)
	b.move(t, 3, letagents.TaskCancelled, roomAdmin)
	got, err := b.s.TaskChanges(ctx, b.room, from, 1, b.now)
	if err != nil || len(got.Tasks) != 1 || got.Tasks[0].Seq != first.Seq || !got.HasMore {
		t.Fatalf("first page of two changed tasks = %+v, %v", got, err)
	}
	got, err = b.s.TaskChanges(ctx, b.room, got.Last, 1, b.now)
	if err != nil || len(got.Tasks) != 1 || got.Tasks[0].Seq != 3 || got.Tasks[0].Status != letagents.TaskCancelled || got.HasMore {
		t.Errorf("second page = %+v, %v, want task_3 cancelled, last", got, err)
	}
	if _, err := b.s.LastTaskChange(ctx, "no such room"); !letagents.IsCode(err, letagents.NotFound) {
		t.Errorf("LastTaskChange of a missing room: %v, want NotFound", err)
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
