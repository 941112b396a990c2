package store

import (
	"context"
	"sync"
)

// roomTurns lets one send statement at a time per room leave this process.
// A send locks its room's row until it commits (the room's gap-free
// message numbers), so sends to one room take turns in PostgreSQL
// whatever this process does. Taking turns here instead costs nothing,
// where waiting in the database holds a pooled connection per send and
// costs the database CPU: eight concurrent senders into one room took
// 1.5–1.9 ms of backend CPU a send and sent 570–740 a second on two
// cores, taking turns here 0.60–0.73 ms and 880–1,100 a second
// (docs/benchmark.md). A process that serves one request at a time, as a
// Lambda instance does, never waits here.
type roomTurns struct {
	mu    sync.Mutex
	rooms map[string]*turn
}

// turn is one room's: holding it is a value in ch; users counts those who
// hold or wait for it, so that the last one out removes it.
type turn struct {
	ch    chan struct{}
	users int
}

// take waits for room's turn, first come first served, until ctx ends.
// The returned func gives the turn back; it must be called once.
func (t *roomTurns) take(ctx context.Context, room string) (release func(), err error) {
	t.mu.Lock()
	tn := t.rooms[room]
	if tn == nil {
		if t.rooms == nil {
			t.rooms = map[string]*turn{}
		}
		tn = &turn{ch: make(chan struct{}, 1)}
		t.rooms[room] = tn
	}
	tn.users++
	t.mu.Unlock()
	select {
	case tn.ch <- struct{}{}:
		return func() { <-tn.ch; t.leave(room, tn) }, nil
	case <-ctx.Done():
		t.leave(room, tn)
		return nil, ctx.Err()
	}
}

func (t *roomTurns) leave(room string, tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tn.users--; tn.users == 0 {
		delete(t.rooms, room)
	}
}
