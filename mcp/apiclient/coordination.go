package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/letagents/letagents-go/shared/wire"
)

// RegisterSession registers an agent session in a room (POST
// /rooms/{id}/agent-sessions); the answer holds its token, once.
func (c *Client) RegisterSession(ctx context.Context, roomID string, r wire.RegisterSession) (wire.AgentSession, error) {
	var out wire.AgentSession
	err := c.inRoom(ctx, http.MethodPost, roomID, "/agent-sessions", nil, r, &out)
	return out, err
}

// DisconnectSession ends the agent session whose credentials creds are
// (POST /rooms/{id}/agent-sessions/{session_id}/disconnect, the
// credentials in the body).
func (c *Client) DisconnectSession(ctx context.Context, roomID string, creds wire.SessionCredentials) (wire.Disconnected, error) {
	if creds.AgentSessionID == "" {
		return wire.Disconnected{}, errors.New("apiclient: empty agent session id")
	}
	var out wire.Disconnected
	err := c.inRoom(ctx, http.MethodPost, roomID, "/agent-sessions/"+url.PathEscape(creds.AgentSessionID)+"/disconnect", nil, creds, &out)
	return out, err
}

// ReportNativeActivity records that a worker's runtime is busy outside
// the room (POST /rooms/{id}/agent-sessions/{session_id}/native-activity,
// the worker's credentials in the body): the room does not call it
// offline while it reports.
func (c *Client) ReportNativeActivity(ctx context.Context, roomID string, a wire.NativeActivity) error {
	if a.AgentSessionID == "" {
		return errors.New("apiclient: empty agent session id")
	}
	return c.inRoom(ctx, http.MethodPost, roomID, "/agent-sessions/"+url.PathEscape(a.AgentSessionID)+"/native-activity", nil, a, nil)
}

// UpdatePresence sets an agent session's presence in a room (POST
// /rooms/{id}/presence) and answers its entry in the roster.
func (c *Client) UpdatePresence(ctx context.Context, roomID string, p wire.PresenceUpdate) (wire.Presence, error) {
	var out wire.Presence
	err := c.inRoom(ctx, http.MethodPost, roomID, "/presence", nil, p, &out)
	return out, err
}

// inRoom does a request on a route of a room: path is the route after
// /rooms/{id}, such as "/tasks/task_3".
func (c *Client) inRoom(ctx context.Context, method, roomID, path string, query url.Values, body, out any) error {
	rp, err := roomPath(roomID)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: method, base: c.api, path: "/rooms/" + rp + path, query: query, body: body}, out)
}
