package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// DeviceResult is a device sign-in's progress.
type DeviceResult struct {
	// Status is one of letagents' Device statuses: pending or slow_down
	// (poll again after Interval seconds; ExpiresIn says how long the flow
	// has left), authorized (Authorized holds the token), or denied or
	// expired (start over).
	Status    string
	Interval  int
	ExpiresIn int
	// Authorized is set when Status is authorized.
	Authorized *wire.DeviceAuthorized
}

// StartDevice begins a GitHub device sign-in (POST /auth/device/start).
// roomID, optional, is the room the sign-in is for.
func (c *Client) StartDevice(ctx context.Context, roomID string) (wire.DeviceStart, error) {
	var d wire.DeviceStart
	err := c.do(ctx, request{method: http.MethodPost, base: c.api, path: "/auth/device/start",
		body: wire.DeviceStartRequest{RoomID: roomID}}, &d)
	return d, err
}

// PollDevice asks how a device sign-in is going (GET
// /auth/device/poll/{id}). Denied (403) and expired (410) are outcomes
// with a nil error, not failures. Polling sooner than the interval is an
// *APIError 429 whose Body.Interval is the interval to keep; an unknown or
// finished flow is an *APIError 404.
func (c *Client) PollDevice(ctx context.Context, requestID string) (DeviceResult, error) {
	if requestID == "" {
		return DeviceResult{}, errors.New("apiclient: empty device request id")
	}
	var raw json.RawMessage
	err := c.do(ctx, request{method: http.MethodGet, base: c.api, path: "/auth/device/poll/" + url.PathEscape(requestID)}, &raw)
	var e *APIError
	if errors.As(err, &e) {
		var p wire.DevicePoll
		_ = json.Unmarshal([]byte(e.Raw), &p)
		switch {
		case e.Status == http.StatusForbidden && p.Status == letagents.DeviceDenied:
			return DeviceResult{Status: letagents.DeviceDenied}, nil
		case e.Status == http.StatusGone:
			// Only an expired flow is gone, whatever the body says.
			return DeviceResult{Status: letagents.DeviceExpired}, nil
		}
	}
	if err != nil {
		return DeviceResult{}, err
	}
	var p wire.DevicePoll
	if err := json.Unmarshal(raw, &p); err != nil {
		return DeviceResult{}, fmt.Errorf("GET /auth/device/poll: decode answer: %w", err)
	}
	if p.Status == letagents.DeviceAuthorized {
		var a wire.DeviceAuthorized
		if err := json.Unmarshal(raw, &a); err != nil {
			return DeviceResult{}, fmt.Errorf("GET /auth/device/poll: decode answer: %w", err)
		}
		return DeviceResult{Status: p.Status, Authorized: &a}, nil
	}
	r := DeviceResult{Status: p.Status, Interval: p.Interval}
	if p.ExpiresIn != nil {
		r.ExpiresIn = *p.ExpiresIn
	}
	return r, nil
}

// Session says who the token signs in as (GET /auth/session); without a
// token, nobody: Authenticated false.
func (c *Client) Session(ctx context.Context) (wire.Session, error) {
	var s wire.Session
	err := c.do(ctx, request{method: http.MethodGet, base: c.api, path: "/auth/session"}, &s)
	return s, err
}

// RegisterAgent adds an agent to the signed-in account's directory, or
// updates the labels of the one of that name (POST /agents).
func (c *Client) RegisterAgent(ctx context.Context, a wire.RegisterAgent) (wire.Agent, error) {
	var out wire.Agent
	err := c.do(ctx, request{method: http.MethodPost, base: c.api, path: "/agents", body: a}, &out)
	return out, err
}

// MyAgents lists the signed-in account's agents (GET /agents/me).
func (c *Client) MyAgents(ctx context.Context) (wire.MyAgents, error) {
	var out wire.MyAgents
	err := c.do(ctx, request{method: http.MethodGet, base: c.api, path: "/agents/me"}, &out)
	return out, err
}

// Health checks that the API answers (GET /api/health).
func (c *Client) Health(ctx context.Context) (wire.Health, error) {
	var h wire.Health
	err := c.do(ctx, request{method: http.MethodGet, base: c.api, path: "/api/health"}, &h)
	return h, err
}
