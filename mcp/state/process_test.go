package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests with other processes re-run this test binary with these
// variables set, which turns TestHelperProcess into the other process.
const (
	helperPathEnv = "LETAGENTS_STATE_TEST_HELPER_PATH"
	helperModeEnv = "LETAGENTS_STATE_TEST_HELPER_MODE" // "update:<worker>" or "hold"
	helperUpdates = 50

	// What a helper prints when its first Update waits for the lock, and
	// when it holds the lock for good.
	waitingLine = "waiting for the lock"
	holdingLine = "holding the lock"
)

// helper is another process using the state file.
type helper struct {
	cmd    *exec.Cmd
	out    output
	exited chan error
}

// startHelper runs TestHelperProcess in a new process on the state file
// at path.
func startHelper(t *testing.T, path, mode string) *helper {
	t.Helper()
	h := &helper{
		cmd:    exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1"),
		exited: make(chan error, 1),
	}
	h.cmd.Env = append(os.Environ(), helperPathEnv+"="+path, helperModeEnv+"="+mode)
	h.cmd.Stdout = &h.out
	h.cmd.Stderr = &h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", mode, err)
	}
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			h.cmd.Process.Kill()
			<-h.exited
		}
	})
	return h
}

// await returns once the helper has printed line, failing the test if it
// exits first or takes implausibly long.
func (h *helper) await(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !h.out.has(line) {
		select {
		case err := <-h.exited:
			h.exited <- err
			t.Fatalf("helper exited (%v) before printing %q:\n%s", err, line, h.out.String())
		case <-h.out.grew():
		case <-deadline:
			t.Fatalf("helper never printed %q:\n%s", line, h.out.String())
		}
	}
}

// wait waits for the helper to exit and reports a failure.
func (h *helper) wait(t *testing.T) {
	t.Helper()
	if err := <-h.exited; err != nil {
		t.Errorf("helper: %v\n%s", err, h.out.String())
	}
}

// output is a helper's output, safe to read while the helper writes.
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{} // closed and replaced on every write
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready != nil {
		close(o.ready)
		o.ready = nil
	}
	return o.buf.Write(p)
}

// grew returns a channel closed by the next write.
func (o *output) grew() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready == nil {
		o.ready = make(chan struct{})
	}
	return o.ready
}

func (o *output) has(line string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Contains(o.buf.String(), line+"\n")
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// TestTwoProcesses has two processes update the file 50 times each. The
// test holds the lock until both wait for it, so their updates contend
// from the first.
func TestTwoProcesses(t *testing.T) {
	t.Parallel()
	_, path := newFile(t)
	blocker, err := tryLock(path + lockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	workers := []string{"a", "b"}
	var helpers []*helper
	for _, w := range workers {
		helpers = append(helpers, startHelper(t, path, "update:"+w))
	}
	for _, h := range helpers {
		h.await(t, waitingLine)
	}
	blocker.Close()
	for _, h := range helpers {
		h.wait(t)
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
	for _, w := range workers {
		for i := range helperUpdates {
			room := fmt.Sprintf("%s-%02d", w, i)
			if _, ok := st.RoomSessions[room]; !ok {
				t.Errorf("room %s lost", room)
			}
		}
	}
	assertNoLeftovers(t, path)
}

// TestLockFreedWhenHolderKilled: a process killed in the middle of an
// update blocks no one after it.
func TestLockFreedWhenHolderKilled(t *testing.T) {
	t.Parallel()
	f, path := newFile(t)
	h := startHelper(t, path, "hold")
	h.await(t, holdingLine)
	if fh, err := tryLock(path + lockSuffix); !errors.Is(err, errLocked) {
		if err == nil {
			fh.Close()
		}
		t.Fatalf("lock while the helper holds it: %v, want %v", err, errLocked)
	}
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.exited
	// Within the default wait: a lock that outlived its holder would make
	// this fail after 30 s.
	mustUpdate(t, f, func(s *State) error {
		s.CurrentRoom = "after"
		return nil
	})
	if got := mustLoad(t, f).CurrentRoom; got != "after" {
		t.Errorf("CurrentRoom = %q, want %q", got, "after")
	}
}

// TestHelperProcess is the other process of TestTwoProcesses and
// TestLockFreedWhenHolderKilled; run directly, it is skipped.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperPathEnv)
	if path == "" {
		t.Skip("helper for the tests with other processes")
	}
	f := Open(path)
	mode := os.Getenv(helperModeEnv)
	if mode == "hold" {
		err := f.Update(t.Context(), func(*State) error {
			fmt.Println(holdingLine)
			select {} // until killed
		})
		t.Fatalf("Update returned: %v", err)
	}
	worker, ok := strings.CutPrefix(mode, "update:")
	if !ok {
		t.Fatalf("%s = %q, want update:<worker> or hold", helperModeEnv, mode)
	}
	waiting := newWaitingCtx(context.Background())
	go func() {
		<-waiting.waiting
		fmt.Println(waitingLine)
	}()
	var ctx context.Context = waiting
	for i := range helperUpdates {
		room := fmt.Sprintf("%s-%02d", worker, i)
		err := f.Update(ctx, func(s *State) error {
			s.RoomSessions[room] = RoomSession{RoomID: room, JoinedVia: JoinedViaJoinRoom}
			return nil
		})
		if err != nil {
			t.Fatalf("Update %s: %v", room, err)
		}
		ctx = context.Background()
	}
}
