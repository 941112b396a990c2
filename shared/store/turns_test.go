package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// Sends to one room from one Store leave the process one batch at a
// time, in both ways of sending: while one waits in the database for the
// room's row, the others wait here, holding no connection, and one whose
// context ends meanwhile gives up without sending. Once the row is free
// the rest leave together, one transaction numbered in the order they
// came, and the room's turn is forgotten.
func TestSendsToOneRoomTakeTurns(t *testing.T) {
	t.Parallel()
	d, s, room, first, release := turnsRoom(t)
	ctx := context.Background()
	const queued = 4
	results := make(chan error, queued)
	for i := range queued {
		m := letagents.NewMessage{RoomID: room, Sender: fmt.Sprintf("agent-%d", i), Text: fmt.Sprintf("queued %d", i)}
		go func() {
			if i%2 == 0 {
				_, _, err := s.SendMessage(ctx, m)
				results <- err
				return
			}
			_, err := checkedSend(ctx, s, m, "")
			results <- err
		}()
		testwait.Until(t, fmt.Sprintf("send %d to queue", i), func() bool { return store.SendsInTurn(s, room) == i+2 })
	}
	leaving, leave := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := checkedSend(leaving, s, letagents.NewMessage{RoomID: room, Sender: "leaving", Text: "bye"}, "")
		gaveUp <- err
	}()
	testwait.Until(t, "every send to wait for the room's turn", func() bool { return store.SendsInTurn(s, room) == queued+2 })
	if waiting := d.LockWaiters(t); waiting != 1 {
		t.Errorf("%d sends wait for the room's row in the database, want 1 (the others wait for their turn)", waiting)
	}
	leave()
	if err := testwait.Recv(t, "the send whose context ended", gaveUp); !errors.Is(err, context.Canceled) {
		t.Errorf("a send whose context ended while it waited: %v, want context.Canceled", err)
	}

	release()
	if err := testwait.Recv(t, "the first send", first); err != nil {
		t.Fatal(err)
	}
	for range queued {
		if err := testwait.Recv(t, "a queued send", results); err != nil {
			t.Fatal(err)
		}
	}
	log := roomLog(t, d, room)
	if len(log) != queued+1 {
		t.Fatalf("the room holds %d messages, want %d (the send that gave up sent nothing)", len(log), queued+1)
	}
	for i, m := range log[1:] {
		if want := fmt.Sprintf("queued %d", i); m.text != want || m.seq != int64(i+2) {
			t.Errorf("message %d is %q, want %q: the queue's order", m.seq, m.text, want)
		}
		if m.xact != log[1].xact {
			t.Errorf("message %d was written by transaction %d, message 2 by %d: want one batch", m.seq, m.xact, log[1].xact)
		}
	}
	if log[0].xact == log[1].xact {
		t.Errorf("the first send and the queued ones share transaction %d", log[0].xact)
	}
	if n := store.SendsInTurn(s, room); n != 0 {
		t.Errorf("%d sends still hold the room's turn after all returned", n)
	}
}

// checkedSend sends m as an anonymous caller under m.Sender, taking a
// token from client's send bucket unless client is ""; a send refused is
// an error.
func checkedSend(ctx context.Context, s *store.Store, m letagents.NewMessage, client string) (letagents.Message, error) {
	now := time.Now()
	in := anonymousSend(m, now)
	if client != "" {
		in.Take = &store.RateTake{Kind: "send", Key: client, PerMinute: 1000, Now: now}
	}
	sent, err := s.Send(ctx, in)
	if err == nil && !sent.Created {
		err = fmt.Errorf("not sent: %+v", sent)
	}
	return sent.Message, err
}

