package store

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// turns lets sends leave this process one at a time per row that every
// send of a kind locks until it commits: its room's (the room's gap-free
// message numbers) and its client's rate bucket's. Such sends take turns
// in PostgreSQL whatever this process does. Taking turns here instead
// costs nothing, where waiting in the database holds a pooled connection
// per send and costs the database CPU: eight concurrent senders into one
// room took 1.5–1.9 ms of backend CPU a send and sent 570–740 a second on
// two cores, taking turns here 0.60–0.73 ms and 880–1,100 a second; eight
// agents of one client into eight rooms cost 2.3–2.8 ms of CPU an HTTP
// send in all, 1.2–1.4 ms taking turns on the bucket too
// (docs/benchmark.md).
//
// A room's turn goes to the sends queued for it together: they leave as
// one batch, one round trip and one commit (roomBatch), since they would
// each have waited for the one before to commit anyway: eight HTTP
// senders into one room sent 1,400 a second at 0.78 ms of CPU a send in
// all, against 800 at 1.35 ms one by one. A process that
// serves one request at a time, as a Lambda instance does, never waits
// here and always sends alone.
type turns struct {
	mu    sync.Mutex
	rates map[string]*turn
	rooms map[string]*roomTurn
}

// turn is a rate bucket's: holding it is a value in ch; users counts
// those who hold or wait for it, so that the last one out removes it.
type turn struct {
	ch    chan struct{}
	users int
}

// roomTurn is a room's while a batch of its sends is in the database:
// running is that batch's size, queue the sends waiting for the next.
type roomTurn struct {
	running int
	queue   []*roomSend
}

// maxRoomBatch bounds the sends one batch carries: past it the room's row
// is held for longer, and a batch that fails runs again send by send.
const maxRoomBatch = 32

// roomSend is a send's statement and how its row is read, to run alone or
// in a batch.
type roomSend struct {
	ctx  context.Context
	sql  string
	args []any
	scan func(pgx.Rows) error // reads the statement's rows into the send's result; run again when the send is
	err  error                // the send's outcome, once its batch has run
	lead chan []*roomSend     // the batch it is to run (itself first), or nil once another's batch ran it
}

// run runs the send alone on q.
func (rs *roomSend) run(ctx context.Context, q querier) error {
	rows, err := q.Query(ctx, rs.sql, rs.args...)
	if err != nil {
		return err
	}
	return rs.scan(rows)
}

// rateKey names a rate bucket's turn.
func rateKey(kind, key string) string { return kind + "\x00" + key }

// sendInTurn runs rs as a send to room that takes a token from the
// bucket of take (nil: none), once its turns come, first come first
// served: the bucket's turn first, always, so that a send holding a
// room's turn never waits for a bucket's; then the room's, alone or in a
// batch. A send whose ctx ends while it waits gives up, sending nothing;
// one already in a batch stays in it.
func (s *Store) sendInTurn(ctx context.Context, room string, take *RateTake, rs *roomSend) error {
	if take != nil {
		release, err := s.turns.takeRate(ctx, rateKey(take.Kind, take.Key))
		if err != nil {
			return err
		}
		defer release()
	}
	rs.ctx, rs.lead = ctx, make(chan []*roomSend, 1)
	batch, err := s.turns.joinRoom(ctx, room, rs)
	if err != nil {
		return err
	}
	if batch != nil {
		s.roomBatch(batch)
		s.turns.passRoom(room, batch)
	}
	return rs.err
}

// roomBatch runs batch, setting each send's err. More than one send go
// as one pipelined batch of their statements, which PostgreSQL runs as
// one transaction: one commit, and the batch's NOTIFYs delivered with it.
// The batch runs until every one of its sends' contexts has ended. When
// the database refuses the batch (one send's statement failed: a repeat
// that raced its first send, say), nothing of it was committed, and each
// send runs again alone to get its own outcome; a failure of the batch's
// round trip leaves the outcome unknown, as a lone send's would be, and is
// every send's.
func (s *Store) roomBatch(batch []*roomSend) {
	if len(batch) == 1 {
		batch[0].err = batch[0].run(batch[0].ctx, s.pool)
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	defer cancel()
	left := atomic.Int64{}
	left.Store(int64(len(batch)))
	for _, rs := range batch {
		stop := context.AfterFunc(rs.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	b := &pgx.Batch{}
	for _, rs := range batch {
		// Only the database's refusal fails the batch: a send's own
		// failure to read its row (no room, no row) is its outcome alone,
		// and the others' rows must still be read.
		b.Queue(rs.sql, rs.args...).Query(func(rows pgx.Rows) error {
			if rs.err = rs.scan(rows); pgCode(rs.err) != "" {
				return rs.err
			}
			return nil
		})
	}
	err := s.pool.SendBatch(ctx, b).Close()
	switch {
	case pgCode(err) != "":
		for _, rs := range batch {
			rs.err = rs.run(rs.ctx, s.pool)
		}
	case err != nil:
		for _, rs := range batch {
			rs.err = err
		}
	}
}

// joinRoom waits for the room's turn for rs until ctx ends. It returns
// the batch rs is to run, rs first, when the turn comes to rs; nil once
// another send's batch has run rs.
func (t *turns) joinRoom(ctx context.Context, room string, rs *roomSend) ([]*roomSend, error) {
	t.mu.Lock()
	r := t.rooms[room]
	if r == nil {
		if t.rooms == nil {
			t.rooms = map[string]*roomTurn{}
		}
		t.rooms[room] = &roomTurn{running: 1}
		t.mu.Unlock()
		return []*roomSend{rs}, nil
	}
	r.queue = append(r.queue, rs)
	t.mu.Unlock()
	select {
	case batch := <-rs.lead:
		return batch, nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	if i := slices.Index(r.queue, rs); i >= 0 {
		r.queue = slices.Delete(r.queue, i, i+1)
		t.mu.Unlock()
		return nil, ctx.Err()
	}
	t.mu.Unlock()
	return <-rs.lead, nil // taken into a batch as ctx ended: it is on its way
}

// passRoom ends the room's batch that has run: its sends return, and
// the sends queued meanwhile, as many as a batch takes, go next, led by
// the first of them.
func (t *turns) passRoom(room string, batch []*roomSend) {
	t.mu.Lock()
	r := t.rooms[room]
	var next []*roomSend
	if n := min(len(r.queue), maxRoomBatch); n == 0 {
		delete(t.rooms, room)
	} else {
		next = slices.Clone(r.queue[:n])
		r.queue = slices.Delete(r.queue, 0, n)
		r.running = n
	}
	t.mu.Unlock()
	for _, rs := range batch[1:] {
		rs.lead <- nil
	}
	if next != nil {
		next[0].lead <- next
	}
}

// takeRate waits for the turn of a rate bucket until ctx ends.
func (t *turns) takeRate(ctx context.Context, key string) (release func(), err error) {
	t.mu.Lock()
	tn := t.rates[key]
	if tn == nil {
		if t.rates == nil {
			t.rates = map[string]*turn{}
		}
		tn = &turn{ch: make(chan struct{}, 1)}
		t.rates[key] = tn
	}
	tn.users++
	t.mu.Unlock()
	select {
	case tn.ch <- struct{}{}:
		return func() { <-tn.ch; t.leaveRate(key, tn) }, nil
	case <-ctx.Done():
		t.leaveRate(key, tn)
		return nil, ctx.Err()
	}
}

func (t *turns) leaveRate(key string, tn *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tn.users--; tn.users == 0 {
		delete(t.rates, key)
	}
}
