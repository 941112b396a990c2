// Package githubhook reads GitHub webhook deliveries: it checks a
// delivery's signature and turns the changes a room hears of (pull
// requests, reviews, comments on pull requests, completed checks, pushes
// to the default branch) into letagents.GitHubEvent, with the sentence
// that announces each. It does no I/O.
package githubhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

// Headers GitHub sends with every delivery.
const (
	HeaderSignature = "X-Hub-Signature-256"
	HeaderDelivery  = "X-GitHub-Delivery"
	HeaderEvent     = "X-GitHub-Event"
)

// Verify reports whether header (X-Hub-Signature-256, "sha256=<hex>") is
// the HMAC-SHA256 of body under secret. The comparison takes the same time
// wherever the first wrong byte is, so the answer's timing tells nothing
// of the right signature.
func Verify(secret, body []byte, header string) bool {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign returns the X-Hub-Signature-256 of body under secret, as GitHub
// writes it: for the fake GitHub and tests.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Delivery is what one delivery says: its repository's room (RoomID, ""
// when it names no repository, such as an installation's), its action,
// and the change the room hears of (Event, nil when it is none the room
// is told of: an action or kind this service does not follow).
type Delivery struct {
	RoomID         string
	Repo           string
	Action         string
	InstallationID int64
	Event          *letagents.GitHubEvent
	// RepoID and DefaultBranch are the repository's, when it names one.
	RepoID        int64
	DefaultBranch string
	// Installation is what an installation or installation_repositories
	// delivery changes of the GitHub App's reach (nil for other kinds).
	Installation *InstallationChange
	// PullRequest is a pull_request delivery's PR (nil for other kinds).
	PullRequest *PullRequestHead
}

// PullRequestHead is a pull request and the commit its branch is at.
type PullRequestHead struct {
	Number   int64
	Ref, SHA string
}

// Parse reads a delivery of the event name (X-GitHub-Event). An error
// says the body is no JSON object GitHub would send (400); a kind or
// action this service does not follow is a Delivery with no Event.
func Parse(eventName string, body []byte) (Delivery, error) {
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return Delivery{}, fmt.Errorf("the body is not a GitHub webhook payload: %w", err)
	}
	d := Delivery{Action: p.Action, InstallationID: p.Installation.ID}
	var err error
	if d.Installation, err = p.installationChange(eventName); err != nil {
		return d, err
	}
	if p.Repository.FullName == "" {
		return d, nil
	}
	room, err := rooms.Normalize("github.com/" + p.Repository.FullName)
	if err != nil || !rooms.IsRepoLocator(room) {
		return d, fmt.Errorf("repository.full_name %q is not owner/repo", p.Repository.FullName)
	}
	d.RoomID, d.Repo, d.RepoID, d.DefaultBranch = room, p.Repository.FullName, p.Repository.ID, p.Repository.DefaultBranch
	if pr := p.PullRequest; eventName == letagents.GitHubPullRequest && pr != nil && pr.Number > 0 {
		d.PullRequest = &PullRequestHead{Number: pr.Number, Ref: pr.Head.Ref, SHA: pr.Head.SHA}
	}
	d.Event = p.event(eventName)
	if d.Event != nil {
		// One line, whatever GitHub's titles and messages hold.
		d.Event.RoomID, d.Event.Line = room, strings.Join(strings.Fields(d.Event.Line), " ")
	}
	return d, nil
}

// The parts of GitHub's payloads read here; GitHub sends much more.
type (
	user struct {
		Login string `json:"login"`
	}
	pullRequest struct {
		Number  int64  `json:"number"`
		Title   string `json:"title"`
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
		State   string `json:"state"`
		Draft   bool   `json:"draft"`
		Merged  bool   `json:"merged"`
		User    user   `json:"user"`
		Head    struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
		MergedBy *user `json:"merged_by"`
	}
	check struct {
		ID         int64  `json:"id"`
		Name       string `json:"name"`
		HTMLURL    string `json:"html_url"`
		HeadSHA    string `json:"head_sha"`
		HeadBranch string `json:"head_branch"`
		Conclusion string `json:"conclusion"`
		App        struct {
			Slug string `json:"slug"`
			Name string `json:"name"`
		} `json:"app"`
		CheckSuite struct {
			HeadBranch string `json:"head_branch"`
		} `json:"check_suite"`
		PullRequests []struct {
			Number int64 `json:"number"`
		} `json:"pull_requests"`
	}
	payload struct {
		Action       string       `json:"action"`
		Installation installation `json:"installation"`
		// An installation's and installation_repositories'.
		Repositories        []repository `json:"repositories"`
		RepositoriesAdded   []repository `json:"repositories_added"`
		RepositoriesRemoved []repository `json:"repositories_removed"`
		Repository          struct {
			ID            int64  `json:"id"`
			FullName      string `json:"full_name"`
			HTMLURL       string `json:"html_url"`
			DefaultBranch string `json:"default_branch"`
		} `json:"repository"`
		Sender      user         `json:"sender"`
		PullRequest *pullRequest `json:"pull_request"`
		Review      *struct {
			ID      int64  `json:"id"`
			State   string `json:"state"`
			Body    string `json:"body"`
			HTMLURL string `json:"html_url"`
			User    user   `json:"user"`
		} `json:"review"`
		Issue *struct {
			Number      int64  `json:"number"`
			Title       string `json:"title"`
			State       string `json:"state"`
			HTMLURL     string `json:"html_url"`
			PullRequest *struct {
				URL string `json:"url"`
			} `json:"pull_request"`
		} `json:"issue"`
		Comment *struct {
			ID      int64  `json:"id"`
			Body    string `json:"body"`
			HTMLURL string `json:"html_url"`
			User    user   `json:"user"`
		} `json:"comment"`
		CheckRun   *check `json:"check_run"`
		CheckSuite *check `json:"check_suite"`
		// A push's.
		Ref        string `json:"ref"`
		Before     string `json:"before"`
		After      string `json:"after"`
		Compare    string `json:"compare"`
		Deleted    bool   `json:"deleted"`
		Commits    []any  `json:"commits"`
		HeadCommit *struct {
			Message string `json:"message"`
		} `json:"head_commit"`
		Pusher struct {
			Name string `json:"name"`
		} `json:"pusher"`
	}
)

