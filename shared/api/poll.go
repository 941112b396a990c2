package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// holdMargin is kept free before a context deadline so that the empty
// answer is written before whoever set the deadline gives up on us.
const holdMargin = 500 * time.Millisecond

// poll answers at once when messages exist after the cursor, and otherwise
// waits for the room's doorbell (or the timeout) and answers with what it
// then reads. Nothing is ever taken from the notification itself.
func (s *server) poll(w http.ResponseWriter, r *http.Request, ps params) {
	id, _, err := s.enter(r, ps, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := pageQuery(r.URL.Query(), false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	timeout, err := pollTimeout(r.URL.Query().Get("timeout"), s.PollMax)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// A poll with session credentials (headers) is the agent's delivery
	// connection: it counts as reachable while parked.
	sess, err := s.agentSession(r, id, wire.SessionCredentials{}, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if sess != nil {
		defer s.deliver(r.Context(), sess.ID)()
	}
	ctx := r.Context()
	if limit, ok := holdLimit(ctx); ok {
		timeout = min(timeout, limit)
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(0, min(timeout, time.Until(dl)-holdMargin))
	}

	read := func(ctx context.Context) (letagents.MessagePage, error) {
		since := s.reads.ticket()
		return s.reads.read(ctx, readKey{id, q}, since, func(ctx context.Context) (letagents.MessagePage, error) {
			return s.Store.Messages(ctx, id, q)
		})
	}
	page, err := read(ctx) // also answers 404 for a missing room
	if err != nil || len(page.Messages) > 0 || timeout == 0 {
		s.answerPoll(w, r, id, page, err)
		return
	}
	// A cursor past the newest message would otherwise wait for a number
	// that may be far off and skip everything before it.
	q.After = min(q.After, page.LastSeq)

	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sub, subErr := s.Hub.Subscribe(waitCtx, s.Store.Channel(id))
	var bell <-chan struct{}
	if subErr == nil {
		defer sub.Close()
		bell = sub.C()
	}
	for subErr == nil {
		// Read only once subscribed: a message committed before the
		// subscription is found here, any later one rings the bell.
		page, err = read(ctx)
		if err != nil || len(page.Messages) > 0 {
			s.answerPoll(w, r, id, page, err)
			return
		}
		select {
		case <-bell:
			continue
		case <-waitCtx.Done():
		case <-s.Draining:
		}
		break
	}
	if ctx.Err() != nil {
		return // the client left; its waiter is already released
	}
	// One last read covers a doorbell that could not ring (the listener
	// was reconnecting): the poll then answers late, never wrong.
	page, err = read(context.WithoutCancel(ctx))
	s.answerPoll(w, r, id, page, err)
}

func (s *server) answerPoll(w http.ResponseWriter, r *http.Request, id string, page letagents.MessagePage, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writePage(w, r, id, page, false)
}

// pollTimeout reads ?timeout (milliseconds), clamped to max.
func pollTimeout(v string, maxWait time.Duration) (time.Duration, error) {
	if v == "" {
		return min(letagents.DefaultPollTimeout, maxWait), nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, letagents.Errorf(letagents.Invalid, "timeout must be a whole number of milliseconds, at least 0")
	}
	if ms > maxWait.Milliseconds() {
		return maxWait, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// deliver records a parked poll as an open delivery connection of a
// session, renewed while it waits; the returned func closes it. The
// connection is a lease in the database: if this process dies, it lapses
// by itself within letagents.DeliveryLease. Failures only cost liveness
// accuracy, never the poll, so they are logged.
func (s *server) deliver(ctx context.Context, sessionID int64) func() {
	bg := context.WithoutCancel(ctx)
	id, err := s.Store.OpenDelivery(bg, sessionID, s.now(), s.now().Add(letagents.DeliveryLease))
	if err != nil {
		s.Logger.Warn("open delivery connection", "session", sessionID, "error", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(letagents.DeliveryHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := s.Store.RenewDelivery(bg, id, s.now().Add(letagents.DeliveryLease)); err != nil {
					s.Logger.Warn("renew delivery connection", "session", sessionID, "error", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		if err := s.Store.CloseDelivery(bg, id, s.now()); err != nil {
			s.Logger.Warn("close delivery connection", "session", sessionID, "error", err)
		}
	}
}
