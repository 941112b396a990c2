package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

const (
	// lockRetry is how often a busy lock file is tried again.
	lockRetry = 25 * time.Millisecond
	// lockWait bounds the wait for the lock; an update takes milliseconds,
	// so waiting longer means the holder is stuck.
	lockWait = 2 * time.Second
	// lockStale is the age after which a lock file is taken to belong to a
	// process that died holding it, and is taken over.
	lockStale = 10 * time.Second
)

// lockInfo is what a lock file holds: who took it and when, for the error
// a stuck waiter reports, and a nonce that makes each lock's contents
// unique so a holder can tell whether the file is still its own.
type lockInfo struct {
	PID        int    `json:"pid"`
	AcquiredAt string `json:"acquired_at"`
	Nonce      string `json:"nonce"`
}

// lock is a held lock file.
type lock struct {
	path     string
	contents []byte
}

// acquire creates the lock file at path, retrying every lockRetry until
// deadline or until ctx is done. A lock file older than lockStale is taken
// over (see takeStale).
func acquire(ctx context.Context, path string, deadline time.Time) (*lock, error) {
	for {
		l, err := tryLock(path)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create lock file: %w", err)
		}
		if takeStale(path) {
			continue
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, fmt.Errorf("state file is locked: timed out after %v waiting for %s (%s); it is taken over once %v old, or delete it if no letagents process is running",
				lockWait, path, describeHolder(path), lockStale)
		}
		t := time.NewTimer(min(wait, lockRetry))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
}

// tryLock creates the lock file once; an fs.ErrExist error means it is held.
func tryLock(path string) (*lock, error) {
	contents, err := json.Marshal(lockInfo{
		PID:        os.Getpid(),
		AcquiredAt: time.Now().UTC().Format(time.RFC3339Nano),
		Nonce:      randomSuffix() + randomSuffix(),
	})
	if err != nil {
		return nil, err
	}
	// O_EXCL makes creation the test-and-set; no fsync, as a lock does not
	// need to outlive a crash.
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = fh.Write(contents)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("write lock file: %w", err)
	}
	return &lock{path: path, contents: contents}, nil
}

// takeStale removes the lock file at path if it is older than lockStale,
// reporting whether it did.
//
// Two waiters may both find the same stale file. Each renames it to a name
// of its own before removing it, so only one rename succeeds. The loser
// may still be late: if the winner has already removed the stale file and
// a new holder has created a fresh one, the loser's rename moves that fresh
// lock. So after renaming, the file moved is checked again, and if it is
// fresh it is linked back into place (os.Link, which unlike a rename never
// replaces a lock a third process created meanwhile). If that fails the
// fresh lock's holder finds its lock gone before it writes (lock.held) and
// fails its update rather than overwrite another's; what remains is the
// instant between that check and its rename. Lock files are judged by
// modification time, so a clock jumping by more than lockStale can also
// make a live lock look stale.
func takeStale(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !stale(fi) {
		return false
	}
	aside := fmt.Sprintf("%s.stale-%d-%s", path, os.Getpid(), randomSuffix())
	if err := os.Rename(path, aside); err != nil {
		return false // another waiter took it first, or its holder let go
	}
	defer os.Remove(aside)
	if moved, err := os.Stat(aside); err == nil && !stale(moved) {
		_ = os.Link(aside, path)
		return false
	}
	return true
}

// stale reports whether a lock file is old enough to take over. One dated
// far in the future (the clock was set back) is treated the same, or it
// would block every update until the clock caught up.
func stale(fi fs.FileInfo) bool {
	age := time.Since(fi.ModTime())
	return age > lockStale || age < -lockStale
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

// held reports whether the lock file is still this lock's, that is, it
// has not been taken over as stale.
func (l *lock) held() bool {
	data, err := os.ReadFile(l.path)
	return err == nil && bytes.Equal(data, l.contents)
}

// release removes the lock file, unless it has been taken over and now
// belongs to another holder.
func (l *lock) release() error {
	if !l.held() {
		return nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove lock file after updating state: %w", err)
	}
	return nil
}
