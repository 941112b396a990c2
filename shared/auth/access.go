package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/store"
)

// How long what GitHub said stays true for us. Good news lasts longer than
// bad: a new collaborator should not wait half an hour to get in.
const (
	publicTTL    = time.Hour
	notPublicTTL = 5 * time.Minute
	allowedTTL   = 30 * time.Minute
	deniedTTL    = 5 * time.Minute
)

// Access is the gate's verdict for one caller and one room.
type Access struct {
	// Repo is "owner/name" of the GitHub repository the room belongs to,
	// or "" for rooms that belong to none.
	Repo string
	// RepoAdmin: GitHub says the caller administers that repository.
	RepoAdmin bool
	// adminChecked: RepoAdmin is GitHub's answer of the access cache
	// period, not merely unasked (the gate lets anyone into a public
	// repository's room without asking).
	adminChecked bool
}

// Gate decides whether who may use a room. Invite and named rooms are open
// to whoever knows the id. Repo rooms (host/owner/repo, and branch rooms
// through their repository) on github.com follow GitHub: a public
// repository is open to anyone, a private one only to accounts GitHub lets
// see it. Refusals are 401 auth_required (nobody signed in; the answer
// says where to start signing in, under base) or 403 private_repo_no_access.
// join asks for the caller's GitHub admin bit too, which may cost a call.
func (s *Service) Gate(ctx context.Context, who Identity, roomID, base string, join bool) (Access, error) {
	repo, locator := s.githubRepo(roomID)
	if repo == "" {
		return Access{}, nil
	}
	a := Access{Repo: repo}
	public := s.visibility(ctx, repo)
	if public && !(join && who.SignedIn()) {
		return a, nil
	}
	if !who.SignedIn() {
		return a, authRequired(roomID, base)
	}
	acc, ok, err := s.repoAccess(ctx, who.Account.ID, repo)
	switch {
	case err != nil && public:
		// Only the admin bit was at stake: join as a participant.
		s.cfg.Logger.Warn("could not read GitHub admin permission", "repo", repo, "error", err)
		return a, nil
	case err != nil:
		return a, err
	case !ok && !public:
		return a, &letagents.Error{Kind: letagents.Forbidden, Message: "private_repo_no_access", Code: letagents.CodePrivateRepoNoAccess,
			Fields: map[string]any{"room_id": roomID,
				"message": fmt.Sprintf("The GitHub account %s cannot see %s: ask an owner of the repository for access, or sign in with another account.", who.Account.Login, locator)}}
	}
	a.RepoAdmin, a.adminChecked = acc.Admin, true
	return a, nil
}

// GateAsks reports whether Gate needs to know who is asking for the
// room: only rooms whose access GitHub decides.
func (s *Service) GateAsks(roomID string) bool {
	repo, _ := s.githubRepo(roomID)
	return repo != ""
}

// githubRepo is "owner/name" of the GitHub repository whose access
// decides who may use a room, and the room's repo locator; "" for rooms
// open to whoever knows the id (and for every room when access is open).
func (s *Service) githubRepo(roomID string) (repo, locator string) {
	switch rooms.KindOf(roomID) {
	case letagents.RoomRepo:
		locator = roomID
	case letagents.RoomBranch:
		locator, _, _ = rooms.ParseBranchRoom(roomID)
	}
	host, repo, _ := strings.Cut(locator, "/")
	if !s.cfg.RepoAccess || host != "github.com" {
		return "", ""
	}
	return repo, locator
}

// MaxListedRepos bounds the GitHub repositories one listing of an
// account's rooms checks (Readable): each costs two cached reads, and a
// call to GitHub once the cache aged. The rooms of repositories past it
// are left out of that listing, as unchecked.
const MaxListedRepos = 200

// Readable sorts the rooms of a listing (GET /projects, GET /search) by
// whether who may read them now, through the access gate exactly as a
// read of each would pass it, asking once per GitHub repository (a repo
// room and its branch rooms share the answer): readable keeps list's
// order; unchecked are the rooms whose access GitHub could not confirm
// just then, or that lie past MaxListedRepos. Rooms refused are in
// neither: access that ended takes the room off the list.
func (s *Service) Readable(ctx context.Context, who Identity, list []letagents.Room) (readable, unchecked []letagents.Room, err error) {
	return s.readable(ctx, who, list, MaxListedRepos)
}

