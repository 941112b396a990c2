package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// Sends to one room from one Store leave the process one at a time, in
// both ways of sending: while one waits in the database for the room's
// row, the others wait here, holding no connection, and one whose
// context ends meanwhile gives up without sending. Once the row is free
// each gets the next number, and the room's turn is forgotten.
func TestSendsToOneRoomTakeTurns(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "turns")
	if err != nil {
		t.Fatal(err)
	}
	release := d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room.ID)
	send := func(ctx context.Context, i int) (int64, error) {
		m := letagents.NewMessage{RoomID: room.ID, Sender: fmt.Sprintf("agent-%d", i), Text: "hello"}
		if i%2 == 0 {
			msg, _, err := s.SendMessage(ctx, m)
			return msg.Seq, err
		}
		sent, err := s.Send(ctx, store.Send{Message: m, Now: time.Now(), Label: m.Sender, Display: m.Sender,
			NameKeys: store.NameKeys(m.Sender, m.Sender, "")})
		if err == nil && !sent.Created {
			err = fmt.Errorf("not sent: %+v", sent)
		}
		return sent.Message.Seq, err
	}
	type result struct {
		seq int64
		err error
	}
	const senders = 4
	results := make(chan result, senders)
	go func() { seq, err := send(ctx, 0); results <- result{seq, err} }()
	d.AwaitLockWaiters(t, 1) // the first holds the turn, waiting for the row
	for i := 1; i < senders; i++ {
		go func() { seq, err := send(ctx, i); results <- result{seq, err} }()
	}
	leaving, leave := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { _, err := send(leaving, senders); gaveUp <- err }()
	testwait.Until(t, "every send to wait for the room's turn", func() bool { return store.SendsInTurn(s, room.ID) == senders+1 })

	if waiting := d.LockWaiters(t); waiting != 1 {
		t.Errorf("%d sends wait for the room's row in the database, want 1 (the others wait for their turn)", waiting)
	}

	leave()
	if err := testwait.Recv(t, "the send whose context ended", gaveUp); !errors.Is(err, context.Canceled) {
		t.Errorf("a send whose context ended while it waited: %v, want context.Canceled", err)
	}
	release()
	var seqs []int64
	for range senders {
		r := testwait.Recv(t, "a send", results)
		if r.err != nil {
			t.Fatal(r.err)
		}
		seqs = append(seqs, r.seq)
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, []int64{1, 2, 3, 4}) {
		t.Errorf("numbers %v, want 1..4", seqs)
	}
	if n := store.SendsInTurn(s, room.ID); n != 0 {
		t.Errorf("%d sends still hold the room's turn after all returned", n)
	}
	page, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != senders {
		t.Errorf("the room holds %d messages, want %d (the send that gave up sent nothing)", len(page.Messages), senders)
	}
}

// Sends of one client (one rate bucket) into different rooms take turns
// on the bucket here as they would on its row in the database, while
// another client's send into the same rooms goes by.
func TestSendsOfOneClientTakeTurns(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	var rooms []string
	for _, name := range []string{"turns one", "turns two"} {
		room, _, err := s.EnsureRoom(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		rooms = append(rooms, room.ID)
	}
	send := func(room, client string) error {
		now := time.Now()
		m := letagents.NewMessage{RoomID: room, Sender: "agent-" + client, Text: "hello"}
		sent, err := s.Send(ctx, store.Send{Message: m, Now: now, Label: m.Sender, Display: m.Sender,
			NameKeys: store.NameKeys(m.Sender, m.Sender, ""), Take: &store.RateTake{Kind: "send", Key: client, PerMinute: 1000, Now: now}})
		if err == nil && !sent.Created {
			err = fmt.Errorf("not sent: %+v", sent)
		}
		return err
	}
	if err := send(rooms[0], "10.0.0.1"); err != nil { // the bucket's row
		t.Fatal(err)
	}
	release := d.HoldLock(t, `SELECT 1 FROM rate_buckets WHERE kind = 'send' AND key = '10.0.0.1' FOR UPDATE`)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- send(rooms[0], "10.0.0.1") }()
	d.AwaitLockWaiters(t, 1) // the first holds the bucket's turn, waiting for its row
	go func() { second <- send(rooms[1], "10.0.0.1") }()
	testwait.Until(t, "the second send to wait for the bucket's turn", func() bool { return store.RateTakesInTurn(s, "send", "10.0.0.1") == 2 })
	if waiting := d.LockWaiters(t); waiting != 1 {
		t.Errorf("%d sends wait for the bucket's row in the database, want 1 (the other waits for its turn)", waiting)
	}
	if err := send(rooms[1], "10.0.0.2"); err != nil {
		t.Fatalf("another client's send, while the first client's wait: %v", err)
	}
	release()
	for _, c := range []chan error{first, second} {
		if err := testwait.Recv(t, "a send", c); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.RateTakesInTurn(s, "send", "10.0.0.1") + store.SendsInTurn(s, rooms[0]) + store.SendsInTurn(s, rooms[1]); n != 0 {
		t.Errorf("%d turns still held after every send returned", n)
	}
}
