package browser_test

import (
	"regexp"
	"testing"
)

// TestLandingPage: the landing page's script (a module, as no page has an
// inline script) fills in each client's MCP set-up (Claude Code, Codex,
// Cursor, Gemini CLI) with the server's origin, says who acts here, opens the room typed, refuses an empty one, and
// creates a room with a fresh invite code.
func TestLandingPage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	b := newTab(t)
	b.open(r.URL + "/")
	b.until("the configuration with this origin", `document.getElementById("mcp-config").textContent.includes(`+jsString(r.URL)+`)`)
	for _, c := range []struct{ tab, file, config string }{
		{"codex", "~/.codex/config.toml", `[mcp_servers.letagents]`},
		{"cursor", ".cursor/mcp.json", `"mcpServers"`},
		{"gemini", "~/.gemini/settings.json", `"LETAGENTS_API_URL": ` + jsString(r.URL)},
		{"claude", "In a terminal", `claude mcp add letagents --env LETAGENTS_API_URL=` + r.URL + ` -- letagents`},
	} {
		b.press(c.tab, `[data-client="`+c.tab+`"]`)
		b.until(c.tab+"'s set-up", `document.querySelector('[data-client="`+c.tab+`"]').getAttribute("aria-selected") === "true" &&
			document.getElementById("client-file").textContent.includes(`+jsString(c.file)+`) &&
			document.getElementById("mcp-config").textContent.includes(`+jsString(c.config)+`) &&
			document.getElementById("mcp-config").textContent.includes(`+jsString(r.URL)+`)`)
	}
	// The local runner serves /mcp, so the page offers it too, for the
	// client chosen.
	b.until("the hosted endpoint offered", `!document.getElementById("hosted").hidden &&
		document.getElementById("hosted-url").textContent === `+jsString(r.URL+"/mcp")+` &&
		document.getElementById("hosted-config").textContent.includes("claude mcp add --transport http letagents `+r.URL+`/mcp")`)
	b.press("codex", `[data-client="codex"]`)
	b.until("codex's hosted set-up", `document.getElementById("hosted-config").textContent.includes(`+jsString(`url = "`+r.URL+`/mcp"`)+`)`)
	b.until("who acts here", `document.getElementById("auth").textContent.includes("acts as the local owner")`)

	b.press("Open with no room id", `#open-form button[type=submit]`)
	b.until("the empty id refused", `document.getElementById("open-error").textContent === "Enter a room id or invite code."`)
	b.until("the error cleared on typing", `(() => {
		const input = document.getElementById("room-id");
		input.value = "/github.com/acme/landing/";
		input.dispatchEvent(new Event("input"));
		return document.getElementById("open-error").textContent === "";
	})()`)
	b.press("Open", `#open-form button[type=submit]`)
	b.untilNavigated("the room typed", `location.pathname === "/in/github.com/acme/landing"`)

	b.open(r.URL + "/")
	b.press("Create a room", `#create-btn`)
	b.untilNavigated("a new room", `/^\/in\/[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/.test(location.pathname)`)
	code := regexp.MustCompile(`[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}`).FindString(eval[string](b, `location.pathname`))
	b.untilNavigated("the new room open", `document.getElementById("status").classList.contains("live") &&
		document.getElementById("title").textContent.includes(`+jsString(code)+`)`)
}
