package browser_test

import (
	"net/http"
	"testing"
)

// TestPinShowsLive: a message pinned through the API gets its marker and
// its line in the pinned list of an open page, through the event stream
// (message_update), and loses both when unpinned, with no reload.
func TestPinShowsLive(t *testing.T) {
	skipIfOptedOut(t)
	t.Parallel()
	r := startRunner(t)
	const room = "pinned plans"
	r.join(room)
	r.send(room, "ada", "the plan worth keeping")
	b := openRoom(t, r, room)
	b.until("the event stream to open", streaming)
	b.until("the message", `document.querySelector('#log li[data-id="msg_1"]')`)
	pin := "/rooms/" + roomPath(room) + "/messages/msg_1/pin"
	r.api(http.MethodPost, pin, nil, http.StatusOK)
	b.until("the pin marker", `(li => li && li.querySelector(".pin-mark"))(document.querySelector('#log li[data-id="msg_1"]'))`)
	b.until("the pinned list", `(p => p && !p.hidden && p.textContent.includes("the plan worth keeping"))(document.getElementById("pins"))`)
	r.api(http.MethodDelete, pin, nil, http.StatusOK)
	b.until("the marker to go", `!document.querySelector('#log li[data-id="msg_1"] .pin-mark')`)
	b.until("the pinned list to hide", `document.getElementById("pins").hidden`)
}
