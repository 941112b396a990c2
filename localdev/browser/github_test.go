package browser_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// hookSecret signs the test's webhook deliveries (GITHUB_WEBHOOK_SECRET).
const hookSecret = "browser-webhook-secret"

// deliver sends a GitHub webhook delivery to the runner, signed as GitHub
// signs it, and checks it was processed.
func (r *runner) deliver(event, id string, payload map[string]any) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	req, _, err := githubtest.Delivery(ctx, r.URL+"/webhooks/github", hookSecret, event, id, payload)
	if err != nil {
		r.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("deliver %s: %v", id, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		r.t.Fatalf("deliver %s = %d, want 202", id, resp.StatusCode)
	}
}

// ghCards describes the GitHub cards of the log, one line each: kind |
// subject | link | details, for a failure message and the checks.
const ghCards = `[...document.querySelectorAll("#log li.gh-event")].map(li => [
	li.querySelector(".gh-kind").textContent, li.querySelector(".gh-subject").textContent,
	li.querySelector("a.gh-subject") ? li.querySelector("a.gh-subject").href + " " + li.querySelector("a.gh-subject").rel +
		" " + li.querySelector("a.gh-subject").target : "no link",
	(li.querySelector(".gh-details") || {}).textContent || ""].join(" | "))`

// TestGitHubEventsOnPage: a signed webhook delivery makes its event's
// card appear live in an open room page, in place of the status line
// that announces it (shown once); a reload shows the cards from the
// history, and a page on the long-poll gets it too. A card links to
// GitHub only with a safe link, shows the payload's words as text, stays
// when status lines are hidden, and passes axe in light and dark.
func TestGitHubEventsOnPage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	// One stream per room: the first tab's; the others long-poll.
	r := startRunner(t, "GITHUB_WEBHOOK_SECRET="+hookSecret, "LETAGENTS_STREAM_ROOM_MAX=1")
	const repo, room = "acme/widgets", "github.com/acme/widgets"
	r.join(room)
	r.send(room, "Builder | ada's agent | Codex", "Opening the PR now.")
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)

	pr := githubtest.PR{Number: 12, Title: "Add widgets", Author: "alice", Head: "feature/x", HeadSHA: "abc123"}
	r.deliver("pull_request", "d-opened", githubtest.PullRequestEvent(repo, "opened", "alice", pr))
	b.until("the PR's card, live", `document.querySelectorAll("#log li.gh-event").length === 1`)
	r.deliver("check_run", "d-check", githubtest.CheckRunEvent(repo, 555, "test", "failure", "feature/x", "abc123"))
	b.until("the check's card, live", `document.querySelectorAll("#log li.gh-event").length === 2`)
	// A payload of markup and a link that is not GitHub's.
	hostile := githubtest.PullRequestEvent(repo, "opened", "mallory", githubtest.PR{Number: 13, Title: `<img src=x onerror="window.__pwned=1">`,
		Author: "mallory", Head: "evil"})
	hostile["pull_request"].(map[string]any)["html_url"] = "javascript:window.__pwned=2"
	r.deliver("pull_request", "d-hostile", hostile)
	b.until("the hostile PR's card", `document.querySelectorAll("#log li.gh-event").length === 3`)

	want := []string{
		"Pull request opened | #12 Add widgets | https://github.com/acme/widgets/pull/12 noopener noreferrer _blank | by alice · open · feature/x",
		"Check failed | test | https://github.com/acme/widgets/runs/555 noopener noreferrer _blank | by github-actions[bot] · failure · feature/x",
		`Pull request opened | #13 <img src=x onerror="window.__pwned=1"> | no link | by mallory · open · evil`,
	}
	check := func(b *tab, when string) {
		t.Helper()
		got := eval[[]string](b, ghCards)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: the cards are\n\t%s\nwant\n\t%s", when, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
		}
		// Each event shows once: its line is its card, never a line beside
		// it. The failing check, on a branch no lease holds, also opened
		// its follow-up task, whose line is the log's one status line.
		if n := eval[int](b, `document.querySelectorAll("#log li.msg").length`); n != 5 {
			t.Errorf("%s: the log shows %d items, want 5 (a message, three cards and the follow-up task's line)", when, n)
		}
		if eval[bool](b, `!!document.querySelector("#log img") || "__pwned" in window`) {
			t.Errorf("%s: a payload's markup ran", when)
		}
		if lines := eval[[]string](b, `[...document.querySelectorAll("#log li.status-line")].map(li => li.textContent)`); len(lines) != 1 ||
			!strings.Contains(lines[0], "Fix CI: test") {
			t.Errorf("%s: status lines %q, want the follow-up task's alone (a card shows as a line too?)", when, lines)
		}
		if eval[bool](b, `!document.querySelector("#log li.gh-event.bad .gh-state.bad")`) {
			t.Errorf("%s: the failed check is not marked failing", when)
		}
	}
	check(b, "live")

	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			c := newTab(t)
			c.scheme(scheme)
			c.open(r.URL + "/in/" + roomPath(room))
			c.until("the cards from the history", `document.querySelectorAll("#log li.gh-event").length === 3 &&
				document.getElementById("log").getAttribute("aria-busy") === "false"`)
			c.until("the room's stylesheets applied", stylesApplied)
			check(c, "reloaded, "+scheme)
			// A card is one message of the list for the keyboard: ↓ from the
			// message before reaches it, and its link is a tab stop.
			c.do("focus the first message", chromedp.Focus(chromedp.CSS(`#msg_1`)))
			c.do("↓", chromedp.KeyEvent(kb.ArrowDown))
			if got := eval[string](c, `document.activeElement.className + " " + document.activeElement.id`); !strings.HasPrefix(got, "msg gh-event") {
				t.Errorf("↓ from msg_1 focused %q, want the PR's card", got)
			}
			axeCheck(c, "room with GitHub cards, "+scheme)
			c.screenshot("github-" + scheme)
		})
	}

	// The long-poll brings the line alone: the page reads its event from
	// GET …/events and draws the card. Hiding status lines leaves cards.
	p := newTab(t)
	p.open(r.URL + "/in/" + roomPath(room))
	p.until("the long-poll", `document.getElementById("status").dataset.via === "poll" &&
		document.querySelectorAll("#log li.gh-event").length === 3`)
	merged := pr
	merged.Merged, merged.MergedBy = true, "bob"
	r.deliver("pull_request", "d-merged", githubtest.PullRequestEvent(repo, "closed", "bob", merged))
	for _, page := range []*tab{b, p} {
		page.until("the merge's card", `(li => li && li.classList.contains("gh-event") && li.classList.contains("ok") &&
			li.querySelector(".gh-kind").textContent === "Pull request merged")(document.querySelector("#log li.msg:last-child"))`)
	}
	p.do("hide status lines", chromedp.Click(chromedp.CSS(`#show-status`)))
	if n := eval[int](p, `[...document.querySelectorAll("#log li.gh-event")].filter(li => li.getClientRects().length).length`); n != 4 {
		t.Errorf("with status lines hidden, %d cards show, want 4", n)
	}
}
