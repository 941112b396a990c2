package browser_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// openRoom opens the room page and waits until it is live: history shown,
// its poll running.
func openRoom(t *testing.T, r *runner, room string) *tab {
	t.Helper()
	b := newTab(t)
	b.open(r.URL + "/in/" + roomPath(room))
	b.until("the room to be live", `document.getElementById("status").classList.contains("live") &&
		document.getElementById("log").getAttribute("aria-busy") === "false"`)
	return b
}

// seen installs, once, a record of when each message's element appeared
// (Date.now(), the machine's clock, as the test's time.Now is).
func watchArrivals(b *tab) {
	b.t.Helper()
	eval[chromedp.Void](b, `(() => {
		window.__arrived = {};
		const log = document.getElementById("log");
		const mark = () => { for (const li of log.children) if (li.id && !(li.id in window.__arrived)) window.__arrived[li.id] = Date.now(); };
		mark();
		new MutationObserver(mark).observe(log, { childList: true });
	})()`)
}

// TestLiveMessage: a message an agent posts appears in an open room page
// without a reload, rendered; the test logs how long that took.
func TestLiveMessage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "github.com/acme/live"
	b := openRoom(t, r, room)
	watchArrivals(b)

	const n = 5
	var took []time.Duration
	for i := range n {
		sent := time.Now()
		id := r.send(room, "Builder | ada's agent | Codex", fmt.Sprintf("step %d **done**: see `make test`", i+1))
		b.until(id+" to appear", `window.__arrived["m-`+id+`"]`)
		at := eval[int64](b, `window.__arrived["m-`+id+`"]`)
		took = append(took, time.UnixMilli(at).Sub(sent))
	}
	slices.Sort(took)
	t.Logf("live message latency, API send to element in the page, %d messages: median %v, max %v (all %v)",
		n, took[n/2].Round(time.Millisecond), took[n-1].Round(time.Millisecond), took)

	// Rendered by the server: bold and code, not asterisks.
	html := eval[string](b, `document.querySelector("#m-msg_1 .text").innerHTML`)
	if !strings.Contains(html, "<strong>done</strong>") || !strings.Contains(html, "<code>make test</code>") {
		t.Errorf("msg_1 shown as %q, want it rendered from Markdown", html)
	}
	r.send(room, "Reviewer", "| check | state |\n|---|---|\n| vet | ok |\n| race | ok |\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n- one\n- two\n\n> quoted, with a [link](https://example.com)")
	b.until("the table and code", `document.querySelector("#log table") && document.querySelector("#log pre.hl-chroma")`)
	b.screenshot("room")
}

// TestComposeFromPage: a person writes a message in the page and sends it
// with Enter; it is stored under their name and appears once.
func TestComposeFromPage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "compose room"
	b := openRoom(t, r, room)
	b.do("write a message",
		chromedp.SetValue(chromedp.ID("name"), "Grace"),
		chromedp.SendKeys(chromedp.ID("text"), "hello from the page, *typed*"+kb.Enter),
	)
	b.until("the sent message in the log", `[...document.querySelectorAll("#log .msg")].some(li =>
		li.querySelector(".sender").textContent === "Grace" && li.querySelector(".text").textContent.trim() === "hello from the page, typed")`)
	b.until("the composer to empty", `document.getElementById("text").value === ""`)

	page := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/messages", nil, http.StatusOK)
	msgs, _ := page["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("room holds %d messages, want the one sent: %v", len(msgs), page)
	}
	if m := msgs[0].(map[string]any); m["sender"] != "Grace" || m["text"] != "hello from the page, *typed*" {
		t.Errorf("stored %v, want Grace's text as typed", m)
	}
	if n := eval[int](b, `document.querySelectorAll("#log .msg").length`); n != 1 {
		t.Errorf("the log shows %d messages, want 1", n)
	}
}

