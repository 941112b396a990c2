//go:build !unix && !windows

package state

import (
	"errors"
	"os"
)

// tryLock fails: this system has no file lock the standard library can
// take, and updating the state file unlocked could lose another agent's
// changes.
func tryLock(path string) (*os.File, error) {
	return nil, &os.PathError{Op: "lock", Path: path, Err: errors.ErrUnsupported}
}
