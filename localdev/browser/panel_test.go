package browser_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// TestBoardUpdatesInPlace: a task created and a task moved reach an open
// board through the stream's task_update events alone. The page's own
// board reads are made to fail first, so only the events can bring them,
// and a mark on the window proves the page was not reloaded.
func TestBoardUpdatesInPlace(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "in place"
	r.join(room)
	tasks := "/rooms/" + roomPath(room) + "/tasks"
	r.api(http.MethodPost, tasks, map[string]string{"title": "first task", "created_by": "ada"}, http.StatusCreated)
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)
	b.until("the first task on the board", `document.getElementById("board").textContent.includes("first task")`)
	eval[chromedp.Void](b, `(() => {
		window.__notReloaded = true;
		window.__boardReads = 0;
		const real = window.fetch;
		window.fetch = (u, o) => {
			if (/\/tasks\?/.test(String(u))) { window.__boardReads++; return Promise.reject(new TypeError("board reads fail in this test")); }
			return real(u, o);
		};
	})()`)

	// Accepting a task takes a room admin: the owner of an agent, made one.
	w := storetest.Register(t, store.New(r.db.Pool), room, "Mover", letagents.SessionWorker, time.Now())
	if _, err := r.db.Pool.Exec(context.Background(), `INSERT INTO room_admins (room_id, account_id) VALUES ($1, $2)`, room, w.OwnerAccountID); err != nil {
		t.Fatal(err)
	}
	move, err := http.NewRequest(http.MethodPatch, r.URL+tasks+"/task_1", strings.NewReader(`{"status": "accepted"}`))
	if err != nil {
		t.Fatal(err)
	}
	move.Header.Set("Content-Type", "application/json")
	move.Header.Set("Authorization", "Bearer "+w.OwnerToken)
	resp, err := http.DefaultClient.Do(move)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH task_1 = %d %s", resp.StatusCode, body)
	}
	resp.Body.Close()
	r.api(http.MethodPost, tasks, map[string]string{"title": "second task", "created_by": "ada"}, http.StatusCreated)
	b.until("the second task on the board", `document.getElementById("board").textContent.includes("second task")`)
	b.until("the first task under accepted", `[...document.querySelectorAll("#board h3")].some(h => h.textContent.startsWith("accepted") &&
		h.nextElementSibling.textContent.includes("first task"))`)
	if !eval[bool](b, `window.__notReloaded === true`) {
		t.Fatal("the page was reloaded: the board did not change in place")
	}
	if got := eval[int](b, `document.querySelectorAll("#board li").length`); got != 2 {
		t.Errorf("the board shows %d tasks, want 2", got)
	}
	t.Logf("board reads refused while the events came: %d", eval[int](b, `window.__boardReads`))
}

// TestIntentsApproveDeny: a signed-in room admin sees an agent's pending
// board intents, approves one (its approval token shows, once) and
// denies the other, from the page; the server records both decisions.
func TestIntentsApproveDeny(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := githubRunner(t, "grace")
	const room = "intent room"
	st := store.New(r.db.Pool)
	w := storetest.Register(t, st, room, "Builder", letagents.SessionWorker, time.Now())
	for _, title := range []string{"approve me", "deny me"} {
		_, _, err := st.CreateBoardIntent(context.Background(), store.NewBoardIntent{RoomID: room, Action: "task_create",
			Payload: []byte(`{"title":"` + title + `"}`), PayloadHash: fmt.Sprintf("%x", sha256.Sum256([]byte(title))), ProposerSessionID: w.ID,
			ProposerActorLabel: "Builder | builder-owner's agent | Codex", ProposerAgentKey: w.AgentKey, Reason: title}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
	}

	b := newTab(t, chromedp.WithNewBrowserContext())
	b.open(r.URL + "/in/" + roomPath(room))
	b.signIn()
	b.until("both intents with the admin's buttons", `document.querySelector('#intents button[aria-label="Approve bi_1"]') &&
		document.querySelector('#intents button[aria-label="Deny bi_2"]')`)
	if got := eval[string](b, `document.getElementById("intents-count").textContent`); got != "(2)" {
		t.Errorf("intents count = %q, want (2)", got)
	}

	b.press("approve bi_1", `#intents button[aria-label="Approve bi_1"]`)
	b.until("the approval token, and bi_1 gone", `(i => i && i.value.length > 0)(document.querySelector('#tokens input[aria-label="Approval token for bi_1"]')) &&
		!document.querySelector('#intents button[aria-label="Approve bi_1"]')`)
	b.press("deny bi_2", `#intents button[aria-label="Deny bi_2"]`)
	b.until("bi_2 gone", `!document.querySelector('#intents button[aria-label="Deny bi_2"]') && document.querySelectorAll("#intents li").length === 0`)
	if got := eval[int](b, `document.querySelectorAll("#tokens .token-box").length`); got != 1 {
		t.Errorf("%d token boxes, want 1 (a denial has no token)", got)
	}

	list, err := st.BoardIntents(context.Background(), room, "", 10, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, i := range list {
		got[i.Reason] = i.Status
	}
	if got["approve me"] != "approved" || got["deny me"] != "denied" {
		t.Errorf("the server holds %v, want approve me approved and deny me denied", got)
	}
	b.do("dismiss the token", chromedp.Click(`#tokens .token-box button:last-child`))
	b.until("the token box gone", `!document.querySelector("#tokens .token-box")`)
}

// TestDeadStreamNoticed: a stream that stays open but goes silent (a
// proxy or a network that dropped it without closing) is noticed by the
// page from its heartbeat events, and the page reconnects and is live
// again. A proxy in front of the runner answers the page's first stream
// with one heartbeat saying beats come every second, then nothing.
func TestDeadStreamNoticed(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "silent stream"
	r.join(room)
	target, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	pass := httputil.NewSingleHostReverseProxy(target)
	pass.FlushInterval = -1
	var streams atomic.Int32
	var askedBeats atomic.Bool
	gone := make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasSuffix(req.URL.Path, "/messages/stream") || streams.Add(1) > 1 {
			pass.ServeHTTP(w, req)
			return
		}
		askedBeats.Store(req.URL.Query().Get("heartbeat") == "event")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, ": connected\n\nevent: heartbeat\ndata: {\"every_ms\":1000}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-req.Context().Done():
		case <-gone:
		}
	}))
	t.Cleanup(func() { close(gone); proxy.Close() })

	b := newTab(t)
	b.open(proxy.URL + "/in/" + roomPath(room))
	b.until("the page live on the first stream", streaming)
	eval[chromedp.Void](b, `(() => {
		window.__statuses = [];
		const s = document.getElementById("status");
		new MutationObserver(() => window.__statuses.push(s.textContent)).observe(s, { childList: true, characterData: true, subtree: true });
	})()`)
	if !askedBeats.Load() {
		t.Error("the page did not ask for heartbeat events (?heartbeat=event)")
	}
	testwait.Until(t, "the page to open a second stream", func() bool { return streams.Load() >= 2 })
	b.until("the page live on the stream again", streaming)
	if !eval[bool](b, `window.__statuses.includes("reconnecting…")`) {
		t.Errorf("the page never said it was reconnecting; statuses: %v", eval[[]string](b, `window.__statuses`))
	}
	id := r.send(room, "ada", "after the silence")
	b.until(id+" through the new stream", `document.getElementById(`+jsString(id)+`)`)
}
