package browser_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// watchArrivals installs, once, a record of when each message's element
// (id msg_N) appeared (Date.now(), the machine's clock, as the test's
// time.Now is).
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

// streaming is the condition of a page following its room through the
// event stream (not the long-poll).
const streaming = `document.getElementById("status").dataset.via === "stream" && document.getElementById("status").classList.contains("live")`

// TestLiveMessage: a message an agent posts appears in an open room page
// through the event stream, without a reload, rendered; the test logs how
// long that took.
func TestLiveMessage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "github.com/acme/live"
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)
	watchArrivals(b)

	const n = 5
	var took []time.Duration
	for i := range n {
		sent := time.Now()
		id := r.send(room, "Builder | ada's agent | Codex", fmt.Sprintf("step %d **done**: see `make test`", i+1))
		b.until(id+" to appear", `window.__arrived[`+jsString(id)+`]`)
		at := eval[int64](b, `window.__arrived[`+jsString(id)+`]`)
		took = append(took, time.UnixMilli(at).Sub(sent))
	}
	slices.Sort(took)
	t.Logf("live message latency through the event stream, API send to element in the page, %d messages: median %v, max %v (all %v)",
		n, took[n/2].Round(time.Millisecond), took[n-1].Round(time.Millisecond), took)

	// Rendered by the server: bold and code, not asterisks.
	html := eval[string](b, `document.querySelector("#msg_1 .text").innerHTML`)
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
		chromedp.SendKeys(chromedp.ID("text"), "hello from the page, *typed*"),
	)
	b.enter()
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
	restarted := time.Now()
	b.until("the page to be live again, on the event stream", streaming)
	// A figure, not a bound: a busy machine may take seconds. The page
	// probes every 2 s while down; a page that waited out a quiet poll's
	// 25 s before saying live would show here.
	t.Logf("live again %v after the runner was back", time.Since(restarted).Round(time.Millisecond))
	id := r.send(room, "a", "after the restart")
	b.until(id+" to appear", `document.getElementById(`+jsString(id)+`)`)
	if n := eval[int](b, `document.querySelectorAll("#log .msg").length`); n != 2 {
		t.Errorf("the log shows %d messages, want 2 (none lost, none twice)", n)
	}
}

// TestHostileContentNeverRuns: markup and javascript: links in messages,
// sender names and task titles are shown as text and never run: in the
// log, the thread panel, the people list and the board. A window
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
	b.until("the live payload", `document.getElementById(`+jsString(live)+`)`)
	b.until("the task on the board", `document.querySelector("#board li")`)
	sender := `<img src=x onerror="window.__pwned='sender'">`
	b.until("the sender among the people", `document.getElementById("agents").textContent.includes(`+jsString(sender)+`)`)
	b.do("open the thread of msg_2", chromedp.Click(chromedp.CSS(`#msg_2 .acts button`)))
	b.until("msg_2 in the thread panel", `!document.getElementById("thread").hidden &&
		document.querySelector("#thread-log .msg[data-id='msg_2']")`)

	for _, shown := range []struct{ where, text string }{
		{"log", payloads[0]},
		{"log", payloads[1]},
		{"thread-log", payloads[1]},
		{"board", `<img src=x onerror="window.__pwned='task'">`},
	} {
		if !eval[bool](b, `document.getElementById(`+jsString(shown.where)+`).textContent.includes(`+jsString(shown.text)+`)`) {
			t.Errorf("#%s does not show %q as text", shown.where, shown.text)
		}
	}
	if !eval[bool](b, `[...document.querySelectorAll("#log .sender")].some(e => e.textContent === `+jsString(sender)+`)`) {
		t.Errorf("the log does not show the sender %q as text", sender)
	}
	checks := map[string]string{
		// The page's own collapsibles (a card's description, a reasoning
		// trail) are details too, and its own icons inline SVG drawn by
		// room.html; none may come from what was written.
		"elements that run or load": `document.querySelectorAll("#layout :is(script, img, iframe, object, embed, svg:not(.icon)), #layout :is(#log, #thread-log, #results) :is(details, svg)").length`,
		"javascript: links":         `[...document.querySelectorAll("a[href]")].filter(a => !["http:", "https:", "mailto:"].includes(a.protocol)).length`,
		"inline handlers":           `[...document.querySelectorAll("#layout *")].filter(e => [...e.attributes].some(a => a.name.startsWith("on"))).length`,
	}
	for what, expr := range checks {
		if n := eval[int](b, expr); n != 0 {
			t.Errorf("%d %s in the page", n, what)
		}
	}
	b.screenshot("hostile")

	// The control: an inline handler inserted as HTML in this page is
	// refused by its CSP (no inline script), and by the time the refusal
	// is reported, the payloads above would have run too, had they got
	// past the sanitiser and the CSP.
	eval[chromedp.Void](b, `document.addEventListener("securitypolicyviolation", (e) => { window.__refused = e.effectiveDirective; });
		document.getElementById("log").insertAdjacentHTML("beforeend", '<li><img src="/no-such-image" onerror="window.__control = 1"></li>')`)
	b.until("the CSP to refuse the control", `String(window.__refused || "").startsWith("script-src")`)
	if got := eval[string](b, `String(window.__control)`); got != "undefined" {
		t.Errorf("an inline handler ran: window.__control = %s; the CSP must refuse inline script", got)
	}
	if got := eval[string](b, `String(window.__pwned)`); got != "undefined" {
		t.Errorf("a payload ran: window.__pwned = %s", got)
	}
}