// maxBodyChars bounds a PR's, review's or comment's text kept with its
// event: enough to find a task named in it and to show a preview.
const maxBodyChars = 4000

func (p payload) event(name string) *letagents.GitHubEvent {
	switch name {
	case letagents.GitHubPullRequest:
		return p.pullRequestEvent()
	case letagents.GitHubPullRequestReview:
		return p.reviewEvent()
	case letagents.GitHubIssueComment:
		return p.commentEvent()
	case letagents.GitHubCheckRun:
		return p.checkEvent(name, p.CheckRun)
	case letagents.GitHubCheckSuite:
		return p.checkEvent(name, p.CheckSuite)
	case letagents.GitHubPush:
		return p.pushEvent()
	}
	return nil
}

// pullRequestActions are the pull_request actions a room hears of.
var pullRequestActions = map[string]bool{"opened": true, "reopened": true, "ready_for_review": true, "synchronize": true, "closed": true}

func (p payload) pullRequestEvent() *letagents.GitHubEvent {
	pr := p.PullRequest
	if pr == nil || pr.Number <= 0 || !pullRequestActions[p.Action] {
		return nil
	}
	state := pr.State
	switch {
	case pr.Merged:
		state = "merged"
	case state == "" && p.Action == "closed":
		state = "closed"
	case state == "":
		state = "open"
	case state == "open" && pr.Draft:
		state = "draft"
	}
	actor := or(p.Sender.Login, pr.User.Login)
	verb := map[string]string{"opened": "opened", "reopened": "reopened", "ready_for_review": "marked ready for review",
		"synchronize": "pushed to", "closed": "closed"}[p.Action]
	if pr.Merged && p.Action == "closed" {
		verb = "merged"
		if pr.MergedBy != nil && pr.MergedBy.Login != "" {
			actor = pr.MergedBy.Login
		}
	}
	meta := map[string]any{"number": pr.Number, "head_ref": pr.Head.Ref, "head_sha": pr.Head.SHA, "base_ref": pr.Base.Ref,
		"draft": pr.Draft, "merged": pr.Merged, "author_login": pr.User.Login, "body": clip(pr.Body)}
	return &letagents.GitHubEvent{EventType: letagents.GitHubPullRequest, Action: p.Action, ObjectID: fmt.Sprint(pr.Number),
		ObjectURL: pr.HTMLURL, Title: pr.Title, State: state, Actor: actor, Branch: pr.Head.Ref, Metadata: marshal(meta),
		Line: fmt.Sprintf("%s %s pull request #%d %s%s", or(actor, "someone"), verb, pr.Number, quote(pr.Title), link(pr.HTMLURL))}
}

func (p payload) reviewEvent() *letagents.GitHubEvent {
	pr, rv := p.PullRequest, p.Review
	if pr == nil || rv == nil || pr.Number <= 0 || (p.Action != "submitted" && p.Action != "dismissed") {
		return nil
	}
	state := strings.ToLower(rv.State)
	actor := or(rv.User.Login, p.Sender.Login)
	verb := map[string]string{"approved": "approved", "changes_requested": "requested changes on", "commented": "reviewed"}[state]
	if p.Action == "dismissed" {
		state, verb, actor = "dismissed", "dismissed a review of", or(p.Sender.Login, actor)
	}
	if verb == "" {
		verb = "reviewed"
	}
	meta := map[string]any{"number": pr.Number, "review_id": rv.ID, "head_ref": pr.Head.Ref, "body": clip(rv.Body),
		"pull_request_author_login": pr.User.Login}
	return &letagents.GitHubEvent{EventType: letagents.GitHubPullRequestReview, Action: p.Action, ObjectID: fmt.Sprint(pr.Number),
		ObjectURL: rv.HTMLURL, Title: pr.Title, State: state, Actor: actor, Branch: pr.Head.Ref, Metadata: marshal(meta),
		Line: fmt.Sprintf("%s %s pull request #%d %s%s", or(actor, "someone"), verb, pr.Number, quote(pr.Title), link(rv.HTMLURL))}
}

