package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// The sends of TestSendVerdicts, queued behind a held room row and sent
// as one batch (its checked sends as statements over several sends,
// replies alone), come to what each came to one at a time: the same
// verdicts, numbers in the queue's order without a gap, all in one
// transaction.
func TestSendVerdictsInOneBatch(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	store.SetSendLanes(s, 2)
	room, first, cases := sendVerdictCases(t, s)
	ins := make([]store.Send, len(cases))
	for i, tc := range cases {
		ins[i] = tc.in
	}
	outs := sendInOneBatch(t, d, s, room, ins)
	last := first.Seq + 1 // the send that held the room's turn
	for i, tc := range cases {
		last = tc.judge(t, outs[i], last)
	}
	wantMessages(t, s, room, last)
	log := roomLog(t, d, room)
	for _, m := range log[first.Seq+1:] { // after the send that held the turn
		if m.xact != log[first.Seq+1].xact {
			t.Errorf("message %d was written by transaction %d, message %d by %d: want one batch", m.seq, m.xact, first.Seq+2, log[first.Seq+1].xact)
		}
	}
	wantSetStatement(t, d)
}

// Takes from one rate bucket in one batch come to what they would one at
// a time: the bucket's second take in a batch goes in a statement after
// the first's, and a take the rate refuses sends nothing and takes no
// number, whatever the other sends of its statement do.
func TestBatchTakesAsSendBySend(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	sends := func(room string, clients ...string) []store.Send {
		var out []store.Send
		for i, client := range clients {
			m := letagents.NewMessage{RoomID: room, Sender: "agent-" + client, Text: fmt.Sprintf("send %d", i)}
			at := now.Add(time.Duration(i) * time.Millisecond)
			in := anonymousSend(m, at)
			// Two a minute: a client's third send is refused.
			in.Take = &store.RateTake{Kind: "send", Key: client, PerMinute: 2, Now: at}
			out = append(out, in)
		}
		return out
	}
	batch := []string{"10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.1", "10.0.0.2"}
	// After the batch, one more from each, one at a time: what the
	// buckets hold after the batch decides them.
	after := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}
	later := func(ins []store.Send) []store.Send {
		for i := range ins {
			ins[i].Now = ins[i].Now.Add(10 * time.Millisecond)
			ins[i].Take.Now = ins[i].Now
		}
		return ins
	}
	oneByOne := func(s *store.Store, ins []store.Send) (out []store.Sent) {
		for _, in := range ins {
			sent, err := s.Send(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, sent)
		}
		return out
	}
	_, alone, rooms := newRooms(t, "takes alone")
	want := oneByOne(alone, append(sends(rooms[0], batch...), later(sends(rooms[0], after...))...))
	d, s, batched := newRooms(t, "takes batched")
	got := append(sendInOneBatch(t, d, s, batched[0], sends(batched[0], batch...)), oneByOne(s, later(sends(batched[0], after...)))...)
	for i := range want {
		w, g := want[i], got[i]
		if g.Created != w.Created || g.Wait != w.Wait || (g.Created && g.Message.Seq != w.Message.Seq+1) {
			t.Errorf("send %d: created %v (message %d), wait %v; want created %v (message %d), wait %v", i,
				g.Created, g.Message.Seq, g.Wait, w.Created, w.Message.Seq+1, w.Wait)
		}
	}
	wantSetStatement(t, d)
}

// Sends in one batch answer with the sessions they mention, as each
// would alone: names and labels included, in the order of their ids, for
// a send its worker session signs and for one it does not.
func TestBatchedSendsAnswerTheirMentions(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Millisecond)
	d, s, rooms := newRooms(t, "batched mentions")
	room := rooms[0]
	builder := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, now)
	watcher := storetest.Register(t, s, room, "Watcher", letagents.SessionWorker, now)
	plain := func(text string) store.Send {
		return anonymousSend(letagents.NewMessage{RoomID: room, Sender: "ann", Text: text}, now)
	}
	signed := signedSend(builder, letagents.NewMessage{RoomID: room, Sender: "x", Text: "@Watcher done"}, now)
	ins := []store.Send{plain("@Watcher @Builder look"), plain("nobody"), signed, plain("@Builder")}
	want := [][]storetest.Worker{{builder, watcher}, nil, {watcher}, {builder}}
	outs := sendInOneBatch(t, d, s, room, ins)
	for i, out := range outs {
		if !out.Created {
			t.Fatalf("send %d: not sent (%+v)", i, out)
		}
		var wantRefs []letagents.AgentRef
		for _, w := range want[i] {
			wantRefs = append(wantRefs, letagents.AgentRef{SessionID: w.ID, DisplayName: w.DisplayName, ActorLabel: w.ActorLabel})
		}
		if !slices.Equal(out.Message.Mentions, wantRefs) {
			t.Errorf("send %d (%q) answered mentions %+v, want %+v", i, ins[i].Message.Text, out.Message.Mentions, wantRefs)
		}
	}
	wantSetStatement(t, d)
}

