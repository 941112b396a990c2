package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// TestStreamOnceCountsMessages checks what the scale client takes for a
// message on a stream (an event with an id and data) and that it notices
// a gap or a repeat in the ids.
func TestStreamOnceCountsMessages(t *testing.T) {
	id := letagents.MessageID
	for _, tc := range []struct {
		name       string
		body       string
		got, gaps  int64
		wantCursor int64
	}{
		{"connected comment and cursor only", ": connected\n\nid: " + id(0) + "\n\n", 0, 0, 0},
		{"two messages in order", fmt.Sprintf("id: %s\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1), id(2)), 2, 0, 2},
		{"task events carry no id", fmt.Sprintf("event: task_update\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1)), 1, 0, 1},
		{"a gap", fmt.Sprintf("id: %s\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1), id(3)), 2, 1, 3},
		{"a repeat", fmt.Sprintf("id: %s\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1), id(1)), 2, 1, 1},
		{"CRLF lines", fmt.Sprintf("id: %s\r\ndata: {}\r\n\r\n", id(1)), 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/messages/stream") {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			s := &scaleRun{rooms: []string{"r"}, sentAt: make([][]time.Time, 1), client: srv.Client()}
			w := &scaleWaiter{stream: true}
			err := s.streamOnce(context.Background(), w, srv.URL)
			if err == nil {
				t.Fatal("streamOnce returned nil at the end of the body; want its read error")
			}
			if w.got.Load() != tc.got || w.gaps.Load() != tc.gaps || w.cursor != tc.wantCursor {
				t.Errorf("got %d, gaps %d, cursor %d; want %d, %d, %d", w.got.Load(), w.gaps.Load(), w.cursor, tc.got, tc.gaps, tc.wantCursor)
			}
			if !w.parked.Load() {
				t.Error("not counted as parked after the stream's 200")
			}
		})
	}
}
