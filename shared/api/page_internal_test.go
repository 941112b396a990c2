package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// A page written with its messages spliced in (writeJSONList) is the
// same bytes, headers and status as the page encoded whole (writeJSON),
// whatever its messages hold, the page's own key and null among them,
// and in either order.
func TestPageListIsSplicedAsEncoded(t *testing.T) {
	t.Parallel()
	older := true
	tricky := []wire.Message{
		{ID: "msg_1", Sender: "ada", Text: `"messages":null, {"messages":null}`},
		{ID: "msg_2", Sender: "<b>&", Text: "line\nbreak \u2028 \"quoted\" \\ é 😀"},
		{ID: "msg_3", Sender: "", Text: "]["},
	}
	tests := []struct {
		name     string
		page     wire.Page
		items    []wire.Message
		reversed bool
	}{
		{"room page", wire.Page{RoomID: `room "messages":null`, HasMore: true}, tricky, false},
		{"legacy page read backward", wire.Page{ProjectID: "p", HasOlder: &older}, tricky, true},
		{"one message", wire.Page{RoomID: "r"}, tricky[:1], false},
		{"one message, reversed", wire.Page{RoomID: "r"}, tricky[:1], true},
		{"empty page", wire.Page{RoomID: "r"}, []wire.Message{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, cut, err := withinPage(tt.items)
			if err != nil || cut {
				t.Fatalf("withinPage: cut %v, %v", cut, err)
			}
			items.reversed = tt.reversed
			whole := tt.page
			whole.Messages = []json.RawMessage{}
			for _, m := range tt.items {
				b, err := encodeJSON(m)
				if err != nil {
					t.Fatal(err)
				}
				whole.Messages = append(whole.Messages, b)
			}
			if tt.reversed {
				slices.Reverse(whole.Messages)
			}
			want := httptest.NewRecorder()
			writeJSON(want, 200, whole)
			got := httptest.NewRecorder()
			writeJSONList(got, 200, tt.page, "messages", items)
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

// Pages written at once, each through buffers the others reuse
// (pageBuffers), are each their own bytes.
func TestPagesWrittenAtOnceKeepTheirBytes(t *testing.T) {
	t.Parallel()
	const writers, rounds = 8, 200
	pages := make([]letagents.MessagePage, writers)
	want := make([]string, writers)
	r := httptest.NewRequest(http.MethodGet, "/rooms/r/messages?before=latest", nil)
	for k := range pages {
		for i := range 20 + k*7 {
			pages[k].Messages = append(pages[k].Messages, letagents.Message{RoomID: "r", Seq: int64(i + 1),
				Sender: fmt.Sprintf("writer %d", k), Text: strings.Repeat(fmt.Sprint(k), 10+i*k), CreatedAt: time.Unix(int64(i), 0)})
		}
		rec := httptest.NewRecorder()
		if err := writePage(rec, r, "r", pages[k], k%2 == 0, false); err != nil {
			t.Fatal(err)
		}
		want[k] = rec.Body.String()
	}
	var wg sync.WaitGroup
	errs := make(chan string, writers)
	for k := range writers {
		wg.Go(func() {
			for range rounds {
				rec := httptest.NewRecorder()
				if err := writePage(rec, r, "r", pages[k], k%2 == 0, false); err != nil || rec.Body.String() != want[k] {
					errs <- fmt.Sprintf("writer %d wrote %.80q… (%v), want %.80q…", k, rec.Body.String(), err, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
