// Package codextest is a fake codex app-server for tests: it answers the
// readiness probe and the JSON-RPC 2.0 calls over WebSocket that a live
// session makes (initialize, thread/start, turn/start, thread/read,
// thread/turns/list, thread/items/list, thread/resume, turn/interrupt),
// records every message it gets, and sends notifications to the
// connections that follow its thread, as the real server does (a
// turn/interrupt is followed by turn/completed).
package codextest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Ids the fake gives its one thread and turn.
const (
	ThreadID = "thread-1"
	TurnID   = "turn-1"
)

// writeTimeout bounds a notification's write to a connection that has
// stopped reading.
const writeTimeout = time.Minute

// Options shape a fake's behaviour.
type Options struct {
	// TurnStatus is the turn's status thread/read answers until a
	// turn/interrupt: "inProgress" when "".
	TurnStatus string
	// RefuseWebSocket answers the readiness probe but refuses WebSocket
	// connections.
	RefuseWebSocket bool
	// DieAfterTurn shuts the server down right after it answers
	// turn/start, as a crashing app-server would.
	DieAfterTurn bool
	// TurnError is a failed turn's error message.
	TurnError string
	// Items are the turn's items thread/items/list answers; Items (below)
	// when nil.
	Items []map[string]any
	// ResumeRefusals is how many thread/resume calls are refused first,
	// as Codex refuses them early in a thread's first turn.
	ResumeRefusals int
	// ListsOnlyEnded serves turns as Codex 0.171 does: thread/turns/list
	// and thread/items/list refuse ("list_turns is not supported yet")
	// while the turn is in progress, and thread/read with includeTurns
	// gives the turn rebuilt from the rollout, where a turn whose end is
	// not written reads as interrupted.
	ListsOnlyEnded bool
	// IdleReads is how many thread/read calls first answer the thread as
	// idle while its turn is in progress, as 0.171 does early in a turn.
	IdleReads int
	// UnwrittenEndReads is how many thread/turns/list calls first answer
	// an ended turn as interrupted, without its error, as 0.171 does
	// until it has written the turn's end.
	UnwrittenEndReads int
}

// Items are the turn's items a fake answers by default: one of each kind
// an inspection shows, a reasoning item whose content is raw reasoning,
// and one with fields of other types than messages have.
func Items() []map[string]any {
	return []map[string]any{
		{"type": "userMessage", "id": "i1", "content": []map[string]any{{"type": "text", "text": "start prompt"}}},
		{"type": "reasoning", "id": "i2", "summary": []string{"**Joining**"}, "content": []string{"raw reasoning, never shown"}},
		{"type": "agentMessage", "id": "i3", "text": "Joined the room.", "phase": "commentary"},
		{"type": "mcpToolCall", "id": "i4", "text": map[string]any{"kind": "structured"}},
	}
}

// Call is one message the fake got.
type Call struct {
	Method string
	Params json.RawMessage
	// JSONRPC is the message's "jsonrpc" member.
	JSONRPC string
	// Request is false for a notification (no id).
	Request bool
}

// Server is a fake app-server.
type Server struct {
	// URL is its WebSocket address, ws://127.0.0.1:port.
	URL string

	opts Options
	ln   net.Listener
	http *http.Server

	mu         sync.Mutex
	calls      []Call
	called     map[string]chan struct{} // closed at a method's first message
	turnStatus string
	items      []map[string]any
	resumes    int                      // thread/resume calls so far
	reads      int                      // thread/read calls so far
	endReads   int                      // thread/turns/list calls answered with an ended turn
	conns      map[*websocket.Conn]bool // open connections: true for those following the thread
	closed     bool
}

// New starts a fake on a free loopback port, shut down when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := start(ln, opts)
	t.Cleanup(s.Close)
	return s
}

// Serve runs a fake on the address of listenURL (ws://host:port) until ctx
// ends: the app-server a test's stand-in codex binary runs.
func Serve(ctx context.Context, listenURL string, opts Options) error {
	u, err := url.Parse(listenURL)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return err
	}
	s := start(ln, opts)
	<-ctx.Done()
	s.Close()
	return nil
}

func start(ln net.Listener, opts Options) *Server {
	s := &Server{URL: "ws://" + ln.Addr().String(), opts: opts, ln: ln, turnStatus: opts.TurnStatus, conns: map[*websocket.Conn]bool{}}
	if s.turnStatus == "" {
		s.turnStatus = "inProgress"
	}
	s.items = opts.Items
	if s.items == nil {
		s.items = Items()
	}
	s.http = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.http.Serve(ln)
	return s
}

// Close shuts the fake down: the probe and new connections fail, open
// connections drop.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.http.Close()
	for _, c := range conns {
		c.CloseNow()
	}
}

// Calls are the messages of method the fake got, in order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Called is closed once the fake has got a message of method.
func (s *Server) Called(method string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calledLocked(method)
}

func (s *Server) calledLocked(method string) chan struct{} {
	if s.called == nil {
		s.called = map[string]chan struct{}{}
	}
	ch, ok := s.called[method]
	if !ok {
		ch = make(chan struct{})
		s.called[method] = ch
	}
	return ch
}

// Methods are the methods of every message the fake got, in order.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.Method
	}
	return out
}

// Followers is how many open connections follow the thread.
func (s *Server) Followers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, follows := range s.conns {
		if follows {
			n++
		}
	}
	return n
}

