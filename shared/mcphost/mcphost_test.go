package mcphost_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/mcphost"
	"github.com/letagents/letagents-go/shared/service/servicetest"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

func TestClientAddress(t *testing.T) {
	for _, c := range []struct {
		name       string
		hops       int
		forwarded  []string
		remoteAddr string
		want       string
	}{
		{"no proxy: the peer", 0, nil, "198.51.100.7:5123", "198.51.100.7"},
		{"no proxy: the header is the caller's word", 0, []string{"203.0.113.9"}, "198.51.100.7:5123", "198.51.100.7"},
		{"one proxy: its entry", 1, []string{"203.0.113.9"}, "10.0.0.2:80", "203.0.113.9"},
		{"one proxy: entries before its own are the caller's", 1, []string{"192.0.2.1, 203.0.113.9"}, "10.0.0.2:80", "203.0.113.9"},
		{"one proxy: across header lines", 1, []string{"192.0.2.1", "203.0.113.9"}, "10.0.0.2:80", "203.0.113.9"},
		{"two proxies", 2, []string{"192.0.2.1, 203.0.113.9, 10.0.0.5"}, "10.0.0.2:80", "203.0.113.9"},
		{"IPv6", 1, []string{"2001:db8::1"}, "10.0.0.2:80", "2001:db8::1"},
		{"not through the proxy", 1, nil, "198.51.100.7:5123", "198.51.100.7"},
		{"fewer entries than proxies", 2, []string{"203.0.113.9"}, "10.0.0.2:80", "10.0.0.2"},
		{"not an address", 1, []string{"unknown"}, "10.0.0.2:80", "10.0.0.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = c.remoteAddr
			for _, f := range c.forwarded {
				r.Header.Add("X-Forwarded-For", f)
			}
			if got := mcphost.ClientAddress(c.hops)(r); got != c.want {
				t.Errorf("ClientAddress(%d) = %q, want %q", c.hops, got, c.want)
			}
		})
	}
}

// TestHostedAgentsCountedApart: every hosted agent reaches the API from
// the endpoint's one address, yet the API's per-address limits count each
// agent by its own (vouched for with the service's key), while an
// address forged by a client counts for nothing.
func TestHostedAgentsCountedApart(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now()) // still: no join token comes back during the test
	apiURL, svc, _ := servicetest.Serve(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "2", "LETAGENTS_REPO_ACCESS": "open",
		"LETAGENTS_PROXY_HOPS": "1"}, func(cfg *config.Config) {
		cfg.TokenKeyFile = filepath.Join(t.TempDir(), "token.key")
		cfg.Now = clock.Now
	})
	hosted, err := mcphost.New(svc, apiURL, "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hosted.Close)
	srv := httptest.NewServer(hosted)
	t.Cleanup(srv.Close)

	join := func(from, room string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := client.NewStreamableHttpClient(srv.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"X-Forwarded-For": from}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var init mcp.InitializeRequest
		init.Params.ProtocolVersion = mcp.ProtocolVersion20250618
		init.Params.ClientInfo = mcp.Implementation{Name: "mcphost-test", Version: "0"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		var req mcp.CallToolRequest
		req.Params.Name = "join_room"
		req.Params.Arguments = map[string]any{"name": room}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, part := range res.Content {
			if tc, ok := part.(mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if res.IsError {
			return "refused: " + text.String()
		}
		return "joined"
	}
	for _, c := range []struct{ from, room, want string }{
		{"203.0.113.1", "github.com/acme/one", "joined"},
		{"203.0.113.1", "github.com/acme/two", "joined"},
		// The endpoint's own address has had two joins; this agent none.
		{"203.0.113.2", "github.com/acme/three", "joined"},
		{"203.0.113.2", "github.com/acme/four", "joined"},
		{"203.0.113.1", "github.com/acme/five", "refused: "},
		// The caller's own entries before the balancer's count for nothing.
		{"203.0.113.3, 203.0.113.2", "github.com/acme/six", "refused: "},
	} {
		if got := join(c.from, c.room); !strings.HasPrefix(got, c.want) || (c.want != "joined" && !strings.Contains(got, "room joins")) {
			t.Errorf("join of %s from %s: %s, want %s…", c.room, c.from, got, c.want)
		}
	}

	// A client that forges the header is counted by its own address.
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		req, _ := http.NewRequest(http.MethodPost, apiURL+"/rooms/github.com%2Facme%2Fforged/join", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(wire.VouchedAddressHeader, "forged-"+string(rune('a'+i)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("direct join %d with a forged vouch: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// TestHostedStreamResumes: a client whose tool call's SSE stream dropped
// resumes it with Last-Event-ID on another task (no stickiness), and
// gets what was sent after the event it last saw, the call's answer
// included: the stream's events are in the database.
func TestHostedStreamResumes(t *testing.T) {
	t.Parallel()
	apiURL, svc, _ := servicetest.Serve(t, map[string]string{"LETAGENTS_REPO_ACCESS": "open"}, nil)
	var tasks [2]*httptest.Server
	for i := range tasks {
		h, err := mcphost.New(svc, apiURL, "", "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		tasks[i] = httptest.NewServer(h)
		t.Cleanup(tasks[i].Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	session := ""
	post := func(ctx context.Context, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tasks[0].URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20250618)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	done := func(resp *http.Response) string {
		t.Helper()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	init := post(ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+mcp.ProtocolVersion20250618+
		`","capabilities":{},"clientInfo":{"name":"resume-test","version":"0"}}}`)
	session = init.Header.Get("Mcp-Session-Id")
	done(init)
	if session == "" {
		t.Fatal("no session id")
	}
	done(post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	done(post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"join_room","arguments":{"name":"github.com/acme/resume"}}}`))

	// The wait streams progress; the client drops it after the first event.
	callCtx, drop := context.WithCancel(ctx)
	wait := post(callCtx, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait_for_messages",`+
		`"arguments":{"timeout":50000},"_meta":{"progressToken":"resume"}}}`)
	first := ""
	sc := bufio.NewScanner(wait.Body)
	for first == "" && sc.Scan() {
		first, _ = strings.CutPrefix(sc.Text(), "id: ")
	}
	drop()
	wait.Body.Close()
	if first == "" {
		t.Fatalf("the wait's stream ended without an event id (status %d, %s)", wait.StatusCode, wait.Header.Get("Content-Type"))
	}
	sendReq, _ := http.NewRequest(http.MethodPost, apiURL+"/rooms/github.com%2Facme%2Fresume/messages",
		strings.NewReader(`{"sender":"ada","text":"while the stream was down"}`))
	sendReq.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(sendReq); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}

	// The other task replays what the stream sent after the first event;
	// the answer may not be sent yet, so it is asked again until it is.
	testwait.Until(t, "the wait's answer replayed on the other task", func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tasks[1].URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20250618)
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Last-Event-ID", first)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := done(resp)
		if strings.Contains("\n"+body, "\nid: "+first+"\n") {
			t.Fatalf("the replay repeats the event the client saw:\n%s", body)
		}
		return strings.Contains(body, `"id":3`) && strings.Contains(body, `"result"`)
	})
}
