//go:build unix

package codex

import (
	"errors"
	"os/exec"
	"syscall"
)

// detach puts the command in its own process group: a terminal's
// interrupt meant for this server does not reach it, and terminate ends
// it with everything it started.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// terminate asks a spawned app-server to stop: its process group, else
// the process alone. A process that is gone already is not an error.
func terminate(pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err == nil {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
