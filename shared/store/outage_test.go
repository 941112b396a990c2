package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

// TestReadsSurviveKilledConnections plays a restart that kills every
// pooled connection while the pool does not know it (its connections are
// never pinged): the reads right after it must still succeed, each on its
// first call, because the store retries a read whose connection was dead.
func TestReadsSurviveKilledConnections(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tests := []struct {
		name string
		kill func(*pgtest.Proxy, []int32)
	}{
		// The connections break without a word (EOF), as when a network
		// path or the server's host goes away.
		{"connections cut", func(p *pgtest.Proxy, _ []int32) { p.Restart() }},
		// The server ends them as a restart does: 57P01, then close.
		{"backends terminated", func(_ *pgtest.Proxy, pids []int32) {
			for _, pid := range pids {
				var done bool
				if err := d.Pool.QueryRow(ctx, `SELECT pg_terminate_backend($1, 30000)`, pid).Scan(&done); err != nil || !done {
					t.Fatalf("terminate backend %d: %v, %v", pid, done, err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pgtest.NewProxy(t, d)
			pool := p.Pool(t, 2)
			s := store.New(pool)
			room, _, err := s.EnsureRoom(ctx, "restart "+tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "before"}); err != nil {
				t.Fatal(err)
			}
			// Both reads below meet a dead connection first: the pool holds
			// two, and nothing tells it they died.
			tt.kill(p, pgtest.Fill(t, pool, 2))
			if _, err := s.Room(ctx, room.ID); err != nil {
				t.Errorf("Room right after the restart: %v", err)
			}
			tt.kill(p, pgtest.Fill(t, pool, 2))
			page, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10})
			if err != nil || len(page.Messages) != 1 {
				t.Errorf("Messages right after the restart = %d messages, %v; want 1, nil", len(page.Messages), err)
			}
		})
	}
}

// TestOutageIsUnavailable: while the database cannot be reached, reads
// fail with an error db.Unavailable recognises (the API's 503), and they
// work again as soon as it is back.
func TestOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	p := pgtest.NewProxy(t, d)
	s := store.New(p.Pool(t, 2))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	room, _, err := s.EnsureRoom(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}

	p.Cut()
	_, readErr := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10})
	_, _, sendErr := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "lost"})
	for name, err := range map[string]error{"read": readErr, "send": sendErr} {
		if !db.Unavailable(err) {
			t.Errorf("%s during the outage: %v; want an error db.Unavailable recognises", name, err)
		}
	}

	p.Restore()
	if _, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10}); err != nil {
		t.Errorf("read after the outage: %v", err)
	}
}
