package api

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

func toMessageAgent(r letagents.AgentRef) wire.MessageAgent {
	return wire.MessageAgent{AgentSessionID: letagents.WireID(letagents.AgentSessionPrefix, r.SessionID), DisplayName: r.DisplayName,
		ActorLabel: r.ActorLabel}
}

// toMessageAgents is refs on the wire; nil for none, so that the field
// is left out.
func toMessageAgents(refs []letagents.AgentRef) []wire.MessageAgent {
	var out []wire.MessageAgent
	for _, r := range refs {
		out = append(out, toMessageAgent(r))
	}
	return out
}

func toSeenBy(d letagents.Delivery) wire.SeenBy {
	return wire.SeenBy{MessageAgent: toMessageAgent(d.AgentRef), SurfacedAt: letagents.FormatTime(d.SurfacedAt), Via: string(d.Via)}
}

// surfaced records that msgs, answered to a request carrying sess's
// credentials, were surfaced to its agent through via, and moves its
// delivery cursor past them. Every way of handing an agent messages
// calls it once per answer (the long-poll, a read, the event stream). A
// failure costs only the record, never the answer, so it is logged.
func (s *server) surfaced(ctx context.Context, sess *letagents.AgentSession, roomID string, msgs []letagents.Message, via letagents.Via) {
	if sess == nil || len(msgs) == 0 {
		return
	}
	seqs := make([]int64, len(msgs))
	for i, m := range msgs {
		seqs[i] = m.Seq
	}
	if err := s.Store.RecordSurfaced(context.WithoutCancel(ctx), sess.ID, roomID, seqs, via, s.now()); err != nil {
		s.Logger.Warn("record surfaced messages", "session", sess.ID, "room", rooms.ForLog(roomID), "via", via, "error", err)
	}
}

// withReceipts is page with each message's receipts (seen by, unread by)
// filled in, for the page's reads. The page may be shared with other
// readers (readGroup), so its messages are copied, never changed.
func (s *server) withReceipts(ctx context.Context, roomID string, page letagents.MessagePage) (letagents.MessagePage, error) {
	if len(page.Messages) == 0 {
		return page, nil
	}
	seqs := make([]int64, len(page.Messages))
	for i, m := range page.Messages {
		seqs[i] = m.Seq
	}
	receipts, err := s.Store.Receipts(ctx, roomID, seqs, s.now())
	if err != nil {
		return page, err
	}
	page.Messages = slices.Clone(page.Messages)
	for i, m := range page.Messages {
		r := receipts[m.Seq]
		page.Messages[i].SeenBy, page.Messages[i].UnreadBy = r.SeenBy, r.UnreadBy
	}
	return page, nil
}

// takeUnread hands the agent session of the request (its credentials in
// the body or the headers) its unread messages and marks them surfaced:
// one round trip for a runtime hook (letagents hook).
func (s *server) takeUnread(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.TakeUnread
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	filter, err := letagents.ParseUnreadFilter(req.Filter)
	if err != nil {
		return err
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = letagents.DefaultUnreadLimit
	case limit < 1 || limit > letagents.MaxUnreadLimit:
		return letagents.Errorf(letagents.Invalid, "limit must be between 1 and %d", letagents.MaxUnreadLimit)
	}
	var deadline time.Time
	switch within := time.Duration(req.AnswerWithinMs) * time.Millisecond; {
	case req.AnswerWithinMs < 0 || within > letagents.MaxUnreadWithin:
		return letagents.Errorf(letagents.Invalid, "answer_within_ms must be between 1 and %d (0: no bound)", letagents.MaxUnreadWithin.Milliseconds())
	case within > 0:
		// The caller's time runs from its send, before this arrived: what
		// the request spent on the way shortens the caller's wait, which
		// the caller allows for by asking for less.
		deadline = time.Now().Add(within)
	}
	sess, err := s.agentSession(r, c.room, req.SessionCredentials, false)
	if err != nil {
		return err
	}
	if sess == nil {
		return &letagents.Error{Kind: letagents.Forbidden, Code: letagents.CodeAgentSessionRequired,
			Message: "An agent session's credentials are required: unread messages are its own."}
	}
	u, err := s.Store.TakeUnread(r.Context(), sess.ID, c.room, store.UnreadQuery{Filter: filter, Limit: limit, OnlyIfAsked: req.OnlyIfAsked, Deadline: deadline}, s.now())
	if err != nil {
		return err
	}
	j := wire.Unread{RoomID: c.room, AgentSessionID: letagents.WireID(letagents.AgentSessionPrefix, sess.ID), HasMore: u.HasMore,
		Asked: u.Asked, Cursor: letagents.MessageID(u.Cursor), Messages: make([]wire.UnreadMessage, len(u.Messages))}
	for i, m := range u.Messages {
		j.Messages[i] = wire.UnreadMessage{Message: toMessage(m.Message), Addressed: optText(string(m.Addressed)), Asked: m.Asked}
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// messageDeliveries lists the agents a message was surfaced to, when and
// how, and the live workers that have not surfaced it two minutes on.
func (s *server) messageDeliveries(w http.ResponseWriter, r *http.Request, c call) error {
	seq, err := letagents.ParseMessageID(c.ps["message_id"])
	if err != nil || seq == 0 {
		return letagents.Errorf(letagents.NotFound, "Message not found")
	}
	receipts, err := s.Store.Receipts(r.Context(), c.room, []int64{seq}, s.now())
	if err != nil {
		return err
	}
	rc, ok := receipts[seq]
	if !ok {
		return letagents.Errorf(letagents.NotFound, "Message not found")
	}
	j := wire.Deliveries{RoomID: c.room, MessageID: letagents.MessageID(seq), SentAt: letagents.FormatTime(rc.SentAt),
		Deliveries: make([]wire.Delivery, len(rc.SeenBy)), UnreadBy: make([]wire.MessageAgent, len(rc.UnreadBy))}
	for i, d := range rc.SeenBy {
		j.Deliveries[i] = wire.Delivery{SeenBy: toSeenBy(d), LatencyMS: d.Latency.Milliseconds()}
	}
	for i, a := range rc.UnreadBy {
		j.UnreadBy[i] = toMessageAgent(a)
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}
