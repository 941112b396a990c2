package codex

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/letagents/letagents-go/shared/testwait"
)

// TestConn: a call's error answer is an *RPCError; a request from the
// server is refused, not left waiting; notifications arrive in order; a
// closed connection fails calls with ErrClosed.
func TestConn(t *testing.T) {
	t.Parallel()
	refusal := make(chan map[string]any, 1)
	url := rpcServer(t, func(m map[string]any, write func(any)) bool {
		switch m["method"] {
		case "initialize":
			write(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{}})
		case "initialized":
			write(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "item/commandExecution/requestApproval", "params": map[string]any{}})
			write(map[string]any{"jsonrpc": "2.0", "method": "first", "params": map[string]any{"n": 1}})
			write(map[string]any{"jsonrpc": "2.0", "method": "second"})
		case "thread/start":
			write(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32600, "message": "no rollout"}})
		case nil:
			refusal <- m
		}
		return false
	})
	ctx := context.Background()
	c, err := Dial(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	got := testwait.Recv(t, "the answer to the server's request", refusal)
	if errObj, _ := got["error"].(map[string]any); got["id"] != float64(99) || errObj["code"] != float64(-32601) {
		t.Errorf("answer to the server's request = %v, want a method-not-found error for id 99", got)
	}
	for _, want := range []string{"first", "second"} {
		if n := testwait.Recv(t, "notification "+want, c.Notifications()); n.Method != want {
			t.Errorf("notification %q, want %q", n.Method, want)
		}
	}
	var rpcErr *RPCError
	if err := c.Call(ctx, "thread/start", struct{}{}, nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32600 || rpcErr.Message != "no rollout" {
		t.Errorf("Call = %v, want the server's error", err)
	}
	c.Close()
	if err := c.Call(ctx, "thread/start", struct{}{}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
	if _, ok := <-c.Notifications(); ok {
		t.Error("Notifications still open after Close")
	}
}

// TestConnKeepsNotifications: a reader slower than the app-server loses
// no notification: all of them arrive, in order, even those sent just
// before the server closed the connection; then Notifications closes.
func TestConnKeepsNotifications(t *testing.T) {
	t.Parallel()
	const sent = 2000
	url := rpcServer(t, func(m map[string]any, write func(any)) bool {
		switch m["method"] {
		case "initialize":
			write(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{}})
		case "initialized":
			for i := range sent {
				write(map[string]any{"jsonrpc": "2.0", "method": "item/reasoning/summaryTextDelta", "params": map[string]any{"n": i}})
			}
			return true
		}
		return false
	})
	c, err := Dial(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Nothing is read until the connection has ended: every notification
	// waits meanwhile.
	testwait.Until(t, "the server to close the connection", func() bool { return c.Err() != nil })
	got := 0
	for n := range c.Notifications() {
		var p struct{ N int }
		if err := json.Unmarshal(n.Params, &p); err != nil || p.N != got {
			t.Fatalf("notification %d = %s, want number %d", got, n.Params, got)
		}
		got++
	}
	if got != sent {
		t.Errorf("got %d notifications, want all %d", got, sent)
	}
}

// rpcServer is a WebSocket server, shut down when the test ends, that
// hands each message it gets to handle, with a way to write back; it
// closes the connection once handle answers true. It answers its ws:// URL.
func rpcServer(t *testing.T, handle func(m map[string]any, write func(any)) (stop bool)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close(websocket.StatusNormalClosure, "")
		ctx := context.Background()
		write := func(v any) {
			b, _ := json.Marshal(v)
			_ = c.Write(ctx, websocket.MessageText, b)
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			if handle(m, write) {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}
