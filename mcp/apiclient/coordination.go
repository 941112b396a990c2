package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/letagents/letagents-go/shared/wire"
)

// RegisterSession registers an agent session in a room (POST
// /rooms/{id}/agent-sessions); the answer holds its token, once.
func (c *Client) RegisterSession(ctx context.Context, roomID string, r wire.RegisterSession) (wire.AgentSession, error) {
	var out wire.AgentSession
	err := c.Room(ctx, http.MethodPost, roomID, "/agent-sessions", nil, r, &out)
	return out, err
}

// Room calls a route of a room that the coordination tools use (agent
// sessions, presence, the task board, board intents) and decodes the
// answer into out, which a tool usually passes on to the model as it came
// (a json.RawMessage). suffix is the route's path after the room, such as
// "/tasks/task_3".
func (c *Client) Room(ctx context.Context, method, roomID, suffix string, query url.Values, body, out any) error {
	rp, err := roomPath(roomID)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: method, base: c.api, path: "/rooms/" + rp + suffix, query: query, body: body}, out)
}
