package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/testwait"
)

// newHosted serves the hosted endpoint of b over real HTTP, its sessions
// in b's database, and returns its URL.
func newHosted(t *testing.T, b *backend) string {
	t.Helper()
	h := newHostedOn(t, b)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + HostedPath
}

// Its streams are resumable, as the poll server's (whose event store is
// the database's, shared/mcphost): the clients must work with event ids
// on every SSE event.
func newHostedOn(t *testing.T, b *backend) *Hosted {
	t.Helper()
	h, err := NewHosted(HostedConfig{APIURL: b.url, Sessions: b.svc.Store, Events: mcpserver.NewInMemoryEventStore(),
		Watch: func(ctx context.Context, id string) (<-chan struct{}, func(), error) {
			sub, err := b.svc.Hub.Subscribe(ctx, b.svc.Store.MCPSessionChannel(id))
			if err != nil {
				return nil, nil, err
			}
			return sub.C(), sub.Close, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// newHostedAgent connects mcp-go's Streamable HTTP client to endpoint,
// sending token as its bearer ("" for none), speaking MCP 2025-06-18.
func newHostedAgent(t *testing.T, endpoint, token string) *agent {
	t.Helper()
	return newHostedAgentSpeaking(t, endpoint, token, mcp.ProtocolVersion20250618)
}

func newHostedAgentSpeaking(t *testing.T, endpoint, token, protocol string) *agent {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, c, protocol)
}

// listTools is every tool a client sees, as JSON.
func (a *agent) listTools(t *testing.T) string {
	t.Helper()
	res, err := a.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestHostedToolsAreTheLocalOnes: the hosted endpoint lists the local
// server's tools, the same names, descriptions and schemas, machine
// tools included, which say they are not served there.
func TestHostedToolsAreTheLocalOnes(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	local := newAgent(t, b, "", nil).listTools(t)
	hosted := newHostedAgent(t, newHosted(t, b), "").listTools(t)
	if local != hosted {
		t.Fatalf("hosted tools differ from the local ones:\nlocal  %s\nhosted %s", local, hosted)
	}
	if !strings.Contains(hosted, "Not on the hosted endpoint (/mcp)") {
		t.Fatal("no tool says it is not on the hosted endpoint")
	}
}

// TestHostedChat: a hosted agent joins a repository's room by its URL,
// and chats with a local agent there; its wait streams progress over SSE
// and answers when the local agent's message arrives.
func TestHostedChat(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	hosted := newHostedAgent(t, newHosted(t, b), "")
	local := newAgent(t, b, "", nil)
	j := hosted.call(t, "join_room", map[string]any{"name": "https://github.com/acme/widgets.git"}).ok(t)
	if j.str("room_id") != "github.com/acme/widgets" {
		t.Fatalf("joined %s", j.raw)
	}
	local.call(t, "join_room", map[string]any{"name": "github.com/acme/widgets"}).ok(t)
	if r := hosted.call(t, "get_current_room", nil).ok(t); r.str("room_id") != "github.com/acme/widgets" {
		t.Fatalf("current room %s", r.raw)
	}

	sent := hosted.call(t, "send_message", map[string]any{"text": "hello from the hosted side"}).ok(t)
	read := local.call(t, "read_messages", map[string]any{"room_id": "github.com/acme/widgets"}).ok(t)
	if !strings.Contains(read.raw, "hello from the hosted side") {
		t.Fatalf("the local agent did not read the hosted one's message: %s", read.raw)
	}
	cursor := sent.str("id")
	if cursor == "" {
		t.Fatalf("no message id in %s", sent.raw)
	}

	woken := make(chan string, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "wait_for_messages"
		req.Params.Arguments = map[string]any{"after_message_id": cursor, "timeout": 50000}
		req.Params.Meta = &mcp.Meta{ProgressToken: "wait-1"}
		res, err := hosted.client.CallTool(context.Background(), req)
		switch {
		case err != nil:
			woken <- err.Error()
		case len(res.Content) == 1:
			text, _ := res.Content[0].(mcp.TextContent)
			woken <- text.Text
		default:
			woken <- "no content"
		}
	}()
	// The wait is blocked once it has reported progress over its stream.
	testwait.Until(t, "a progress notification of the wait", func() bool {
		select {
		case n := <-hosted.notes:
			return n.Method == "notifications/progress"
		default:
			return false
		}
	})
	local.call(t, "send_message", map[string]any{"text": "hello from the local side"}).ok(t)
	if got := testwait.Recv(t, "the hosted wait woken by the local agent's message", woken); !strings.Contains(got, "hello from the local side") {
		t.Fatalf("the wait answered %s", got)
	}
}

// TestHostedSessionOnAnyTask: two endpoints on one database, behind a
// balancer without stickiness, serve one session; when one of them
// stops, the other goes on with it.
func TestHostedSessionOnAnyTask(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	tasks := []*Hosted{newHostedOn(t, b), newHostedOn(t, b)}
	var next, down atomic.Int64
	down.Store(-1)
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := next.Add(1) % 2
		if i == down.Load() {
			i = 1 - i
		}
		tasks[i].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	a := newHostedAgent(t, lb.URL+HostedPath, "")
	a.call(t, "join_room", map[string]any{"name": "github.com/acme/anytask"}).ok(t)
	keys := map[any]bool{}
	for range 2 { // one call on each task
		r := a.call(t, "get_current_room", nil).ok(t)
		if r.str("room_id") != "github.com/acme/anytask" {
			t.Fatalf("current room on another task: %s", r.raw)
		}
		id, _ := r.obj["agent_identity"].(map[string]any)
		keys[id["runtime_key"]] = true
	}
	if len(keys) != 1 {
		t.Errorf("the session's agent has runtime keys %v on the two tasks, want one (its sessions are saved under it)", keys)
	}
	tasks[0].Close()
	down.Store(0)
	a.call(t, "send_message", map[string]any{"text": "after a task stopped"}).ok(t)
	if r := a.call(t, "read_messages", nil).ok(t); !strings.Contains(r.raw, "after a task stopped") {
		t.Fatalf("read after a task stopped: %s", r.raw)
	}
}

// TestHostedMachineTools: what needs the agent's machine answers why the
// hosted endpoint cannot, with what to do instead.
func TestHostedMachineTools(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	a := newHostedAgent(t, newHosted(t, b), "")
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"check_repo", nil, "call join_room with the repository's URL"},
		{"start_device_auth", nil, "your MCP client signs in by itself"},
		{"start_local_codex_session", nil, "Codex workers run on your machine"},
		{"join_room", map[string]any{"name": "github.com/acme/live", "session_mode": "live"}, `session_mode \"live\" is not available`},
	} {
		a.call(t, tt.tool, tt.args).failed(t, tt.want)
	}
}

// rawMCP posts one JSON-RPC message to endpoint and returns the answer.
func rawMCP(t *testing.T, method, endpoint string, headers map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if h := headers["Host"]; h != "" {
		req.Host = h
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` +
	`"clientInfo":{"name":"raw","version":"1"}}}`

// TestHostedSessionBoundaries: a session answers only its opener's
// credential, ends with DELETE, and a page of another origin, or of a
// DNS name rebound to loopback, is refused.
func TestHostedSessionBoundaries(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	endpoint := newHosted(t, b)
	resp, raw := rawMCP(t, http.MethodPost, endpoint, map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 64)}, initializeBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(id, sessionIDPrefix) {
		t.Fatalf("initialize = %d %q, session %q", resp.StatusCode, raw, id)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, tt := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"the opener's credential", map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 64)}, http.StatusOK},
		{"no credential", nil, http.StatusNotFound},
		{"another credential", map[string]string{"Authorization": "Bearer " + strings.Repeat("b", 64)}, http.StatusNotFound},
		{"another site's page", map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 64), "Origin": "https://evil.example"},
			http.StatusForbidden},
		{"a rebound DNS name over loopback", map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 64),
			"Host": "rebind.example", "Origin": "http://rebind.example"}, http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Mcp-Session-Id": id}
			for k, v := range tt.headers {
				h[k] = v
			}
			if resp, raw := rawMCP(t, http.MethodPost, endpoint, h, list); resp.StatusCode != tt.status {
				t.Fatalf("tools/list = %d %s, want %d", resp.StatusCode, raw, tt.status)
			}
		})
	}
	owner := map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 64), "Mcp-Session-Id": id}
	if resp, raw := rawMCP(t, http.MethodDelete, endpoint, owner, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d %s", resp.StatusCode, raw)
	}
	if resp, raw := rawMCP(t, http.MethodPost, endpoint, owner, list); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("tools/list after DELETE = %d %s, want 404", resp.StatusCode, raw)
	}
}

// TestHostedOwnerToken: an owner token sent as the bearer is the hosted
// session's sign-in: it joins a private repository's room its account
// may see, which an anonymous session may not.
func TestHostedOwnerToken(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/vault", true)
	b.gh.AddUser("octo")
	b.gh.Grant("acme/vault", "octo", "write")
	local := newAgent(t, b, "", nil)
	local.signIn(t, b, "octo")
	auth, _ := readState(t, local.state)["auth"].(map[string]any)
	token, _ := auth["token"].(string)
	if token == "" {
		t.Fatal("no owner token saved by the sign-in")
	}
	endpoint := newHosted(t, b)
	newHostedAgent(t, endpoint, "").call(t, "join_room", map[string]any{"name": "github.com/acme/vault"}).failed(t, "Sign in through your MCP client")
	signed := newHostedAgent(t, endpoint, token)
	signed.call(t, "join_room", map[string]any{"name": "github.com/acme/vault"}).ok(t)
	if r := signed.call(t, "send_message", map[string]any{"text": "signed in"}).ok(t); !strings.Contains(r.raw, "octo") {
		t.Fatalf("sent as %s, want octo's", r.raw)
	}
}

// TestHostedTypeScriptClient: the official MCP TypeScript SDK's
// Streamable HTTP client (npm @modelcontextprotocol/sdk, installed by
// .ci/ensure-mcp-sdk) lists the local server's tools on the hosted
// endpoint, joins a room, chats there with a local agent, is woken from
// a wait that streamed progress, and ends its session with DELETE.
func TestHostedTypeScriptClient(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	endpoint := newHosted(t, b)
	local := newAgent(t, b, "", nil)
	const room = "github.com/acme/tsclient"
	lines, stderr, _ := runNode(t, "hosted-client.mjs", endpoint, room, "hello from the TypeScript SDK")
	if got := testwait.Recv(t, "the TypeScript client's wait to park", lines); got != "parked" {
		t.Fatalf("the TypeScript client said %q (stderr %s)", got, stderr.String())
	}
	local.call(t, "join_room", map[string]any{"name": room}).ok(t)
	if r := local.call(t, "read_messages", nil).ok(t); !strings.Contains(r.raw, "hello from the TypeScript SDK") {
		t.Fatalf("the local agent did not read the TypeScript client's message: %s", r.raw)
	}
	local.call(t, "send_message", map[string]any{"text": "hello back"}).ok(t)
	last, ok := <-lines
	if !ok {
		t.Fatalf("the TypeScript client ended without its report: %s", stderr.String())
	}
	var report struct {
		Session, Protocol, Room string
		Tools, Woken            []string
	}
	if err := json.Unmarshal([]byte(last), &report); err != nil {
		t.Fatalf("report %q: %v (stderr %s)", last, err, stderr.String())
	}
	var localTools []string
	res, err := local.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		localTools = append(localTools, tool.Name)
	}
	slices.Sort(localTools)
	slices.Sort(report.Tools)
	if !slices.Equal(report.Tools, localTools) {
		t.Errorf("the TypeScript client listed %v, the local server %v", report.Tools, localTools)
	}
	if report.Room != room || !slices.Contains(report.Woken, "hello back") || !strings.HasPrefix(report.Session, sessionIDPrefix) {
		t.Errorf("report %s", last)
	}
	var left int
	if err := b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM mcp_sessions WHERE id = $1`, report.Session).Scan(&left); err != nil || left != 0 {
		t.Errorf("after DELETE %d sessions %q remain (%v)", left, report.Session, err)
	}
}

