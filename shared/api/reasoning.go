package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// Reasoning sessions, as 0.12.9 serves them. Their bodies are read as the
// original reads them (letagents.ReasoningFields): leniently, field by
// field, so that what it accepts is accepted here.

func toReasoningSession(s letagents.ReasoningSession) wire.ReasoningSession {
	return wire.ReasoningSession{ID: s.ID, RoomID: s.RoomID, TaskID: optText(s.TaskID), AnchorMessageID: optText(s.AnchorMessageID),
		ActorLabel: s.ActorLabel, AgentKey: optText(s.AgentKey), Status: optText(s.Status), Summary: s.Summary,
		LatestPayload: snapshotJSON(s.LatestPayload), CreatedAt: letagents.FormatTime(s.CreatedAt),
		UpdatedAt: letagents.FormatTime(s.UpdatedAt), ClosedAt: optTime(s.ClosedAt)}
}

func toReasoningUpdate(u letagents.ReasoningUpdate) wire.ReasoningUpdate {
	return wire.ReasoningUpdate{ID: u.ID, RoomID: u.RoomID, SessionID: u.SessionID, ActorLabel: u.ActorLabel, Status: optText(u.Status),
		Summary: u.Summary, Milestone: optText(u.Milestone), Payload: snapshotJSON(u.Payload), CreatedAt: letagents.FormatTime(u.CreatedAt)}
}

// snapshotJSON is a snapshot's JSON. A snapshot holds strings and a
// confidence checked to lie in 0..1 (never NaN), which always encode.
func snapshotJSON(s letagents.ReasoningSnapshot) json.RawMessage {
	b, _ := s.MarshalJSON()
	return b
}

// reasoningEvent is the event stream's event for a reasoning change: its
// name and data, as 0.12.9 sends them (reasoning_update with the session
// and the appended update or null; reasoning_remove when a change closed
// the session).
func reasoningEvent(roomID string, c letagents.ReasoningChange) (name string, data any) {
	if c.Removed() {
		return wire.EventReasoningRemove, wire.ReasoningRemoved{RoomID: roomID, SessionID: c.Session.ID}
	}
	e := wire.ReasoningEvent{RoomID: roomID, Session: toReasoningSession(c.Session)}
	if c.Update != nil {
		u := toReasoningUpdate(*c.Update)
		e.Update = &u
	}
	return wire.EventReasoningUpdate, e
}

// reasoningWrite decodes a reasoning write's body (none reads as {}) and
// finds the worker session that signs it. As in 0.12.9, an owner token
// must come with a worker session's credentials, whose actor then writes,
// and so must the local owner's writes that bring any; other callers (a
// browser, nobody) write as the body says and their
// credentials, if any, are not read.
func (s *server) reasoningWrite(w http.ResponseWriter, r *http.Request, c call) (letagents.ReasoningFields, *letagents.AgentSession, error) {
	f := letagents.ReasoningFields{}
	if r.ContentLength != 0 {
		if err := decode(w, r, &f); err != nil {
			return nil, nil, err
		}
	}
	creds := wire.SessionCredentials{AgentSessionID: f.Text("agent_session_id"), AgentSessionToken: f.Text("agent_session_token")}
	// The local owner is the person at the page as much as their agents:
	// only its writes that bring a session are an agent's.
	who := identity(r)
	if !who.AgentToken() && (who.Via != auth.ViaLocal || creds == (wire.SessionCredentials{})) {
		return f, nil, nil
	}
	sess, err := s.requireWorker(r, c.room, creds)
	if err != nil {
		return nil, nil, err
	}
	return f, &sess, nil
}

// listReasoning is GET …/reasoning and …/reasoning-sessions: the room's
// sessions, most recently updated first; open ones unless ?open=false.
func (s *server) listReasoning(w http.ResponseWriter, r *http.Request, c call) error {
	v := r.URL.Query()
	q := store.ReasoningQuery{Limit: queryLimit(v, letagents.DefaultReasoningSessionPage, letagents.MaxReasoningSessionPage),
		OpenOnly: v.Get("open") != "false", ActorLabel: strings.TrimSpace(v.Get("actor_label")), TaskID: strings.TrimSpace(v.Get("task_id"))}
	list, err := s.Store.ReasoningSessions(r.Context(), c.room, q)
	if err != nil {
		return err
	}
	out := make([]wire.ReasoningSession, len(list))
	for i, rs := range list {
		out[i] = toReasoningSession(rs)
	}
	items, cut, err := withinPage(out)
	if err != nil {
		return err
	}
	defer items.release()
	writeJSONList(w, http.StatusOK, wire.ReasoningSessions{RoomID: c.room, HasMore: cut}, "sessions", items)
	return nil
}

