//go:build unix

package state

import (
	"errors"
	"os"
	"syscall"
)

// tryLock opens the lock file at path and takes an exclusive flock on it
// without blocking; errLocked means another open file holds it. A flock
// belongs to the open file, not the process, so two opens in one process
// exclude each other as two processes do.
func tryLock(path string) (*os.File, error) {
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		fh.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return fh, nil
}
