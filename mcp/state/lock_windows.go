package state

import (
	"errors"
	"os"
	"syscall"
)

// errSharingViolation is Windows' ERROR_SHARING_VIOLATION, which the
// syscall package does not name.
const errSharingViolation syscall.Errno = 32

// tryLock opens the lock file at path with no sharing allowed, which
// Windows enforces between any two opens, in one process or two, until
// the handle is closed or its process ends; errLocked means another open
// file has it.
func tryLock(path string) (*os.File, error) {
	name, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := syscall.CreateFile(name, syscall.GENERIC_READ|syscall.GENERIC_WRITE, 0, nil,
		syscall.OPEN_ALWAYS, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if errors.Is(err, errSharingViolation) {
		return nil, errLocked
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