// runNode runs testdata/script with node beside the official MCP
// TypeScript SDK (installed by .ci/ensure-mcp-sdk), where its imports
// resolve: the lines it prints, its stderr, and its stdin.
func runNode(t *testing.T, script string, args ...string) (<-chan string, *testwait.Buffer, io.WriteCloser) {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join("..", "..", ".ci", "ensure-mcp-sdk")).Output()
	if err != nil {
		t.Fatalf(".ci/ensure-mcp-sdk: %v", err)
	}
	sdk := strings.TrimSpace(string(out))
	text, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(sdk, strings.TrimSuffix(script, ".mjs")+"-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.Write(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command("node", append([]string{f.Name()}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 10)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines, stderr, stdin
}

// TestHostedSessionless: MCP 2026-07-28 has no sessions (Claude Code
// speaks it): a token's requests share one state, so the room one
// connection joined is the current room of its next calls, and of
// another connection with the token; without a token nothing is
// remembered between calls.
func TestHostedSessionless(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	endpoint := newHosted(t, b)
	token := strings.Repeat("c", 64)
	const room = "github.com/acme/sessionless"
	first := newHostedAgentSpeaking(t, endpoint, token, mcp.ProtocolVersion20260728)
	first.call(t, "join_room", map[string]any{"name": room}).ok(t)
	for i, a := range []*agent{first, newHostedAgentSpeaking(t, endpoint, token, mcp.ProtocolVersion20260728)} {
		if r := a.call(t, "get_current_room", nil).ok(t); r.str("room_id") != room {
			t.Errorf("connection %d of the token: current room %s", i, r.raw)
		}
	}
	anon := newHostedAgentSpeaking(t, endpoint, "", mcp.ProtocolVersion20260728)
	anon.call(t, "join_room", map[string]any{"name": room}).ok(t)
	if r := anon.call(t, "get_current_room", nil); r.str("room_id") != "" {
		t.Errorf("an anonymous sessionless client's next call is in %s", r.raw)
	}
}

