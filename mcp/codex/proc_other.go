//go:build !unix

package codex

import (
	"os"
	"os/exec"
)

// detach leaves the command as it is: process groups are a Unix notion.
func detach(*exec.Cmd) {}

// terminate kills a spawned app-server.
func terminate(pid int) error {
	if pid <= 0 {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}
