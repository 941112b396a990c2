package letagents

import (
	"encoding/json"
	"time"
)

// MaxWebhookBytes is the largest GitHub webhook delivery taken (413 above
// it): GitHub itself sends none larger (it drops a payload past 25 MB).
const MaxWebhookBytes = 25 << 20

// LeaseCheckName is the check run the GitHub App writes on each pull
// request's head commit, as the original names it: success when the PR's
// branch holds an active work lease, failure otherwise. Branch protection
// can require it.
const LeaseCheckName = "letagents-lease"

// GitHub event types, as the original names them (event_type): one per
// kind of change a room hears of. A push to the default branch is "push";
// a check suite is "check_suite".
const (
	GitHubPullRequest       = "pull_request"
	GitHubPullRequestReview = "pull_request_review"
	GitHubIssueComment      = "issue_comment"
	GitHubCheckRun          = "check_run"
	GitHubCheckSuite        = "check_suite"
	GitHubPush              = "push"
)

// GitHubEvent is one change on GitHub that a repository's room heard of
// through a webhook delivery, with what GET /rooms/{room}/events lists of
// it. Repo is the repository's owner/name as GitHub spells it now; Branch
// the branch it happened on (a PR's head branch, a check's or a push's
// branch), "" when none. Line is the sentence that announces it.
type GitHubEvent struct {
	ID         int64           `db:"id"`
	RoomID     string          `db:"room_id"` // the repo room
	DeliveryID string          `db:"delivery_id"`
	EventType  string          `db:"event_type"`
	Action     string          `db:"action"`
	ObjectID   string          `db:"github_object_id"`
	ObjectURL  string          `db:"github_object_url"`
	Title      string          `db:"title"`
	State      string          `db:"state"`
	Actor      string          `db:"actor_login"`
	Branch     string          `db:"branch"`
	Metadata   json.RawMessage `db:"metadata"`
	LinkedTask string          `db:"linked_task_id"`
	CreatedAt  time.Time       `db:"created_at"`
	Line       string          `db:"-"`
}