// TestThreadReply: a person replies in a thread through its panel. The
// reply is stored under the root, shows in the panel and in the log as a
// reply, and the root counts it; an agent's reply comes into the open
// panel live; closing the panel gives focus back to where it was opened.
func TestThreadReply(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "thread room"
	r.join(room)
	root := r.send(room, "Builder | ada's agent | Codex", "which branch should I use?")
	b := openRoom(t, r, room)

	reply := `#` + root + ` .acts button`
	b.do("open the thread", chromedp.Click(chromedp.CSS(reply)))
	b.until("the thread panel with its root", `!document.getElementById("thread").hidden &&
		document.querySelector('#thread-log .msg[data-id="`+root+`"]') && document.activeElement.id === "thread-text"`)
	b.do("reply in the panel",
		chromedp.SendKeys(chromedp.ID("thread-name"), "Grace"),
		chromedp.SendKeys(chromedp.ID("thread-text"), "use **main**"),
	)
	b.enter()
	b.until("the reply in the panel", `[...document.querySelectorAll("#thread-log .msg")].some(li =>
		li.querySelector(".sender").textContent === "Grace" && li.querySelector(".text").textContent.trim() === "use main")`)
	b.until("the reply in the log, quoting its root", `[...document.querySelectorAll("#log .msg")].some(li =>
		li.querySelector(".sender").textContent === "Grace" && (li.querySelector(".quote") || {}).textContent?.includes(`+jsString(root)+`))`)
	b.until("the root to count one reply", `(b => b && !b.hidden && b.textContent === "1 reply")(document.querySelector("#`+root+` .replies"))`)
	// The composer empties when the POST answers, which may come after
	// the live transport has brought the reply.
	b.until("the thread composer to empty", `document.getElementById("thread-text").value === ""`)

	page := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/messages", nil, http.StatusOK)
	msgs, _ := page["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("room holds %d messages, want the root and the reply: %v", len(msgs), page)
	}
	if m := msgs[1].(map[string]any); m["sender"] != "Grace" || m["text"] != "use **main**" || m["thread_parent_id"] != root {
		t.Errorf("stored %v, want Grace's reply to %s as typed", m, root)
	}

	agent := r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/messages",
		map[string]string{"sender": "Builder | ada's agent | Codex", "text": "on it", "thread_parent_id": root}, http.StatusCreated)
	id, _ := agent["id"].(string)
	b.until("the agent's reply in the open panel", `document.querySelector('#thread-log .msg[data-id="`+id+`"]')`)
	b.until("the root to count two replies", `document.querySelector("#`+root+` .replies").textContent === "2 replies"`)
	axeCheck(b, "room, thread")
	b.screenshot("thread")

	b.do("close the thread", chromedp.Click(chromedp.ID("thread-close")))
	b.until("the panel closed, focus back on the reply button", `document.getElementById("thread").hidden &&
		document.activeElement === document.querySelector(`+jsString(reply)+`)`)
}

// TestOlderHistory: a room with more than a page of history opens on its
// latest page; the button, then scrolling to the top, each load the page
// before it, keeping the reader's place, down to the start of the room,
// with no message lost or shown twice.
func TestOlderHistory(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "long room"
	const n = 250 // the page reads 100 messages at a time
	r.join(room)
	for i := range n {
		r.send(room, "a", fmt.Sprintf("line %d", i+1))
	}
	b := openRoom(t, r, room)
	const shown = `document.querySelectorAll("#log .msg").length`
	if got := eval[int](b, shown); got != 100 {
		t.Fatalf("the room opens with %d messages, want its latest 100", got)
	}
	b.until("the button for earlier messages", `!document.getElementById("older-btn").hidden`)

	// The reader's place: where the last message sits in the window.
	const place = `document.getElementById("msg_250").getBoundingClientRect().top`
	before := eval[float64](b, place)
	// Pressed from the script, the button loads with the list scrolled to
	// the bottom, so no scrolling can be what loads.
	eval[chromedp.Void](b, `document.getElementById("older-btn").click()`)
	b.until("the page before", shown+` === 200 && document.getElementById("log").getAttribute("aria-busy") === "false"`)
	if after := eval[float64](b, place); math.Abs(after-before) > 2 {
		t.Errorf("loading earlier messages moved the last one from %v to %v px", before, after)
	}

	b.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`document.getElementById("scroller").scrollTop = 0`))
	b.until("the start of the room", shown+` === 250 && document.getElementById("older-note").textContent === "The start of the room." &&
		document.getElementById("older-btn").hidden`)
	ids := eval[[]string](b, `[...document.querySelectorAll("#log .msg")].map(li => li.id)`)
	for i, id := range ids {
		if want := fmt.Sprintf("msg_%d", i+1); id != want {
			t.Fatalf("message %d of the log is %s, want %s (all: %v)", i+1, id, want, ids)
		}
	}
}