// TestReconnectAfterRestart: the runner stops and starts again on its
// port; the open page says it is reconnecting, comes back live by itself
// and shows what is sent after.
func TestReconnectAfterRestart(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "restart room"
	r.join(room)
	r.send(room, "a", "before the restart")
	b := openRoom(t, r, room)

	r.stop()
	b.until("the page to say it is reconnecting", `document.getElementById("status").classList.contains("retry")`)
	b.screenshot("reconnecting")
	r.start()
	b.until("the page to be live again", `document.getElementById("status").classList.contains("live")`)
	id := r.send(room, "a", "after the restart")
	b.until(id+" to appear", `document.getElementById("m-`+id+`")`)
	if n := eval[int](b, `document.querySelectorAll("#log .msg").length`); n != 2 {
		t.Errorf("the log shows %d messages, want 2 (none lost, none twice)", n)
	}
}

// TestHostileContentNeverRuns: markup and javascript: links in messages,
// sender names and task titles are shown as text and never run. A window
// flag would record any run; a control shows the flag would be set had
// the page inserted such markup.
func TestHostileContentNeverRuns(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "hostile room"
	payloads := []string{
		`<script>window.__pwned = "script"</script>`,
		`<img src=x onerror="window.__pwned = 'img'">`,
		`<svg onload="window.__pwned = 'svg'"></svg>`,
		`[click me](javascript:window.__pwned='md-link')`,
		`<a href="javascript:window.__pwned='a'">raw link</a>`,
		"<details open ontoggle=\"window.__pwned='details'\">x</details>",
		"```\n</code></pre><img src=x onerror=\"window.__pwned='fence'\">\n```",
	}
	r.join(room)
	for _, p := range payloads {
		r.send(room, "mallory", p)
	}
	r.send(room, `<img src=x onerror="window.__pwned='sender'">`, "my name is markup")
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/tasks", map[string]string{
		"title": `<img src=x onerror="window.__pwned='task'">`, "description": `<script>window.__pwned='desc'</script>`,
		"created_by": "mallory"}, http.StatusCreated)

	b := openRoom(t, r, room)
	// One more through the live path.
	live := r.send(room, "mallory", `<iframe src="javascript:window.__pwned='iframe'"></iframe>`)
	b.until("the live payload", `document.getElementById("m-`+live+`")`)
	b.until("the task on the board", `document.querySelector("#board li")`)

	for _, p := range payloads[:2] {
		if !eval[bool](b, `document.getElementById("log").textContent.includes(`+jsString(p)+`)`) {
			t.Errorf("the log does not show %q as text", p)
		}
	}
	if !eval[bool](b, `document.getElementById("board").textContent.includes(`+jsString(`<img src=x onerror="window.__pwned='task'">`)+`)`) {
		t.Errorf("the board does not show the task title as text")
	}
	checks := map[string]string{
		"elements that run or load":  `document.querySelectorAll("#log script, #log img, #log svg, #log iframe, #log details, #board img, #board script").length`,
		"javascript: links":          `[...document.querySelectorAll("a[href]")].filter(a => !["http:", "https:", "mailto:"].includes(a.protocol)).length`,
		"inline handlers in the log": `[...document.querySelectorAll("#log *, #board *")].filter(e => [...e.attributes].some(a => a.name.startsWith("on"))).length`,
	}
	for what, expr := range checks {
		if n := eval[int](b, expr); n != 0 {
			t.Errorf("%d %s in the page", n, what)
		}
	}
	b.screenshot("hostile")

	// The control: markup inserted as HTML in this page does run (its CSP
	// allows inline handlers), and by the time it has, the payloads above
	// would have run too.
	eval[chromedp.Void](b, `document.getElementById("log").insertAdjacentHTML("beforeend", '<li><img src="/no-such-image" onerror="window.__control = 1"></li>')`)
	b.until("the control to run", `window.__control === 1`)
	if got := eval[string](b, `String(window.__pwned)`); got != "undefined" {
		t.Errorf("a payload ran: window.__pwned = %s", got)
	}
}
