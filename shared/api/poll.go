package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// holdMargin is kept free before a context deadline so that the empty
// answer is written before whoever set the deadline gives up on us.
const holdMargin = 500 * time.Millisecond

// poll answers at once when messages exist after the cursor, and otherwise
// waits for them (nextMessages) and answers with what it then reads.
func (s *server) poll(w http.ResponseWriter, r *http.Request, c call) error {
	q := pageQuery(r.URL.Query(), false)
	render, err := renderOption(r.URL.Query())
	if err != nil {
		return err
	}
	timeout := pollTimeout(r.URL.Query().Get("timeout"), s.PollMax)
	// A poll with session credentials (headers) is the agent's delivery
	// connection: it counts as reachable while parked.
	sess, err := s.agentSession(r, c.room, wire.SessionCredentials{}, false)
	if err != nil {
		return err
	}
	// The connection ends when its answer went, which is also when its
	// close is stamped, however late the close's write lands.
	var answered time.Time
	if sess != nil {
		closeDelivery, _ := s.deliver(r.Context(), sess.RoomID, sess.ID)
		defer func() { closeDelivery(answered) }()
	}
	ctx := r.Context()
	page, err := s.nextMessages(ctx, c.room, q, holdable(ctx, timeout), s.leash(r, c, sess, false))
	switch {
	case err != nil && errors.Is(err, ctx.Err()):
		return nil // the client left, or its time ran out: nobody reads an answer
	case err != nil:
		return err
	}
	s.surfaced(ctx, sess, c.room, page.Messages, letagents.ViaWait)
	if render {
		if page, err = s.withReceipts(ctx, c.room, page); err != nil {
			return err
		}
	}
	if err := writePage(w, r, c.room, page, false, render); err != nil {
		return err
	}
	// The answer goes out now, whole (writeJSON gives its length), not
	// once the handler returns: the delivery connection's close (deferred
	// above) is a database write the agent need not wait for, and a burst
	// wakes thousands of polls at once, whose closes queue for the pool's
	// connections.
	_ = http.NewResponseController(w).Flush()
	answered = s.now()
	return nil
}

// holdable is how much of timeout a handler may hold a request on ctx
// open: no longer than the hold limit, and ending holdMargin before the
// context's deadline.
func holdable(ctx context.Context, timeout time.Duration) time.Duration {
	if limit, ok := holdLimit(ctx); ok {
		timeout = min(timeout, limit)
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(0, min(timeout, time.Until(dl)-holdMargin))
	}
	return timeout
}

// pollTimeout reads ?timeout (milliseconds) as the original does: absent,
// unreadable or negative is the default, and any wait is clamped to max.
func pollTimeout(v string, maxWait time.Duration) time.Duration {
	ms, ok := queryInt(v)
	if !ok || ms < 0 {
		return min(letagents.DefaultPollTimeout, maxWait)
	}
	if ms > maxWait.Milliseconds() {
		return maxWait
	}
	return time.Duration(ms) * time.Millisecond
}

// deliver records a parked poll or an open stream as an open delivery
// connection of a session, renewed while it waits; the returned func
// closes it as of the time it is given (zero: now), and the number is the
// presence event its opening logged (0: none), which a stream leaves out
// of what it sends its own agent. The
// connection is a lease in the database: if this process dies, it lapses
// by itself within letagents.DeliveryLease. Failures only cost liveness
// accuracy, never the poll, so they are logged.
func (s *server) deliver(ctx context.Context, roomID string, sessionID int64) (func(at time.Time), int64) {
	bg := context.WithoutCancel(ctx)
	d, err := s.Store.OpenDelivery(bg, roomID, sessionID, s.now(), s.now().Add(letagents.DeliveryLease))
	if err != nil {
		s.Logger.Warn("open delivery connection", "session", sessionID, "error", err)
		return func(time.Time) {}, 0
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
				if err := s.Store.RenewDelivery(bg, d.ID, s.now().Add(letagents.DeliveryLease)); err != nil {
					s.Logger.Warn("renew delivery connection", "session", sessionID, "error", err)
				}
			}
		}
	}()
	return func(at time.Time) {
		close(done)
		if at.IsZero() {
			at = s.now()
		}
		if err := s.Store.CloseDelivery(bg, d.ID, at); err != nil {
			s.Logger.Warn("close delivery connection", "session", sessionID, "error", err)
		}
	}, d.Event
}
