package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

// opacity is the computed opacity of the tools of message id.
func opacity(id string) string {
	return `getComputedStyle(document.querySelector("#` + id + ` .acts")).opacity`
}

// enter presses Enter as a keyboard does: one keyDown carrying its text,
// so that a page cancelling the keydown cancels the text too. (kb.Enter
// sends the text as a char event of its own, which Chromium then types
// whatever the keydown's handler did.)
func (b *tab) enter() {
	b.t.Helper()
	b.do("press Enter", func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			p := input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
			if typ == input.DispatchKeyEventTypeKeyDown {
				p.Text, p.UnmodifiedText = "\r", "\r"
			}
			if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, p); err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, nil
	})
}

// TestMessageTools: each message is one tab stop whose tools (Reply,
// Copy link, Pin for an admin) show on hover and on keyboard focus and
// are reached from it with the keyboard; Copy link copies the message's
// address, Pin pins it. The message id is no text of the message, and
// its receipts are a count that shows who on demand.
func TestMessageTools(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "tools room"
	r.join(room)
	for i := range 3 {
		r.send(room, "Builder | ada's agent | Codex", fmt.Sprintf("step %d", i+1))
	}
	st := store.New(r.db.Pool)
	w := storetest.Register(t, st, room, "Watcher", letagents.SessionWorker, time.Now())
	if err := st.RecordSurfaced(context.Background(), w.ID, room, []int64{1}, letagents.ViaRead, time.Now()); err != nil {
		t.Fatal(err)
	}
	b := openRoom(t, r, room)

	seen := `document.querySelector("#msg_1 .meta .seen")`
	if got := eval[string](b, `(s => s ? s.textContent + " | " + s.getAttribute("aria-label") + " | " + s.getAttribute("aria-expanded") : "none")(`+seen+`)`); got != "✓✓ 1 seen | 1 seen: seen by Watcher | false" {
		t.Errorf("msg_1's receipts = %q, want its count, naming Watcher", got)
	}
	if !eval[bool](b, `document.querySelector("#msg_1 .receipts").hidden && !document.querySelector("#msg_2 .seen")`) {
		t.Errorf("the receipts line shows before it is asked for, or msg_2, seen by nobody, has receipts")
	}
	b.press("msg_1's receipts", "#msg_1 .meta .seen")
	b.until("who saw msg_1", `(l => !l.hidden && l.textContent === "seen by Watcher")(document.querySelector("#msg_1 .receipts")) && `+seen+`.getAttribute("aria-expanded") === "true"`)

	if got := eval[string](b, opacity("msg_2")); got != "0" {
		t.Errorf("the tools of msg_2 have opacity %s before any hover or focus, want 0", got)
	}
	if n := eval[int](b, `[...document.querySelectorAll("#log .msg")].filter(li => li.tabIndex !== 0).length +
		document.querySelectorAll("#log .msg button:not([tabindex='-1'])").length`); n != 0 {
		t.Errorf("%d messages or buttons in them break one tab stop a message", n)
	}
	if got := eval[string](b, `document.querySelector("#msg_2 .meta").textContent`); strings.Contains(got, "msg_2") {
		t.Errorf("msg_2's line shows its id: %q", got)
	}

	// Hover.
	x := eval[float64](b, `(r => r.left + r.width / 2)(document.getElementById("msg_2").getBoundingClientRect())`)
	y := eval[float64](b, `(r => r.top + r.height / 2)(document.getElementById("msg_2").getBoundingClientRect())`)
	b.do("hover msg_2", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
	b.until("msg_2's tools shown on hover", opacity("msg_2")+` === "1"`)
	b.screenshot("tools-on-hover")
	b.do("move the mouse away", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1))
	b.until("msg_2's tools hidden again", opacity("msg_2")+` === "0"`)

	// The keyboard: focus, Enter or → into the tools, arrows along them,
	// Escape back, ↑ and ↓ to the messages around.
	active := `(e => e.id || e.getAttribute("aria-label") || e.tagName)(document.activeElement)`
	eval[chromedp.Void](b, `document.getElementById("msg_2").focus()`)
	b.until("msg_2's tools shown on focus", opacity("msg_2")+` === "1"`)
	b.enter()
	b.until("msg_2's Reply focused by Enter", active+` === "Reply in the thread of msg_2"`)
	if !eval[bool](b, `document.getElementById("thread").hidden`) {
		t.Errorf("Enter on a message opened its thread, want its first tool focused")
	}
	b.do("back to the message", chromedp.KeyEvent(kb.Escape))
	steps := []struct{ key, want string }{
		{kb.ArrowRight, "Reply in the thread of msg_2"},
		{kb.ArrowRight, "Copy link to msg_2"},
		{kb.ArrowRight, "Pin msg_2"}, // the local owner administers the room
		{kb.ArrowRight, "Reply in the thread of msg_2"},
		{kb.ArrowLeft, "Pin msg_2"},
		{kb.Escape, "msg_2"},
		{kb.ArrowUp, "msg_1"},
		{kb.ArrowDown, "msg_2"},
		{kb.ArrowDown, "msg_3"},
	}
	for _, s := range steps {
		b.do("press "+fmt.Sprintf("%q", s.key), chromedp.KeyEvent(s.key))
		b.until(s.want+" focused", active+` === `+jsString(s.want))
	}
	if eval[bool](b, `document.getElementById("thread").hidden`) == false {
		t.Errorf("Escape in a message's tools opened or left a thread")
	}

	// Copy link: the message's address (the clipboard itself needs a
	// focused window, which a test's tab may not be: its write is watched).
	eval[chromedp.Void](b, `navigator.clipboard.writeText = (t) => { window.__copied = t; return Promise.resolve(); }`)
	b.press("Copy link of msg_3", `#msg_3 .acts button[aria-label="Copy link to msg_3"]`)
	b.until("the address copied", `window.__copied === location.origin + location.pathname + "#msg_3" &&
		document.querySelector("#msg_3 .acts button:nth-child(2)").textContent === "Copied"`)

	// Pin, then Unpin, from the tools.
	b.press("Pin msg_1", `#msg_1 .acts .pin`)
	b.until("msg_1 pinned", `document.querySelector("#msg_1 .pin-mark") && document.querySelector("#msg_1 .acts .pin").textContent === "Unpin"`)
	pins := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/pins", nil, http.StatusOK)
	if list, _ := pins["messages"].([]any); len(list) != 1 {
		t.Errorf("the server holds %d pins, want msg_1's: %v", len(list), pins)
	}
	b.press("Unpin msg_1", `#msg_1 .acts .pin`)
	b.until("msg_1 unpinned", `!document.querySelector("#msg_1 .pin-mark") && document.querySelector("#msg_1 .acts .pin").textContent === "Pin"`)
	axeCheck(b, "room, message tools")
}

