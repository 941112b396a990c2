package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

const (
	// lockSuffix names the lock file beside the state file. It is not the
	// original client's "<path>.lock", whose create-exclusive protocol
	// treats any lock file older than 10 s as abandoned: a lock file that
	// stays in place, as an OS lock's does, would make that client stall and
	// then delete it.
	lockSuffix = ".flock"
	// defaultLockWait bounds the wait for the lock. An update takes
	// milliseconds, but a busy machine running many agents can queue a
	// good number of them; waiting longer than this means the holder is
	// stuck, not slow.
	defaultLockWait = 30 * time.Second
	// lockRetryMax caps the pause between attempts on a busy lock. The
	// pause starts at a millisecond and doubles, so a lock released at
	// once is taken at once.
	lockRetryMax = 25 * time.Millisecond
)

// errLocked is what tryLock returns when another open file holds the lock.
var errLocked = errors.New("lock is held")

// lockInfo is what a held lock file says about its holder, for the error
// a waiter reports when it gives up.
type lockInfo struct {
	PID        int    `json:"pid"`
	AcquiredAt string `json:"acquired_at"`
}

// acquire takes the OS lock on the file at path, creating the file if
// needed, and returns the open file: closing it releases the lock, and so
// does the holder's death, so there is no stale lock to clean up. The
// lock is tried again, with a short backoff, until deadline or until ctx
// is done. Polling a non-blocking lock rather than blocking in the
// kernel lets the wait end on time: a goroutine blocked in flock cannot
// be interrupted, and would keep the file open after acquire gave up.
func acquire(ctx context.Context, path string, deadline time.Time, wait time.Duration) (*os.File, error) {
	pause := time.Millisecond
	for {
		fh, err := tryLock(path)
		if err == nil {
			recordHolder(fh)
			return fh, nil
		}
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("lock state file: %w", err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("state file is locked: timed out after %v waiting for %s (%s)", wait, path, describeHolder(path))
		}
		t := time.NewTimer(min(left, pause))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, lockRetryMax)
	}
}

// recordHolder writes who holds the lock into the lock file. It is best
// effort: the OS lock is what excludes, this only names the holder in a
// waiter's error.
func recordHolder(fh *os.File) {
	info, err := json.Marshal(lockInfo{PID: os.Getpid(), AcquiredAt: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return
	}
	if fh.Truncate(0) == nil {
		_, _ = fh.WriteAt(info, 0)
	}
}

// describeHolder says who holds the lock file at path, for error messages.
func describeHolder(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "held by an unknown process"
	}
	var info lockInfo
	if json.Unmarshal(data, &info) != nil || info.PID == 0 {
		return "held by an unknown process"
	}
	return fmt.Sprintf("held by pid %d since %s", info.PID, info.AcquiredAt)
}
