package apiclient

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/letagents/letagents-go/shared/wire"
)

// pollMargin is how long past its timeout a long-poll may take before the
// client gives up on it: the server answers at the timeout, so this only
// covers the network and a slow database.
const pollMargin = 5 * time.Second

// slowPollExtra is added to the margin of a long-poll of more than
// slowPollAfter, which a loaded server may answer later still.
const (
	slowPollAfter = 120 * time.Second
	slowPollExtra = 120 * time.Second
)

// Query selects a page of a room's messages. The zero Query reads from
// the start, a server-sized page.
type Query struct {
	// After is a message id (msg_N): read the messages after it.
	After string
	// Before is "latest" or a message id: read the messages just before
	// it, backward. Give After or Before, not both.
	Before string
	// Limit is the page size; 0 leaves it to the server (200).
	Limit int
}

// Page is a list of messages, oldest first.
type Page struct {
	RoomID   string
	Messages []wire.Message
	// HasMore says more messages lie the way the page was read: newer ones
	// after it, or, read with Before, older ones before it.
	HasMore bool
	// HasOlder says older messages precede a page read with Before.
	HasOlder bool
}

// sendTimeout bounds one attempt of a send: a send takes milliseconds,
// and API Gateway gives up on a request after 30 s anyway.
const sendTimeout = 30 * time.Second

// Send posts a message to a room (POST /rooms/{id}/messages; on a server
// without that route, POST /projects/{id}/messages).
//
// The message goes out with a client_message_id, a random one unless m
// has one, which makes it safe to send again: when an attempt's outcome
// is unknown (no answer within 30 s, a dropped connection, 502, 503 or
// 504) Send repeats it with the same id, up to 4 attempts in all with
// growing pauses, and the server answers a repeat of a message it already
// holds with that message instead of posting it twice.
func (c *Client) Send(ctx context.Context, roomID string, m wire.SendMessage) (wire.Message, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return wire.Message{}, err
	}
	if m.ClientMessageID == "" {
		m.ClientMessageID = "mcp_" + rand.Text()
	}
	var msg wire.Message
	err = c.retry(ctx, func() error {
		return c.orLegacy(ctx,
			request{method: http.MethodPost, base: c.api, path: "/rooms/" + rp + "/messages", body: m, deadline: c.sendTimeout},
			request{method: http.MethodPost, base: c.api, path: "/projects/" + rp + "/messages", body: m, deadline: c.sendTimeout},
			&msg)
	})
	return msg, err
}

// Messages reads a page of a room's timeline (GET /rooms/{id}/messages;
// on a server without that route, GET /projects/{id}/messages).
func (c *Client) Messages(ctx context.Context, roomID string, q Query) (Page, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return Page{}, err
	}
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Before != "" {
		v.Set("before", q.Before)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var p wire.Page
	err = c.orLegacy(ctx,
		request{method: http.MethodGet, base: c.api, path: "/rooms/" + rp + "/messages", query: v},
		request{method: http.MethodGet, base: c.api, path: "/projects/" + rp + "/messages", query: v},
		&p)
	if err != nil {
		return Page{}, err
	}
	return pageOf(p)
}

// Poll long-polls a room for the messages after the cursor after ("" for
// the start): the server answers at once when there are some, else when
// one arrives, else with an empty page at timeout. A server may also
// answer empty sooner (API Gateway cuts requests at 25–30 s); Poll returns
// what it got, and looping is the caller's job. limit 0 leaves the page
// size to the server.
//
// The request goes to Config.PollURL (or APIURL) at
// /rooms/{id}/messages/poll, or /projects/{id}/messages/poll on a server
// without that route. Besides ctx, it is bounded by a deadline of its own:
// timeout plus 5 s, plus 120 s more for a timeout above 120 s.
func (c *Client) Poll(ctx context.Context, roomID, after string, timeout time.Duration, limit int) (Page, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return Page{}, err
	}
	timeout = max(timeout, 0)
	v := url.Values{}
	if after != "" {
		v.Set("after", after)
	}
	v.Set("timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	deadline := pollDeadline(timeout, c.pollMargin)
	var p wire.Page
	err = c.orLegacy(ctx,
		request{method: http.MethodGet, base: c.poll, path: "/rooms/" + rp + "/messages/poll", query: v, deadline: deadline},
		request{method: http.MethodGet, base: c.poll, path: "/projects/" + rp + "/messages/poll", query: v, deadline: deadline},
		&p)
	if err != nil {
		return Page{}, err
	}
	return pageOf(p)
}

// pollDeadline is how long a long-poll of timeout may take in all.
func pollDeadline(timeout, margin time.Duration) time.Duration {
	d := timeout + margin
	if timeout > slowPollAfter {
		d += slowPollExtra
	}
	return d
}

// pageOf decodes a page answer, whose room id comes under room_id or,
// from the legacy routes, project_id.
func pageOf(p wire.Page) (Page, error) {
	out := Page{RoomID: p.RoomID, HasMore: p.HasMore, Messages: make([]wire.Message, len(p.Messages))}
	if out.RoomID == "" {
		out.RoomID = p.ProjectID
	}
	if p.HasOlder != nil {
		out.HasOlder = *p.HasOlder
	}
	for i, raw := range p.Messages {
		if err := json.Unmarshal(raw, &out.Messages[i]); err != nil {
			return Page{}, fmt.Errorf("decode message %d of room %s: %w", i, out.RoomID, err)
		}
	}
	return out, nil
}

// TakeUnread takes the unread messages of the client's agent session
// (see As) in a room and marks them surfaced: POST
// /rooms/{id}/messages/unread, one request, never repeated (a repeat
// would find the messages taken). The session's credentials ride in the
// headers.
func (c *Client) TakeUnread(ctx context.Context, roomID string, q wire.TakeUnread) (wire.Unread, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return wire.Unread{}, err
	}
	var u wire.Unread
	err = c.do(ctx, request{method: http.MethodPost, base: c.api, path: "/rooms/" + rp + "/messages/unread", body: q}, &u)
	return u, err
}

// PinMessage pins (pin) or unpins a message of a room (POST or DELETE
// /rooms/{id}/messages/{message_id}/pin, room admins) and returns it as
// reads give it.
func (c *Client) PinMessage(ctx context.Context, roomID, messageID string, pin bool) (wire.Message, error) {
	if messageID == "" {
		return wire.Message{}, errors.New("apiclient: empty message id")
	}
	method := http.MethodPost
	if !pin {
		method = http.MethodDelete
	}
	var out wire.Message
	err := c.inRoom(ctx, method, roomID, "/messages/"+url.PathEscape(messageID)+"/pin", nil, nil, &out)
	return out, err
}
