package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// asWorker calls the runner's API with w's worker session in the body, as
// the MCP client does, and fails the test unless it answers want.
func asWorker(t *testing.T, r *runner, w storetest.Worker, method, path string, body map[string]any, want int) {
	t.Helper()
	body["agent_session_id"] = letagents.WireID(letagents.AgentSessionPrefix, w.ID)
	body["agent_session_token"] = w.Token
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w.OwnerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, _ := io.ReadAll(resp.Body); resp.StatusCode != want {
		t.Fatalf("%s %s as %s = %d %s, want %d", method, path, w.ActorLabel, resp.StatusCode, got, want)
	}
}

// waitFor parks a long-poll on path with the session headers h until the
// test ends: messages reach that session now.
func waitFor(t *testing.T, r *runner, path string, h http.Header) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestBoardColumnsAndActions: the board as columns, each card with its
// description (collapsed), people, dates, both leases with their holders
// and expiry, and its merge readiness; a room admin gets the moves and
// lease actions and sees the server's refusal on the card, a viewer who
// is not signed in gets none of them. The admin hands the work to a
// worker connected now.
func TestBoardColumnsAndActions(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := githubRunner(t, "grace")
	const room = "board views"
	st := store.New(r.db.Pool)
	builder := storetest.Register(t, st, room, "Builder", letagents.SessionWorker, time.Now())
	checker := storetest.Register(t, st, room, "Checker", letagents.SessionWorker, time.Now())
	tasks := "/rooms/" + roomPath(room) + "/tasks"
	asWorker(t, r, builder, http.MethodPost, tasks, map[string]any{"title": "build the parser", "description": "Parse the grammar in docs/grammar.md."}, http.StatusCreated)

	// The admin: the first signed-in person to open the room.
	admin := newTab(t, chromedp.WithNewBrowserContext())
	admin.open(r.URL + "/in/" + roomPath(room))
	admin.signIn()
	admin.until("the admin's Accept on the proposed task", `document.querySelector('#board button[aria-label="Accept task_1"]')`)
	viewer := newTab(t, chromedp.WithNewBrowserContext())
	viewer.open(r.URL + "/in/" + roomPath(room))
	viewer.until("the task on the viewer's board", `document.getElementById("board").textContent.includes("build the parser")`)

	admin.press("accept task_1", `#board button[aria-label="Accept task_1"]`)
	viewer.until("task_1 accepted, live", `[...document.querySelectorAll("#board h3")].some(h => h.textContent.startsWith("accepted") &&
		h.nextElementSibling.textContent.includes("build the parser"))`)
	task := tasks + "/task_1"
	asWorker(t, r, builder, http.MethodPatch, task, map[string]any{"status": "assigned", "lease_ttl_seconds": 1800}, http.StatusOK)
	asWorker(t, r, builder, http.MethodPatch, task, map[string]any{"status": "in_progress"}, http.StatusOK)
	asWorker(t, r, builder, http.MethodPatch, task, map[string]any{"status": "in_review", "pr_url": "https://github.com/acme/parser/pull/7"}, http.StatusOK)
	asWorker(t, r, checker, http.MethodPost, task+"/review-lease-action", map[string]any{"action": "claim"}, http.StatusOK)

	const card = `(document.querySelector('#board li[data-task="task_1"]') || {textContent: ""})`
	for _, b := range []*tab{admin, viewer} {
		b.until("both leases, the review and the PR on the card", card+`.textContent.includes("Work: Builder") && `+card+`.textContent.includes("Review: Checker") &&
			`+card+`.textContent.includes("ready to merge once Checker") && `+card+`.textContent.includes("PR #7")`)
		if got := eval[string](b, card+`.querySelector(".lease").textContent`); !strings.Contains(got, "expires in 30 min") && !strings.Contains(got, "expires in 29 min") {
			t.Errorf("the work lease reads %q, want its holder and expiry in 30 min", got)
		}
		if !eval[bool](b, card+`.querySelector("details.desc") && !`+card+`.querySelector("details.desc").open && `+card+`.textContent.includes("Parse the grammar")`) {
			t.Error("the description is not on the card, collapsed")
		}
		if !eval[bool](b, card+`.textContent.includes("created ") && `+card+`.textContent.includes("updated ")`) {
			t.Error("the card has no dates")
		}
	}
	if n := eval[int](viewer, `document.querySelectorAll("#board button, #board select").length`); n != 0 {
		t.Errorf("a viewer who is not signed in is offered %d board actions, want none", n)
	}
	for _, label := range []string{"Merged task_1", "Release work lease of task_1", "Release review lease of task_1"} {
		if !eval[bool](admin, `!!document.querySelector('#board button[aria-label="`+label+`"]')`) {
			t.Errorf("the admin is not offered %q", label)
		}
	}

	// An opened description stays open while the board changes under it.
	viewer.press("open the description", `#board li[data-task="task_1"] details.desc summary`)
	viewer.until("the description open", card+`.querySelector("details.desc").open`)

	// The admin takes the review lease back: the card says it needs a
	// reviewer, and merging now is the server's refusal, on the card.
	admin.press("release the review", `#board button[aria-label="Release review lease of task_1"]`)
	viewer.until("the review gone, live", card+`.textContent.includes("needs a reviewer") && !`+card+`.textContent.includes("Review: Checker")`)
	admin.until("the review gone", card+`.textContent.includes("needs a reviewer")`)
	if !eval[bool](viewer, card+`.querySelector("details.desc").open`) {
		t.Error("the opened description closed when the board redrew")
	}
	admin.press("merge without a review", `#board button[aria-label="Merged task_1"]`)
	admin.until("the refusal on the card", card+`.querySelector(".panel-err") && /review/i.test(`+card+`.querySelector(".panel-err").textContent)`)

	// Checker starts waiting for messages: connected now, it is offered
	// as the work's new holder, and the admin hands the work to it.
	waitFor(t, r, "/rooms/"+roomPath(room)+"/messages/poll?timeout=120000", http.Header{"Authorization": {"Bearer " + checker.OwnerToken},
		"X-Letagents-Agent-Session-Id": {letagents.WireID(letagents.AgentSessionPrefix, checker.ID)}, "X-Letagents-Agent-Session-Token": {checker.Token}})
	admin.until("a handoff to Checker offered", `[...document.querySelectorAll('#board select[aria-label="Hand task_1 off to"] option')].some(o => o.textContent === "Checker")`)
	admin.press("hand the work off", `#board button[aria-label="Hand task_1 off"]`)
	viewer.until("the work lease Checker's, live", card+`.querySelector(".lease") && `+card+`.querySelector(".lease").textContent.includes("Work: Checker")`)

	// The wide board: a column per open status across the page, the chat
	// out of the way, and back.
	viewer.press("widen the board", "#board-wide")
	viewer.until("the columns", `document.getElementById("layout").classList.contains("wide-board") && document.querySelectorAll("#board .col").length === 7`)
	if !eval[bool](viewer, `document.getElementById("chat").offsetParent === null && getComputedStyle(document.querySelector("#board .cols")).display === "grid"`) {
		t.Error("the wide board does not lay its columns out across the page with the chat hidden")
	}
	if got := eval[string](viewer, `document.getElementById("board-wide").getAttribute("aria-pressed")`); got != "true" {
		t.Errorf("the wide board button is aria-pressed=%s, want true", got)
	}
	viewer.press("back to the chat", "#board-wide")
	viewer.until("the chat back", `document.getElementById("chat").offsetParent !== null && !document.getElementById("layout").classList.contains("wide-board")`)
}

