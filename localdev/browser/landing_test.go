package browser_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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

// TestLandingHostedProbe: the landing page offers the hosted endpoint
// where its origin serves MCP at /mcp, even one that wants an OAuth
// sign-in before anything (a 401 pointing to its metadata), and hides it
// where /mcp is anything else (a Lambda-only origin's 404).
func TestLandingHostedProbe(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	required := startRunner(t, "LETAGENTS_MCP_AUTH=required")
	plain := startRunner(t)
	// An origin without /mcp: the runner behind a proxy that answers the
	// path as the API's 404 does.
	target, err := url.Parse(plain.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	lambdaOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"not found"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(lambdaOnly.Close)
	for _, c := range []struct {
		name, origin string
		offered      bool
	}{
		{"sign-in required", required.URL, true},
		{"no /mcp", lambdaOnly.URL, false},
	} {
		b := newTab(t)
		b.open(c.origin + "/")
		b.until(c.name+": the probe answered", `document.getElementById("hosted").dataset.probed === "true"`)
		if hidden := eval[bool](b, `document.getElementById("hosted").hidden`); hidden == c.offered {
			t.Errorf("%s: the hosted section hidden: %v, want %v", c.name, hidden, !c.offered)
		}
	}
}
