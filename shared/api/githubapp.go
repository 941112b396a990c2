package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/letagents/letagents-go/shared/githubhook"
	"github.com/letagents/letagents-go/shared/leasecheck"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// appCallbackPath is the GitHub App's setup URL: GitHub sends the
// browser there once someone installed (or changed) the App.
const appCallbackPath = "/auth/github/app/callback"

// checkLease writes the letagents-lease check on the head commit of the
// pull request a delivery is about, when the App is configured and
// installed there, and says its conclusion ("" when it wrote none,
// "error" when GitHub refused it). A check GitHub did not take is
// logged, not the delivery's failure: the room heard of the PR, and the
// next push checks again.
func (s *server) checkLease(ctx context.Context, r *http.Request, d githubhook.Delivery) string {
	head := d.PullRequest
	if s.GitHubApp == nil || head == nil || d.InstallationID <= 0 || !leasecheck.Evaluated(d.Action) {
		return ""
	}
	pr := leasecheck.PullRequest{Repo: d.Repo, RoomID: d.RoomID, Number: head.Number, HeadRef: head.Ref, HeadSHA: head.SHA,
		DefaultBranch: d.DefaultBranch, DetailsURL: s.baseURL(r) + "/in/" + rooms.PathOf(d.RoomID)}
	var lease *leasecheck.Lease
	if head.Ref != "" {
		l, err := s.Store.BranchWorkLease(ctx, d.RoomID, head.Ref)
		switch {
		case err == nil:
			lease = &leasecheck.Lease{ID: l.ID, Task: letagents.TaskID(l.TaskSeq), Holder: l.Holder}
		case !letagents.IsKind(err, letagents.NotFound):
			s.Logger.Error("find the lease of a pull request's branch", "repo", d.Repo, "pr", head.Number, "error", err)
			return "error"
		}
	}
	plan, ok := leasecheck.Decide(s.LeaseMode, pr, lease)
	if !ok {
		return ""
	}
	if err := plan.Publish(ctx, s.GitHubApp, d.InstallationID, pr); err != nil {
		s.Logger.Warn("write the letagents-lease check", "repo", d.Repo, "pr", head.Number, "error", err)
		return "error"
	}
	return plan.Run.Conclusion
}