// TestLongMessageFolds: a long message shows folded, with a Show more
// toggle that unfolds it and folds it again; a jump to it, or the focus
// reaching a link hidden in its fold, unfolds it, and that link works.
func TestLongMessageFolds(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "long messages"
	r.join(room)
	r.send(room, "Reviewer", "the short one")
	lines := make([]string, 40)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the report", i+1)
	}
	long := r.send(room, "Reviewer", strings.Join(lines, "\n\n")+"\n\nsee msg_1")
	b := openRoom(t, r, room)

	folded := `(li => li.querySelector(".text").classList.contains("collapsed") &&
		li.querySelector(".text").scrollHeight > li.querySelector(".text").clientHeight + 100 &&
		li.querySelector(".more").getAttribute("aria-expanded") === "false")(document.getElementById(` + jsString(long) + `))`
	b.until("the long message folded", folded)
	b.screenshot("folded")
	if eval[bool](b, `!!document.querySelector("#msg_1 .more")`) {
		t.Errorf("the short message has a Show more toggle")
	}
	more := "#" + long + " .more"
	b.press("Show more", more)
	b.until("unfolded", `(m => m.textContent === "Show less" && m.getAttribute("aria-expanded") === "true" &&
		!document.querySelector("#`+long+` .text").classList.contains("collapsed"))(document.querySelector("`+more+`"))`)
	b.press("Show less", more)
	b.until("folded again", folded)

	// A jump to it unfolds it.
	eval[chromedp.Void](b, `location.hash = "#`+long+`"`)
	b.until("unfolded by the jump", `document.querySelector("`+more+`").getAttribute("aria-expanded") === "true"`)
	b.press("Show less", more)
	b.until("folded again", folded)

	// The link in the fold: focused, it unfolds the message; followed, it
	// jumps to msg_1.
	link := `document.querySelector("#` + long + ` .text a[href='#msg_1']")`
	eval[chromedp.Void](b, link+`.focus()`)
	b.until("unfolded by the focus", `document.querySelector("`+more+`").getAttribute("aria-expanded") === "true"`)
	b.do("follow the link", chromedp.KeyEvent(kb.Enter))
	b.until("msg_1 focused", `document.activeElement.id === "msg_1"`)
	axeCheck(b, "room, a long message")
}