// TestHostedSharesTheBoard: a hosted agent and a local one, each signed
// in as its own account, work one room's board: the local one proposes
// and accepts a task, the hosted one claims it, and each sees the other's
// doing.
func TestHostedSharesTheBoard(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/board", false)
	local := newAgent(t, b, "", nil)
	local.signIn(t, b, "ann")
	b.gh.Grant("acme/board", "ann", "admin") // the room's admin, who may accept tasks
	bobs := newAgent(t, b, "", nil)
	bobs.signIn(t, b, "bob")
	b.gh.Grant("acme/board", "bob", "write")
	auth, _ := readState(t, bobs.state)["auth"].(map[string]any)
	token, _ := auth["token"].(string)
	if token == "" {
		t.Fatal("no owner token saved by bob's sign-in")
	}
	const room = "github.com/acme/board"
	local.call(t, "join_room", map[string]any{"name": room}).ok(t)
	local.call(t, "register_agent_session", nil).ok(t)
	local.call(t, "add_task", map[string]any{"title": "Ship the hosted endpoint"}).ok(t)
	local.call(t, "update_task", map[string]any{"task_id": "task_1", "status": "accepted"}).ok(t)

	hosted := newHostedAgent(t, newHosted(t, b), token)
	hosted.call(t, "join_room", map[string]any{"name": room}).ok(t)
	label := hosted.call(t, "register_agent_session", nil).ok(t).obj["agent_session"].(map[string]any)["actor_label"].(string)
	if board := hosted.call(t, "get_board", nil).ok(t); !strings.Contains(board.raw, "Ship the hosted endpoint") {
		t.Fatalf("the hosted agent's board: %s", board.raw)
	}
	if task := hosted.call(t, "claim_task", map[string]any{"task_id": "task_1"}).ok(t).result(t); task["status"] != "assigned" || task["assignee"] != label {
		t.Fatalf("claimed: %v; want assigned to the hosted agent, %q", task, label)
	}
	if board := local.call(t, "get_board", nil).ok(t); !strings.Contains(board.raw, label) {
		t.Fatalf("the local agent's board does not show the hosted agent's claim: %s", board.raw)
	}
}
