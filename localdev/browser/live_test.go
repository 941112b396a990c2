package browser_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

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
// room through the long-poll, as does the page that has the stream.
func TestLiveWithoutStream(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t, "LETAGENTS_STREAM_ROOM_MAX=1")
	const room = "capped room"
	r.join(room)
	first := openRoom(t, r, room)
	first.until("the event stream to open", streaming)
	second := openRoom(t, r, room)
	second.until("the long-poll", `document.getElementById("status").dataset.via === "poll"`)
	id := r.send(room, "a", "to both")
	for _, b := range []*tab{first, second} {
		b.until(id+" to appear", `document.getElementById(`+jsString(id)+`)`)
		if n := eval[int](b, `document.querySelectorAll("#log .msg").length`); n != 1 {
			t.Errorf("the log shows %d messages, want 1", n)
		}
	}
}
