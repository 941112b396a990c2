package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/githubhook"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

const hookSecret = "webhook-test-secret"

// newHookEnv is an env that takes GitHub's webhooks, with the repo room
// github.com/acme/widgets open.
func newHookEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, map[string]string{"GITHUB_WEBHOOK_SECRET": hookSecret})
	e.join(t, "github.com/acme/widgets")
	return e
}

// deliver sends a delivery signed as GitHub signs it.
func (e *env) deliver(t *testing.T, event, id string, payload any) reply {
	t.Helper()
	req, _, err := githubtest.Delivery(context.Background(), e.url+"/webhooks/github", hookSecret, event, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	return e.send2(t, req)
}

// send2 sends a prepared request and decodes its JSON answer.
func (e *env) send2(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &r.obj); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, raw)
	}
	return r
}

// githubEvents lists a room's GitHub events (GET …/events with query).
func (e *env) githubEvents(t *testing.T, room, query string) wire.RoomEvents {
	t.Helper()
	r := e.call(t, http.MethodGet, "/rooms/"+room+"/events"+query, "").want(t, 200, "")
	var out wire.RoomEvents
	if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// systemLines are the texts of a room's status lines.
func (e *env) systemLines(t *testing.T, room string) []string {
	t.Helper()
	var out []string
	for _, m := range e.statusLines(t, room) {
		out = append(out, m["text"].(string))
	}
	return out
}

// statusLines are a room's status lines, as GET …/messages has them.
func (e *env) statusLines(t *testing.T, room string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range e.call(t, http.MethodGet, "/rooms/"+room+"/messages", "").want(t, 200, "").messages(t) {
		if m["source"] == letagents.SourceSystem {
			out = append(out, m)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Every kind of change a room follows is listed by GET …/events with
// GitHub's object id, URL, title, state and actor, and announced in one
// status line; a PR's change also reaches the room of its head branch.
func TestGitHubWebhookEvents(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	const repo = "acme/widgets"
	branchRoom, err := rooms.BranchRoomID("github.com/"+repo, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	e.join(t, branchRoom)
	pr := githubtest.PR{Number: 12, Title: "Add widgets", Author: "alice", Head: "feature/x", HeadSHA: "abc123"}
	merged := pr
	merged.Merged, merged.MergedBy = true, "bob"
	tests := []struct {
		name, event                          string
		payload                              map[string]any
		wantType, wantAction, wantObject     string
		wantURL, wantTitle, wantState, actor string
		line                                 string
		inBranch                             bool
	}{
		{"opened", "pull_request", githubtest.PullRequestEvent(repo, "opened", "alice", pr), "pull_request", "opened", "12",
			"https://github.com/acme/widgets/pull/12", "Add widgets", "open", "alice",
			"alice opened pull request #12 “Add widgets” https://github.com/acme/widgets/pull/12", true},
		{"synchronize", "pull_request", githubtest.PullRequestEvent(repo, "synchronize", "alice", pr), "pull_request", "synchronize", "12",
			"https://github.com/acme/widgets/pull/12", "Add widgets", "open", "alice", "alice pushed to pull request #12", true},
		{"ready", "pull_request", githubtest.PullRequestEvent(repo, "ready_for_review", "alice", pr), "pull_request", "ready_for_review",
			"12", "https://github.com/acme/widgets/pull/12", "Add widgets", "open", "alice", "alice marked ready for review pull request #12", true},
		{"review", "pull_request_review", githubtest.ReviewEvent(repo, "submitted", "carol", "APPROVED", pr), "pull_request_review",
			"submitted", "12", "https://github.com/acme/widgets/pull/12#pullrequestreview-9012", "Add widgets", "approved", "carol",
			"carol approved pull request #12 “Add widgets”", true},
		{"changes requested", "pull_request_review", githubtest.ReviewEvent(repo, "submitted", "carol", "CHANGES_REQUESTED", pr),
			"pull_request_review", "submitted", "12", "https://github.com/acme/widgets/pull/12#pullrequestreview-9012", "Add widgets",
			"changes_requested", "carol", "carol requested changes on pull request #12", true},
		{"comment on PR", "issue_comment", githubtest.CommentEvent(repo, "dave", "looks good", 12, true), "issue_comment", "created", "12",
			"https://github.com/acme/widgets/pull/12#issuecomment-7012", "Item 12", "open", "dave", "dave commented on pull request #12", true},
		{"check run failed", "check_run", githubtest.CheckRunEvent(repo, 555, "test", "failure", "feature/x", "abc123"), "check_run",
			"completed", "555", "https://github.com/acme/widgets/runs/555", "test", "failure", "github-actions[bot]",
			"check “test” failed on feature/x: failure https://github.com/acme/widgets/runs/555", true},
		{"check suite passed", "check_suite", githubtest.CheckSuiteEvent(repo, 556, "success", "feature/x", "abc123"), "check_suite",
			"completed", "556", "https://github.com/acme/widgets/commit/abc123/checks", "GitHub Actions", "success", "github-actions[bot]",
			"check suite “GitHub Actions” passed on feature/x", true},
		{"merged", "pull_request", githubtest.PullRequestEvent(repo, "closed", "bob", merged), "pull_request", "closed", "12",
			"https://github.com/acme/widgets/pull/12", "Add widgets", "merged", "bob", "bob merged pull request #12 “Add widgets”", true},
		{"push to default", "push", githubtest.PushEvent(repo, "main", "alice", "def456", "one", "Merge widgets"), "push", "pushed",
			"def456", "https://github.com/acme/widgets/compare/0000000...def456", "Merge widgets", "pushed", "alice",
			"alice pushed 2 commits to main “Merge widgets”", false},
	}
	for i, tt := range tests {
		id := fmt.Sprintf("delivery-%d", i)
		ans := e.deliver(t, tt.event, id, tt.payload).want(t, 202, "")
		if ans.obj["ok"] != true || ans.str("status") != "processed" || ans.str("event_id") == "" {
			t.Fatalf("%s: answer %s", tt.name, ans.raw)
		}
		list := e.githubEvents(t, "github.com/acme/widgets", "?limit=1")
		if len(list.Events) != 1 || !list.HasMore && i > 0 {
			t.Fatalf("%s: events %+v", tt.name, list)
		}
		got := list.Events[0]
		if got.ID != ans.str("event_id") || got.EventType != tt.wantType || got.Action != tt.wantAction ||
			deref(got.ObjectID) != tt.wantObject || deref(got.ObjectURL) != tt.wantURL || deref(got.Title) != tt.wantTitle ||
			deref(got.State) != tt.wantState || deref(got.ActorLogin) != tt.actor || !isTimestamp(got.CreatedAt) {
			t.Errorf("%s: event %+v (object %q url %q title %q state %q actor %q)", tt.name, got, deref(got.ObjectID), deref(got.ObjectURL),
				deref(got.Title), deref(got.State), deref(got.ActorLogin))
		}
		lines := e.systemLines(t, "github.com/acme/widgets")
		if len(lines) != i+1 || !strings.Contains(lines[i], tt.line) || strings.Contains(lines[i], "\n") {
			t.Errorf("%s: status lines %q, want the last to say %q", tt.name, lines, tt.line)
		}
		// Each line names the event it announces, so the page draws one card.
		if last := e.statusLines(t, "github.com/acme/widgets")[i]; last["github_event_id"] != got.ID {
			t.Errorf("%s: the line names event %v, want %s", tt.name, last["github_event_id"], got.ID)
		}
		branchLines := e.statusLines(t, branchRoom)
		has := len(branchLines) > 0 && strings.Contains(branchLines[len(branchLines)-1]["text"].(string), tt.line)
		if has != tt.inBranch {
			t.Errorf("%s: branch room's lines %v; announced there: %v, want %v", tt.name, branchLines, has, tt.inBranch)
		}
		if has && branchLines[len(branchLines)-1]["github_event_id"] != got.ID {
			t.Errorf("%s: the branch room's line names event %v, want %s", tt.name, branchLines[len(branchLines)-1]["github_event_id"], got.ID)
		}
	}
	// A branch room lists its repository's events, as the original does.
	if b := e.githubEvents(t, branchRoom, ""); b.GitHubRoomID != "github.com/acme/widgets" || len(b.Events) != len(tests) {
		t.Errorf("branch room's events: github_room_id %q, %d events, want %d", b.GitHubRoomID, len(b.Events), len(tests))
	}
}

// Changes a room does not follow are recorded as ignored, announced
// nowhere, and answered 202 so that GitHub does not retry them.
func TestGitHubWebhookIgnored(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	pr := githubtest.PR{Number: 3, Title: "t", Author: "a", Head: "x", HeadSHA: "1"}
	tests := []struct {
		name, event string
		payload     any
	}{
		{"labeled PR", "pull_request", githubtest.PullRequestEvent("acme/widgets", "labeled", "a", pr)},
		{"comment on an issue", "issue_comment", githubtest.CommentEvent("acme/widgets", "a", "hi", 4, false)},
		{"push to a branch", "push", githubtest.PushEvent("acme/widgets", "feature", "a", "abc", "wip")},
		{"check in progress", "check_run", map[string]any{"action": "created", "repository": map[string]any{"full_name": "acme/widgets"},
			"check_run": map[string]any{"id": 1, "name": "x"}}},
		{"ping", "ping", map[string]any{"zen": "Keep it logically awesome.", "hook_id": 1}},
		{"room nobody opened", "pull_request", githubtest.PullRequestEvent("acme/unopened", "opened", "a", pr)},
		{"star", "star", map[string]any{"action": "created", "repository": map[string]any{"full_name": "acme/widgets"}}},
	}
	for i, tt := range tests {
		ans := e.deliver(t, tt.event, fmt.Sprintf("ignored-%d", i), tt.payload).want(t, 202, "")
		if ans.str("status") != "ignored" || ans.str("reason") == "" {
			t.Errorf("%s: answer %s, want ignored with a reason", tt.name, ans.raw)
		}
	}
	if got := e.githubEvents(t, "github.com/acme/widgets", ""); len(got.Events) != 0 {
		t.Errorf("events %+v, want none", got.Events)
	}
	if lines := e.systemLines(t, "github.com/acme/widgets"); len(lines) != 0 {
		t.Errorf("status lines %q, want none", lines)
	}
	// A room nobody opened is not opened by a delivery.
	e.call(t, http.MethodGet, "/rooms/github.com/acme/unopened/events", "").want(t, 404, "")
}

// The signature is checked before the body is read as JSON: a delivery
// whose signature is missing or wrong is refused 401 and leaves nothing,
// and without a secret configured the route answers 503.
func TestGitHubWebhookSignature(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	payload := githubtest.PullRequestEvent("acme/widgets", "opened", "a", githubtest.PR{Number: 1, Title: "t", Head: "x"})
	good, body, err := githubtest.Delivery(context.Background(), e.url+"/webhooks/github", hookSecret, "pull_request", "sig", payload)
	if err != nil {
		t.Fatal(err)
	}
	sig := good.Header.Get(githubhook.HeaderSignature)
	tests := []struct {
		name, signature string
		body            []byte
	}{
		{"missing", "", body},
		{"sha1 form", "sha1=" + strings.TrimPrefix(sig, "sha256="), body},
		{"not hex", "sha256=zz" + sig[9:], body},
		{"truncated", sig[:len(sig)-2], body},
		{"other secret", githubhook.Sign([]byte("other"), body), body},
		{"body changed", sig, append([]byte(" "), body...)},
		{"upper-case prefix", "SHA256=" + strings.TrimPrefix(sig, "sha256="), body},
		{"not JSON, wrongly signed", sig, []byte("{not json")},
	}
	for _, tt := range tests {
		req, _, err := githubtest.Delivery(context.Background(), e.url+"/webhooks/github", hookSecret, "pull_request", "sig-"+tt.name, payload)
		if err != nil {
			t.Fatal(err)
		}
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(string(tt.body))), int64(len(tt.body))
		req.Header.Set(githubhook.HeaderSignature, tt.signature)
		e.send2(t, req).want(t, 401, "Invalid GitHub webhook signature")
	}
	if got := e.githubEvents(t, "github.com/acme/widgets", ""); len(got.Events) != 0 {
		t.Fatalf("a refused delivery logged %+v", got.Events)
	}
	// Signed but no JSON: refused 400, after the signature.
	bad, _, _ := githubtest.Delivery(context.Background(), e.url+"/webhooks/github", hookSecret, "pull_request", "nojson", nil)
	bad.Body, bad.ContentLength = io.NopCloser(strings.NewReader("{not json")), 9
	bad.Header.Set(githubhook.HeaderSignature, githubhook.Sign([]byte(hookSecret), []byte("{not json")))
	e.send2(t, bad).want(t, 400, "not a GitHub webhook payload")
	// No delivery id or event name: 400.
	noID, _, _ := githubtest.Delivery(context.Background(), e.url+"/webhooks/github", hookSecret, "pull_request", "", payload)
	e.send2(t, noID).want(t, 400, "Missing GitHub webhook headers")
	e.send2(t, good).want(t, 202, "")

	off := newEnv(t, nil)
	req, _, _ := githubtest.Delivery(context.Background(), off.url+"/webhooks/github", hookSecret, "pull_request", "off", payload)
	off.send2(t, req).want(t, 503, "not configured")
}

// A body past GitHub's 25 MB is refused 413, whatever it holds: said so
// by its length, or found so as it arrives in chunks.
func TestGitHubWebhookTooLarge(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	for _, length := range []int64{letagents.MaxWebhookBytes + 1, -1} { // -1: chunked, no length said
		req, _, _ := githubtest.Delivery(context.Background(), e.url+"/webhooks/github", hookSecret, "pull_request", "big", nil)
		req.Body = io.NopCloser(io.LimitReader(zeros{}, letagents.MaxWebhookBytes+1))
		req.ContentLength = length
		e.send2(t, req).want(t, 413, "larger than")
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Each delivery is taken once: a repeat, sequential or concurrent, is a
// duplicate (202 {"ok": true, "duplicate": true}) that changes nothing.
func TestGitHubWebhookDuplicates(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	payload := githubtest.PullRequestEvent("acme/widgets", "opened", "a", githubtest.PR{Number: 8, Title: "dup", Head: "x"})
	const n = 6
	var wg sync.WaitGroup
	answers := make([]reply, n)
	for i := range n {
		wg.Go(func() { answers[i] = e.deliver(t, "pull_request", "same-delivery", payload) })
	}
	wg.Wait()
	processed := 0
	for _, a := range answers {
		switch {
		case a.status == 202 && a.obj["duplicate"] == true && a.obj["ok"] == true:
		case a.status == 202 && a.str("status") == "processed":
			processed++
		default:
			t.Errorf("answer %d %s", a.status, a.raw)
		}
	}
	if processed != 1 {
		t.Errorf("%d deliveries processed, want 1", processed)
	}
	again := e.deliver(t, "pull_request", "same-delivery", payload).want(t, 202, "")
	if again.obj["duplicate"] != true || again.str("status") != "processed" {
		t.Errorf("repeat answered %s", again.raw)
	}
	if got := e.githubEvents(t, "github.com/acme/widgets", ""); len(got.Events) != 1 {
		t.Errorf("%d events, want 1", len(got.Events))
	}
	if lines := e.systemLines(t, "github.com/acme/widgets"); len(lines) != 1 {
		t.Errorf("status lines %q, want 1", lines)
	}
	// The same change in a new delivery (GitHub sends a real transition
	// twice, e.g. reopened twice) is a new event.
	e.deliver(t, "pull_request", "other-delivery", payload).want(t, 202, "")
	if got := e.githubEvents(t, "github.com/acme/widgets", ""); len(got.Events) != 2 {
		t.Errorf("%d events after a second delivery, want 2", len(got.Events))
	}
}

// Deliveries out of order (a PR closed before GitHub's delivery of its
// opening arrives) are each taken as they come, with no error; the list
// is in the order they arrived.
func TestGitHubWebhookOutOfOrder(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	pr := githubtest.PR{Number: 5, Title: "late", Author: "a", Head: "late"}
	closed := pr
	closed.State = "closed"
	e.deliver(t, "pull_request", "second", githubtest.PullRequestEvent("acme/widgets", "closed", "a", closed)).want(t, 202, "")
	e.deliver(t, "issue_comment", "third", githubtest.CommentEvent("acme/widgets", "b", "why?", 5, true)).want(t, 202, "")
	e.deliver(t, "pull_request", "first", githubtest.PullRequestEvent("acme/widgets", "opened", "a", pr)).want(t, 202, "")
	got := e.githubEvents(t, "github.com/acme/widgets", "")
	var seen []string
	for _, ev := range got.Events {
		seen = append(seen, ev.Action+"/"+deref(ev.State))
	}
	if strings.Join(seen, " ") != "opened/open created/open closed/closed" {
		t.Errorf("events newest first %q", seen)
	}
	// The comment, whose payload names no branch, took its PR's.
	if deref(got.Events[1].Branch) != "late" {
		t.Errorf("comment's branch %q, want late", deref(got.Events[1].Branch))
	}
}

// GET …/events pages newest first with ?after and takes the original's
// filters; a malformed one is a 400.
func TestGitHubEventsQuery(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	for i := range 5 {
		pr := githubtest.PR{Number: int64(i + 1), Title: fmt.Sprint("pr ", i+1), Head: "b"}
		e.deliver(t, "pull_request", fmt.Sprint("q-", i), githubtest.PullRequestEvent("acme/widgets", "opened", []string{"ann", "bo"}[i%2], pr)).
			want(t, 202, "")
	}
	e.deliver(t, "check_run", "q-check", githubtest.CheckRunEvent("acme/widgets", 9, "lint", "success", "b", "s")).want(t, 202, "")
	page := e.githubEvents(t, "github.com/acme/widgets", "?limit=2&event_type=pull_request")
	if len(page.Events) != 2 || !page.HasMore || deref(page.Events[0].ObjectID) != "5" || deref(page.Events[1].ObjectID) != "4" {
		t.Fatalf("first page %+v", page)
	}
	next := e.githubEvents(t, "github.com/acme/widgets", "?limit=2&event_type=pull_request&after="+page.Events[1].ID)
	if len(next.Events) != 2 || deref(next.Events[0].ObjectID) != "3" {
		t.Errorf("next page %+v", next)
	}
	for q, want := range map[string]int{"?actor=ANN": 3, "?object_id=2": 1, "?event_type=check_run": 1,
		"?since=2000-01-01T00:00:00Z": 6, "?until=2000-01-01T00:00:00Z": 0} {
		if got := e.githubEvents(t, "github.com/acme/widgets", q); len(got.Events) != want {
			t.Errorf("%s: %d events, want %d", q, len(got.Events), want)
		}
	}
	for q, msg := range map[string]string{"?after=12": "after must be an event id", "?since=yesterday": "since must be a time",
		"?until=1": "until must be a time"} {
		e.call(t, http.MethodGet, "/rooms/github.com/acme/widgets/events"+q, "").want(t, 400, msg)
	}
}

// An open event stream carries each change as a github_event, with the
// status line as a message.
func TestGitHubEventsLive(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	s := e.openStream(t, "/rooms/github.com/acme/widgets/messages/stream", nil)
	e.streamsOpen(t, 1)
	pr := githubtest.PR{Number: 30, Title: "Live", Author: "a", Head: "live"}
	ans := e.deliver(t, "pull_request", "live-1", githubtest.PullRequestEvent("acme/widgets", "opened", "a", pr)).want(t, 202, "")
	var gotEvent, gotLine bool
	for !gotEvent || !gotLine {
		ev, data := s.event(t)
		switch ev.name {
		case wire.EventGitHub:
			gotEvent = true
			if data["id"] != ans.str("event_id") || data["event_type"] != "pull_request" || data["title"] != "Live" ||
				data["github_object_url"] != "https://github.com/acme/widgets/pull/30" || data["branch"] != "live" {
				t.Errorf("github_event %s", ev.data)
			}
		case "":
			gotLine = data["source"] == letagents.SourceSystem && strings.Contains(data["text"].(string), "opened pull request #30") &&
				data["github_event_id"] == ans.str("event_id")
		}
	}
}

// A pull request that names a task is attached to it (pr_url, so its
// workflow artefacts) and its events carry linked_task_id; merged, the
// task moves on only as the board allows (here it may not: no review).
// A failing check on a leased branch tells the lease's holder by name.
func TestGitHubLinksTasks(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"GITHUB_WEBHOOK_SECRET": hookSecret, "LETAGENTS_REPO_ACCESS": "open"})
	const room = "github.com/acme/widgets"
	w := e.worker(t, room, "Builder")
	created := e.as(t, w.owner, http.MethodPost, "/rooms/"+room+"/tasks", `{"title": "Ship widgets"}`).want(t, 201, "")
	task := created.str("id")
	pr := githubtest.PR{Number: 40, Title: "Ship widgets (" + task + ")", Author: "ann", Head: "ann/ship", HeadSHA: "1"}
	ans := e.deliver(t, "pull_request", "link-1", githubtest.PullRequestEvent("acme/widgets", "opened", "ann", pr)).want(t, 202, "")
	ev := e.githubEvents(t, room, "").Events[0]
	if ev.ID != ans.str("event_id") || deref(ev.LinkedTaskID) != task {
		t.Errorf("event %+v, want linked to %s", ev, task)
	}
	got := e.as(t, w.owner, http.MethodGet, "/rooms/"+room+"/tasks/"+task, "").want(t, 200, "")
	if got.str("pr_url") != "https://github.com/acme/widgets/pull/40" {
		t.Errorf("task after the PR: %s", got.raw)
	}
	status := got.str("status")
	merged := pr
	merged.Merged = true
	e.deliver(t, "pull_request", "link-2", githubtest.PullRequestEvent("acme/widgets", "closed", "ann", merged)).want(t, 202, "")
	if after := e.as(t, w.owner, http.MethodGet, "/rooms/"+room+"/tasks/"+task, "").want(t, 200, ""); after.str("status") != status {
		t.Errorf("merged without a review: task %s, want it still %s", after.raw, status)
	}

	// The worker claims another task: its lease names a branch.
	second := e.as(t, w.owner, http.MethodPost, "/rooms/"+room+"/tasks", `{"title": "Fix lint"}`).want(t, 201, "").str("id")
	// Accepted as a room admin would (nobody here administers the room).
	if _, err := e.db.Pool.Exec(context.Background(), `UPDATE tasks SET status = 'accepted' WHERE room_id = $1 AND seq = 2`, room); err != nil {
		t.Fatal(err)
	}
	claim := e.as(t, w.owner, http.MethodPatch, "/rooms/"+room+"/tasks/"+second, `{"status": "assigned", `+w.creds()+`}`)
	if claim.status != 200 {
		t.Fatalf("claim = %d %s", claim.status, claim.raw)
	}
	leases, _ := taskOf(claim)["active_leases"].([]any)
	branch := leases[0].(map[string]any)["branch_ref"].(string)
	e.deliver(t, "check_run", "link-3", githubtest.CheckRunEvent("acme/widgets", 77, "lint", "failure", branch, "2")).want(t, 202, "")
	want := "@[" + w.label + "] check “lint” failed on " + branch
	// The holder's notice is no announcement: it names no event, and the
	// page draws it as a line beside the event's card.
	if !slices.ContainsFunc(e.statusLines(t, room), func(m map[string]any) bool {
		l := m["text"].(string)
		return strings.HasPrefix(l, want) && strings.Contains(l, second) && m["github_event_id"] == nil
	}) {
		t.Errorf("status lines %q, want one beginning %q naming %s and no event", e.systemLines(t, room), want, second)
	}
	// A passing check tells nobody.
	n := len(e.systemLines(t, room))
	e.deliver(t, "check_run", "link-4", githubtest.CheckRunEvent("acme/widgets", 78, "lint", "success", branch, "3")).want(t, 202, "")
	if lines := e.systemLines(t, room); len(lines) != n+1 || strings.HasPrefix(lines[n], "@[") {
		t.Errorf("after a passing check: %q", lines[n:])
	}
}
