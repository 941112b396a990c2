package browser_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/letagents/letagents-go/shared/github/githubtest"
)

// Phone is the viewport the pages are held to on a phone (an iPhone 14's).
const phoneWidth, phoneHeight = 390, 844

// Bounds of the room page's chrome on a phone: the header is one line,
// and the header, the chat's toolbar, the composer and the bottom tabs
// together leave the messages most of the height.
const (
	phoneHeaderMax    = 48  // px (41 measured)
	phoneChromeMax    = 250 // px: header + toolbar + composer + tabs (217 measured)
	phoneMessagesSeen = 6   // short messages fully on screen
)

// TestPhoneLayout opens a room of short messages at 390×844: the header is
// at most phoneHeaderMax px high, the tabs sit at the bottom of the
// screen, and at least phoneMessagesSeen messages are wholly visible in
// the viewport at once (before the design system, 3 were).
func TestPhoneLayout(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "github.com/acme/phone"
	r.join(room)
	for i := range 12 {
		sender := "Builder | ada's agent | Codex"
		if i%3 == 0 {
			sender = "Grace"
		}
		r.send(room, sender, fmt.Sprintf("short message %d", i))
	}
	b := newTab(t)
	b.do("a phone's viewport", chromedp.EmulateViewport(phoneWidth, phoneHeight))
	b.open(r.URL + "/in/" + roomPath(room))
	b.until("the room to be live", `document.getElementById("status").classList.contains("live") &&
		document.querySelectorAll("#log .msg").length === 12`)
	b.until("the stylesheets applied", stylesApplied)

	type box struct{ Top, Bottom, Height float64 }
	measure := func(sel string) box {
		return eval[box](b, `(r => ({Top: r.top, Bottom: r.bottom, Height: r.height}))(document.querySelector(`+jsString(sel)+`).getBoundingClientRect())`)
	}
	header, toolbar, composer, tabs := measure("header"), measure("#chat .toolbar"), measure("#chat .composer-wrap"), measure("#tabs")
	if header.Height > phoneHeaderMax {
		t.Errorf("the header is %.0f px high, want at most %d", header.Height, phoneHeaderMax)
	}
	if chrome := header.Height + toolbar.Height + composer.Height + tabs.Height; chrome > phoneChromeMax {
		t.Errorf("header %.0f + toolbar %.0f + composer %.0f + tabs %.0f = %.0f px, want at most %d",
			header.Height, toolbar.Height, composer.Height, tabs.Height, chrome, phoneChromeMax)
	}
	if tabs.Bottom < phoneHeight-1 || tabs.Bottom > phoneHeight+1 {
		t.Errorf("the tabs end at %.0f px, want at the bottom of the screen (%d)", tabs.Bottom, phoneHeight)
	}
	seen := eval[int](b, `(() => {
		const s = document.getElementById("scroller").getBoundingClientRect();
		const top = Math.max(s.top, 0), bottom = Math.min(s.bottom, innerHeight);
		return [...document.querySelectorAll("#log .msg")].filter(m => {
			const r = m.getBoundingClientRect();
			return r.height > 0 && r.top >= top - 0.5 && r.bottom <= bottom + 0.5;
		}).length;
	})()`)
	if seen < phoneMessagesSeen {
		t.Errorf("%d messages wholly on screen at %d×%d, want at least %d", seen, phoneWidth, phoneHeight, phoneMessagesSeen)
	}
	t.Logf("at %d×%d: header %.0f px, toolbar %.0f, composer %.0f, tabs %.0f; %d messages on screen",
		phoneWidth, phoneHeight, header.Height, toolbar.Height, composer.Height, tabs.Height, seen)

	// The ids and the account stay in reach, behind More.
	if eval[bool](b, `getComputedStyle(document.getElementById("auth")).display !== "none"`) {
		t.Error("the account shows in the one-line header, want it behind More")
	}
	b.press("More", "#more")
	b.until("the ids and the account shown", `document.getElementById("more").getAttribute("aria-expanded") === "true" &&
		getComputedStyle(document.getElementById("auth")).display !== "none" &&
		getComputedStyle(document.getElementById("idline")).display !== "none"`)
}

