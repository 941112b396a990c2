package leasecheck_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/leasecheck"
	"github.com/letagents/letagents-go/shared/letagents"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]leasecheck.Mode{"": leasecheck.Checks, "off": leasecheck.Off, "CHECKS": leasecheck.Checks,
		" flag ": leasecheck.Flag, "close": leasecheck.Close} {
		if got, err := leasecheck.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"on", "block", "checks,flag"} {
		if _, err := leasecheck.ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) took it", bad)
		}
	}
}

func TestProtected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		branch, def string
		want        bool
	}{
		{"main", "", true}, {"master", "trunk", true}, {"Staging", "main", true}, {"production", "main", true},
		{"refs/heads/main", "main", true}, {"trunk", "trunk", true}, {"Trunk", "trunk", true},
		{"letagents/task_1/builder", "main", false}, {"feature/main", "main", false}, {"main-fix", "main", false},
	}
	for _, tt := range tests {
		if got := leasecheck.Protected(tt.branch, tt.def); got != tt.want {
			t.Errorf("Protected(%q, %q) = %v, want %v", tt.branch, tt.def, got, tt.want)
		}
	}
}

// Decide: success only for a leased branch that is not protected; the
// comment only in flag and close; closing only in close; nothing in off.
func TestDecide(t *testing.T) {
	t.Parallel()
	pr := leasecheck.PullRequest{Repo: "acme/widgets", RoomID: "github.com/acme/widgets", Number: 12, HeadRef: "letagents/task_3/builder",
		HeadSHA: "abc", DefaultBranch: "trunk", DetailsURL: "https://x.example/in/github.com/acme/widgets"}
	lease := &leasecheck.Lease{ID: "tl_1", Task: "task_3", Holder: "Builder | claude"}
	onDefault := pr
	onDefault.HeadRef = "trunk"
	tests := []struct {
		name       string
		mode       leasecheck.Mode
		pr         leasecheck.PullRequest
		lease      *leasecheck.Lease
		conclusion string
		comment    bool
		close      bool
		text       string
	}{
		{"leased", leasecheck.Checks, pr, lease, "success", false, false, "held by Builder | claude's active work lease tl_1 on task_3"},
		{"leased, close mode", leasecheck.Close, pr, lease, "success", false, false, "task_3"},
		{"no lease", leasecheck.Checks, pr, nil, "failure", false, false, `No active work lease holds branch "letagents/task_3/builder"`},
		{"no lease, flag", leasecheck.Flag, pr, nil, "failure", true, false, "No active work lease"},
		{"no lease, close", leasecheck.Close, pr, nil, "failure", true, true, "No active work lease"},
		{"default branch, leased", leasecheck.Checks, onDefault, lease, "failure", false, false, `head branch "trunk" is protected`},
	}
	for _, tt := range tests {
		p, ok := leasecheck.Decide(tt.mode, tt.pr, tt.lease)
		if !ok {
			t.Fatalf("%s: no plan", tt.name)
		}
		r := p.Run
		if r.Name != letagents.LeaseCheckName || r.HeadSHA != "abc" || r.Conclusion != tt.conclusion || r.DetailsURL != pr.DetailsURL ||
			!strings.Contains(r.Text, tt.text) || !strings.Contains(r.Summary, tt.text) || (p.Comment != "") != tt.comment || p.Close != tt.close {
			t.Errorf("%s: plan %+v", tt.name, p)
		}
	}
	if _, ok := leasecheck.Decide(leasecheck.Off, pr, nil); ok {
		t.Error("mode off made a plan")
	}
}

// writer records what Publish writes, failing where told.
type writer struct {
	calls []string
	fail  string
}

func (w *writer) do(what string) error {
	w.calls = append(w.calls, what)
	if what == w.fail {
		return errors.New("GitHub refused " + what)
	}
	return nil
}

func (w *writer) CreateCheckRun(context.Context, int64, string, github.CheckRun) error {
	return w.do("check")
}
func (w *writer) CommentOnIssue(context.Context, int64, string, int64, string) error {
	return w.do("comment")
}
func (w *writer) ClosePullRequest(context.Context, int64, string, int64) error { return w.do("close") }

// Publish writes the check, then the comment, then closes; it stops at
// the first thing GitHub refuses, and writes no check without a commit.
func TestPublish(t *testing.T) {
	t.Parallel()
	pr := leasecheck.PullRequest{Repo: "acme/widgets", Number: 12, HeadRef: "x", HeadSHA: "abc"}
	noSHA := pr
	noSHA.HeadSHA = ""
	tests := []struct {
		name, fail string
		pr         leasecheck.PullRequest
		want       string
	}{
		{"all", "", pr, "check comment close"},
		{"check refused", "check", pr, "check"},
		{"comment refused", "comment", pr, "check comment"},
		{"no head commit", "", noSHA, "comment close"},
	}
	for _, tt := range tests {
		p, _ := leasecheck.Decide(leasecheck.Close, tt.pr, nil)
		w := &writer{fail: tt.fail}
		err := p.Publish(context.Background(), w, 77, tt.pr)
		if got := strings.Join(w.calls, " "); got != tt.want || (err != nil) != (tt.fail != "") {
			t.Errorf("%s: wrote %q, err %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