// Sends of one client (one rate bucket) into different rooms wait here
// while one of its sends holds the bucket's row, as they would for the
// row in the database, while another client's send into the same rooms
// goes by; once the row is free the client's waiting sends leave
// together.
func TestSendsOfOneClientTakeTurns(t *testing.T) {
	t.Parallel()
	d, s, rooms := newRooms(t, "turns one", "turns two", "turns three")
	ctx := context.Background()
	send := func(room, client string) error {
		_, err := checkedSend(ctx, s, letagents.NewMessage{RoomID: room, Sender: "agent-" + client, Text: "hello"}, client)
		return err
	}
	if err := send(rooms[0], "10.0.0.1"); err != nil { // the bucket's row
		t.Fatal(err)
	}
	release := d.HoldLock(t, `SELECT 1 FROM rate_buckets WHERE kind = 'send' AND key = '10.0.0.1' FOR UPDATE`)
	results := make(chan error, 3)
	go func() { results <- send(rooms[0], "10.0.0.1") }()
	d.AwaitLockWaiters(t, 1) // the first holds the bucket's turn, waiting for its row
	for i, room := range rooms[1:] {
		go func() { results <- send(room, "10.0.0.1") }()
		testwait.Until(t, "the client's next send to wait for the bucket's turn", func() bool { return store.RateTakesInTurn(s, "send", "10.0.0.1") == i+2 })
	}
	if waiting := d.LockWaiters(t); waiting != 1 {
		t.Errorf("%d sends wait for the bucket's row in the database, want 1 (the others wait for their turn)", waiting)
	}
	if err := send(rooms[1], "10.0.0.2"); err != nil {
		t.Fatalf("another client's send, while the first client's wait: %v", err)
	}
	release()
	for range 3 {
		if err := testwait.Recv(t, "a send", results); err != nil {
			t.Fatal(err)
		}
	}
	one, two := roomLog(t, d, rooms[1]), roomLog(t, d, rooms[2])
	if len(one) != 2 || one[0].sender != "agent-10.0.0.2" || len(two) != 1 {
		t.Fatalf("rooms hold %+v and %+v, want the other client's send first in the one", one, two)
	}
	if one[1].xact != two[0].xact {
		t.Errorf("the client's waiting sends were written by transactions %d and %d, want one batch", one[1].xact, two[0].xact)
	}
	if n := store.RateTakesInTurn(s, "send", "10.0.0.1") + store.SendsInTurn(s, rooms[0]) + store.SendsInTurn(s, rooms[1]); n != 0 {
		t.Errorf("%d turns still held after every send returned", n)
	}
}

// At most a Store's lanes of batches are in the database at once: past
// that, sends wait here even with rooms and clients of their own, and
// leave together when a lane is free.
func TestSendsWaitForALane(t *testing.T) {
	t.Parallel()
	d, s, rooms := newRooms(t, "lane a", "lane b", "lane c", "lane d")
	ctx := context.Background()
	var releases []func()
	for _, room := range rooms[:2] {
		releases = append(releases, d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room))
	}
	results := make(chan error, len(rooms))
	for i, room := range rooms {
		go func() {
			_, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room, Sender: "agent", Text: "hello"})
			results <- err
		}()
		if i < 2 {
			d.AwaitLockWaiters(t, i+1) // a lane's batch, waiting for its room's row
		} else {
			testwait.Until(t, "the send to wait for a lane", func() bool { return store.SendsInTurn(s, room) == 1 })
		}
	}
	if waiting := d.LockWaiters(t); waiting != 2 {
		t.Errorf("%d sends wait for a row in the database, want 2 (the others wait for a lane)", waiting)
	}
	for _, release := range releases {
		release()
	}
	for range rooms {
		if err := testwait.Recv(t, "a send", results); err != nil {
			t.Fatal(err)
		}
	}
	c, dd := roomLog(t, d, rooms[2]), roomLog(t, d, rooms[3])
	if len(c) != 1 || len(dd) != 1 || c[0].xact != dd[0].xact {
		t.Errorf("the sends that waited for a lane: %+v and %+v, want one message each from one batch", c, dd)
	}
}

