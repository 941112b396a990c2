package store

import (
	"context"
	"sync"
)

// turns lets one send statement at a time leave this process per row that
// every send of a kind locks until it commits: its room's (the room's
// gap-free message numbers) and its client's rate bucket's. Such sends
// take turns in PostgreSQL whatever this process does. Taking turns here
// instead costs nothing, where waiting in the database holds a pooled
// connection per send and costs the database CPU: eight concurrent
// senders into one room took 1.5–1.9 ms of backend CPU a send and sent
// 570–740 a second on two cores, taking turns here 0.60–0.73 ms and
// 880–1,100 a second; eight agents of one client into eight rooms cost
// 2.3–2.8 ms of CPU an HTTP send in all, 1.2–1.4 ms taking turns on the
// bucket too (docs/benchmark.md). A process that serves one request at a
// time, as a Lambda instance does, never waits here.
type turns struct {
	mu   sync.Mutex
	rows map[string]*turn
}

// turn is one row's: holding it is a value in ch; users counts those who
// hold or wait for it, so that the last one out removes it.
type turn struct {
	ch    chan struct{}
	users int
}

// roomTurn and rateTurn name the rows a send locks.
func roomTurn(roomID string) string    { return "room\x00" + roomID }
func rateTurn(kind, key string) string { return "rate\x00" + kind + "\x00" + key }

// takeSend waits for the turns of a send to room that takes a token from
// the bucket of t (nil: none), first come first served, until ctx ends.
// The bucket's turn comes first, always: a send holding a room's turn
// never waits for a bucket's. The returned func gives them back; it must
// be called once.
func (t *turns) takeSend(ctx context.Context, room string, take *RateTake) (release func(), err error) {
	releaseRate := func() {}
	if take != nil {
		if releaseRate, err = t.take(ctx, rateTurn(take.Kind, take.Key)); err != nil {
			return nil, err
		}
	}
	releaseRoom, err := t.take(ctx, roomTurn(room))
	if err != nil {
		releaseRate()
		return nil, err
	}
	return func() { releaseRoom(); releaseRate() }, nil
}

// take waits for the turn of row until ctx ends.
func (t *turns) take(ctx context.Context, row string) (release func(), err error) {
	t.mu.Lock()
	tn := t.rows[row]
	if tn == nil {
		if t.rows == nil {
			t.rows = map[string]*turn{}
		}
		tn = &turn{ch: make(chan struct{}, 1)}
		t.rows[row] = tn
	}
	tn.users++
	t.mu.Unlock()
	select {
	case tn.ch <- struct{}{}:
		return func() { <-tn.ch; t.leave(row, tn) }, nil
	case <-ctx.Done():
		t.leave(row, tn)
		return nil, ctx.Err()
	}
}

func (t *turns) leave(row string, tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tn.users--; tn.users == 0 {
		delete(t.rows, row)
	}
}
