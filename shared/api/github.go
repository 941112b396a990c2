package api

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/githubhook"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// GitHubEventPrefix begins a GitHub event's wire id (ghe_12).
const GitHubEventPrefix = "ghe_"

// Pages of GET /rooms/{room}/events, as the original's: 50 events
// without ?limit, 100 at most.
const (
	defaultGitHubEventPage = 50
	maxGitHubEventPage     = 100
)

// maxDeliveryIDBytes bounds X-GitHub-Delivery (GitHub's are 36-byte GUIDs).
const maxDeliveryIDBytes = 200

func toGitHubEvent(e letagents.GitHubEvent) wire.GitHubEvent {
	meta := e.Metadata
	if len(meta) == 0 {
		meta = []byte(`{}`)
	}
	var task *string
	if e.LinkedTask != "" {
		task = &e.LinkedTask
	}
	return wire.GitHubEvent{ID: letagents.WireID(GitHubEventPrefix, e.ID), RoomID: e.RoomID, EventType: e.EventType, Action: e.Action,
		ObjectID: optText(e.ObjectID), ObjectURL: optText(e.ObjectURL), Title: optText(e.Title), State: optText(e.State),
		ActorLogin: optText(e.Actor), Branch: optText(e.Branch), Metadata: meta, LinkedTaskID: task,
		CreatedAt: letagents.FormatTime(e.CreatedAt)}
}

// roomEvents is GET /rooms/{room}/events, the GitHub events of the room's
// repository (a branch room's are its repo room's), newest first, with the
// original's filters: ?event_type, ?object_id, ?actor, ?since and ?until
// (RFC 3339), and ?after, the id of the last event of the page before.
func (s *server) roomEvents(w http.ResponseWriter, r *http.Request, c call) error {
	room, err := s.Store.Room(r.Context(), c.room)
	if err != nil {
		return err
	}
	lane := room.ID
	if room.ParentID != "" {
		lane = room.ParentID
	}
	v := r.URL.Query()
	q := store.GitHubEventQuery{EventType: v.Get("event_type"), ObjectID: v.Get("object_id"), Actor: v.Get("actor"),
		Limit: queryLimit(v, defaultGitHubEventPage, maxGitHubEventPage)}
	if a := v.Get("after"); a != "" {
		n, ok := letagents.ParseWireID(GitHubEventPrefix, a)
		if !ok {
			return letagents.Errorf(letagents.Invalid, "after must be an event id like %s12", GitHubEventPrefix)
		}
		q.After = n
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if raw := v.Get(f.name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(raw))
			if err != nil {
				return letagents.Errorf(letagents.Invalid, "%s must be a time like 2026-01-02T15:04:05Z", f.name)
			}
			*f.t = t
		}
	}
	evs, more, err := s.Store.GitHubEvents(r.Context(), lane, q)
	if err != nil {
		return err
	}
	out := wire.RoomEvents{RoomID: room.ID, GitHubRoomID: lane, Events: make([]wire.GitHubEvent, 0, len(evs)), HasMore: more}
	for _, e := range evs {
		out.Events = append(out.Events, toGitHubEvent(e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// githubWebhook is POST /webhooks/github, where GitHub delivers the
// events of the repositories whose webhook (or App) points here. The body
// is checked against X-Hub-Signature-256 before anything reads it; each
// delivery (X-GitHub-Delivery) is taken once, and a repeat answers 202
// {"ok": true, "duplicate": true}, as the original does. A delivery for a
// room nobody opened, or of a kind this service does not follow, is
// recorded as ignored and answered 202 too: GitHub needs no retry of it.
func (s *server) githubWebhook(w http.ResponseWriter, r *http.Request, _ call) error {
	if len(s.GitHubWebhookSecret) == 0 {
		return letagents.Errorf(letagents.Unavailable, "GitHub webhook handling is not configured")
	}
	// A body said to be too large is refused before a byte of it is read;
	// one that only turns out so (chunked) when it passes the bound.
	var body []byte
	var err error = &http.MaxBytesError{Limit: letagents.MaxWebhookBytes}
	if r.ContentLength <= letagents.MaxWebhookBytes {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, letagents.MaxWebhookBytes))
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return letagents.Errorf(letagents.TooLarge, "webhook body is larger than %d bytes", letagents.MaxWebhookBytes)
	case err != nil:
		return letagents.Errorf(letagents.Invalid, "could not read the webhook body: %v", err)
	}
	id, name := r.Header.Get(githubhook.HeaderDelivery), r.Header.Get(githubhook.HeaderEvent)
	if id == "" || name == "" {
		return letagents.Errorf(letagents.Invalid, "Missing GitHub webhook headers")
	}
	if !githubhook.Verify(s.GitHubWebhookSecret, body, r.Header.Get(githubhook.HeaderSignature)) {
		return letagents.Errorf(letagents.Unauthorized, "Invalid GitHub webhook signature")
	}
	if len(id) > maxDeliveryIDBytes {
		return letagents.Errorf(letagents.Invalid, "%s is longer than %d bytes", githubhook.HeaderDelivery, maxDeliveryIDBytes)
	}
	d, err := githubhook.Parse(name, body)
	if err != nil {
		return letagents.Errorf(letagents.Invalid, "%v", err)
	}
	rec := store.GitHubDelivery{ID: id, EventName: name, Action: d.Action, RoomID: d.RoomID, ReceivedAt: s.now(),
		InstallationID: d.InstallationID, Repo: d.Repo, RepoID: d.RepoID, Installation: d.Installation}
	out, err := s.Store.TakeGitHubDelivery(r.Context(), rec, d.Event)
	if err != nil {
		if noteErr := s.Store.RecordFailedDelivery(r.Context(), rec, err.Error()); noteErr != nil {
			s.Logger.Error("record failed GitHub delivery", "delivery", id, "error", noteErr)
		}
		return err
	}
	if out.Duplicate {
		writeJSON(w, http.StatusAccepted, wire.WebhookAnswer{OK: true, Duplicate: true, Status: out.Status})
		return nil
	}
	ans := wire.WebhookAnswer{OK: true, Status: out.Status, Reason: out.Reason}
	if out.Event != nil {
		ans.EventID = letagents.WireID(GitHubEventPrefix, out.Event.ID)
		// Only a PR of an open room: where nobody opened the room, no
		// lease can hold a branch, and a failing check would only say so.
		ans.LeaseCheck = s.checkLease(r.Context(), r, d)
	}
	writeJSON(w, http.StatusAccepted, ans)
	return nil
}
