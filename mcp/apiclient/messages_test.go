package apiclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

func TestSendAndRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	ctx := testContext(t)
	const room = "github.com/o/r"
	join(t, c, room)

	var ids []string
	for i := range 5 {
		m := send(t, c, room, fmt.Sprintf("m%d", i))
		if m.RoomID != room || m.Sender != "ann" || m.Text != fmt.Sprintf("m%d", i) || m.ThreadRootID != m.ID {
			t.Fatalf("Send = %+v", m)
		}
		ids = append(ids, m.ID)
	}
	reply, err := c.Send(ctx, room, wire.SendMessage{Sender: "bob", Text: "re: m1", ThreadParentID: &ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	if reply.ThreadParentID == nil || *reply.ThreadParentID != ids[1] || reply.ThreadRootID != ids[1] {
		t.Fatalf("reply = %+v, want a reply to %s", reply, ids[1])
	}
	if got := e.api.last(t, "/messages"); got.Path != "/rooms/github.com/o/r/messages" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Send sent %s with Content-Type %q, want /rooms/github.com/o/r/messages, application/json", got.Path, got.Header.Get("Content-Type"))
	}
	all := append(slices.Clone(ids), reply.ID)

	tests := []struct {
		name                string
		q                   apiclient.Query
		wantIDs             []string
		wantMore, wantOlder bool
		wantQuery           string
	}{
		{"everything", apiclient.Query{}, all, false, false, ""},
		{"after", apiclient.Query{After: ids[2], Limit: 2}, ids[3:5], true, false, "after=" + ids[2] + "&limit=2"},
		// Read backward, has_more says older messages remain, as has_older does.
		{"latest", apiclient.Query{Before: "latest", Limit: 2}, []string{ids[4], reply.ID}, true, true, "before=latest&limit=2"},
		{"before", apiclient.Query{Before: ids[1]}, ids[:1], false, false, "before=" + ids[1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := c.Messages(ctx, room, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := messageIDs(p.Messages); !slices.Equal(got, tt.wantIDs) || p.HasMore != tt.wantMore || p.HasOlder != tt.wantOlder || p.RoomID != room {
				t.Errorf("Messages(%+v) = %q has_more %v has_older %v room %q; want %q, %v, %v, %q",
					tt.q, got, p.HasMore, p.HasOlder, p.RoomID, tt.wantIDs, tt.wantMore, tt.wantOlder, room)
			}
			if got := e.api.last(t, "/messages"); got.Query != tt.wantQuery {
				t.Errorf("Messages(%+v) sent ?%s, want ?%s", tt.q, got.Query, tt.wantQuery)
			}
		})
	}

	// Read back, the root says it has a reply and the reply quotes it.
	p, err := c.Messages(ctx, room, apiclient.Query{})
	if err != nil {
		t.Fatal(err)
	}
	root, got := p.Messages[1], p.Messages[len(p.Messages)-1]
	if root.Thread == nil || root.Thread.ReplyCount != 1 || root.Thread.LatestReplyID != reply.ID {
		t.Errorf("thread root = %+v, want a thread of one reply, %s", root, reply.ID)
	}
	if got.ReplyTo == nil || got.ReplyTo.ID != ids[1] || got.ReplyTo.Text != "m1" || got.ReplyTo.Sender != "ann" {
		t.Errorf("reply read back = %+v, want it to quote %s", got, ids[1])
	}

	// The server's refusal comes through as such, not as a fallback.
	_, err = c.Messages(ctx, "nowhere-room", apiclient.Query{})
	if e := apiError(t, err); e.Status != 404 || !strings.Contains(e.Body.Error, "Room not found") {
		t.Errorf("a missing room: %v, want 404 …Room not found…", err)
	}
}

func TestPoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	ctx := testContext(t)
	const room = "polling"
	join(t, c, room)
	first := send(t, c, room, "one")
	second := send(t, c, room, "two")

	t.Run("backlog answers at once", func(t *testing.T) {
		start := time.Now()
		p, err := c.Poll(ctx, room, "", 120*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := messageIDs(p.Messages), []string{first.ID, second.ID}; !slices.Equal(got, want) || p.RoomID != room {
			t.Errorf("Poll = %q in %q, want %q in %q", got, p.RoomID, want, room)
		}
		// Far from the 120 s wait, so a loaded machine's slow answer is
		// never taken for a held one.
		if took := time.Since(start); took > 60*time.Second {
			t.Errorf("Poll with a backlog took %v, want an answer at once, not at its 120 s timeout", took)
		}
		if got := e.poll.last(t, "/messages/poll"); got.Path != "/rooms/polling/messages/poll" || got.Query != "timeout=120000" {
			t.Errorf("Poll sent %s?%s, want /rooms/polling/messages/poll?timeout=20000", got.Path, got.Query)
		}
	})

	t.Run("a send wakes it", func(t *testing.T) {
		type polled struct {
			p   apiclient.Page
			err error
		}
		done := make(chan polled, 1)
		start := time.Now()
		go func() {
			p, err := c.Poll(ctx, room, second.ID, 120*time.Second, 10)
			done <- polled{p, err}
		}()
		// Send once the poll has reached the server: it is parked, or
		// about to read; either way the send is what answers it.
		testwait.Until(t, "the poll to reach the server", func() bool {
			for _, r := range e.poll.requests() {
				if strings.Contains(r.Query, "after="+second.ID) {
					return true
				}
			}
			return false
		})
		third := send(t, e.client(""), room, "three")
		got := testwait.Recv(t, "the poll to answer", done)
		if got.err != nil {
			t.Fatal(got.err)
		}
		if ids := messageIDs(got.p.Messages); !slices.Equal(ids, []string{third.ID}) {
			t.Errorf("Poll = %q, want [%s]", ids, third.ID)
		}
		if took := time.Since(start); took > 60*time.Second {
			t.Errorf("Poll took %v, want it to answer when the message came, not at its 120 s timeout", took)
		}
		want := "after=" + second.ID + "&limit=10&timeout=120000"
		if got := e.poll.last(t, "/messages/poll"); got.Query != want {
			t.Errorf("Poll sent ?%s, want ?%s", got.Query, want)
		}
	})

	t.Run("timeout answers empty", func(t *testing.T) {
		p, err := c.Poll(ctx, room, "msg_1000", 200*time.Millisecond, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 0 || p.Messages == nil || p.RoomID != room {
			t.Errorf("Poll past the end = %+v, want an empty page of %s", p, room)
		}
	})

	// Every poll went to the poll base, none to the API's.
	for _, s := range e.api.requests() {
		if strings.HasSuffix(s.Path, "/poll") {
			t.Errorf("the API base got %s %s, want polls only at the poll base", s.Method, s.Path)
		}
	}
	if got := len(e.poll.requests()); got != 3 {
		t.Errorf("the poll base got %d requests (%q), want 3", got, e.poll.paths())
	}
}

func TestPollWithoutPollURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := apiclient.New(apiclient.Config{APIURL: e.api.URL + "//"})
	ctx := testContext(t)
	join(t, c, "solo")
	send(t, c, "solo", "hi")
	p, err := c.Poll(ctx, "solo", "", time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 1 {
		t.Errorf("Poll = %d messages, want 1", len(p.Messages))
	}
	if got := e.api.last(t, "/poll"); got.Path != "/rooms/solo/messages/poll" {
		t.Errorf("Poll sent %s to the API base, want /rooms/solo/messages/poll", got.Path)
	}
	if got := e.poll.paths(); len(got) != 0 {
		t.Errorf("the unused poll server got %q", got)
	}
}

// TestSendSurvivesDroppedConnection: the connection drops after the
// server committed a message and before its answer arrived; Send sends it
// again with the same client_message_id and gets the message, which the
// room holds once.
func TestSendSurvivesDroppedConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	var (
		mu        sync.Mutex
		clientIDs []string
	)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") {
			e.svc.Handler.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read send: %v", err)
			return
		}
		var m wire.SendMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("send body %s: %v", body, err)
		}
		mu.Lock()
		clientIDs = append(clientIDs, m.ClientMessageID)
		first := len(clientIDs) == 1
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !first {
			e.svc.Handler.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		e.svc.Handler.ServeHTTP(rec, r) // committed...
		if rec.Code != http.StatusCreated {
			t.Errorf("first send answered %d %s, want 201", rec.Code, rec.Body)
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close() // ...and the answer is lost
	}))
	t.Cleanup(front.Close)
	c := apiclient.New(apiclient.Config{APIURL: front.URL})
	join(t, c, "drops")

	m := send(t, c, "drops", "exactly once")
	if m.ID != "msg_1" || m.Text != "exactly once" {
		t.Errorf("Send = %+v, want msg_1", m)
	}
	mu.Lock()
	ids := slices.Clone(clientIDs)
	mu.Unlock()
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("client_message_id of each attempt = %q, want two equal ids", ids)
	}
	page, err := c.Messages(testContext(t), "drops", apiclient.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if got := messageIDs(page.Messages); !slices.Equal(got, []string{"msg_1"}) {
		t.Errorf("room holds %v, want [msg_1]", got)
	}
}

