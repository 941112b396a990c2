package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/letagents/letagents-go/shared/wire"
)

// ReasoningQuery selects a room's reasoning sessions. The zero
// ReasoningQuery lists the open sessions, a page the server sizes.
type ReasoningQuery struct {
	ActorLabel    string // only this actor's sessions
	TaskID        string // only this task's
	IncludeClosed bool   // closed sessions too
	Limit         int    // at most this many; 0 for the server's default
}

// ReasoningSessions lists a room's reasoning sessions, the most recently
// updated first (GET /rooms/{id}/reasoning-sessions).
func (c *Client) ReasoningSessions(ctx context.Context, roomID string, q ReasoningQuery) (wire.ReasoningSessions, error) {
	v := url.Values{}
	if q.ActorLabel != "" {
		v.Set("actor_label", q.ActorLabel)
	}
	if q.TaskID != "" {
		v.Set("task_id", q.TaskID)
	}
	if q.IncludeClosed {
		v.Set("open", "false")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.ReasoningSessions
	err := c.inRoom(ctx, http.MethodGet, roomID, "/reasoning-sessions", v, nil, &out)
	return out, err
}

// ReasoningSession reads a reasoning session with its first limit updates,
// oldest first (0: the server's default; GET
// /rooms/{id}/reasoning-sessions/{session_id}).
func (c *Client) ReasoningSession(ctx context.Context, roomID, sessionID string, limit int) (wire.ReasoningSessionDetail, error) {
	v := url.Values{}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out wire.ReasoningSessionDetail
	err := c.onReasoning(ctx, http.MethodGet, roomID, sessionID, "", v, nil, &out)
	return out, err
}

// CreateReasoningSession opens a reasoning session in a room with its
// first snapshot (POST /rooms/{id}/reasoning-sessions). With an owner
// token the request must carry a worker session's credentials (in r, or
// from As), and the session is that agent's.
func (c *Client) CreateReasoningSession(ctx context.Context, roomID string, r wire.CreateReasoningSession) (wire.ReasoningWritten, error) {
	var out wire.ReasoningWritten
	err := c.inRoom(ctx, http.MethodPost, roomID, "/reasoning-sessions", nil, r, &out)
	return out, err
}

// AddReasoningUpdate writes a snapshot to a reasoning session: the fields
// it has replace the session's (POST
// /rooms/{id}/reasoning-sessions/{session_id}/updates). Credentials as
// for CreateReasoningSession.
func (c *Client) AddReasoningUpdate(ctx context.Context, roomID, sessionID string, u wire.AddReasoningUpdate) (wire.ReasoningWritten, error) {
	var out wire.ReasoningWritten
	err := c.onReasoning(ctx, http.MethodPost, roomID, sessionID, "/updates", nil, u, &out)
	return out, err
}

// ChangeReasoningSession changes a reasoning session's task, anchor
// message or closing time, closing it with ClosedAt (PATCH
// /rooms/{id}/reasoning-sessions/{session_id}). Credentials as for
// CreateReasoningSession.
func (c *Client) ChangeReasoningSession(ctx context.Context, roomID, sessionID string, ch wire.ChangeReasoningSession) (wire.ReasoningSessionChanged, error) {
	var out wire.ReasoningSessionChanged
	err := c.onReasoning(ctx, http.MethodPatch, roomID, sessionID, "", nil, ch, &out)
	return out, err
}

// onReasoning does a request on a route of a reasoning session: path is
// the route after /rooms/{id}/reasoning-sessions/{session_id}.
func (c *Client) onReasoning(ctx context.Context, method, roomID, sessionID, path string, query url.Values, body, out any) error {
	if sessionID == "" {
		return errors.New("apiclient: empty reasoning session id")
	}
	return c.inRoom(ctx, method, roomID, "/reasoning-sessions/"+url.PathEscape(sessionID)+path, query, body, out)
}

// RoomEventsQuery filters a room's GitHub events; empty fields do not.
type RoomEventsQuery struct {
	EventType, ObjectID, Actor string
	Since, Until               string // RFC 3339 times
	After                      string // the last event id of the previous page
	Limit                      int
}

// RoomEvents reads the GitHub events of a room's repository (GET
// /rooms/{id}/events).
func (c *Client) RoomEvents(ctx context.Context, roomID string, q RoomEventsQuery) (wire.RoomEvents, error) {
	v := url.Values{}
	for k, s := range map[string]string{"event_type": q.EventType, "object_id": q.ObjectID, "actor": q.Actor, "since": q.Since,
		"until": q.Until, "after": q.After} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out wire.RoomEvents
	err := c.inRoom(ctx, http.MethodGet, roomID, "/events", v, nil, &out)
	return out, err
}
