package browser_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

// searchIDs is the ids of a room search's results, in the server's order.
func searchIDs(r *runner, room, q string) []string {
	r.t.Helper()
	body := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/search?limit=20&q="+url.QueryEscape(q), nil, http.StatusOK)
	var ids []string
	list, _ := body["results"].([]any)
	for _, h := range list {
		m, _ := h.(map[string]any)["message"].(map[string]any)
		id, _ := m["id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// TestSearchFromPage: the search box asks the server. A query with an
// exclusion shows the server's ranked hits, in its order, matched words
// in <mark>; a hostile text in a hit stays text; a result opens its
// message in the chat; a bad query shows the server's message; "More
// results" follows the cursor; Escape goes back to the chat. @mentions
// show on their message.
func TestSearchFromPage(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "search-room"
	r.join(room)
	storetest.Register(t, store.New(r.db.Pool), room, "Builder", letagents.SessionWorker, time.Now())

	web := r.send(room, "Reviewer", "deploy the web app later")
	best := r.send(room, "ann", "@Builder deploy the api now: deploy, then deploy again")
	r.send(room, "ann", "deploy notes for the api")
	hostile := r.send(room, `<img src=x onerror="window.__pwned = 'sender'">`, `<img src=x onerror="window.__pwned = 'search'"> deploy`)
	for i := range 22 {
		r.send(room, "bulk", fmt.Sprintf("bulk item %d", i))
	}

	b := openRoom(t, r, room)
	if got := eval[string](b, `(document.querySelector("#`+best+` .mentions") || {}).textContent || ""`); got != "mentions @Builder" {
		t.Errorf("%s's mentions line = %q, want %q", best, got, "mentions @Builder")
	}

	const q = "deploy -web"
	want := searchIDs(r, room, q)
	if len(want) != 3 || slices.Contains(want, web) {
		t.Fatalf("the API finds %v for %q, want the 3 deploy messages but %s", want, q, web)
	}
	b.do("type a query", chromedp.SendKeys(chromedp.ID("search"), q))
	b.until("the results", `document.getElementById("chat").classList.contains("searching") &&
		document.getElementById("results-list").getAttribute("aria-busy") === "false" &&
		document.querySelectorAll("#results-list li").length > 0`)
	if got := eval[[]string](b, `[...document.querySelectorAll("#results-list button")].map(x => x.dataset.id)`); !slices.Equal(got, want) {
		t.Errorf("the page lists %v, want the server's ranking %v", got, want)
	}
	marks := eval[[]string](b, `[...document.querySelectorAll("#results-list mark")].map(m => m.textContent.toLowerCase())`)
	if len(marks) < 3 || slices.ContainsFunc(marks, func(m string) bool { return m != "deploy" }) {
		t.Errorf("marked parts %v, want only the matched word, in every result", marks)
	}
	if got := eval[string](b, `document.querySelector('#results-list button[data-id="`+hostile+`"]').textContent`); !strings.Contains(got, `onerror="window.__pwned`) {
		t.Errorf("the hostile hit shows %q, want its markup as text", got)
	}
	if eval[bool](b, `"__pwned" in window || !!document.querySelector("#results-list img")`) {
		t.Error("a hostile text in a result was inserted as markup")
	}
	axeCheck(b, "search results")
	b.screenshot("search-results")

	b.do("open the best result", chromedp.Click(chromedp.CSS(`#results-list button[data-id="`+best+`"]`)))
	b.until(best+" focused in the chat", `!document.getElementById("chat").classList.contains("searching") &&
		document.activeElement && document.activeElement.id === `+jsString(best)+` && location.hash === "#`+best+`"`)

	bad := r.api(http.MethodGet, "/rooms/"+roomPath(room)+"/search?q=-deploy", nil, http.StatusBadRequest)
	msg, _ := bad["error"].(string)
	if msg == "" {
		t.Fatalf("a bad query answers %v, want an error message", bad)
	}
	b.do("search with no wanted word", chromedp.SetValue(chromedp.ID("search"), "-deploy"), chromedp.SendKeys(chromedp.ID("search"), kb.Enter))
	b.until("the server's message", `document.getElementById("chat-note").textContent.includes(`+jsString(msg)+`) &&
		document.querySelectorAll("#results-list li").length === 0`)

	b.do("search the bulk", chromedp.SetValue(chromedp.ID("search"), "bulk"), chromedp.SendKeys(chromedp.ID("search"), kb.Enter))
	b.until("a first page of 20", `document.querySelectorAll("#results-list li").length === 20 && !document.getElementById("results-more").hidden`)
	b.do("more results", chromedp.Click(chromedp.ID("results-more")))
	b.until("all 22, no more", `document.querySelectorAll("#results-list li").length === 22 && document.getElementById("results-more").hidden &&
		new Set([...document.querySelectorAll("#results-list button")].map(x => x.dataset.id)).size === 22`)

	b.do("Escape", chromedp.SendKeys(chromedp.ID("search"), kb.Escape))
	b.until("the chat again", `!document.getElementById("chat").classList.contains("searching") &&
		document.getElementById("search").value === "" && document.getElementById("scroller").offsetParent !== null`)
}