// TestAgentsViewSplitAndLiveDot: the agents view puts the agents messages
// reach now apart from those that were here (with when), reads each as a
// name with its owner and client as badges, and moves a worker to
// "Connected now" the moment it starts waiting for messages: the page's
// own reads of the list fail, so only the stream's presence event (the
// reach event) can bring it.
func TestAgentsViewSplitAndLiveDot(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "agents view"
	path := "/rooms/" + roomPath(room)
	r.join(room)
	r.api(http.MethodPost, "/agents", map[string]string{"name": "runner"}, http.StatusCreated)
	s := r.api(http.MethodPost, path+"/agent-sessions", map[string]string{"actor_key": "local/runner", "display_name": "Runner",
		"runtime": "codex", "ide_label": "Codex"}, http.StatusCreated)
	id, _ := s["session_id"].(string)
	token, _ := s["session_token"].(string)
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)
	const group = `(name => [...document.querySelectorAll("#agents h3")].filter(h => h.textContent.startsWith(name)).map(h => h.nextElementSibling.textContent).join(""))`
	b.until("the worker among those that were here", group+`("Were here").includes("Runner") && !`+group+`("Connected now").includes("Runner")`)
	if !eval[bool](b, `[...document.querySelectorAll("#agents .badge.client")].some(x => x.textContent === "Codex")`) {
		t.Errorf("the worker's client is not a badge: %s", eval[string](b, `document.getElementById("agents").innerHTML`))
	}
	eval[chromedp.Void](b, `(() => {
		window.__notReloaded = true;
		const real = window.fetch;
		window.fetch = (u, o) => /\/participants/.test(String(u)) ? Promise.reject(new TypeError("agent reads fail in this test")) : real(u, o);
	})()`)

	// The worker waits for messages: a long-poll with its session.
	waitFor(t, r, path+"/messages/poll?timeout=120000", http.Header{"X-Letagents-Agent-Session-Id": {id}, "X-Letagents-Agent-Session-Token": {token}})
	b.until("the worker connected, live", group+`("Connected now").includes("Runner") && document.querySelector("#agents .dot.on")`)
	if !eval[bool](b, `window.__notReloaded === true`) {
		t.Fatal("the page was reloaded: the dot did not change in place")
	}
}