// sendInOneBatch sends ins, in order, as one batch: the room's row held,
// a first send waits for it in the database while the others queue
// behind it in the process; then the row goes free. A send into another
// room goes at once. It returns each send's outcome, and fails the test
// on an error.
func sendInOneBatch(t *testing.T, d *pgtest.DB, s *store.Store, room string, ins []store.Send) []store.Sent {
	t.Helper()
	ctx := context.Background()
	first, release := holdRoom(t, d, s, room)
	type result struct {
		i   int
		out store.Sent
		err error
	}
	results := make(chan result, len(ins))
	queued := 1
	for i, in := range ins {
		go func() {
			out, err := s.Send(ctx, in)
			results <- result{i, out, err}
		}()
		if in.Message.RoomID != room {
			continue
		}
		queued++
		testwait.Until(t, fmt.Sprintf("send %d to queue", i), func() bool { return store.SendsInTurn(s, room) == queued })
	}
	release()
	if err := testwait.Recv(t, "the first send", first); err != nil {
		t.Fatal(err)
	}
	outs := make([]store.Sent, len(ins))
	for range ins {
		r := testwait.Recv(t, "a send", results)
		if r.err != nil {
			t.Fatalf("send %d: %v", r.i, r.err)
		}
		outs[r.i] = r.out
	}
	return outs
}

// wantSetStatement wants a statement that sends several checked sends
// to have gone to the database on one of d's connections.
func wantSetStatement(t *testing.T, d *pgtest.DB) {
	t.Helper()
	ctx := context.Background()
	conns := d.Pool.AcquireAllIdle(ctx)
	n := 0
	for _, c := range conns {
		var k int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%WITH ORDINALITY AS u(room,%'`).Scan(&k); err != nil {
			t.Fatal(err)
		}
		n += k
		c.Release()
	}
	if n == 0 {
		t.Error("no statement of several sends went to the database: the batch's sends went one statement each")
	}
}

// A batch's set statement rings a room it sends one message to with that
// message, as a send alone does, when someone in this process waits on
// the room (WaitersFrom); a room it sends two, or that nobody here waits
// on, rings plainly with its newest number. Each ring's message is what
// a read gives, and its event the log's.
func TestBatchRingsWithTheMessageWhereAWaiterIs(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	store.SetSendLanes(s, 1) // the held room's send fills the lane: the rest wait, then go as one batch
	ctx := context.Background()
	now := time.Now()
	cases := []struct {
		room   string
		texts  []string
		waited bool
		ring   bool // the room's ring carries its message
	}{
		{"alone", []string{"one"}, true, true},
		{"mentioning", []string{"over to you @Rev"}, true, true},
		{"two", []string{"first", "second"}, true, false},
		{"nobody waits", []string{"unheard"}, false, false},
	}
	waited := map[string]bool{}
	for _, c := range cases {
		if _, _, err := s.EnsureRoom(ctx, c.room); err != nil {
			t.Fatal(err)
		}
		waited[s.RoomChannel(c.room)] = c.waited
	}
	if _, _, err := s.EnsureRoom(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	storetest.Register(t, s, "mentioning", "Rev", letagents.SessionWorker, now)
	s.WaitersFrom(func(channel string) bool { return waited[channel] })
	for _, c := range cases {
		if got := s.RingsWithMessage(c.room); got != c.waited {
			t.Errorf("%s: RingsWithMessage = %v, want %v", c.room, got, c.waited)
		}
	}
	conn := listenRoom(t, d.Pool, s, cases[0].room)
	for _, c := range cases[1:] {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.RoomChannel(c.room)}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	first, release := holdRoom(t, d, s, "held")
	sent := make(chan error, 8)
	for _, c := range cases {
		for i, text := range c.texts {
			go func() {
				_, err := s.Send(ctx, anonymousSend(letagents.NewMessage{RoomID: c.room, Sender: "ann", Text: text}, now))
				sent <- err
			}()
			testwait.Until(t, fmt.Sprintf("%s: send %d to queue", c.room, i), func() bool { return store.SendsInTurn(s, c.room) == i+1 })
		}
	}
	release()
	if err := testwait.Recv(t, "the held room's send", first); err != nil {
		t.Fatal(err)
	}
	rings := map[string]string{}
	for len(rings) < len(cases) {
		wctx, cancel := context.WithTimeout(ctx, testwait.Bound)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("rings heard %v: %v", rings, err)
		}
		if _, dup := rings[n.Channel]; dup {
			t.Errorf("channel %s rang twice: %q, then %q", n.Channel, rings[n.Channel], n.Payload)
		}
		rings[n.Channel] = n.Payload
	}
	for range 5 {
		if err := testwait.Recv(t, "a batched send", sent); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		r, ok := store.ParseRing(rings[s.RoomChannel(c.room)])
		if !ok || r.Last != int64(len(c.texts)) || (r.Message != nil) != c.ring {
			t.Errorf("%s: ring %q names message %d, carries one: %v; want %d, %v", c.room, rings[s.RoomChannel(c.room)], r.Last, r.Message != nil, len(c.texts), c.ring)
			continue
		}
		if r.Message == nil {
			continue
		}
		page, err := s.Messages(ctx, c.room, store.MessageQuery{After: r.Last - 1, Limit: 1})
		if err != nil || len(page.Messages) != 1 {
			t.Fatalf("%s: read back %+v, %v", c.room, page, err)
		}
		if got, read := utcTimes(*r.Message), utcTimes(page.Messages[0]); !reflect.DeepEqual(got, read) {
			t.Errorf("%s: the ring's message\n%+v\nis not the read's\n%+v", c.room, got, read)
		}
		if c.room == "mentioning" && len(r.Message.Mentions) != 1 {
			t.Errorf("%s: the ring's message mentions %+v, want Rev", c.room, r.Message.Mentions)
		}
		evs, err := s.RoomEvents(ctx, c.room, r.Event-1, 10, now)
		if err != nil {
			t.Fatal(err)
		}
		if evs.Last != r.Event || len(evs.Events) != 1 || evs.Events[0].Message.Seq != r.Last {
			t.Errorf("%s: the ring names event %d; the log has %d, %+v", c.room, r.Event, evs.Last, evs.Events)
		}
	}
	wantSetStatement(t, d)
}