// newRooms is a fresh Store with two lanes and rooms of the names given.
func newRooms(t *testing.T, names ...string) (*pgtest.DB, *store.Store, []string) {
	t.Helper()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	store.SetSendLanes(s, 2)
	var rooms []string
	for _, name := range names {
		r, _, err := s.EnsureRoom(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		rooms = append(rooms, r.ID)
	}
	return d, s, rooms
}

// turnsRoom is a room of a fresh Store, its row held (holdRoom).
func turnsRoom(t *testing.T) (d *pgtest.DB, s *store.Store, room string, first <-chan error, release func()) {
	t.Helper()
	d, s, rooms := newRooms(t, "batches")
	first, release = holdRoom(t, d, s, rooms[0])
	return d, s, rooms[0], first, release
}

// holdRoom holds room's row as a send ahead of the rest would hold it:
// first is that send's outcome, a message from "first", waiting in the
// database for the row until release.
func holdRoom(t *testing.T, d *pgtest.DB, s *store.Store, room string) (first <-chan error, release func()) {
	t.Helper()
	release = d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room)
	sent := make(chan error, 1)
	go func() {
		_, _, err := s.SendMessage(context.Background(), letagents.NewMessage{RoomID: room, Sender: "first", Text: "hello"})
		sent <- err
	}()
	d.AwaitLockWaiters(t, 1)
	return sent, release
}

// roomLog is a room's messages in order: each one's sender, text and
// the transaction that wrote it.
type loggedMessage struct {
	seq, xact    int64
	sender, text string
}

func roomLog(t *testing.T, d *pgtest.DB, room string) []loggedMessage {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), `SELECT seq, xmin::text::bigint, sender, text FROM messages WHERE room_id = $1 ORDER BY seq`, room)
	if err != nil {
		t.Fatal(err)
	}
	var out []loggedMessage
	for rows.Next() {
		var m loggedMessage
		if err := rows.Scan(&m.seq, &m.xact, &m.sender, &m.text); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A batch the database refuses whole (here the second of two sends of one
// client id trips the id's unique index) commits nothing, and its sends
// run again one by one to their own outcomes: the repeat answers the
// first send's message, and the numbers have no gap.
func TestRefusedBatchRunsSendBySend(t *testing.T) {
	t.Parallel()
	d, s, room, first, release := turnsRoom(t)
	ctx := context.Background()
	type result struct {
		msg     letagents.Message
		created bool
		err     error
	}
	sends := []letagents.NewMessage{
		{RoomID: room, Sender: "agent", Text: "once", ClientMessageID: "twice-sent"},
		{RoomID: room, Sender: "agent", Text: "once, again", ClientMessageID: "twice-sent"},
		{RoomID: room, Sender: "other", Text: "bystander"},
	}
	results := make([]chan result, len(sends))
	for i, m := range sends {
		results[i] = make(chan result, 1)
		go func() {
			msg, created, err := s.SendMessage(ctx, m)
			results[i] <- result{msg, created, err}
		}()
		testwait.Until(t, fmt.Sprintf("send %d to queue", i), func() bool { return store.SendsInTurn(s, room) == i+2 })
	}
	release()
	if err := testwait.Recv(t, "the first send", first); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		seq     int64
		created bool
	}{{2, true}, {2, false}, {3, true}}
	for i, w := range want {
		r := testwait.Recv(t, "a queued send", results[i])
		if r.err != nil || r.msg.Seq != w.seq || r.created != w.created {
			t.Errorf("send %d (%q): seq %d, created %v, err %v; want seq %d, created %v", i, sends[i].Text, r.msg.Seq, r.created, r.err, w.seq, w.created)
		}
	}
	log := roomLog(t, d, room)
	if len(log) != 3 || log[1].text != "once" || log[2].text != "bystander" {
		t.Errorf("the room holds %+v, want first, once, bystander", log)
	}
}

// A batch runs on while any of its sends still waits for it: the send
// that leads it giving up mid-way does not take the others' with it. It
// is sent all the same, as a lone send whose context ends mid-statement
// may be.
func TestBatchOutlivesItsLeader(t *testing.T) {
	t.Parallel()
	d, s, rooms := newRooms(t, "batches")
	room, ctx := rooms[0], context.Background()
	send := func(ctx context.Context, client string) error {
		_, err := checkedSend(ctx, s, letagents.NewMessage{RoomID: room, Sender: "agent-" + client, Text: "hello"}, client)
		return err
	}
	if err := send(ctx, "leader"); err != nil { // the leader's bucket's row
		t.Fatal(err)
	}
	releaseRoom := d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room)
	first := make(chan error, 1)
	go func() { first <- send(ctx, "first") }()
	d.AwaitLockWaiters(t, 1)
	leading, leave := context.WithCancel(ctx)
	leader, other := make(chan error, 1), make(chan error, 1)
	go func() { leader <- send(leading, "leader") }()
	testwait.Until(t, "the leader to queue", func() bool { return store.SendsInTurn(s, room) == 2 })
	go func() { other <- send(ctx, "other") }()
	testwait.Until(t, "the other to queue", func() bool { return store.SendsInTurn(s, room) == 3 })
	releaseBucket := d.HoldLock(t, `SELECT 1 FROM rate_buckets WHERE kind = 'send' AND key = 'leader' FOR UPDATE`)
	releaseRoom()
	if err := testwait.Recv(t, "the first send", first); err != nil {
		t.Fatal(err)
	}
	d.AwaitLockWaiters(t, 1) // the batch, at the leader's bucket
	leave()
	releaseBucket()
	for name, c := range map[string]chan error{"leader": leader, "other": other} {
		if err := testwait.Recv(t, "the "+name+"'s send", c); err != nil {
			t.Errorf("the %s's send: %v, want it sent", name, err)
		}
	}
	if log := roomLog(t, d, room); len(log) != 4 || log[2].xact != log[3].xact {
		t.Errorf("the room holds %+v, want four messages, the last two sent together", log)
	}
}