// getReasoning is GET …/reasoning-sessions/{session_id}: the session and
// its first ?limit updates.
func (s *server) getReasoning(w http.ResponseWriter, r *http.Request, c call) error {
	id := c.ps["session_id"]
	rs, err := s.Store.ReasoningSession(r.Context(), c.room, id)
	if err != nil {
		return err
	}
	limit := queryLimit(r.URL.Query(), letagents.DefaultReasoningUpdatePage, letagents.MaxReasoningUpdatePage)
	ups, err := s.Store.ReasoningUpdates(r.Context(), c.room, id, limit)
	if err != nil {
		return err
	}
	out := make([]wire.ReasoningUpdate, len(ups))
	for i, u := range ups {
		out[i] = toReasoningUpdate(u)
	}
	raw, cut, err := withinPage(out)
	if err != nil {
		return err
	}
	// Only how many fit is used: the session before the updates carries
	// its payload, which may hold "updates":null, and the splice would
	// take that for the list's place.
	raw.release()
	writeJSON(w, http.StatusOK, wire.ReasoningSessionDetail{RoomID: c.room, Session: toReasoningSession(rs), Updates: out[:raw.len()], HasMore: cut})
	return nil
}

// createReasoning is POST …/reasoning-sessions: a new session with its
// first snapshot.
func (s *server) createReasoning(w http.ResponseWriter, r *http.Request, c call) error {
	f, sess, err := s.reasoningWrite(w, r, c)
	if err != nil {
		return err
	}
	n := store.NewReasoningSession{RoomID: c.room, OwnerAccountID: identity(r).Account.ID}
	if sess != nil {
		n.ActorLabel, n.AgentKey = sess.ActorLabel, sess.AgentKey
	} else {
		if n.ActorLabel, err = s.reasoningActor(r, c, f.Text("actor_label")); err != nil {
			return err
		}
		key, err := f.Field("agent_key", letagents.MaxReasoningRefBytes)
		if err != nil {
			return err
		}
		n.AgentKey = key.Or("")
	}
	task, err := f.Field("task_id", letagents.MaxReasoningRefBytes)
	if err != nil {
		return err
	}
	anchor, err := f.Field("anchor_message_id", letagents.MaxReasoningRefBytes)
	if err != nil {
		return err
	}
	n.TaskID, n.AnchorMessageID = task.Or(""), anchor.Or("")
	if n.Snapshot, err = f.Snapshot(); err != nil {
		return err
	}
	ch, err := s.Store.CreateReasoningSession(r.Context(), n, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, written(c.room, ch))
	return nil
}

// reasoningActor checks the actor_label a caller without a worker session
// writes under, as a message's sender is checked: no server name, and no
// label of another account's agent.
func (s *server) reasoningActor(r *http.Request, c call, label string) (string, error) {
	actor, err := letagents.ReasoningActor(label)
	if err != nil {
		return "", err
	}
	if _, err := s.nameSource(r, c.room, "actor_label", actor); err != nil {
		return "", err
	}
	return actor, nil
}

// addReasoningUpdate is POST …/reasoning-sessions/{session_id}/updates: a
// snapshot merged into the session.
func (s *server) addReasoningUpdate(w http.ResponseWriter, r *http.Request, c call) error {
	f, sess, err := s.reasoningWrite(w, r, c)
	if err != nil {
		return err
	}
	actor := "" // the session's own actor
	if sess != nil {
		actor = sess.ActorLabel
	} else if label := f.Text("actor_label"); label != "" {
		if actor, err = s.reasoningActor(r, c, label); err != nil {
			return err
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		return err
	}
	if err := s.ownReasoning(r, c, false); err != nil {
		return err
	}
	ch, err := s.Store.AddReasoningUpdate(r.Context(), c.room, c.ps["session_id"], actor, snap, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, written(c.room, ch))
	return nil
}

// ownReasoning refuses a write to the reasoning session of the path that
// another account opened (letagents.MayChange): its updates and changes
// are its owner's. closing: the write only closes the session, which a
// room admin may do to anyone's. A session's owner never changes, so the
// write that follows cannot race this check.
func (s *server) ownReasoning(r *http.Request, c call, closing bool) error {
	rs, err := s.Store.ReasoningSession(r.Context(), c.room, c.ps["session_id"])
	if err != nil {
		return err
	}
	who := identity(r)
	if letagents.MayChange(rs.OwnerAccountID, who.Account.ID) {
		return nil
	}
	if closing && who.SignedIn() {
		_, role, err := s.roleIn(r, c)
		if err != nil || role == letagents.RoleAdmin {
			return err
		}
	}
	return letagents.NotOwner("Another account opened this reasoning session: only its owner can write to it (a room admin can close it).")
}

func written(roomID string, ch letagents.ReasoningChange) wire.ReasoningWritten {
	return wire.ReasoningWritten{RoomID: roomID, Session: toReasoningSession(ch.Session), Update: toReasoningUpdate(*ch.Update)}
}

// changeReasoning is PATCH …/reasoning-sessions/{session_id}: its task,
// anchor or closing time.
func (s *server) changeReasoning(w http.ResponseWriter, r *http.Request, c call) error {
	f, _, err := s.reasoningWrite(w, r, c)
	if err != nil {
		return err
	}
	change, err := f.SessionChange()
	if err != nil {
		return err
	}
	// A null closed_at (Set, no Value) reopens: that is no closing.
	closing := change.ClosedAt.Value != nil && !change.ClosedAt.Value.IsZero() && !change.TaskID.Set && !change.AnchorMessageID.Set
	if err := s.ownReasoning(r, c, closing); err != nil {
		return err
	}
	ch, err := s.Store.ChangeReasoningSession(r.Context(), c.room, c.ps["session_id"], change, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.ReasoningSessionChanged{RoomID: c.room, Session: toReasoningSession(ch.Session)})
	return nil
}
