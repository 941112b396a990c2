package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/store"
)

// coalescer is a bench-only prototype of the long-poll handler whose woken
// waiters share one re-read per (room, cursor) instead of each running its
// own, on the service's own hub and store. It exists to measure what
// coalescing would gain; it is not the service's handler.
//
// Sharing is safe because a joiner only keeps a shared page that has
// messages (any page after its cursor is a correct answer); an empty page
// from a read that started before the joiner was woken may predate the
// commit that woke it, so the joiner then reads for itself.
type coalescer struct {
	hub   *notify.Hub
	store *store.Store

	mu    sync.Mutex
	calls map[readKey]*readCall
}

type readKey struct {
	room  string
	after int64
}

type readCall struct {
	started time.Time
	done    chan struct{}
	page    letagents.MessagePage
	err     error
}

func newCoalescer(hub *notify.Hub, st *store.Store) *coalescer {
	return &coalescer{hub: hub, store: st, calls: map[readKey]*readCall{}}
}

// read returns the page after cursor, joining an identical read in flight.
func (c *coalescer) read(ctx context.Context, room string, after int64, woken time.Time) (letagents.MessagePage, error) {
	k := readKey{room, after}
	c.mu.Lock()
	if call := c.calls[k]; call != nil {
		c.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return letagents.MessagePage{}, ctx.Err()
		}
		if call.err == nil && (len(call.page.Messages) > 0 || !call.started.Before(woken)) {
			return call.page, nil
		}
		return c.store.Messages(ctx, room, store.MessageQuery{After: after, Limit: letagents.DefaultPageSize})
	}
	call := &readCall{started: time.Now(), done: make(chan struct{})}
	c.calls[k] = call
	c.mu.Unlock()
	call.page, call.err = c.store.Messages(context.WithoutCancel(ctx), room, store.MessageQuery{After: after, Limit: letagents.DefaultPageSize})
	c.mu.Lock()
	delete(c.calls, k)
	c.mu.Unlock()
	close(call.done)
	return call.page, call.err
}

// ServeHTTP serves GET /rooms/{room}/messages/poll?after=&timeout= like the
// service does for a canonical room id (no validation beyond what the
// bench needs).
func (c *coalescer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	after, err := letagents.ParseMessageID(r.URL.Query().Get("after"))
	if err != nil {
		http.Error(w, `{"error":"bad after"}`, http.StatusBadRequest)
		return
	}
	ms, _ := strconv.Atoi(r.URL.Query().Get("timeout"))
	ctx := r.Context()
	answer := func(p letagents.MessagePage, err error) {
		if err != nil {
			http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
			return
		}
		writePage(w, room, p)
	}
	page, err := c.read(ctx, room, after, time.Now())
	if err != nil || len(page.Messages) > 0 {
		answer(page, err)
		return
	}
	after = min(after, page.LastSeq)
	waitCtx, cancel := context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
	defer cancel()
	sub, err := c.hub.Subscribe(waitCtx, c.store.Channel(room))
	if err != nil {
		answer(page, nil)
		return
	}
	defer sub.Close()
	woken := time.Now()
	for {
		page, err = c.read(ctx, room, after, woken)
		if err != nil || len(page.Messages) > 0 {
			answer(page, err)
			return
		}
		select {
		case <-sub.C():
			woken = time.Now()
		case <-waitCtx.Done():
			if ctx.Err() == nil {
				answer(page, nil)
			}
			return
		}
	}
}

// writePage writes a page in the service's wire shape.
func writePage(w http.ResponseWriter, room string, p letagents.MessagePage) {
	type msg struct {
		ID             string  `json:"id"`
		RoomID         string  `json:"room_id"`
		Sender         string  `json:"sender"`
		Text           string  `json:"text"`
		Source         *string `json:"source"`
		Timestamp      string  `json:"timestamp"`
		ThreadParentID *string `json:"thread_parent_id"`
	}
	out := struct {
		RoomID   string `json:"room_id"`
		Messages []msg  `json:"messages"`
		HasMore  bool   `json:"has_more"`
	}{RoomID: room, Messages: make([]msg, len(p.Messages)), HasMore: p.HasMore}
	for i, m := range p.Messages {
		out.Messages[i] = msg{ID: letagents.MessageID(m.Seq), RoomID: room, Sender: m.Sender, Text: m.Text, Timestamp: letagents.FormatTime(m.CreatedAt)}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}
