package browser_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestSignedInPageWrites: the room page signed in with GitHub (a fake
// one) writes with its session cookie as the server requires of every
// cookie-signed write, JSON from its own origin: it joins, posts under the
// account's name (source browser) and signs out.
func TestSignedInPageWrites(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := githubRunner(t, "grace")
	const room = "signed in room"
	b := newTab(t, chromedp.WithNewBrowserContext())
	b.open(r.URL + "/in/" + roomPath(room))
	b.signIn()
	b.until("the account shown, the room live", `document.getElementById("auth").textContent.includes("(grace)") &&
		document.getElementById("status").classList.contains("live")`)
	b.do("write a message", chromedp.SendKeys(chromedp.ID("text"), "hello, signed in"))
	b.enter()
	b.until("the composer to empty", `document.getElementById("text").value === ""`)

	page := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/messages", nil, http.StatusOK)
	msgs, _ := page["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("room holds %d messages, want the one sent: %v", len(msgs), page)
	}
	if m := msgs[0].(map[string]any); m["sender"] != "grace Name" || m["source"] != "browser" || m["text"] != "hello, signed in" {
		t.Errorf("stored %v, want grace's message with source browser", m)
	}
	b.do("sign out", chromedp.Click(`#auth button`))
	b.untilNavigated("the page signed out", `[...document.querySelectorAll("#auth button")].some(x => x.textContent === "Sign in with GitHub")`)
}

// TestLocalOwnerPage: on a runner without a GitHub app the room page says
// that everyone acts as the local owner, offers no sign-in or sign-out,
// and, being the local owner, cancels a task on the board (an admin's
// move), which nobody signed out could make.
func TestLocalOwnerPage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "github.com/acme/owned"
	r.join(room)
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/tasks", map[string]any{"title": "Owned"}, http.StatusCreated)
	b := openRoom(t, r, room)
	b.until("the local owner notice", `document.getElementById("auth").textContent.includes("Sign-in is off: everyone here acts as the local owner.")`)
	if n := eval[int](b, `document.querySelectorAll("#auth button").length`); n != 0 {
		t.Errorf("the auth area shows %d buttons, want none (no sign-in, no sign-out)", n)
	}
	status := eval[string](b, `fetch("/rooms/`+roomPath(room)+`/tasks/task_1", {method: "PATCH", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({status: "cancelled"})}).then(r => r.json()).then(j => j.status || j.error)`)
	if status != "cancelled" {
		t.Errorf("the page's PATCH of task_1 to cancelled answered %q, want cancelled (the local owner administers the room)", status)
	}
}
