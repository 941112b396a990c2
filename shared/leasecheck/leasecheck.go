// Package leasecheck decides the letagents-lease check of a pull request
// (issue 24): success when the PR's head branch holds an active work
// lease in its room, failure with the reason otherwise, and, by the
// enforcement mode, a comment on the PR or its closing, as the
// original's github-lease-enforcement does. It writes through any
// Writer (the GitHub App client) and does no other I/O.
package leasecheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/letagents"
)

// Mode is how hard a missing lease is enforced
// (LETAGENTS_GITHUB_ENFORCEMENT_MODE, the original's variable).
type Mode string

// The modes, as the original's: Off writes nothing; Checks the check
// run only (the default); Flag also comments on a PR that fails it;
// Close also closes that PR.
const (
	Off    Mode = "off"
	Checks Mode = "checks"
	Flag   Mode = "flag"
	Close  Mode = "close"
)

// ParseMode reads a mode; "" is Checks, as the original's default.
func ParseMode(v string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(v))); m {
	case "":
		return Checks, nil
	case Off, Checks, Flag, Close:
		return m, nil
	}
	return "", fmt.Errorf("want off, checks, flag or close, not %q", v)
}

// protectedBranches are never leased, whatever the repository's default
// branch (which is never leased either): the original's list.
var protectedBranches = map[string]bool{"main": true, "master": true, "staging": true, "production": true}

// Protected says whether branch is one no lease holds: a protected name
// or the repository's default branch.
func Protected(branch, defaultBranch string) bool {
	b := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(branch), "refs/heads/"))
	return protectedBranches[b] || (defaultBranch != "" && strings.EqualFold(b, defaultBranch))
}

// evaluated are the pull_request actions that move a PR's head or
// reopen it: each is checked, and in Close mode may close the PR.
var evaluated = map[string]bool{"opened": true, "reopened": true, "synchronize": true, "ready_for_review": true}

// Evaluated says whether a pull_request action gets the check.
func Evaluated(action string) bool { return evaluated[action] }

// PullRequest is the PR a check is decided for.
type PullRequest struct {
	Repo          string // owner/name
	RoomID        string // its repo room
	Number        int64
	HeadRef       string
	HeadSHA       string
	DefaultBranch string
	DetailsURL    string // the room's page, "" for none
}

// Lease is the active work lease on the PR's head branch.
type Lease struct {
	ID     string
	Task   string // task_N
	Holder string // actor label
}

// Plan is what to write on GitHub for one PR.
type Plan struct {
	Run     github.CheckRun
	Comment string // "" for none
	Close   bool
}

// Decide is the plan for a PR in mode m, given the lease on its branch
// (nil for none); ok is false in mode Off.
func Decide(m Mode, pr PullRequest, lease *Lease) (Plan, bool) {
	if m == Off {
		return Plan{}, false
	}
	var reason string
	switch {
	case Protected(pr.HeadRef, pr.DefaultBranch):
		reason = fmt.Sprintf("PR #%d's head branch %q is protected: no lease ever holds it. Work on a task's own branch, leased in %s.",
			pr.Number, pr.HeadRef, pr.RoomID)
	case lease == nil:
		reason = fmt.Sprintf("No active work lease holds branch %q in %s. Claim the task the PR is for, with this branch, before pushing to it.",
			pr.HeadRef, pr.RoomID)
	}
	run := github.CheckRun{Name: letagents.LeaseCheckName, HeadSHA: pr.HeadSHA, DetailsURL: pr.DetailsURL}
	if reason == "" {
		run.Conclusion, run.Title = "success", "LetAgents lease verified"
		run.Text = fmt.Sprintf("Branch %q is held by %s's active work lease %s on %s.", pr.HeadRef, lease.Holder, lease.ID, lease.Task)
		run.Summary = run.Text + " Requiring the " + letagents.LeaseCheckName + " check keeps merges to leased work."
		return Plan{Run: run}, true
	}
	run.Conclusion, run.Title, run.Summary, run.Text = "failure", "LetAgents lease required", reason, reason
	p := Plan{Run: run}
	if m == Flag || m == Close {
		p.Comment = strings.Join([]string{"LetAgents could not verify an active work lease for this pull request.", "", reason, "",
			"Required check: `" + letagents.LeaseCheckName + "`"}, "\n")
	}
	p.Close = m == Close
	return p, true
}

// Writer writes on GitHub as the App's installation.
type Writer interface {
	CreateCheckRun(ctx context.Context, inst int64, repo string, run github.CheckRun) error
	CommentOnIssue(ctx context.Context, inst int64, repo string, number int64, text string) error
	ClosePullRequest(ctx context.Context, inst int64, repo string, number int64) error
}

// Publish writes the plan on the PR as installation inst: the check run
// (when the PR names its head commit), then the comment, then the close.
func (p Plan) Publish(ctx context.Context, w Writer, inst int64, pr PullRequest) error {
	if p.Run.HeadSHA != "" {
		if err := w.CreateCheckRun(ctx, inst, pr.Repo, p.Run); err != nil {
			return err
		}
	}
	if p.Comment != "" {
		if err := w.CommentOnIssue(ctx, inst, pr.Repo, pr.Number, p.Comment); err != nil {
			return err
		}
	}
	if p.Close {
		return w.ClosePullRequest(ctx, inst, pr.Repo, pr.Number)
	}
	return nil
}