func (s *Service) readable(ctx context.Context, who Identity, list []letagents.Room, maxRepos int) (readable, unchecked []letagents.Room, err error) {
	type verdict uint8
	const (
		allowed verdict = iota + 1
		refused
		unknown
	)
	verdicts := map[string]verdict{}
	for _, room := range list {
		repo, _ := s.githubRepo(room.ID)
		v := allowed
		if repo != "" {
			var seen bool
			if v, seen = verdicts[repo]; !seen {
				v = unknown
				if len(verdicts) < maxRepos {
					_, err := s.Gate(ctx, who, room.ID, "", false)
					switch {
					case err == nil:
						v = allowed
					case letagents.IsKind(err, letagents.Unauthorized), letagents.IsKind(err, letagents.Forbidden):
						v = refused
					case letagents.IsKind(err, letagents.Unavailable):
					default:
						return nil, nil, err
					}
				}
				verdicts[repo] = v
			}
		}
		switch v {
		case allowed:
			readable = append(readable, room)
		case unknown:
			unchecked = append(unchecked, room)
		}
	}
	return readable, unchecked, nil
}

// authRequired is the refusal of a repo room to nobody in particular.
func authRequired(roomID, base string) error {
	return &letagents.Error{Kind: letagents.Unauthorized, Message: "auth_required", Code: letagents.CodeNotAuthenticated,
		Fields: map[string]any{
			"room_id":         roomID,
			"message":         "This room belongs to a GitHub repository that is private or could not be checked: sign in with GitHub (start a device sign-in at device_flow_url) to prove you can see it.",
			"device_flow_url": base + "/auth/device/start?room_id=" + url.QueryEscape(roomID),
		}}
}

// visibility says whether GitHub shows repo to everyone. When GitHub does
// not answer the repository is treated as private, so an outage never
// opens a private room (and signed-in callers are then checked with their
// own token).
func (s *Service) visibility(ctx context.Context, repo string) bool {
	now := s.cfg.Now()
	public, at, found, err := s.store.RepoVisibility(ctx, repo)
	if err == nil && found && now.Sub(at) < ttl(public, publicTTL, notPublicTTL) {
		return public
	}
	owner, name, _ := strings.Cut(repo, "/")
	r, err := s.cfg.GitHub.Repo(ctx, owner, name, "")
	switch {
	case err == nil:
		public = !r.Private
	case errors.Is(err, github.ErrNotFound):
		public = false // private, or no such repository: the same to us
	default:
		s.cfg.Logger.Warn("GitHub did not say whether a repository is public", "repo", repo, "error", err)
		return false
	}
	if err := s.store.SaveRepoVisibility(ctx, repo, public, now); err != nil {
		s.cfg.Logger.Warn("cache repo visibility", "repo", repo, "error", err)
	}
	return public
}

// repoAccess asks GitHub, with the account's own token, whether it can see
// repo. ok is false for no access; err is Unavailable when GitHub did not
// answer.
func (s *Service) repoAccess(ctx context.Context, accountID int64, repo string) (store.RepoAccess, bool, error) {
	now := s.cfg.Now()
	if a, at, found, err := s.store.CachedRepoAccess(ctx, accountID, repo); err != nil {
		return a, false, err
	} else if found && now.Sub(at) < ttl(a.Allowed, allowedTTL, deniedTTL) {
		return a, a.Allowed, nil
	}
	token, err := s.githubToken(ctx, accountID)
	var a store.RepoAccess
	switch {
	case letagents.IsKind(err, letagents.NotFound):
		return a, false, nil // no usable token: nothing GitHub would let us see
	case err != nil:
		return a, false, err
	}
	owner, name, _ := strings.Cut(repo, "/")
	r, err := s.cfg.GitHub.Repo(ctx, owner, name, token)
	switch {
	case err == nil:
		a.Allowed = true
		a.Admin = r.Permissions != nil && r.Permissions.Admin
	case errors.Is(err, github.ErrNotFound), errors.Is(err, github.ErrUnauthorized):
		// Not found with the user's own token: GitHub hides it from them.
		// Unauthorized: the token was revoked; nothing is visible with it.
	default:
		s.cfg.Logger.Warn("GitHub did not say whether an account may see a repository", "repo", repo, "error", err)
		return a, false, letagents.Errorf(letagents.Unavailable, "Could not check access to github.com/%s with GitHub; try again shortly", repo)
	}
	if err := s.store.SaveRepoAccess(ctx, accountID, repo, a, now); err != nil {
		s.cfg.Logger.Warn("cache repo access", "repo", repo, "error", err)
	}
	return a, a.Allowed, nil
}

