package apiclient_test

import (
	"context"
	"errors"
	"net/http"
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

// TestWatchEndsWhenAccessIsRevoked: when the server ends a stream with
// access_revoked (here the room's invite code rotated), the watch
// reconnects, is refused as any new request is, and returns that answer.
func TestWatchEndsWhenAccessIsRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	token := signIn(t, e, "ann")
	room, err := e.client(token).CreateRoom(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	watcher := e.client("")
	done := make(chan error, 1)
	go func() { done <- watcher.Watch(t.Context(), room.ID, "", func([]wire.Message) {}) }()
	testwait.Until(t, "the watch to open its stream", func() bool {
		return slices.ContainsFunc(e.poll.paths(), func(p string) bool { return strings.HasSuffix(p, "/messages/stream") })
	})
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, e.api.URL+"/projects/"+room.ID+"/code/rotate", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rotate = %d, want 200", resp.StatusCode)
	}
	if e := apiError(t, testwait.Recv(t, "Watch to return", done)); e.Status != http.StatusNotFound {
		t.Errorf("Watch returned %v, want the 404 a new request gets", e)
	}
}
