package api_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/letagents/letagents-go/shared/testwait"
)

// TestWebModules runs the unit tests of the room page's pure modules
// (web/js, tested in jstest/*.test.js) with node's test runner, so that go
// test covers them. A machine without node fails: .ci/run installs it.
func TestWebModules(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed for the room page's unit tests (apt-get install nodejs): %v", err)
	}
	files, err := filepath.Glob("jstest/*.test.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no jstest/*.test.js (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{"--test"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %v: %v\n%s", files, err, out)
	}
}