// githubToken opens an account's GitHub token; NotFound when there is
// none or it expired.
func (s *Service) githubToken(ctx context.Context, accountID int64) (string, error) {
	if s.cfg.Sealer == nil {
		return "", letagents.Errorf(letagents.NotFound, "no token key configured")
	}
	t, err := s.store.GitHubToken(ctx, accountID)
	if err != nil {
		return "", err
	}
	if !t.ExpiresAt.IsZero() && !s.cfg.Now().Before(t.ExpiresAt) {
		return "", letagents.Errorf(letagents.NotFound, "GitHub token expired")
	}
	tok, err := s.cfg.Sealer.Open(ctx, t.Sealed, tokenAAD(t.GitHubUserID))
	if err != nil {
		return "", fmt.Errorf("open GitHub token of account %d: %w", accountID, err)
	}
	return string(tok), nil
}

// Role works out who's role in room once the gate let them in, recording
// what joining means: the first signed-in joiner of a named room becomes
// its admin, and GitHub's admins of a repository who join become admins
// of its rooms; the local owner administers every room. GitHub's admins
// stay admins only while GitHub says so: their
// admin bit is read at every look, as repository access is (cached for
// the same period, allowedTTL), and the rights end when it is gone. An
// admin granted in the room itself stays one.
func (s *Service) Role(ctx context.Context, who Identity, room letagents.Room, a Access, join bool) (letagents.Role, error) {
	if who.Via == ViaLocal {
		// The one person this server acts for owns every room on it.
		return letagents.RoleAdmin, nil
	}
	if !who.SignedIn() {
		if a.Repo != "" || room.Kind == letagents.RoomRepo || room.Kind == letagents.RoomBranch {
			return letagents.RoleAnonymous, nil
		}
		return letagents.RoleParticipant, nil
	}
	var admin bool
	var err error
	switch {
	case a.Repo != "":
		admin, err = s.githubRoomAdmin(ctx, who, room.ID, a, join)
	case join && room.Kind == letagents.RoomNamed:
		admin, err = s.store.ClaimFirstAdmin(ctx, room.ID, who.Account.ID)
	default:
		admin, err = s.store.IsRoomAdmin(ctx, room.ID, who.Account.ID)
	}
	if err != nil {
		return "", err
	}
	if admin {
		return letagents.RoleAdmin, nil
	}
	return letagents.RoleParticipant, nil
}

// githubRoomAdmin says whether a signed-in caller administers the room of
// GitHub repository a.Repo now, keeping the GitHub-derived admin row in
// step (store.SyncGitHubAdmin). When GitHub cannot be asked and the
// cached answer has aged, the caller keeps only what the room itself
// granted: rights GitHub gave are not assumed to last through an outage.
func (s *Service) githubRoomAdmin(ctx context.Context, who Identity, roomID string, a Access, join bool) (bool, error) {
	if !a.adminChecked {
		acc, ok, err := s.repoAccess(ctx, who.Account.ID, a.Repo)
		if err != nil {
			s.cfg.Logger.Warn("could not read GitHub admin permission", "repo", a.Repo, "error", err)
			return s.store.IsRoomGrantedAdmin(ctx, roomID, who.Account.ID)
		}
		a.RepoAdmin = ok && acc.Admin
	}
	return s.store.SyncGitHubAdmin(ctx, roomID, who.Account.ID, a.RepoAdmin, join)
}

func ttl(good bool, goodTTL, badTTL time.Duration) time.Duration {
	if good {
		return goodTTL
	}
	return badTTL
}
