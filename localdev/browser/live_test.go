package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestLiveBoardAndReasoning: a task created through the API appears on
// an open page's board, and a reasoning session an agent opens shows in
// its card beside its presence and goes when closed, each through the
// event stream, with no reload; the test logs the board's latency.
func TestLiveBoardAndReasoning(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "live board"
	const agent = "Scout | ada's agent | Codex"
	r.join(room)
	r.send(room, agent, "looking around")
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)
	b.until("the agent among the people", `document.getElementById("agents").textContent.includes("Scout")`)
	// When each task's element appeared, by its title.
	eval[chromedp.Void](b, `(() => {
		window.__tasks = {};
		const board = document.getElementById("board");
		const mark = () => { for (const li of board.querySelectorAll("li")) { const t = li.querySelector("div span:last-child").textContent; if (!(t in window.__tasks)) window.__tasks[t] = Date.now(); } };
		mark();
		new MutationObserver(mark).observe(board, { childList: true, subtree: true });
	})()`)

	const n = 5
	var took []time.Duration
	for i := range n {
		title := fmt.Sprintf("task %d", i+1)
		sent := time.Now()
		r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/tasks", map[string]string{"title": title, "created_by": "ada"}, http.StatusCreated)
		b.until(title+" on the board", `window.__tasks[`+jsString(title)+`]`)
		at := eval[int64](b, `window.__tasks[`+jsString(title)+`]`)
		took = append(took, time.UnixMilli(at).Sub(sent))
	}
	slices.Sort(took)
	t.Logf("live board latency through the event stream, API create to task on the board, %d tasks: median %v, max %v (all %v)",
		n, took[n/2].Round(time.Millisecond), took[n-1].Round(time.Millisecond), took)
	if got := eval[int](b, `document.querySelectorAll("#board li").length`); got != n {
		t.Errorf("the board shows %d tasks, want %d (none twice)", got, n)
	}

	s := r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/reasoning-sessions",
		map[string]string{"actor_label": agent, "summary": "reading the logs", "status": "working"}, http.StatusCreated)
	session, _ := s["session"].(map[string]any)
	id, _ := session["id"].(string)
	const card = `[...document.querySelectorAll("#agents .think")].find(c => !c.hidden)`
	b.until("the reasoning card", `(c => c && c.textContent.includes("reading the logs"))(`+card+`)`)
	r.api(http.MethodPatch, "/rooms/"+roomPath(room)+"/reasoning-sessions/"+id, map[string]string{"closed_at": time.Now().UTC().Format(time.RFC3339)}, http.StatusOK)
	b.until("the card to go", `!`+card)
}

// TestLiveWithoutStream: a page the server will not give a stream (the
// room holds its most, LETAGENTS_STREAM_ROOM_MAX, here 1) follows the
// room through the long-poll, as does the page that has the stream. The
// long-poll brings messages alone, so that page reloads its panel on a
// timer (every 15 s): a worker's new status, an event no poll carries,
// reaches it.
func TestLiveWithoutStream(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	const room = "capped room"
	r, first, second := oneStreamRoom(t, room)
	r.api(http.MethodPost, "/agents", map[string]string{"name": "runner"}, http.StatusCreated)
	s := r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/agent-sessions",
		map[string]string{"actor_key": "local/runner", "display_name": "Runner", "runtime": "codex"}, http.StatusCreated)
	id := r.send(room, "a", "to both")
	for _, b := range []*tab{first, second} {
		b.until(id+" to appear", `document.getElementById(`+jsString(id)+`)`)
		if n := eval[int](b, `document.querySelectorAll("#log .msg").length`); n != 1 {
			t.Errorf("the log shows %d messages, want 1", n)
		}
	}
	// The page's reads of the agents from now on: a reload the message
	// asked for may still come, once; a second can only be the timer's.
	eval[chromedp.Void](second, `(() => {
		window.__agentReads = 0;
		const real = window.fetch;
		window.fetch = (u, o) => { if (/\/participants/.test(String(u))) window.__agentReads++; return real(u, o); };
	})()`)
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/presence", map[string]any{"status": "working", "status_text": "polled for",
		"agent_session_id": s["session_id"], "agent_session_token": s["session_token"]}, http.StatusOK)
	second.until("the polling page's timer to reload the agents", `window.__agentReads >= 2`)
	second.until("the worker's new status on the polling page", `document.getElementById("agents").textContent.includes("working — polled for")`)
	if n := eval[int](second, `document.querySelectorAll("#log .msg").length`); n != 1 {
		t.Errorf("the log shows %d messages, want 1: the status came with no message", n)
	}
}

// oneStreamRoom starts a runner that gives a room one stream at most
// (LETAGENTS_STREAM_ROOM_MAX=1) and opens room in two tabs: the first on
// the event stream, the second refused it and on the long-poll.
func oneStreamRoom(t *testing.T, room string) (r *runner, first, second *tab) {
	t.Helper()
	r = startRunner(t, "LETAGENTS_STREAM_ROOM_MAX=1")
	r.join(room)
	first = openRoom(t, r, room)
	first.until("the event stream to open", streaming)
	second = openRoom(t, r, room)
	second.until("the long-poll", `document.getElementById("status").dataset.via === "poll"`)
	return r, first, second
}

