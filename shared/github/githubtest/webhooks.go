package githubtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/letagents/letagents-go/shared/githubhook"
)

// The fake's side of webhooks: payloads shaped as GitHub sends them (the
// fields the service reads, and a few it does not), and deliveries signed
// as GitHub signs them.

// PR is a pull request as a payload shows it.
type PR struct {
	Number              int64
	Title, Body, Author string
	Head, HeadSHA, Base string
	Draft, Merged       bool
	MergedBy            string
	State               string // "" is open, or closed when Merged
}

func (pr PR) payload(repo string) map[string]any {
	state := pr.State
	if state == "" {
		state = "open"
		if pr.Merged {
			state = "closed"
		}
	}
	p := map[string]any{"number": pr.Number, "title": pr.Title, "body": pr.Body, "state": state, "draft": pr.Draft,
		"merged": pr.Merged, "html_url": fmt.Sprintf("https://github.com/%s/pull/%d", repo, pr.Number),
		"user": map[string]any{"login": pr.Author, "type": "User"},
		"head": map[string]any{"ref": pr.Head, "sha": pr.HeadSHA}, "base": map[string]any{"ref": or(pr.Base, "main")}}
	if pr.MergedBy != "" {
		p["merged_by"] = map[string]any{"login": pr.MergedBy}
	}
	return p
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func repository(repo string) map[string]any {
	return map[string]any{"id": 5001, "full_name": repo, "name": repo, "html_url": "https://github.com/" + repo,
		"default_branch": "main", "private": false}
}

// PullRequestEvent is a pull_request delivery's payload.
func PullRequestEvent(repo, action, sender string, pr PR) map[string]any {
	return map[string]any{"action": action, "number": pr.Number, "pull_request": pr.payload(repo), "repository": repository(repo),
		"sender": map[string]any{"login": sender}, "installation": map[string]any{"id": 77}}
}

// ReviewEvent is a pull_request_review delivery's payload (state:
// approved, changes_requested, commented).
func ReviewEvent(repo, action, reviewer, state string, pr PR) map[string]any {
	return map[string]any{"action": action, "pull_request": pr.payload(repo), "repository": repository(repo),
		"sender": map[string]any{"login": reviewer},
		"review": map[string]any{"id": 9000 + pr.Number, "state": state, "body": "", "user": map[string]any{"login": reviewer},
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d#pullrequestreview-%d", repo, pr.Number, 9000+pr.Number)}}
}

// CommentEvent is an issue_comment delivery's payload, on a pull request
// when onPR, else on an issue.
func CommentEvent(repo, commenter, body string, number int64, onPR bool) map[string]any {
	issue := map[string]any{"number": number, "title": fmt.Sprintf("Item %d", number), "state": "open",
		"html_url": fmt.Sprintf("https://github.com/%s/issues/%d", repo, number)}
	if onPR {
		issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", repo, number)}
	}
	return map[string]any{"action": "created", "issue": issue, "repository": repository(repo), "sender": map[string]any{"login": commenter},
		"comment": map[string]any{"id": 7000 + number, "body": body, "user": map[string]any{"login": commenter},
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d#issuecomment-%d", repo, number, 7000+number)}}
}

// CheckRunEvent is a completed check_run delivery's payload.
func CheckRunEvent(repo string, id int64, name, conclusion, branch, sha string) map[string]any {
	return map[string]any{"action": "completed", "repository": repository(repo), "sender": map[string]any{"login": "github-actions[bot]"},
		"check_run": map[string]any{"id": id, "name": name, "status": "completed", "conclusion": conclusion, "head_sha": sha,
			"html_url": fmt.Sprintf("https://github.com/%s/runs/%d", repo, id), "app": map[string]any{"slug": "github-actions", "name": "GitHub Actions"},
			"check_suite": map[string]any{"head_branch": branch}, "pull_requests": []any{}}}
}

// CheckSuiteEvent is a completed check_suite delivery's payload.
func CheckSuiteEvent(repo string, id int64, conclusion, branch, sha string) map[string]any {
	return map[string]any{"action": "completed", "repository": repository(repo), "sender": map[string]any{"login": "github-actions[bot]"},
		"check_suite": map[string]any{"id": id, "status": "completed", "conclusion": conclusion, "head_sha": sha, "head_branch": branch,
			"app": map[string]any{"slug": "github-actions", "name": "GitHub Actions"}, "pull_requests": []any{}}}
}

// PushEvent is a push delivery's payload: commits (their messages,
// newest last) pushed to branch of a repository whose default is main.
func PushEvent(repo, branch, pusher, after string, messages ...string) map[string]any {
	commits := []any{}
	for _, m := range messages {
		commits = append(commits, map[string]any{"message": m})
	}
	p := map[string]any{"ref": "refs/heads/" + branch, "before": "0000000", "after": after, "deleted": false, "commits": commits,
		"compare": fmt.Sprintf("https://github.com/%s/compare/0000000...%s", repo, after), "repository": repository(repo),
		"pusher": map[string]any{"name": pusher}, "sender": map[string]any{"login": pusher}}
	if len(messages) > 0 {
		p["head_commit"] = map[string]any{"message": messages[len(messages)-1]}
	}
	return p
}

// Delivery is a webhook delivery as GitHub sends it to url: the payload's
// JSON, signed with secret, with the event name and delivery id headers.
func Delivery(ctx context.Context, url, secret, event, id string, payload any) (*http.Request, []byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, nil, fmt.Errorf("encode payload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("new delivery: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/fake")
	req.Header.Set(githubhook.HeaderEvent, event)
	req.Header.Set(githubhook.HeaderDelivery, id)
	req.Header.Set(githubhook.HeaderSignature, githubhook.Sign([]byte(secret), body))
	return req, body, nil
}
