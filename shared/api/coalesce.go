package api

import (
	"context"
	"sync"
	"time"
)

// sharedReadTimeout bounds a read that several waiters share: it runs
// detached from the request that started it, so that request's client
// leaving does not fail the others.
const sharedReadTimeout = 10 * time.Second

// readGroup lets readers woken by the same notification share one read:
// long-polls share a page of messages (key K a room and its query, V the
// page), event streams a page of the room's event log. A doorbell wakes
// every waiter of a room at once, and they nearly all hold the same
// cursor; one query then serves a thousand waiters instead of a thousand
// queries queueing for the pool (measured: 57 ms → 28 ms p50 for 1000
// long-polls in one room).
//
// Sharing must not lose a wake-up: a read that began before a waiter was
// woken may predate the commit that rang it. So a waiter takes a shared
// value only if the read started after its ticket, or if keep says the
// value is right to return whenever it was read (a long-poll's page that
// has messages; nil keeps none: a stream moves its cursor to the end of
// what it read and waits for the next ring, so it must not take a read
// that may have missed the ring it is answering).
//
// What a read returns goes to every reader that shares it, which must
// never change it.
type readGroup[K comparable, V any] struct {
	keep  func(V) bool
	mu    sync.Mutex
	tick  uint64
	calls map[K]*readCall[V]
}

type readCall[V any] struct {
	ticket uint64 // the group's tick when the read began
	done   chan struct{}
	val    V
	err    error
}

// ticket returns a mark of now: reads that start after it get a larger one.
func (g *readGroup[K, V]) ticket() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tick
}

// read returns the value of key, from a read that started after since or
// whose value keep accepts, running fn when no such read is under way.
func (g *readGroup[K, V]) read(ctx context.Context, key K, since uint64, fn func(context.Context) (V, error)) (V, error) {
	for {
		g.mu.Lock()
		c := g.calls[key]
		if c == nil {
			g.tick++
			c = &readCall[V]{ticket: g.tick, done: make(chan struct{})}
			if g.calls == nil {
				g.calls = map[K]*readCall[V]{}
			}
			g.calls[key] = c
			g.mu.Unlock()
			readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
			c.val, c.err = fn(readCtx)
			cancel()
			g.mu.Lock()
			delete(g.calls, key)
			g.mu.Unlock()
			close(c.done)
			return c.val, c.err
		}
		g.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if c.ticket > since || (c.err == nil && g.keep != nil && g.keep(c.val)) {
			return c.val, c.err
		}
		// That read may have missed what woke us: read again.
	}
}
