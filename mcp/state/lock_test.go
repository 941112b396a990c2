package state

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
)

// holdLock takes the lock of the state file at path through an open file
// of its own, as another process would, until the test ends.
func holdLock(t *testing.T, path string) string {
	t.Helper()
	lockPath := path + lockSuffix
	fh, err := tryLock(lockPath)
	if err != nil {
		t.Fatalf("take the lock: %v", err)
	}
	t.Cleanup(func() { fh.Close() })
	if _, err := fh.WriteAt([]byte(`{"pid":4242,"acquired_at":"2025-01-01T00:00:00Z"}`), 0); err != nil {
		t.Fatal(err)
	}
	return lockPath
}

// waitingCtx is a context that closes waiting the first time its Done
// channel is asked for. Update asks only when it has to wait, for its
// turn or for the lock, so a test can act once an Update surely waits.
type waitingCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func newWaitingCtx(parent context.Context) *waitingCtx {
	return &waitingCtx{Context: parent, waiting: make(chan struct{})}
}

func (c *waitingCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// awaitWaiting returns once the Update using ctx waits.
func awaitWaiting(t *testing.T, ctx *waitingCtx) {
	t.Helper()
	testwait.Recv(t, "the Update to wait for the lock", ctx.waiting)
}

func TestLockTimesOut(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	f.lockWait = 100 * time.Millisecond // the timeout is what is tested
	lockPath := holdLock(t, path)

	start := time.Now()
	called := false
	err := f.Update(t.Context(), func(s *State) error {
		called = true
		return nil
	})
	if err == nil {
		t.Fatal("Update succeeded while another process held the lock")
	}
	for _, want := range []string{lockPath, "pid 4242", "timed out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if elapsed := time.Since(start); elapsed < f.lockWait {
		t.Errorf("Update gave up after %v, want at least %v", elapsed, f.lockWait)
	}
	if called {
		t.Errorf("fn ran without the lock")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written without the lock: %v", err)
	}
}

// TestLeftoverLockFile: a lock file left by a process that ended holds
// nothing, whatever it says.
func TestLeftoverLockFile(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	writeRaw(t, path+lockSuffix, `{"pid":4242,"acquired_at":"2025-01-01T00:00:00Z"}`)
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "a"
		return nil
	})
	if got := mustLoad(t, f).CurrentRoom; got != "a" {
		t.Errorf("CurrentRoom = %q, want %q", got, "a")
	}
}

// TestLockWaitsForRelease: an Update waiting for another holder goes on,
// and sees that holder's write, as soon as it lets go.
func TestLockWaitsForRelease(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	other, err := tryLock(path + lockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := newWaitingCtx(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- f.Update(ctx, func(s *State) error {
			if s.CurrentRoom != "first" {
				t.Errorf("CurrentRoom = %q under the lock, want the holder's %q", s.CurrentRoom, "first")
			}
			s.CurrentRoom = "second"
			return nil
		})
	}()
	awaitWaiting(t, ctx)
	writeRaw(t, path, `{"current_room":"first"}`)
	other.Close()
	if err := <-done; err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got := mustLoad(t, f).CurrentRoom; got != "second" {
		t.Errorf("CurrentRoom = %q, want %q", got, "second")
	}
}

func TestContextCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	holdLock(t, path)

	cancelCtx, cancel := context.WithCancel(t.Context())
	ctx := newWaitingCtx(cancelCtx)
	done := make(chan error, 1)
	go func() {
		done <- f.Update(ctx, func(s *State) error {
			t.Errorf("fn ran without the lock")
			return nil
		})
	}()
	awaitWaiting(t, ctx)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Update error = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written: %v", err)
	}

	// Already cancelled: no waiting at all.
	if err := f.Update(cancelCtx, func(*State) error { return nil }); !errors.Is(err, context.Canceled) {
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
	cancelCtx, cancel := context.WithCancel(t.Context())
	ctx := newWaitingCtx(cancelCtx)
	queued := make(chan error, 1)
	go func() { queued <- f.Update(ctx, func(*State) error { return nil }) }()
	awaitWaiting(t, ctx)
	cancel()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Errorf("queued Update = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("first Update: %v", err)
	}
}
