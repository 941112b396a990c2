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
