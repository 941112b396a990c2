package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// CreateRoom makes a fresh invite room (POST /projects); its id is its
// invite code.
func (c *Client) CreateRoom(ctx context.Context) (wire.Project, error) {
	var p wire.Project
	err := c.do(ctx, request{method: http.MethodPost, base: c.api, path: "/projects"}, &p)
	return p, err
}

// Join opens a room, creating a named, repo or branch room on first use,
// and says the caller's role in it (POST /rooms/{id}/join). A server
// without that route is asked the legacy way: GET /projects/join/{code}
// for an invite code, POST /projects/room/{name} for any other id; the
// answer then says role "participant", as those servers know no roles.
func (c *Client) Join(ctx context.Context, roomID string) (wire.Join, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return wire.Join{}, err
	}
	var j wire.Join
	err = c.do(ctx, request{method: http.MethodPost, base: c.api, path: "/rooms/" + rp + "/join"}, &j)
	if !missingRoute(err) {
		return j, err
	}
	legacy := request{method: http.MethodPost, base: c.api, path: "/projects/room/" + rp}
	if isInvite(roomID) {
		legacy = request{method: http.MethodGet, base: c.api, path: "/projects/join/" + url.PathEscape(roomID)}
	}
	var p wire.Project
	if err := c.do(ctx, legacy, &p); err != nil {
		return wire.Join{}, err
	}
	return joinOf(roomID, p), nil
}

// RoomInfo says a room and the caller's role in it without joining it
// or creating it (GET /rooms/{id}/info): 404 for a room that does not
// exist yet.
func (c *Client) RoomInfo(ctx context.Context, roomID string) (wire.Join, error) {
	var j wire.Join
	err := c.inRoom(ctx, http.MethodGet, roomID, "/info", nil, nil, &j)
	return j, err
}

// isInvite reports whether the server takes roomID for an invite code,
// which it does after normalising (a lower-case code is one too).
func isInvite(roomID string) bool {
	if id, err := rooms.Normalize(roomID); err == nil {
		roomID = id
	}
	return rooms.KindOf(roomID) == letagents.RoomInvite
}

// joinOf is a legacy room answer as a join. The server's id is preferred
// to the one asked for: it is the canonical spelling.
func joinOf(roomID string, p wire.Project) wire.Join {
	j := wire.Join{RoomID: p.ID, Name: p.Name, Code: p.Code, DisplayName: p.DisplayName,
		CreatedAt: p.CreatedAt, Role: "participant"}
	if j.RoomID == "" {
		j.RoomID = roomID
	}
	return j
}

// Artifacts lists the Git workflow objects a room works on (GET
// /rooms/{id}/artifacts), only those linked to taskID when it is not
// empty; limit 0 leaves the page size to the server.
func (c *Client) Artifacts(ctx context.Context, roomID, taskID string, limit int) (wire.Artifacts, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return wire.Artifacts{}, err
	}
	q := url.Values{}
	if taskID != "" {
		q.Set("task_id", taskID)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var a wire.Artifacts
	err = c.do(ctx, request{method: http.MethodGet, base: c.api, path: "/rooms/" + rp + "/artifacts", query: q}, &a)
	return a, err
}

// PublishArtifact records an artifact in a room, or updates the one of
// the same identity (POST /rooms/{id}/artifacts).
func (c *Client) PublishArtifact(ctx context.Context, roomID string, p wire.PublishArtifact) (wire.PublishedArtifact, error) {
	rp, err := roomPath(roomID)
	if err != nil {
		return wire.PublishedArtifact{}, err
	}
	var a wire.PublishedArtifact
	err = c.do(ctx, request{method: http.MethodPost, base: c.api, path: "/rooms/" + rp + "/artifacts", body: p}, &a)
	return a, err
}
