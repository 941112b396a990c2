package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// A pin shows in reads and the pins list, is an event of the room's log,
// and a room holds at most MaxPins: one more is a Conflict until one is
// unpinned.
func TestPinMessage(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	room, _, err := s.EnsureRoom(ctx, "pinboard")
	if err != nil {
		t.Fatal(err)
	}
	for i := range letagents.MaxPins + 1 {
		if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "ann", Text: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	prompt, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "ann", PromptKind: letagents.PromptAuto})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		room string
		seq  int64
		pin  bool
		want letagents.ErrorKind // "" for success
	}{
		{"pin", room.ID, 1, true, ""},
		{"pin again", room.ID, 1, true, ""},
		{"unpin", room.ID, 1, false, ""},
		{"unpin what is not pinned", room.ID, 2, false, ""},
		{"no such message", room.ID, 999, true, letagents.NotFound},
		{"a prompt-only message", room.ID, prompt.Seq, true, letagents.NotFound},
		{"no such room", "nowhere", 1, true, letagents.NotFound},
	} {
		m, err := s.PinMessage(ctx, c.room, c.seq, "ann", c.pin, now)
		if codeOf(err) != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		if c.want == "" && (m.Seq != c.seq || m.PinnedAt.IsZero() == c.pin || (m.PinnedBy == "ann") != c.pin) {
			t.Errorf("%s: message %+v", c.name, m)
		}
	}
	at, err := s.EventStart(ctx, room.ID, -1)
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= letagents.MaxPins; seq++ {
		if _, err := s.PinMessage(ctx, room.ID, seq, "ann", true, now.Add(time.Duration(seq)*time.Second)); err != nil {
			t.Fatalf("pin %d: %v", seq, err)
		}
	}
	if _, err := s.PinMessage(ctx, room.ID, letagents.MaxPins+1, "ann", true, now); codeOf(err) != letagents.Conflict {
		t.Errorf("pin %d of %d = %v, want Conflict", letagents.MaxPins+1, letagents.MaxPins, err)
	}
	if _, err := s.PinMessage(ctx, room.ID, 1, "ann", true, now); err != nil {
		t.Errorf("pinning a pinned message at the limit = %v, want it kept", err)
	}
	pins, err := s.Pins(ctx, room.ID)
	if err != nil || len(pins) != letagents.MaxPins || pins[0].Seq != letagents.MaxPins || pins[len(pins)-1].Seq != 1 {
		t.Fatalf("pins = %d, %v; want %d, newest pin first", len(pins), err, letagents.MaxPins)
	}
	page, err := s.RoomEvents(ctx, room.ID, at.Cursor, 100, now)
	if err != nil || len(page.Events) != letagents.MaxPins+1 || page.Events[0].Kind != letagents.EventPin || page.Events[0].Message == nil ||
		page.Events[0].Message.PinnedBy != "ann" {
		t.Errorf("pin events = %d (%v); want %d, each with its message", len(page.Events), err, letagents.MaxPins+1)
	}
	if _, err := s.Pins(ctx, "nowhere"); codeOf(err) != letagents.NotFound {
		t.Errorf("pins of a missing room = %v, want NotFound", err)
	}
}