// Many sends of a few clients into a few rooms through one Store, some
// giving up at once and some while they wait or go: every send that
// reports success is in its room, each room's numbers run without a gap,
// and no turn is left held.
func TestSendsUnderLoad(t *testing.T) {
	t.Parallel()
	d, s, rooms := newRooms(t, "load 0", "load 1", "load 2", "load 3")
	ctx := context.Background()
	const sends = 200
	type result struct {
		room string
		seq  int64
		err  error
	}
	results := make(chan result, sends)
	for i := range sends {
		room, client := rooms[i%len(rooms)], fmt.Sprintf("10.0.1.%d", i%3)
		sendCtx, cancel := context.WithCancel(ctx)
		switch i % 10 {
		case 0:
			cancel() // gives up before it asks
		case 1:
			time.AfterFunc(time.Duration(i)*10*time.Microsecond, cancel) // gives up while it waits or goes
		}
		go func() {
			defer cancel()
			m := letagents.NewMessage{RoomID: room, Sender: "agent-" + client, Text: fmt.Sprintf("send %d", i)}
			var msg letagents.Message
			var err error
			if i%2 == 0 {
				msg, _, err = s.SendMessage(sendCtx, m)
			} else {
				msg, err = checkedSend(sendCtx, s, m, client)
			}
			results <- result{room, msg.Seq, err}
		}()
	}
	sent := map[string][]int64{}
	for range sends {
		r := testwait.Recv(t, "a send", results)
		switch {
		case r.err == nil:
			sent[r.room] = append(sent[r.room], r.seq)
		case !errors.Is(r.err, context.Canceled):
			t.Errorf("a send into %s: %v", r.room, r.err)
		}
	}
	for _, room := range rooms {
		log := roomLog(t, d, room)
		held := map[int64]bool{}
		for i, m := range log {
			if m.seq != int64(i+1) {
				t.Fatalf("room %s holds numbers %+v, want 1..%d without a gap", room, log, len(log))
			}
			held[m.seq] = true
		}
		for _, seq := range sent[room] {
			if !held[seq] {
				t.Errorf("a send into %s reported number %d, which the room does not hold", room, seq)
			}
		}
		if n := store.SendsInTurn(s, room); n != 0 {
			t.Errorf("%d sends into %s still in turn after all returned", n, room)
		}
	}
	for i := range 3 {
		if n := store.RateTakesInTurn(s, "send", fmt.Sprintf("10.0.1.%d", i)); n != 0 {
			t.Errorf("%d sends of client %d still in turn after all returned", n, i)
		}
	}
}
