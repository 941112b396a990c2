//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// raiseFileLimit lifts the soft RLIMIT_NOFILE to at least want (up to the
// hard limit): every parked waiter is a socket on each side.
func raiseFileLimit(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	if lim.Cur >= want {
		return nil
	}
	if lim.Max < want {
		fmt.Fprintf(os.Stderr, "bench: hard file limit %d is below the %d wanted; raising to it\n", lim.Max, want)
		want = lim.Max
	}
	lim.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("setrlimit NOFILE %d: %w", want, err)
	}
	return nil
}