// githubIntegration is GET /rooms/{room}/integrations/github, as the
// original's: whether this service has a GitHub App (configured), where
// to install it, and whether an installation covers the room's
// repository (connected), with that installation. A room of no
// repository is refused (400), as there.
func (s *server) githubIntegration(w http.ResponseWriter, r *http.Request, c call) error {
	room, err := s.Store.Room(r.Context(), c.room)
	if err != nil {
		return err
	}
	if room.Kind != letagents.RoomRepo && room.Kind != letagents.RoomBranch {
		return letagents.Errorf(letagents.Invalid, "GitHub App integrations are only available for repo-backed rooms")
	}
	access := room.ID
	if room.ParentID != "" {
		access = room.ParentID
	}
	conn, err := s.Store.GitHubConnection(r.Context(), access)
	if err != nil {
		return err
	}
	out := wire.GitHubIntegration{RoomID: room.ID, AccessRoomID: access, Configured: s.GitHubApp != nil,
		EnforcementMode: string(s.LeaseMode), Connected: conn.Connected()}
	if s.GitHubApp == nil {
		out.EnforcementMode = string(leasecheck.Off)
	}
	if install, setup, ok := s.installURL(r, room.ID); ok {
		slug := s.GitHubApp.Slug()
		out.InstallURLAvailable, out.AppSlug, out.SetupURL, out.InstallURL = true, &slug, &setup, &install
	}
	if rp := conn.Repo; rp != nil {
		out.Repository = &wire.GitHubAppRepository{FullName: rp.FullName, RoomID: rp.RoomID, RemovedAt: optTimeOf(rp.RemovedAt),
			InstallationID: strconv.FormatInt(rp.InstallationID, 10), UpdatedAt: letagents.FormatTime(rp.UpdatedAt)}
		if rp.GitHubRepoID > 0 {
			id := strconv.FormatInt(rp.GitHubRepoID, 10)
			out.Repository.GitHubRepoID = &id
		}
	}
	if in := conn.Installation; in != nil {
		out.Installation = &wire.GitHubAppInstallation{InstallationID: strconv.FormatInt(in.ID, 10), TargetLogin: optText(in.Account),
			TargetType: optText(in.AccountType), RepositorySelection: optText(in.Selection), SuspendedAt: optTimeOf(in.SuspendedAt),
			UninstalledAt: optTimeOf(in.UninstalledAt), LastSyncedAt: letagents.FormatTime(in.UpdatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// installURL is where to install the App from a room, and the App's
// setup URL; ok is false without an App or its slug. GitHub hands the
// install link's state to the setup URL: it brings the installer back
// to the room.
func (s *server) installURL(r *http.Request, room string) (install, setup string, ok bool) {
	if s.GitHubApp == nil || s.GitHubApp.Slug() == "" {
		return "", "", false
	}
	install = "https://github.com/apps/" + url.PathEscape(s.GitHubApp.Slug()) + "/installations/new?" + url.Values{"state": {room}}.Encode()
	return install, s.baseURL(r) + appCallbackPath, true
}

// githubInstallURL is POST /rooms/{room}/integrations/github/install-url
// (room admins), the original's: {room_id, install_url, setup_url,
// state}; 503 without an App or its slug. The state is the room's id,
// not a secret: the setup URL only redirects by it.
func (s *server) githubInstallURL(w http.ResponseWriter, r *http.Request, c call) error {
	room, err := s.Store.Room(r.Context(), c.room)
	if err != nil {
		return err
	}
	if room.Kind != letagents.RoomRepo && room.Kind != letagents.RoomBranch {
		return letagents.Errorf(letagents.Invalid, "GitHub App integrations are only available for repo-backed rooms")
	}
	install, setup, ok := s.installURL(r, room.ID)
	if !ok {
		return letagents.Errorf(letagents.Unavailable, "GitHub App install flow is not configured")
	}
	writeJSON(w, http.StatusOK, wire.GitHubInstallURL{RoomID: room.ID, InstallURL: install, SetupURL: setup, State: room.ID})
	return nil
}

// optTimeOf is optTime of a time that may be null.
func optTimeOf(t *time.Time) *string {
	if t == nil {
		return nil
	}
	return optTime(*t)
}

// githubAppCallback is GET /auth/github/app/callback, the App's setup
// URL: GitHub sends the installer's browser here with setup_action
// (install, update, request) and the state the install link carried,
// the room it was opened from. As in the original, the browser goes on
// to that room's page (the landing page without one) with
// ?github_app_setup=<action>, and github_app_state=invalid when the
// state names no room. The installation itself is recorded from its
// webhook delivery, which GitHub signs; nothing here is taken on trust.
func (s *server) githubAppCallback(w http.ResponseWriter, r *http.Request, _ call) error {
	q := r.URL.Query()
	action := q.Get("setup_action")
	switch action {
	case "":
		action = "complete"
	case "install", "update", "request":
	default:
		return letagents.Errorf(letagents.Invalid, "setup_action must be install, update or request")
	}
	if id := q.Get("installation_id"); id != "" {
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
			return letagents.Errorf(letagents.Invalid, "installation_id must be a positive whole number")
		}
	}
	to, v := "/", url.Values{"github_app_setup": {action}}
	if state := q.Get("state"); state != "" {
		id, err := rooms.Normalize(state)
		if err == nil {
			_, err = s.Store.Room(r.Context(), id)
		}
		switch {
		case err == nil:
			to = "/in/" + rooms.PathOf(id)
		case errors.Is(err, rooms.ErrInvalid) || letagents.IsKind(err, letagents.NotFound):
			v.Set("github_app_state", "invalid")
		default:
			return err
		}
	}
	http.Redirect(w, r, to+"?"+v.Encode(), http.StatusFound)
	return nil
}