// TestMentionAutocomplete: typing @ and letters in either composer offers
// the room's people and agents in a listbox the text box controls; the
// arrows move, Enter and Tab insert the mention without sending, Escape
// closes the list (and not the thread).
func TestMentionAutocomplete(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "mention room"
	r.join(room)
	r.send(room, "Builder | ada's agent | Codex", "ready")
	r.send(room, "Bea", "hi")
	r.send(room, "Reviewer", "see @Builder and mail a@b.c")
	b := openRoom(t, r, room)
	b.until("the people and agents", `["Builder", "Bea", "Reviewer"].every(n => document.getElementById("agents").textContent.includes(n))`)

	// Mentions in messages are styled as such, not e-mail addresses.
	if got := eval[string](b, `[...document.querySelectorAll("#msg_3 .mention")].map(e => e.textContent).join(",")`); got != "@Builder" {
		t.Errorf("msg_3's mentions = %q, want @Builder alone", got)
	}

	options := `[...document.querySelectorAll("#text-mentions [role=option]")].map(o => o.textContent + (o.getAttribute("aria-selected") === "true" ? "*" : "")).join(",")`
	b.do("type @b", chromedp.SetValue(chromedp.ID("name"), "Grace"), chromedp.SendKeys(chromedp.ID("text"), "thanks @b"))
	b.until("Bea and Builder offered", `(l => !l.hidden)(document.getElementById("text-mentions")) && `+options+` !== ""`)
	got := eval[string](b, options)
	if got != "Bea*,Builder" && got != "Builder*,Bea" {
		t.Fatalf("offered %q, want Bea and Builder, the first chosen", got)
	}
	first := strings.TrimSuffix(strings.Split(got, ",")[0], "*")
	second := strings.Split(got, ",")[1]
	b.until("the text box pointing at the chosen one", `(t => t.getAttribute("aria-activedescendant") === "text-mentions-0" &&
		t.getAttribute("aria-controls") === "text-mentions" && t.getAttribute("aria-autocomplete") === "list")(document.getElementById("text"))`)
	axeCheck(b, "room, mention list open")
	b.screenshot("mention-list")
	b.do("move down", chromedp.KeyEvent(kb.ArrowDown))
	b.until(second+" chosen", options+` === `+jsString(first+","+second+"*"))
	b.enter()
	b.until("the list closed", `document.getElementById("text-mentions").hidden && !document.getElementById("text").hasAttribute("aria-activedescendant")`)
	if got := eval[string](b, `document.getElementById("text").value`); got != "thanks @"+second+" " {
		t.Errorf("the composer holds %q, want the mention inserted", got)
	}
	if n := len(r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/messages", nil, http.StatusOK)["messages"].([]any)); n != 3 {
		t.Errorf("the room holds %d messages after Enter chose a name, want 3 (nothing sent)", n)
	}

	// The thread's composer: Tab inserts; Escape closes the list alone.
	b.press("open the thread of msg_1", `#msg_1 .acts button`)
	b.until("the thread composer focused", `document.activeElement.id === "thread-text"`)
	b.do("type @rev", chromedp.SendKeys(chromedp.ID("thread-text"), "@rev"))
	b.until("Reviewer offered", `[...document.querySelectorAll("#thread-text-mentions [role=option]")].map(o => o.textContent).join() === "Reviewer"`)
	b.do("insert with Tab", chromedp.KeyEvent(kb.Tab))
	b.until("inserted", `document.getElementById("thread-text").value === "@Reviewer " && document.activeElement.id === "thread-text"`)
	b.do("type @b", chromedp.SendKeys(chromedp.ID("thread-text"), "and @b"))
	b.until("the list open", `!document.getElementById("thread-text-mentions").hidden`)
	b.do("Escape", chromedp.KeyEvent(kb.Escape))
	b.until("the list closed, the thread open", `document.getElementById("thread-text-mentions").hidden && !document.getElementById("thread").hidden`)
	if got := eval[string](b, `document.getElementById("thread-text").value`); got != "@Reviewer and @b" {
		t.Errorf("the thread composer holds %q after Escape, want the text as typed", got)
	}
}

