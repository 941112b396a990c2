package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdLock creates the lock file for path as another process would, aged
// by age.
func holdLock(t *testing.T, path string, age time.Duration) string {
	t.Helper()
	lockPath := path + ".lock"
	writeRaw(t, lockPath, `{"pid":4242,"acquired_at":"2025-01-01T00:00:00Z","nonce":"other"}`)
	if age != 0 {
		when := time.Now().Add(-age)
		if err := os.Chtimes(lockPath, when, when); err != nil {
			t.Fatal(err)
		}
	}
	return lockPath
}

func TestStaleLockTaken(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	holdLock(t, path, 11*time.Second)

	start := time.Now()
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "a"
		return nil
	})
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Update took %v with a stale lock, want it taken at once", elapsed)
	}
	if got := mustLoad(t, f).CurrentRoom; got != "a" {
		t.Errorf("CurrentRoom = %q, want %q", got, "a")
	}
	assertNoLeftovers(t, path)
}

func TestStaleLockFutureTaken(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	holdLock(t, path, -time.Hour) // the clock was set back
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "a"
		return nil
	})
	assertNoLeftovers(t, path)
}

// TestStaleLockManyWaiters has several Files find the same stale lock at
// once: exactly one update at a time proceeds and none is lost.
func TestStaleLockManyWaiters(t *testing.T) {
	t.Parallel()
	const waiters = 10
	_, path := newFile(t)
	holdLock(t, path, time.Minute)

	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range waiters {
		f := Open(path)
		wg.Go(func() {
			<-start
			err := f.Update(context.Background(), func(s *State) error {
				s.RoomSessions[fmt.Sprint(i)] = RoomSession{RoomID: fmt.Sprint(i)}
				return nil
			})
			if err != nil {
				t.Errorf("waiter %d: Update: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := len(mustLoad(t, Open(path)).RoomSessions); got != waiters {
		t.Errorf("rooms = %d, want %d", got, waiters)
	}
	assertNoLeftovers(t, path)
}

func TestFreshLockTimesOut(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	lockPath := holdLock(t, path, 0)

	start := time.Now()
	called := false
	err := f.Update(t.Context(), func(s *State) error {
		called = true
		return nil
	})
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("Update succeeded while another process held the lock")
	}
	for _, want := range []string{lockPath, "pid 4242", "timed out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if elapsed < lockWait || elapsed > lockWait+time.Second {
		t.Errorf("Update gave up after %v, want about %v", elapsed, lockWait)
	}
	if called {
		t.Errorf("fn ran without the lock")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written without the lock: %v", err)
	}
	if _, err := os.Stat(lockPath); err != nil {
		t.Errorf("the other process's lock was removed: %v", err)
	}
}

func TestContextCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	holdLock(t, path, 0)

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err := f.Update(ctx, func(s *State) error {
		t.Errorf("fn ran without the lock")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update error = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Update returned %v after cancel, want promptly", elapsed)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written: %v", err)
	}

	// Already cancelled: no waiting at all.
	if err := f.Update(ctx, func(*State) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Update with done ctx = %v, want context.Canceled", err)
	}
}

// TestContextCancelledWaitingInProcess cancels an Update queued behind
// another goroutine's Update of the same File.
func TestContextCancelledWaitingInProcess(t *testing.T) {
	t.Parallel()
	f, _ := newFile(t)
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- f.Update(context.Background(), func(*State) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := f.Update(ctx, func(*State) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued Update = %v, want context.DeadlineExceeded", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("first Update: %v", err)
	}
}

// TestLockTakenOverNotWritten simulates an update so slow that its lock was
// taken over as stale: it must not write over the new holder's work, nor
// remove the new holder's lock.
func TestLockTakenOverNotWritten(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	writeRaw(t, path, `{"current_room":"orig"}`)
	err := f.Update(t.Context(), func(s *State) error {
		holdLock(t, path, 0) // another process took over
		s.CurrentRoom = "late"
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("Update error = %v, want one saying the lock was taken over", err)
	}
	if got := mustLoad(t, f).CurrentRoom; got != "orig" {
		t.Errorf("CurrentRoom = %q, want %q", got, "orig")
	}
	data, err := os.ReadFile(path + ".lock")
	if err != nil || !strings.Contains(string(data), "4242") {
		t.Errorf("new holder's lock = %q, %v; want it left in place", data, err)
	}
}