// Notify sends a notification to the connections that follow the thread.
func (s *Server) Notify(method string, params any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	var to []*websocket.Conn
	for c, follows := range s.conns {
		if follows {
			to = append(to, c)
		}
	}
	s.mu.Unlock()
	for _, c := range to {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		_ = c.Write(ctx, websocket.MessageText, b)
		cancel()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/readyz" {
		w.WriteHeader(http.StatusOK)
		return
	}
	if s.opts.RefuseWebSocket {
		http.Error(w, "no WebSocket here", http.StatusBadRequest)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(-1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.CloseNow()
		return
	}
	s.conns[c] = false
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.CloseNow()
	}()
	for {
		_, data, err := c.Read(context.Background())
		if err != nil {
			return
		}
		var m struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      *json.RawMessage `json:"id"`
			Method  string           `json:"method"`
			Params  json.RawMessage  `json:"params"`
		}
		if json.Unmarshal(data, &m) != nil || m.Method == "" {
			continue
		}
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: m.Method, Params: m.Params, JSONRPC: m.JSONRPC, Request: m.ID != nil})
		ch := s.calledLocked(m.Method)
		select {
		case <-ch:
		default:
			close(ch)
		}
		s.mu.Unlock()
		if m.ID == nil {
			continue
		}
		result, rpcErr := s.answer(c, m.Method, m.Params)
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		if rpcErr != nil {
			reply["error"] = rpcErr
		} else {
			reply["result"] = result
		}
		b, _ := json.Marshal(reply)
		dies := m.Method == "turn/start" && s.opts.DieAfterTurn
		if dies {
			// Stop listening before the answer goes out, so whoever gets
			// it finds the server gone.
			s.http.Close()
		}
		if c.Write(context.Background(), websocket.MessageText, b) != nil {
			return
		}
		if dies {
			s.Close()
		}
		if m.Method == "turn/interrupt" {
			s.Notify("turn/completed", map[string]any{"threadId": ThreadID, "turn": s.turn(false)})
		}
	}
}

// answer is the result (or error) of a request.
func (s *Server) answer(c *websocket.Conn, method string, params json.RawMessage) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.ListsOnlyEnded && s.turnStatus == "inProgress" && (method == "thread/turns/list" || method == "thread/items/list") {
		return nil, &rpcError{Code: -32601, Message: "list_turns is not supported yet"}
	}
	switch method {
	case "initialize":
		return map[string]any{"userAgent": "codextest"}, nil
	case "thread/start", "thread/resume":
		if method == "thread/resume" {
			if s.resumes++; s.resumes <= s.opts.ResumeRefusals {
				return nil, &rpcError{Code: -32601, Message: "list_turns is not supported yet"}
			}
		}
		s.conns[c] = true
		return map[string]any{"thread": map[string]any{"id": ThreadID, "status": map[string]string{"type": "idle"}}}, nil
	case "turn/start":
		return map[string]any{"turn": map[string]any{"id": TurnID, "status": "inProgress", "items": []any{}}}, nil
	case "turn/interrupt":
		s.turnStatus = "interrupted"
		return map[string]any{}, nil
	case "thread/read":
		thread := "active"
		switch s.reads++; {
		case s.turnStatus == "failed":
			thread = "systemError" // as 0.171 has it after a failed turn
		case s.turnStatus != "inProgress" || s.reads <= s.opts.IdleReads:
			thread = "idle"
		}
		var p struct {
			IncludeTurns bool `json:"includeTurns"`
		}
		_ = json.Unmarshal(params, &p)
		turns := []any{}
		if p.IncludeTurns && s.opts.ListsOnlyEnded {
			t := s.turn(true)
			if t["status"] == "inProgress" {
				t["status"] = "interrupted"
			}
			t["items"] = s.items
			turns = append(turns, t)
		}
		return map[string]any{"thread": map[string]any{"id": ThreadID, "status": map[string]string{"type": thread}, "turns": turns}}, nil
	case "thread/turns/list":
		t := s.turn(true)
		if s.turnStatus != "inProgress" {
			if s.endReads++; s.endReads <= s.opts.UnwrittenEndReads {
				t["status"] = "interrupted"
				delete(t, "error")
			}
		}
		return map[string]any{"data": []any{t}, "nextCursor": nil}, nil
	case "thread/items/list":
		var p struct {
			SortDirection string `json:"sortDirection"`
			Limit         int    `json:"limit"`
		}
		_ = json.Unmarshal(params, &p)
		entries := make([]map[string]any, 0, len(s.items))
		for _, it := range s.items {
			entries = append(entries, map[string]any{"turnId": TurnID, "item": it})
		}
		if p.SortDirection == "desc" {
			slices.Reverse(entries)
		}
		if p.Limit > 0 && len(entries) > p.Limit {
			entries = entries[:p.Limit]
		}
		return map[string]any{"data": entries, "nextCursor": nil}, nil
	}
	return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
}

// turn is the fake's one turn, locked (turn/interrupt's notification is
// sent unlocked).
func (s *Server) turn(locked bool) map[string]any {
	if !locked {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	t := map[string]any{"id": TurnID, "status": s.turnStatus, "items": []any{}}
	if s.turnStatus == "failed" && s.opts.TurnError != "" {
		t["error"] = map[string]any{"message": s.opts.TurnError, "codexErrorInfo": "internalServerError"}
	}
	return t
}

// SetTurnStatus changes the turn's status, as a turn ending would.
func (s *Server) SetTurnStatus(status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turnStatus = status
}

// SetItems changes the turn's items, as a turn going on would.
func (s *Server) SetItems(items []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = items
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

// ErrUsage is Main's error for arguments that are not
// `app-server --listen ws://host:port`.
var ErrUsage = errors.New("usage: app-server --listen ws://host:port")

// Main is a stand-in codex binary: given `app-server --listen URL` it
// serves a fake there until ctx ends.
func Main(ctx context.Context, args []string, opts Options) error {
	if len(args) != 3 || args[0] != "app-server" || args[1] != "--listen" {
		return ErrUsage
	}
	return Serve(ctx, args[2], opts)
}
