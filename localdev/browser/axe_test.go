package browser_test

import (
	_ "embed"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core, vendored as test data (see testdata/axe-core).
//
//go:embed testdata/axe-core/axe.min.js
var axeSource string

// axeViolation is what axe reports of one rule that fails.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// stylesApplied is the condition of a page whose every stylesheet
// applies: a <style> its CSP refused has no sheet, and the page would be
// checked unstyled.
const stylesApplied = `[...document.querySelectorAll("style")].every(s => s.sheet && s.sheet.cssRules.length > 0)`

// axeCheck runs axe-core on the page as it stands and fails the test on
// any violation, of any impact, naming the elements.
func axeCheck(b *tab, view string) {
	b.t.Helper()
	if !eval[bool](b, `typeof axe === "object"`) {
		eval[chromedp.Void](b, axeSource)
	}
	found := eval[[]axeViolation](b, `axe.run(document, { resultTypes: ["violations"] }).then(r => r.violations)`)
	for _, v := range found {
		var where []string
		for _, n := range v.Nodes {
			where = append(where, fmt.Sprintf("%v: %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " ")))
		}
		b.t.Errorf("%s: axe %s (%s): %s\n\t%s", view, v.ID, v.Impact, v.Help, strings.Join(where, "\n\t"))
	}
	if len(found) == 0 {
		b.t.Logf("%s: axe found no violations", view)
	}
}

// TestAccessibility runs axe-core on the landing page and on a room with
// messages, a board and an agent, in light and in dark, wide and narrow.
func TestAccessibility(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "github.com/acme/a11y"
	r.join(room)
	r.send(room, "Builder | ada's agent | Codex", "Merged **#12**: see https://example.com/pr/12\n\n```go\n// main prints a greeting.\nfunc main() {\n\tfmt.Println(\"hi\", 42)\n}\n```")
	r.send(room, "Reviewer", "| check | state |\n|---|---|\n| vet | `ok` |\n\n> a quote\n\n1. one\n2. two")
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/tasks", map[string]string{"title": "Write the browser tests", "created_by": "Reviewer",
		"description": "Cover the board and the agents views."}, http.StatusCreated)
	// An agent with its badges and a reasoning card with its trail.
	r.api(http.MethodPost, "/agents", map[string]string{"name": "scout"}, http.StatusCreated)
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/agent-sessions", map[string]string{"actor_key": "local/scout", "display_name": "Scout",
		"ide_label": "Claude Code"}, http.StatusCreated)
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/reasoning-sessions", map[string]string{"actor_label": "Scout", "agent_key": "local/scout", "summary": "checking contrast"}, http.StatusCreated)

	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			b := newTab(t)
			b.scheme(scheme)
			b.open(r.URL + "/")
			b.until("the landing page", `document.getElementById("mcp-config").textContent.includes("letagents")`)
			b.until("the landing page's stylesheets applied", stylesApplied)
			axeCheck(b, "landing page")
			b.screenshot("landing")

			b.open(r.URL + "/in/" + roomPath(room))
			// Three messages: the two sent, and the server's line that the
			// task is accepted (the local owner, who added it, administers
			// the room).
			b.until("the room with its board", `document.getElementById("status").classList.contains("live") &&
				document.querySelectorAll("#log .msg").length === 3 && document.querySelector("#board li")`)
			b.until("the room's stylesheets applied", stylesApplied)
			axeCheck(b, "room")
			b.screenshot("room")
			b.until("the agent's badges and reasoning trail", `document.querySelector("#agents .badge.client") && document.querySelector("#agents details.trail")`)
			// Pressed, not clicked through chromedp: both lists redraw on live
			// events, and a redraw between finding the node and clicking it
			// failed the click ("Could not find node with given id").
			b.press("open the trail", `#agents details.trail summary`)
			b.press("open a description", `#board details.desc summary`)
			b.until("the trail read", `!document.querySelector("#agents details.trail").textContent.includes("loading")`)
			axeCheck(b, "room, trail and description open")
			b.press("widen the board", "#board-wide")
			b.until("the wide board", `document.querySelectorAll("#board .col").length === 7`)
			axeCheck(b, "room, wide board")
			b.screenshot("room-wide-board")
			b.press("back to the chat", "#board-wide")
			b.until("the chat back", `!document.getElementById("layout").classList.contains("wide-board")`)

			b.do("narrow the window", chromedp.EmulateViewport(390, 844))
			b.until("the tabs", `getComputedStyle(document.getElementById("tabs")).display !== "none"`)
			axeCheck(b, "room, narrow")
			b.screenshot("room-narrow")
			b.do("show the board", chromedp.Click(chromedp.CSS(`#tabs [data-tab="board"]`)))
			b.until("the board tab", `document.getElementById("layout").dataset.tab === "board" &&
				document.querySelector('#tabs [data-tab="board"]').getAttribute("aria-selected") === "true"`)
			axeCheck(b, "room, narrow, board")
			b.screenshot("room-narrow-board")
		})
	}
}
