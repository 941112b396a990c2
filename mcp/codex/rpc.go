package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// ClientName and ClientVersion are what this client calls itself in the
// app-server's initialize handshake.
const (
	ClientName    = "letagents-local-codex-session"
	ClientVersion = "0.1.0"
)

// maxMessage bounds one message from the app-server: a thread read with
// its turns' items runs to megabytes, far past the library's 32 KiB default.
const maxMessage = 64 << 20

// RPCError is an error answer from the app-server.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("app-server error %d: %s", e.Code, e.Message) }

// ErrClosed is the error of calls on a connection that has closed.
var ErrClosed = errors.New("app-server connection closed")

// Notification is a message the app-server sends unasked.
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// message is any JSON-RPC 2.0 message: a request (method and id), a
// notification (method, no id) or a response (id, result or error).
type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  any              `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *RPCError        `json:"error,omitempty"`
}

// Conn is one JSON-RPC 2.0 connection to a Codex app-server over
// WebSocket, past the initialize handshake. Calls may run concurrently.
type Conn struct {
	ws        *websocket.Conn
	notes     chan Notification
	done      chan struct{} // the connection has ended
	closing   chan struct{} // Close was called: no one reads notifications any more
	delivered chan struct{} // deliver has returned
	closeOnce sync.Once

	mu      sync.Mutex
	next    int64
	pending map[int64]chan message
	err     error // why the connection ended, once done is closed
	// queue holds the notifications not yet delivered: however slow
	// their reader, none is dropped (a lost summary delta garbles a
	// summary, a lost turn/completed delays an ending), and the read
	// loop, which answers calls too, never waits for it. more wakes
	// deliver.
	queue []Notification
	more  chan struct{}
}

// Dial connects to the app-server at url (ws://host:port) and does the
// handshake: initialize, with this client's name and the experimental API
// asked for, then the initialized notification.
func Dial(ctx context.Context, url string) (*Conn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to codex app-server at %s: %w", url, err)
	}
	ws.SetReadLimit(maxMessage)
	c := &Conn{ws: ws, notes: make(chan Notification), done: make(chan struct{}), closing: make(chan struct{}), delivered: make(chan struct{}),
		pending: map[int64]chan message{}, more: make(chan struct{}, 1)}
	go c.read()
	go c.deliver()
	init := map[string]any{
		"clientInfo":   map[string]string{"name": ClientName, "version": ClientVersion},
		"capabilities": map[string]bool{"experimentalApi": true},
	}
	if err := c.Call(ctx, "initialize", init, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize codex app-server at %s: %w", url, err)
	}
	if err := c.send(ctx, message{JSONRPC: "2.0", Method: "initialized"}); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialized to codex app-server at %s: %w", url, err)
	}
	return c, nil
}

// Call sends a request and decodes its result into out (nil to drop it).
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.err)
	}
	c.next++
	id := c.next
	reply := make(chan message, 1)
	c.pending[id] = reply
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	raw := json.RawMessage(fmt.Sprint(id))
	if err := c.send(ctx, message{JSONRPC: "2.0", ID: &raw, Method: method, Params: params}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-reply:
		return m.decode(method, out)
	case <-c.done:
		// The reader hands over an answer before it notices the close
		// that follows it, and a select picks at random among ready
		// cases: an answer that came is the answer.
		select {
		case m := <-reply:
			return m.decode(method, out)
		default:
		}
		return fmt.Errorf("%s: %w", method, c.Err())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// decode is the outcome of a call that m answers: its error, or its
// result decoded into out (unless out is nil).
func (m message) decode(method string, out any) error {
	if m.Error != nil {
		return fmt.Errorf("%s: %w", method, m.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, out); err != nil {
		return fmt.Errorf("%s: decode result: %w", method, err)
	}
	return nil
}

// Notifications delivers what the app-server sends unasked, in order and
// all of it, however slowly it is read; it is closed once the connection
// has ended and what came before the end is delivered, or at Close.
func (c *Conn) Notifications() <-chan Notification { return c.notes }

// Done is closed once the connection has ended (Err says why).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it is up); Notifications
// is closed then.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection; notifications not yet read are dropped.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.closing) })
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.done
	<-c.delivered
	return err
}

// deliver hands the queued notifications to Notifications' reader, in
// order, until the connection has ended and the queue is empty, or Close.
func (c *Conn) deliver() {
	defer close(c.delivered)
	defer close(c.notes)
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, n := range batch {
			select {
			case c.notes <- n:
			case <-c.closing:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-c.more:
		case <-c.done:
			// What came before the end is queued by now: deliver it, then stop.
			c.mu.Lock()
			rest := len(c.queue)
			c.mu.Unlock()
			if rest == 0 {
				return
			}
		case <-c.closing:
			return
		}
	}
}

func (c *Conn) send(ctx context.Context, m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// read dispatches incoming messages until the connection ends.
func (c *Conn) read() {
	var err error
	defer func() {
		c.mu.Lock()
		c.err = ErrClosed
		if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			c.err = fmt.Errorf("%w: %w", ErrClosed, err)
		}
		c.mu.Unlock()
		close(c.done)
	}()
	for {
		var data []byte
		_, data, err = c.ws.Read(context.Background())
		if err != nil {
			return
		}
		var m struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
			Result json.RawMessage  `json:"result"`
			Error  *RPCError        `json:"error"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue // not JSON-RPC: nothing to answer
		}
		switch {
		case m.Method != "" && m.ID != nil:
			// A request from the server (an approval, say): this client
			// grants nothing, and an answer keeps the server from waiting.
			go c.send(context.Background(), message{JSONRPC: "2.0", ID: m.ID,
				Error: &RPCError{Code: -32601, Message: "not supported by " + ClientName}})
		case m.Method != "":
			c.mu.Lock()
			c.queue = append(c.queue, Notification{Method: m.Method, Params: m.Params})
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default: // deliver is woken already
			}
		case m.ID != nil:
			var id int64
			if json.Unmarshal(*m.ID, &id) != nil {
				continue
			}
			c.mu.Lock()
			reply := c.pending[id]
			c.mu.Unlock()
			select {
			case reply <- message{Result: m.Result, Error: m.Error}:
			default: // no call waits for it (an id answered twice, say)
			}
		}
	}
}