// TestScreenshots saves a picture of every view (the chat, a thread, the
// board, the people, a search, the landing page, the reference) in both
// themes, wide and on a phone, as artefacts of the run (docs/testing.md
// says where), and holds each to be a PNG with something in it.
func TestScreenshots(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t, "GITHUB_WEBHOOK_SECRET="+hookSecret)
	const room = "github.com/acme/look"
	r.join(room)
	// The chat shows GitHub's cards too: a pull request and its check.
	pr := githubtest.PR{Number: 7, Title: "Wait for the health check", Author: "ada", Head: "deploy-wait", HeadSHA: "f00d"}
	r.deliver("pull_request", "look-pr", githubtest.PullRequestEvent("acme/look", "opened", "ada", pr))
	r.deliver("check_run", "look-check", githubtest.CheckRunEvent("acme/look", 70, "test", "success", "deploy-wait", "f00d"))
	root := r.send(room, "Builder | ada's agent | Codex", "Merged **#12**: the deploy script now waits for the health check.\n\n```go\nfunc main() { fmt.Println(\"hi\") }\n```")
	r.send(room, "Grace", "Thanks! I'll watch the deploy.")
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/messages", map[string]string{"sender": "Reviewer", "text": "Looks good to me", "thread_parent_id": root}, http.StatusCreated)
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/tasks", map[string]string{"title": "Write the release notes", "created_by": "Grace"}, http.StatusCreated)

	roomURL := r.URL + "/in/" + roomPath(room)
	live := `document.getElementById("status").classList.contains("live") &&
		document.getElementById("log").getAttribute("aria-busy") === "false" && document.querySelector("#board li")`
	views := []struct {
		name, url, ready, then string
	}{
		{"chat", roomURL, live + ` && document.querySelectorAll("#log li.gh-event").length === 2`, ""},
		{"thread", roomURL, live, `(() => { document.querySelector("#` + root + ` .acts button").click();
			return !document.getElementById("thread").hidden && document.querySelectorAll("#thread-log .msg").length === 2; })()`},
		{"board", roomURL, live, `(() => { document.querySelector('#tabs [data-tab="board"]').click();
			return document.getElementById("layout").dataset.tab === "board"; })()`},
		{"agents", roomURL, live, `(() => { document.querySelector('#tabs [data-tab="agents"]').click();
			return document.getElementById("layout").dataset.tab === "agents"; })()`},
		{"search", roomURL, live, `(() => { const s = document.getElementById("search");
			if (s.value !== "deploy") { s.value = "deploy"; document.getElementById("search-form").requestSubmit(); }
			return document.querySelectorAll("#results-list li").length > 0; })()`},
		{"landing", r.URL + "/", `document.getElementById("mcp-config").textContent.includes("letagents")`, ""},
		{"docs", r.URL + "/docs/page", `document.querySelector("main h1")`, ""},
	}
	for _, width := range []struct {
		name          string
		width, height int64
	}{{"wide", 1400, 900}, {"phone", phoneWidth, phoneHeight}} {
		for _, scheme := range []string{"light", "dark"} {
			t.Run(width.name+"-"+scheme, func(t *testing.T) {
				b := newTab(t)
				b.scheme(scheme)
				b.do("the viewport", chromedp.EmulateViewport(width.width, width.height))
				for _, v := range views {
					b.open(v.url)
					b.until(v.name, v.ready)
					b.until(v.name+"'s stylesheets applied", stylesApplied)
					if v.then != "" {
						b.until(v.name+" shown", v.then)
					}
					b.screenshot(v.name)
					path := filepath.Join(artefacts(t), v.name+".png")
					png, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 2048 {
						t.Errorf("%s: %d bytes, want a PNG with a page in it", path, len(png))
					}
				}
			})
		}
	}
}
