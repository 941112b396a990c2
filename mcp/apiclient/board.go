package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// TaskQuery selects a page of a room's board. The zero TaskQuery lists
// every task from the first, a page the server sizes.
type TaskQuery struct {
	// Status, when set, lists only the tasks in that status.
	Status string
	// Open lists only the tasks not done or cancelled.
	Open bool
	// After is a task id (task_N): list the tasks after it.
	After string
}

// Tasks reads a page of a room's board (GET /rooms/{id}/tasks).
func (c *Client) Tasks(ctx context.Context, roomID string, q TaskQuery) (wire.TaskList, error) {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if q.Open {
		v.Set("open", "true")
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	var out wire.TaskList
	err := c.inRoom(ctx, http.MethodGet, roomID, "/tasks", v, nil, &out)
	return out, err
}

// CreateTask adds a task to a room's board (POST /rooms/{id}/tasks).
func (c *Client) CreateTask(ctx context.Context, roomID string, t wire.CreateTask) (wire.Task, error) {
	var out wire.Task
	err := c.inRoom(ctx, http.MethodPost, roomID, "/tasks", nil, t, &out)
	return out, err
}

// UpdateTask changes a task (PATCH /rooms/{id}/tasks/{task_id}); status
// assigned claims it for the calling session.
func (c *Client) UpdateTask(ctx context.Context, roomID, taskID string, u wire.UpdateTask) (wire.Task, error) {
	var out wire.Task
	err := c.onTask(ctx, http.MethodPatch, roomID, taskID, "", u, &out)
	return out, err
}

// LeaseAction releases a task's work lease or hands it off to another
// agent's session, as a.Action says (POST
// /rooms/{id}/tasks/{task_id}/lease-action).
func (c *Client) LeaseAction(ctx context.Context, roomID, taskID string, a wire.LeaseAction) (wire.LeaseActionResult, error) {
	var out wire.LeaseActionResult
	err := c.onTask(ctx, http.MethodPost, roomID, taskID, "/lease-action", a, &out)
	return out, err
}

// ClaimReview takes the review lease of a task (POST
// /rooms/{id}/tasks/{task_id}/review-lease-action, action claim).
func (c *Client) ClaimReview(ctx context.Context, roomID, taskID string, r wire.ReviewLeaseAction) (wire.ReviewClaimed, error) {
	r.Action = letagents.LeaseActionClaim
	var out wire.ReviewClaimed
	err := c.onTask(ctx, http.MethodPost, roomID, taskID, "/review-lease-action", r, &out)
	return out, err
}

// ReleaseReview gives up a review lease of a task (POST
// /rooms/{id}/tasks/{task_id}/review-lease-action, action release).
func (c *Client) ReleaseReview(ctx context.Context, roomID, taskID string, r wire.ReviewLeaseAction) (wire.ReviewReleased, error) {
	r.Action = letagents.LeaseActionRelease
	var out wire.ReviewReleased
	err := c.onTask(ctx, http.MethodPost, roomID, taskID, "/review-lease-action", r, &out)
	return out, err
}

// onTask does a request on a route of a task: path is the route after
// /rooms/{id}/tasks/{task_id}.
func (c *Client) onTask(ctx context.Context, method, roomID, taskID, path string, body, out any) error {
	if taskID == "" {
		return errors.New("apiclient: empty task id")
	}
	return c.inRoom(ctx, method, roomID, "/tasks/"+url.PathEscape(taskID)+path, nil, body, out)
}
