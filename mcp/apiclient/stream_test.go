package apiclient_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// TestWatchRealAPI follows a room of the real API: by its stream if it
// has one, else by long-polls on the poll base, from the newest message
// when the watch began; it stops when its context ends.
func TestWatchRealAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	join(t, c, "watch-room")
	send(t, c, "watch-room", "before the watch")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan wire.Message, 10)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, "watch-room", "", func(msgs []wire.Message) {
			for _, m := range msgs {
				got <- m
			}
		})
	}()
	// Send only once the watch follows the room: its first long-poll, or
	// its stream, has reached the server.
	testwait.Until(t, "the watch to follow the room", func() bool {
		return slices.ContainsFunc(e.poll.paths(), func(p string) bool {
			return strings.HasSuffix(p, "/messages/poll") || strings.HasSuffix(p, "/messages/stream")
		})
	})
	var want []string
	for _, text := range []string{"one", "two", "three"} {
		want = append(want, send(t, c, "watch-room", text).ID)
	}
	var ids []string
	for range want {
		ids = append(ids, testwait.Recv(t, "a watched message", got).ID)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("delivered %q, want %q", ids, want)
	}
	cancel()
	if err := testwait.Recv(t, "Watch to return", done); !errors.Is(err, context.Canceled) {
		t.Errorf("Watch returned %v, want context.Canceled", err)
	}
	for _, p := range e.api.paths() {
		if strings.HasSuffix(p, "/stream") || strings.HasSuffix(p, "/poll") {
			t.Errorf("%s went to the API base, want the poll base", p)
		}
	}
	t.Logf("requests to the poll base: %q", e.poll.paths())
}