// hiddenTab makes the page's document.visibilityState follow
// window.__hidden, which the test sets, with a visibilitychange event:
// a test's tab cannot be hidden otherwise. It also counts the tones the
// page's sound plays (window.__tones) without an audio device.
func hiddenTab(b *tab) {
	b.t.Helper()
	b.do("fake visibility and audio", func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__hidden = false;
			window.__tones = 0;
			Object.defineProperty(Document.prototype, "visibilityState", { get: () => window.__hidden ? "hidden" : "visible" });
			window.__setHidden = (h) => { window.__hidden = h; document.dispatchEvent(new Event("visibilitychange")); };
			const start = OscillatorNode.prototype.start;
			OscillatorNode.prototype.start = function (...a) { window.__tones++; return start.apply(this, a); };`})
		return chromedp.Void{}, err
	})
}

// TestUnreadDivider: messages that arrive while the reader is scrolled
// up, or the tab is hidden, get a "New messages" divider above the first
// of them; it stays while more come, stays where it is once they were
// seen, and moves to the next unseen batch. The sound, off by default,
// rings for others' messages while the tab is hidden once turned on, and
// the choice is kept.
func TestUnreadDivider(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "unread room"
	r.join(room)
	for i := range 40 {
		r.send(room, "Builder", fmt.Sprintf("earlier %d", i+1))
	}
	b := newTab(t)
	hiddenTab(b)
	b.open(r.URL + "/in/" + roomPath(room))
	b.until("the room to be live", `document.getElementById("status").classList.contains("live") &&
		document.getElementById("log").getAttribute("aria-busy") === "false"`)
	b.until("the event stream to open", streaming)
	divider := `(d => d ? d.nextElementSibling.id : "")(document.querySelector("#log .unread"))`
	seen := func(id string) { b.until(id+" shown", `document.getElementById(`+jsString(id)+`)`) }

	id := r.send(room, "Builder", "seen as it came")
	seen(id)
	if got := eval[string](b, divider); got != "" {
		t.Errorf("a divider above %s, want none: the reader was at the end", got)
	}
	eval[chromedp.Void](b, `document.getElementById("scroller").scrollTop = 0`)
	first := r.send(room, "Builder", "first unseen")
	b.until("the divider above "+first, divider+` === `+jsString(first))
	seen(r.send(room, "Builder", "second unseen"))
	if got := eval[string](b, divider); got != first {
		t.Errorf("the divider moved to above %s, want it above %s still", got, first)
	}
	if got := eval[string](b, `document.querySelector("#log .unread").textContent`); got != "New messages" {
		t.Errorf("the divider says %q", got)
	}

	// Seen: the divider stays put while messages come into view.
	eval[chromedp.Void](b, `(s => s.scrollTop = s.scrollHeight)(document.getElementById("scroller"))`)
	b.until("the pill gone", `document.getElementById("pill").hidden`)
	seen(r.send(room, "Builder", "seen too"))
	if got := eval[string](b, divider); got != first {
		t.Errorf("the divider is above %s, want it above %s still", got, first)
	}

	// Hidden: the next batch moves it, and rings once the sound is on.
	if eval[bool](b, `document.getElementById("sound").checked`) {
		t.Errorf("the sound is on by default")
	}
	eval[chromedp.Void](b, `__setHidden(true)`)
	quiet := r.send(room, "Builder", "while hidden, sound off")
	b.until("the divider above "+quiet, divider+` === `+jsString(quiet))
	if n := eval[int](b, `window.__tones`); n != 0 {
		t.Errorf("%d tones with the sound off", n)
	}
	b.press("turn the sound on", "#sound")
	b.until("its test tone", `window.__tones === 1`)
	seen(r.send(room, "Builder", "while hidden, sound on"))
	b.until("a tone", `window.__tones === 2`)
	eval[chromedp.Void](b, `__setHidden(false)`)
	seen(r.send(room, "Builder", "visible again"))
	if n := eval[int](b, `window.__tones`); n != 2 {
		t.Errorf("%d tones, want 2: a message seen as it comes, not mentioning the reader, rings nothing", n)
	}
	b.open(r.URL + "/in/" + roomPath(room))
	b.until("the sound still on after a reload", `document.getElementById("sound").checked`)
}

// TestRenameRoomAndMentionsOfMe: a room admin renames the room from the
// page (a name the server refuses shows its error), and a reader of it
// sees the new name live; the Rename button is hidden from a reader who
// is no admin. A signed-in person's mentions are highlighted.
func TestRenameRoomAndMentionsOfMe(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := githubRunner(t, "grace")
	const room = "rename room"
	r.join(room)
	r.send(room, "Reviewer", "@grace please look, and @Builder too")

	// Signed out: no admin, no Rename.
	reader := newTab(t, chromedp.WithNewBrowserContext())
	reader.open(r.URL + "/in/" + roomPath(room))
	reader.until("the room, live", `document.getElementById("status").classList.contains("live") && document.getElementById("msg_1")`)
	if !eval[bool](reader, `document.getElementById("rename").hidden && document.getElementById("rename-form").hidden`) {
		t.Errorf("a reader who is no admin is offered Rename")
	}
	if eval[bool](reader, `!!document.querySelector("#log .mention.me")`) {
		t.Errorf("a signed-out reader has mentions highlighted as theirs")
	}

	// Signed in, grace is the room's first signed-in joiner: its admin.
	admin := newTab(t, chromedp.WithNewBrowserContext())
	admin.open(r.URL + "/in/" + roomPath(room))
	admin.signIn()
	admin.until("the mention of grace highlighted", `(li => li && li.classList.contains("mentions-me") &&
		[...li.querySelectorAll(".mention")].map(e => e.textContent + (e.classList.contains("me") ? "*" : "")).join() === "@grace*,@Builder")(document.getElementById("msg_1"))`)
	admin.until("Rename offered to the admin", `!document.getElementById("rename").hidden`)

	admin.press("Rename", "#rename")
	admin.until("the form, focused", `!document.getElementById("rename-form").hidden && document.activeElement.id === "rename-input"`)
	admin.do("a name too short", chromedp.SetValue(chromedp.ID("rename-input"), "x"), chromedp.Click(chromedp.ID("rename-save")))
	admin.until("the server's refusal shown", `document.getElementById("rename-err").textContent.startsWith("Could not rename the room: ")`)
	axeCheck(admin, "room, rename form")
	admin.do("a good name", chromedp.SetValue(chromedp.ID("rename-input"), "Planning Room"), chromedp.Click(chromedp.ID("rename-save")))
	admin.until("the new name shown, the form closed", `document.getElementById("codename").textContent.includes("Planning Room") &&
		document.getElementById("rename-form").hidden && !document.getElementById("rename").hidden && document.getElementById("rename-err").textContent === ""`)
	reader.until("the new name, live, for the reader", `document.getElementById("codename").textContent.includes("Planning Room")`)
	info := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/info", nil, http.StatusOK)
	if info["display_name"] != "Planning Room" {
		t.Errorf("the server holds the name %v, want Planning Room", info["display_name"])
	}
}
