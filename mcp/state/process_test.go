package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The two-process test re-runs this test binary with these variables set,
// which turns TestHelperProcess into one updater.
const (
	helperPathEnv   = "LETAGENTS_STATE_TEST_HELPER_PATH"
	helperWorkerEnv = "LETAGENTS_STATE_TEST_HELPER_WORKER"
	helperUpdates   = 50
)

func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	_, path := newFile(t)
	// Both helpers wait for this file, so their updates overlap instead of
	// running one after the other as they finish starting.
	goFile := filepath.Join(t.TempDir(), "go")

	type helper struct {
		worker string
		cmd    *exec.Cmd
		out    bytes.Buffer
	}
	var helpers []*helper
	for _, worker := range []string{"a", "b"} {
		h := &helper{worker: worker, cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		h.cmd.Env = append(os.Environ(),
			helperPathEnv+"="+path,
			helperWorkerEnv+"="+worker+","+goFile,
		)
		h.cmd.Stdout = &h.out
		h.cmd.Stderr = &h.out
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("start helper %s: %v", worker, err)
		}
		helpers = append(helpers, h)
	}
	writeRaw(t, goFile, "")
	for _, h := range helpers {
		if err := h.cmd.Wait(); err != nil {
			t.Errorf("helper %s: %v\n%s", h.worker, err, h.out.Bytes())
		}
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatalf("state file is not valid JSON:\n%s", data)
	}
	st := mustLoad(t, Open(path))
	if got, want := len(st.RoomSessions), 2*helperUpdates; got != want {
		t.Errorf("rooms = %d, want %d", got, want)
	}
	for _, worker := range []string{"a", "b"} {
		for i := range helperUpdates {
			room := fmt.Sprintf("%s-%02d", worker, i)
			if _, ok := st.RoomSessions[room]; !ok {
				t.Errorf("room %s lost", room)
			}
		}
	}
	assertNoLeftovers(t, path)
}

// TestHelperProcess is one updater of TestTwoProcesses; run directly, it
// is skipped.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperPathEnv)
	if path == "" {
		t.Skip("helper for TestTwoProcesses")
	}
	worker, goFile, ok := strings.Cut(os.Getenv(helperWorkerEnv), ",")
	if !ok {
		t.Fatalf("%s not set to worker,go-file", helperWorkerEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, err := os.Stat(goFile); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("never told to go")
		case <-time.After(time.Millisecond):
		}
	}
	f := Open(path)
	for i := range helperUpdates {
		room := fmt.Sprintf("%s-%02d", worker, i)
		err := f.Update(ctx, func(s *State) error {
			s.RoomSessions[room] = RoomSession{RoomID: room, JoinedVia: JoinedViaJoinRoom}
			return nil
		})
		if err != nil {
			t.Fatalf("Update %s: %v", room, err)
		}
	}
}