// TestStreamAgainOnceFree: a page refused the stream long-polls, and
// tries the stream again a few seconds on, so that it follows the stream
// once the server will give it one (here the room's one stream let go;
// after a restart, the server's listener up). A page that kept to the
// long-poll for good would stay on it.
func TestStreamAgainOnceFree(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	const room = "one stream room"
	r, first, second := oneStreamRoom(t, room)
	// Closed: a page navigated away can stay in the back/forward cache
	// with its stream open.
	first.do("close the first page", func(ctx context.Context, _ *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, page.Close, cdp.Empty{})
		return chromedp.Void{}, err
	})
	second.until("the event stream, once the first page let it go", streaming)
	id := r.send(room, "a", "on the stream")
	second.until(id+" to appear", `document.getElementById(`+jsString(id)+`)`)
	if n := eval[int](second, `document.querySelectorAll("#log .msg").length`); n != 1 {
		t.Errorf("the log shows %d messages, want 1", n)
	}
}

// TestNativeActivityOnCard: what a worker's runtime reports doing outside
// the room (POST …/native-activity) shows as one line of its agent card,
// status and text, and follows the next report; never as a chat message.
func TestNativeActivityOnCard(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "native activity"
	r.api(http.MethodPost, "/agents", map[string]string{"name": "runner"}, http.StatusCreated)
	r.join(room)
	s := r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/agent-sessions",
		map[string]string{"actor_key": "local/runner", "display_name": "Runner", "runtime": "codex"}, http.StatusCreated)
	id, _ := s["session_id"].(string)
	token, _ := s["session_token"].(string)
	report := func(seq int, status, text string) {
		t.Helper()
		r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/agent-sessions/"+id+"/native-activity", map[string]any{
			"observed_at": time.Now().UTC().Format(time.RFC3339Nano), "sequence": seq, "method": "item/started",
			"status": status, "text": text, "agent_session_id": id, "agent_session_token": token}, http.StatusOK)
	}
	b := openRoom(t, r, room)
	b.until("the worker among the people", `document.getElementById("agents").textContent.includes("Runner")`)
	const line = `(document.querySelector("#agents .native") || {}).textContent || ""`
	if got := eval[string](b, line); got != "" {
		t.Errorf("before any report the card says %q, want no native line", got)
	}

	// Its presence event brings the first report (and the roster's own
	// refresh would).
	report(1, "working", "running go test ./...")
	b.until("the native line", `(l => l.startsWith("codex: working — running go test ./..."))(`+line+`)`)
	// Its event brings the next, and so does the reload a message makes.
	report(2, "blocked", "waiting for review")
	r.send(room, "someone", "how is it going?")
	b.until("the next report", `(l => l.startsWith("codex: blocked — waiting for review"))(`+line+`)`)
	if got := eval[int](b, `document.querySelectorAll("#agents .native").length`); got != 1 {
		t.Errorf("%d native lines, want one, on the worker's card", got)
	}
	if got := eval[string](b, `document.getElementById("log").textContent`); strings.Contains(got, "running go test") || strings.Contains(got, "waiting for review") {
		t.Errorf("the chat shows native activity: %q", got)
	}
}

// TestPresenceUpdatesInPlace: an agent that posts its presence, a worker
// that joins and one that ends reach an open agents list through the
// stream's presence events alone. The page's own reads of the list are
// made to fail first, so only the events can bring them, and a mark on the
// window proves the page was not reloaded.
func TestPresenceUpdatesInPlace(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "presence in place"
	sessions := "/rooms/" + roomPath(room) + "/agent-sessions"
	r.join(room)
	register := func(name string) (id, token string) {
		t.Helper()
		r.api(http.MethodPost, "/agents", map[string]string{"name": strings.ToLower(name)}, http.StatusCreated)
		s := r.api(http.MethodPost, sessions, map[string]string{"actor_key": "local/" + strings.ToLower(name), "display_name": name,
			"runtime": "codex"}, http.StatusCreated)
		id, _ = s["session_id"].(string)
		token, _ = s["session_token"].(string)
		return id, token
	}
	id, token := register("Runner")
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)
	const agents = `document.getElementById("agents").textContent`
	b.until("the worker among the agents", agents+`.includes("Runner")`)
	eval[chromedp.Void](b, `(() => {
		window.__notReloaded = true;
		window.__agentReads = 0;
		const real = window.fetch;
		window.fetch = (u, o) => {
			if (/\/participants/.test(String(u))) { window.__agentReads++; return Promise.reject(new TypeError("agent reads fail in this test")); }
			return real(u, o);
		};
	})()`)

	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/presence", map[string]string{"status": "working", "status_text": "building the parser",
		"agent_session_id": id, "agent_session_token": token}, http.StatusOK)
	b.until("the new status on the worker's card", agents+`.includes("working — building the parser")`)
	register("Second")
	b.until("the worker that joined", agents+`.includes("Second")`)
	r.api(http.MethodPost, sessions+"/"+id+"/disconnect", map[string]string{"agent_session_id": id, "agent_session_token": token}, http.StatusOK)
	b.until("the ended worker gone", `!`+agents+`.includes("Runner")`)
	if !eval[bool](b, `window.__notReloaded === true`) {
		t.Fatal("the page was reloaded: the agents did not change in place")
	}
	if got := eval[string](b, `document.getElementById("agents-count").textContent`); got != "(1)" {
		t.Errorf("the agents count says %s, want (1)", got)
	}
	t.Logf("agent reads refused while the events came: %d", eval[int](b, `window.__agentReads`))
}
