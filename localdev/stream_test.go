package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/testwait"
)

// The runner serves event streams on its one port, as the poll server
// does: each event arrives as it happens (the gateway buffers nothing of
// the poll group), and stopping the runner ends the stream cleanly.
func TestStreamThroughTheOnePort(t *testing.T) {
	t.Parallel()
	in := start(t, dbEnv(t))
	if status, _, b := call(t, "POST", in.URL+"/rooms/streamed/join", nil); status != 200 {
		t.Fatalf("join: %d %s", status, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", in.URL+"/rooms/streamed/messages/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req) // no client timeout: a stream has no end
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 100)
	ended := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		ended <- sc.Err()
	}()
	if l := testwait.Recv(t, "the stream's first line", lines); l != ": connected" {
		t.Fatalf("first line %q, want \": connected\"", l)
	}
	// The stream answers only once it listens for the room: this send rings it.
	if status, _, b := call(t, "POST", in.URL+"/rooms/streamed/messages", strings.NewReader(`{"sender":"t","text":"live"}`)); status != 201 {
		t.Fatalf("send: %d %s", status, b)
	}
	for {
		l := testwait.Recv(t, "the message event", lines)
		if strings.HasPrefix(l, "data: ") {
			if !strings.Contains(l, `"text":"live"`) {
				t.Errorf("event data %q, want the message", l)
			}
			break
		}
	}
	stopping := time.Now()
	if err := in.stopped(t); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
	if took := time.Since(stopping); took >= httpserver.ShutdownGrace {
		t.Errorf("run took %v to stop: the open stream held the shutdown", took)
	}
	if err := testwait.Recv(t, "the stream to end", ended); err != nil {
		t.Errorf("the stream ended with %v, want a clean end", err)
	}
}
