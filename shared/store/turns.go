package store

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// turns schedules this process's sends into the database as batches: the
// sends waiting when a batch can go leave together, their statements
// pipelined in one round trip that PostgreSQL runs as one transaction (one
// commit, and the batch's NOTIFYs delivered with it).
//
// Every send locks two rows until it commits: its room's (the room's
// gap-free message numbers) and, when it takes a token, its client's rate
// bucket's. Batches in the database at once hold none of the same rows,
// so no send of this process ever waits in PostgreSQL for another's
// lock, holding a pooled connection and costing the database CPU: eight
// concurrent senders into one room took 1.5–1.9 ms of backend CPU a send
// there, and sent 570–740 a second on two cores, against 0.60–0.73 ms and
// 880–1,100 taking turns here (docs/benchmark.md). Sends of one room or
// one client wait for the batch that holds its row, then go together.
//
// At most limit batches are in the database at once, about as many as it
// has cores to run them: past that, sends wait here and leave together.
// A process that serves one request at a time, as a Lambda instance does,
// never waits here and always sends alone.
type turns struct {
	mu      sync.Mutex
	limit   int
	running int
	waiting []*roomSend       // in the order they came
	holder  map[string]*batch // a row's key, and the batch in the database that holds it
}

func newTurns() *turns {
	return &turns{limit: max(2, runtime.NumCPU()), holder: map[string]*batch{}}
}

// batch is sends that go to the database together, led by the first.
type batch struct{ sends []*roomSend }

// maxBatch bounds the sends one batch carries: past it its rows are held
// for longer, and a batch that fails runs again send by send.
const maxBatch = 32

// roomSend is a send's statement and how its row is read, to run alone or
// in a batch.
type roomSend struct {
	ctx  context.Context
	rows []string // the keys of the rows it locks (roomKey, rateKey)
	sql  string
	args []any
	scan func(pgx.Rows) error // reads the statement's rows into the send's result; run again when the send is
	// checked is a checked send that may go in a statement of several
	// (sendset.go); nil for a send that goes alone. fill reads its row of
	// that statement into the send's result.
	checked *Send
	fill    func(pgx.CollectableRow) error
	err     error       // the send's outcome, once its batch has run
	lead    chan *batch // the batch it is to run (itself first), or nil once another's batch ran it
}

// run runs the send alone on q.
func (rs *roomSend) run(ctx context.Context, q querier) error {
	rows, err := q.Query(ctx, rs.sql, rs.args...)
	if err != nil {
		return err
	}
	return rs.scan(rows)
}

// roomKey and rateKey name the rows a send locks.
func roomKey(room string) string      { return "room\x00" + room }
func rateKey(kind, key string) string { return "rate\x00" + kind + "\x00" + key }

// sendInTurn runs rs as a send to room that takes a token from the
// bucket of take (nil: none), alone or in a batch, once no batch in the
// database holds its rows. A send whose ctx ends while it waits gives up,
// sending nothing; one already in a batch stays in it.
func (s *Store) sendInTurn(ctx context.Context, room string, take *RateTake, rs *roomSend) error {
	rs.ctx, rs.lead, rs.rows = ctx, make(chan *batch, 1), []string{roomKey(room)}
	if take != nil {
		rs.rows = append(rs.rows, rateKey(take.Kind, take.Key))
	}
	b, err := s.turns.enter(ctx, rs)
	if err != nil || b == nil {
		return cmp.Or(err, rs.err)
	}
	s.runBatch(b.sends)
	s.turns.leave(b)
	return rs.err
}

// runBatch runs batch, setting each send's err. More than one send go
// as one pipelined batch of their statements, which PostgreSQL runs as
// one transaction: one commit, and the batch's NOTIFYs delivered with it.
// The batch runs until every one of its sends' contexts has ended. When
// the database refuses the batch (one send's statement failed: a repeat
// that raced its first send, say), nothing of it was committed, and each
// send runs again alone to get its own outcome; a failure of the batch's
// round trip leaves the outcome unknown, as a lone send's would be, and is
// every send's.
func (s *Store) runBatch(batch []*roomSend) {
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
	runs := setRuns(batch)
	if len(runs) < len(batch) { // a run of several: a set statement
		b.Queue(genericPlan)
		queueBuckets(b, runs)
	}
	for _, run := range runs {
		if len(run) > 1 {
			s.queueSet(b, run)
			continue
		}
		rs := run[0]
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

// enter queues rs and waits until ctx ends. It returns the batch rs is
// to run, rs first, when the turn comes to rs; nil once another's batch
// has run rs.
func (t *turns) enter(ctx context.Context, rs *roomSend) (*batch, error) {
	t.mu.Lock()
	t.waiting = append(t.waiting, rs)
	batches := t.form()
	t.mu.Unlock()
	if mine := t.start(batches, rs); mine != nil {
		return mine, nil
	}
	select {
	case b := <-rs.lead:
		return b, nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	i := slices.Index(t.waiting, rs)
	if i < 0 {
		t.mu.Unlock()
		return <-rs.lead, nil // taken into a batch as ctx ended: it is on its way
	}
	t.waiting = slices.Delete(t.waiting, i, i+1)
	t.mu.Unlock()
	return nil, ctx.Err()
}

// leave ends a batch that has run: its sends return, its rows are free,
// and the batches they let go start.
func (t *turns) leave(b *batch) {
	t.mu.Lock()
	t.running--
	for _, rs := range b.sends {
		for _, k := range rs.rows {
			delete(t.holder, k)
		}
	}
	batches := t.form()
	t.mu.Unlock()
	for _, rs := range b.sends[1:] {
		rs.lead <- nil
	}
	t.start(batches, nil)
}

// form takes the batches that can go now out of the waiting sends, in
// the order they came: each send whose rows no other batch in the
// database holds, while there is room for a batch. Called under t.mu.
func (t *turns) form() (batches []*batch) {
	for t.running < t.limit {
		b := &batch{}
		t.waiting = slices.DeleteFunc(t.waiting, func(rs *roomSend) bool {
			if len(b.sends) == maxBatch {
				return false
			}
			for _, k := range rs.rows {
				if h, held := t.holder[k]; held && h != b {
					return false
				}
			}
			b.sends = append(b.sends, rs)
			for _, k := range rs.rows {
				t.holder[k] = b
			}
			return true
		})
		if b.sends == nil {
			return batches
		}
		t.running++
		batches = append(batches, b)
	}
	return batches
}

// start hands each batch to its lead, and returns the one mine leads.
func (t *turns) start(batches []*batch, mine *roomSend) *batch {
	var out *batch
	for _, b := range batches {
		if b.sends[0] == mine {
			out = b
		} else {
			b.sends[0].lead <- b
		}
	}
	return out
}