// commentEvent is a comment on a pull request: comments on issues are
// not this room's business (the original follows issues; this service
// does not yet). The payload does not name the PR's branch: the store
// finds it from the PR's earlier events.
func (p payload) commentEvent() *letagents.GitHubEvent {
	is, c := p.Issue, p.Comment
	if is == nil || c == nil || is.PullRequest == nil || is.Number <= 0 || p.Action != "created" {
		return nil
	}
	actor := or(c.User.Login, p.Sender.Login)
	meta := map[string]any{"number": is.Number, "comment_id": c.ID, "body": clip(c.Body), "is_pull_request": true}
	return &letagents.GitHubEvent{EventType: letagents.GitHubIssueComment, Action: p.Action, ObjectID: fmt.Sprint(is.Number),
		ObjectURL: c.HTMLURL, Title: is.Title, State: is.State, Actor: actor, Metadata: marshal(meta),
		Line: fmt.Sprintf("%s commented on pull request #%d %s%s", or(actor, "someone"), is.Number, quote(is.Title), link(c.HTMLURL))}
}

func (p payload) checkEvent(name string, c *check) *letagents.GitHubEvent {
	if c == nil || c.ID <= 0 || p.Action != "completed" {
		return nil
	}
	branch := or(c.HeadBranch, c.CheckSuite.HeadBranch)
	title, url, what := c.Name, c.HTMLURL, "check"
	if name == letagents.GitHubCheckSuite {
		title, what = or(c.App.Name, c.App.Slug, "checks"), "check suite"
		if p.Repository.HTMLURL != "" && c.HeadSHA != "" {
			url = p.Repository.HTMLURL + "/commit/" + c.HeadSHA + "/checks"
		}
	}
	var prs []int64
	for _, pr := range c.PullRequests {
		prs = append(prs, pr.Number)
	}
	conclusion := or(c.Conclusion, "completed")
	meta := map[string]any{"head_sha": c.HeadSHA, "head_branch": branch, "conclusion": conclusion, "app_slug": c.App.Slug,
		"pull_requests": prs}
	on := ""
	if branch != "" {
		on = " on " + branch
	}
	return &letagents.GitHubEvent{EventType: name, Action: p.Action, ObjectID: fmt.Sprint(c.ID), ObjectURL: url, Title: title,
		State: conclusion, Actor: p.Sender.Login, Branch: branch, Metadata: marshal(meta),
		Line: fmt.Sprintf("%s %s %s%s: %s%s", what, quote(title), conclusionVerb(conclusion), on, conclusion, link(url))}
}

// Failing says whether a check's conclusion is a failure its branch's
// holder must hear of.
func Failing(conclusion string) bool {
	switch conclusion {
	case "failure", "timed_out", "action_required", "startup_failure":
		return true
	}
	return false
}

func conclusionVerb(conclusion string) string {
	switch {
	case conclusion == "success":
		return "passed"
	case Failing(conclusion):
		return "failed"
	}
	return "finished"
}

// pushEvent is a push to the default branch (a branch room's pushes are
// its PR's synchronize events); a branch deleted is none.
func (p payload) pushEvent() *letagents.GitHubEvent {
	branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
	if !ok || p.Deleted || p.After == "" || branch != p.Repository.DefaultBranch {
		return nil
	}
	actor := or(p.Sender.Login, p.Pusher.Name)
	title := ""
	if p.HeadCommit != nil {
		title, _, _ = strings.Cut(p.HeadCommit.Message, "\n")
	}
	n := len(p.Commits)
	commits := fmt.Sprintf("%d commits", n)
	if n == 1 {
		commits = "1 commit"
	}
	meta := map[string]any{"ref": p.Ref, "before": p.Before, "after": p.After, "commits": n}
	return &letagents.GitHubEvent{EventType: letagents.GitHubPush, Action: "pushed", ObjectID: p.After, ObjectURL: p.Compare,
		Title: title, State: "pushed", Actor: actor, Metadata: marshal(meta),
		Line: fmt.Sprintf("%s pushed %s to %s %s%s", or(actor, "someone"), commits, branch, quote(title), link(p.Compare))}
}

func or(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func quote(title string) string {
	if title == "" {
		return ""
	}
	return "“" + title + "”"
}

func link(url string) string {
	if url == "" {
		return ""
	}
	return " " + url
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxBodyChars {
		return string(r[:maxBodyChars])
	}
	return s
}

func marshal(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil { // only strings, numbers and booleans: it does not fail
		return json.RawMessage(`{}`)
	}
	return b
}
