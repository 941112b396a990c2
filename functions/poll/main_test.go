package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// The container mode: a plain long-running server serving only long-polls.
func TestRunServesPollsUntilStopped(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if _, _, err := store.New(d.Pool).EnsureRoom(context.Background(), "container room"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	env := map[string]string{"DB_URL": d.URL, "PORT": fmt.Sprint(port), "LOG_LEVEL": "error"}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }) }()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testwait.Until(t, "the poll server to answer", func() bool {
		return get("/rooms/container%20room/messages/poll?timeout=0") == http.StatusOK
	})
	if code := get("/api/health"); code != http.StatusNotFound {
		t.Errorf("GET /api/health on the poll server = %d, want 404 (it serves only polls)", code)
	}
	stop()
	if err := testwait.Recv(t, "run to return after stop", done); err != nil {
		t.Errorf("run = %v, want nil after SIGTERM-like stop", err)
	}
}

// The container serves event streams too, and SIGTERM ends them cleanly
// (clients reconnect elsewhere) instead of holding the shutdown.
func TestSIGTERMEndsStreams(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if _, _, err := store.New(d.Pool).EnsureRoom(context.Background(), "streamed room"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	env := map[string]string{"DB_URL": d.URL, "PORT": fmt.Sprint(port), "LOG_LEVEL": "error"}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }) }()

	var resp *http.Response
	testwait.Until(t, "the poll server to open a stream", func() bool {
		r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/rooms/streamed%%20room/messages/stream", port))
		if err != nil {
			return false
		}
		if r.StatusCode != http.StatusOK {
			r.Body.Close()
			return false
		}
		resp = r
		return true
	})
	defer resp.Body.Close()
	first := make([]byte, len(": connected\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != ": connected\n\n" {
		t.Fatalf("stream began %q, %v", first, err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	stop()
	if err := testwait.Recv(t, "the stream to end on SIGTERM", ended); err != nil {
		t.Errorf("the stream ended with %v, want a clean end", err)
	}
	if err := testwait.Recv(t, "run to return after SIGTERM", done); err != nil {
		t.Errorf("run = %v, want nil", err)
	}
}
