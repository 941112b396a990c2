package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/letagents/letagents-go/shared/wire"
)

// RegisterIntent asks leave for one exact board action (POST
// /rooms/{id}/board-intents). An agent that registers the same action
// and payload again while its intent is pending gets that intent back.
func (c *Client) RegisterIntent(ctx context.Context, roomID string, r wire.RegisterIntent) (wire.BoardIntent, error) {
	var out wire.BoardIntent
	err := c.inRoom(ctx, http.MethodPost, roomID, "/board-intents", nil, r, &out)
	return out, err
}

// BoardIntents lists a room's board intents, newest first, only those in
// status when it is not empty (GET /rooms/{id}/board-intents).
func (c *Client) BoardIntents(ctx context.Context, roomID, status string) (wire.BoardIntents, error) {
	v := url.Values{}
	if status != "" {
		v.Set("status", status)
	}
	var out wire.BoardIntents
	err := c.inRoom(ctx, http.MethodGet, roomID, "/board-intents", v, nil, &out)
	return out, err
}

// intentDecision is the body of an approval or a denial.
type intentDecision struct {
	Reason string `json:"reason,omitempty"`
}

// ApproveIntent approves a pending board intent (POST
// /rooms/{id}/board-intents/{intent_id}/approve, room admins); the answer
// holds the approval token, once.
func (c *Client) ApproveIntent(ctx context.Context, roomID, intentID, reason string) (wire.BoardIntent, error) {
	return c.decideIntent(ctx, roomID, intentID, "/approve", reason)
}

// DenyIntent denies a pending board intent (POST
// /rooms/{id}/board-intents/{intent_id}/deny, room admins).
func (c *Client) DenyIntent(ctx context.Context, roomID, intentID, reason string) (wire.BoardIntent, error) {
	return c.decideIntent(ctx, roomID, intentID, "/deny", reason)
}

func (c *Client) decideIntent(ctx context.Context, roomID, intentID, verb, reason string) (wire.BoardIntent, error) {
	if intentID == "" {
		return wire.BoardIntent{}, errors.New("apiclient: empty board intent id")
	}
	var out wire.BoardIntent
	err := c.inRoom(ctx, http.MethodPost, roomID, "/board-intents/"+url.PathEscape(intentID)+verb, nil, intentDecision{Reason: reason}, &out)
	return out, err
}

// BoardSettings reads a room's board settings (GET
// /rooms/{id}/board-settings).
func (c *Client) BoardSettings(ctx context.Context, roomID string) (wire.BoardSettings, error) {
	var out wire.BoardSettings
	err := c.inRoom(ctx, http.MethodGet, roomID, "/board-settings", nil, nil, &out)
	return out, err
}

// SetBoardSettings changes a room's board settings (PATCH
// /rooms/{id}/board-settings, room admins).
func (c *Client) SetBoardSettings(ctx context.Context, roomID string, u wire.BoardSettingsUpdate) (wire.BoardSettings, error) {
	var out wire.BoardSettings
	err := c.inRoom(ctx, http.MethodPatch, roomID, "/board-settings", nil, u, &out)
	return out, err
}
