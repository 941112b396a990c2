package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// BenchmarkMessages reads a full page of a room's timeline, the read every
// poll, stream and page load makes: it holds row scanning to its cost.
func BenchmarkMessages(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "bench room")
	if err != nil {
		b.Fatal(err)
	}
	for i := range letagents.MaxPageSize {
		m := letagents.NewMessage{RoomID: room.ID, Sender: fmt.Sprintf("agent-%d", i%5), Text: fmt.Sprintf("message %d", i)}
		if i%4 == 3 {
			m.ThreadParentSeq = int64(i) // a reply, so quotes and threads are read too
		}
		if _, _, err := s.SendMessage(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		page, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: letagents.MaxPageSize})
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Messages) != letagents.MaxPageSize {
			b.Fatalf("read %d messages, want %d", len(page.Messages), letagents.MaxPageSize)
		}
	}
}

// BenchmarkSendMessage sends messages to one room, one after another: the
// send path, one statement that numbers the message, logs its event and
// rings the room, which must not get slower.
func BenchmarkSendMessage(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "bench sends")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "agent", Text: fmt.Sprintf("message %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}
