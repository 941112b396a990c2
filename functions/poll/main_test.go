package main

import (
	"context"
	"fmt"
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
