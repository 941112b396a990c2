package api

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/letagents/letagents-go/shared/wire"
)

// A page written with its messages spliced in (writeJSONList) is the
// same bytes, headers and status as the page encoded whole (writeJSON),
// whatever its messages hold, the page's own key and null among them.
func TestPageListIsSplicedAsEncoded(t *testing.T) {
	t.Parallel()
	older := true
	tricky := []wire.Message{
		{ID: "msg_1", Sender: "ada", Text: `"messages":null, {"messages":null}`},
		{ID: "msg_2", Sender: "<b>&", Text: "line\nbreak \u2028 \"quoted\" \\ é 😀"},
	}
	var items []json.RawMessage
	for _, m := range tricky {
		b, err := encodeJSON(m)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, b)
	}
	tests := []struct {
		name  string
		page  wire.Page
		items []json.RawMessage
	}{
		{"room page", wire.Page{RoomID: `room "messages":null`, HasMore: true}, items},
		{"legacy page read backward", wire.Page{ProjectID: "p", HasOlder: &older}, items},
		{"one message", wire.Page{RoomID: "r"}, items[:1]},
		{"empty page", wire.Page{RoomID: "r"}, []json.RawMessage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := tt.page
			whole.Messages = tt.items
			want := httptest.NewRecorder()
			writeJSON(want, 200, whole)
			got := httptest.NewRecorder()
			writeJSONList(got, 200, tt.page, "messages", tt.items)
			if got.Body.String() != want.Body.String() {
				t.Errorf("spliced:\n%s\nwant:\n%s", got.Body, want.Body)
			}
			if g, w := got.Header(), want.Header(); g.Get("Content-Length") != w.Get("Content-Length") ||
				g.Get("Content-Type") != w.Get("Content-Type") || got.Code != want.Code {
				t.Errorf("headers %v, status %d; want %v, %d", g, got.Code, w, want.Code)
			}
		})
	}
}
