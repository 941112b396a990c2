package api

import (
	"context"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/store"
)

// nextMessages returns the page of room id that q asks for: at once when it
// has messages after the cursor (or timeout is 0), otherwise once the
// room's doorbell rings for one, or, empty, when timeout passes or the
// server drains. When ctx ends first it returns ctx's error.
//
// A caller that waited is on leash l: what it is given after waiting is
// given only once l's check passes again, and a ring on l's access
// channels checks at once, so that a caller who lost access meanwhile
// gets the error a new request would (a *revocation), not the messages.
//
// A ring says to read again, and reads of the same page by waiters woken
// together are shared (readGroup). Its payload (store.ParseRing) lets a
// waiter that has every message the listener heard of skip its first
// read (heardUpTo), and one woken by the send of the very next message,
// which the payload carries, answer with it unread (ringPage).
func (s *server) nextMessages(ctx context.Context, id string, q store.MessageQuery, timeout time.Duration, l *leash) (letagents.MessagePage, error) {
	read := func(ctx context.Context) (letagents.MessagePage, error) { return s.sharedPage(ctx, id, q) }
	channels := append(l.channels(), s.Store.RoomChannel(id))
	// Where others wait already, the waiter subscribes before its first
	// read, and that read is the one the wait needs: a parked poll reads
	// once, not twice. Elsewhere it reads first, so that a request
	// answered at once, or naming no room, LISTENs for nothing.
	var sub *notify.Subscription
	if timeout > 0 {
		if sub = s.Hub.SubscribeListened(channels...); sub != nil {
			defer sub.Close()
		}
	}
	subscribedFirst := sub != nil
	var page letagents.MessagePage
	var err error
	if !subscribedFirst || !heardUpTo(sub, s.Store.RoomChannel(id), q) {
		page, err = read(ctx) // also answers 404 for a missing room
		if err != nil || len(page.Messages) > 0 || timeout == 0 {
			return page, err
		}
		// A cursor past the newest message would otherwise wait for a
		// number that may be far off and skip everything before it.
		q.After = min(q.After, page.LastSeq)
	}

	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var subErr error
	if sub == nil {
		if sub, subErr = s.Hub.SubscribeAll(waitCtx, channels...); subErr == nil {
			defer sub.Close()
		}
	}
	var bell <-chan struct{}
	if subErr == nil {
		bell = sub.C()
	}
	for rung := false; subErr == nil; rung = true {
		// Read only once subscribed (the first read did, when it came
		// after the subscription): a message committed before the
		// subscription is found here, any later one rings the bell.
		if rung {
			if page, ok := ringPage(sub, s.Store.RoomChannel(id), q); ok {
				return page, l.check(ctx)
			}
		}
		if rung || !subscribedFirst {
			if page, err = readSubscribed(ctx, read, l, rung); err != nil || len(page.Messages) > 0 {
				return page, err
			}
		}
		select {
		case <-bell:
			continue
		case <-waitCtx.Done():
		case <-s.Draining:
		}
		break
	}
	if err := ctx.Err(); err != nil {
		return letagents.MessagePage{}, err // the caller left; its waiter is already released
	}
	// One last read covers a doorbell that could not ring (the listener
	// was reconnecting): the wait then ends late, never wrong.
	ctx = context.WithoutCancel(ctx)
	if err := l.check(ctx); err != nil {
		return letagents.MessagePage{}, err
	}
	return read(ctx)
}

// heardUpTo says whether the room's newest message, as the listener last
// heard it on the room's channel before sub (its notification's payload,
// store's roomEvent), is the one q reads after: then every message up to
// it is committed and any later one rings sub, so the page is empty and a
// poll that comes back at once after its answer parks without reading.
// The room exists: it rang.
func heardUpTo(sub *notify.Subscription, channel string, q store.MessageQuery) bool {
	last, ok := store.RingLast(sub.Heard(channel))
	return ok && q.Before == 0 && q.After > 0 && last == q.After
}

// ringPage is the page q reads, as the room's latest ring tells it
// without a read: when the ring is the send of the message just after
// q's cursor, every message up to it is committed (the ring is heard
// after the commit) and none after it rang yet, so the page is that
// message, as a read at its commit gives it. A message a read of q
// leaves out (prompt-only) or a ring without a message is no page.
func ringPage(sub *notify.Subscription, channel string, q store.MessageQuery) (letagents.MessagePage, bool) {
	r := latestRing(sub, channel)
	m := r.Message
	if m == nil || q.Before != 0 || r.Last != q.After+1 || (m.PromptKind == letagents.PromptAuto && !q.IncludePromptOnly) {
		return letagents.MessagePage{}, false
	}
	return letagents.MessagePage{Messages: []letagents.Message{*m}, LastSeq: r.Last}, true
}

// latestRing is the room channel's latest ring heard by sub, read once
// for every subscriber (readRing); the zero Ring when none is.
func latestRing(sub *notify.Subscription, channel string) store.Ring {
	r, _ := sub.Latest(channel, readRing).(store.Ring)
	return r
}

// readRing reads a room channel's payload for notify's Latest, once for
// every poll and stream the ring woke; no message when it is no ring.
func readRing(payload string) any {
	r, _ := store.ParseRing(payload)
	return r
}

// readSubscribed is a subscribed waiter's read, its page given only once
// l's check passes again. After a ring the check goes beside the read,
// not after it: a woken waiter answers in one database round trip's time,
// not two or three.
func readSubscribed(ctx context.Context, read func(context.Context) (letagents.MessagePage, error), l *leash, rung bool) (letagents.MessagePage, error) {
	var checked func()
	var cerr error
	if rung {
		checked = spawn(func() { cerr = l.check(ctx) })
	}
	page, err := read(ctx)
	switch {
	case checked != nil:
		if checked(); err == nil {
			err = cerr
		}
	case err == nil && len(page.Messages) > 0:
		err = l.check(ctx)
	}
	return page, err
}

// pageKey is what a long-poll's page depends on: its room and its query.
type pageKey struct {
	room  string
	query store.MessageQuery
}

// hasMessages says whether a long-poll may be answered with page however
// long before its wake-up it was read: its messages are new to the
// waiter, which is answered and asks again from after them.
func hasMessages(page letagents.MessagePage) bool { return len(page.Messages) > 0 }

// sharedPage reads page q of room id as of now, sharing the read with
// every waiter that asks for the same page at the same time (readGroup).
func (s *server) sharedPage(ctx context.Context, id string, q store.MessageQuery) (letagents.MessagePage, error) {
	since := s.pages.ticket()
	return s.pages.read(ctx, pageKey{id, q}, since, func(ctx context.Context) (letagents.MessagePage, error) {
		return s.Store.Messages(ctx, id, q)
	})
}