func TestTakeUnread(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	owner := e.client(signIn(t, e, "ann"))
	ctx := testContext(t)
	const room = "hooks"
	join(t, owner, room)
	s, builder := worker(t, owner, room, "builder")
	asked, err := owner.Send(ctx, room, wire.SendMessage{Sender: "ann", Text: "@" + s.DisplayName + " are you there?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked.Mentions) != 1 || asked.Mentions[0].AgentSessionID != s.SessionID {
		t.Errorf("Send answered mentions %+v, want %s", asked.Mentions, s.SessionID)
	}
	u, err := builder.TakeUnread(ctx, room, wire.TakeUnread{Filter: "addressed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Messages) != 1 || u.Messages[0].ID != asked.ID || u.Messages[0].Addressed == nil || *u.Messages[0].Addressed != "mention" ||
		!u.Asked || u.Cursor != asked.ID || u.AgentSessionID != s.SessionID {
		t.Errorf("TakeUnread = %+v, want %s (a mention, asked), cursor %s", u, asked.ID, asked.ID)
	}
	got := e.api.last(t, "/messages/unread")
	if got.Method != http.MethodPost || got.Path != "/rooms/hooks/messages/unread" || got.Header.Get(wire.SessionIDHeader) != s.SessionID {
		t.Errorf("TakeUnread sent %s %s with session %q; want POST /rooms/hooks/messages/unread as %s",
			got.Method, got.Path, got.Header.Get(wire.SessionIDHeader), s.SessionID)
	}
	// Without a session the server refuses: unread messages are a session's.
	var refused *apiclient.APIError
	if _, err := owner.TakeUnread(ctx, room, wire.TakeUnread{}); !errors.As(err, &refused) || refused.Status != http.StatusForbidden ||
		refused.Body.Code != letagents.CodeAgentSessionRequired {
		t.Errorf("TakeUnread without a session = %v; want 403 %s", err, letagents.CodeAgentSessionRequired)
	}
}
