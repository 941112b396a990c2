package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// codeAndName splits a room id into the code (invite rooms) or the name
// (every other room) that the wire carries, the other being null.
func codeAndName(room letagents.Room) (code, name *string) {
	id := room.ID
	if room.Kind == letagents.RoomInvite {
		return &id, nil
	}
	return nil, &id
}

func toProject(room letagents.Room) wire.Project {
	code, name := codeAndName(room)
	return wire.Project{ID: room.ID, Code: code, Name: name, DisplayName: room.DisplayName, CreatedAt: letagents.FormatTime(room.CreatedAt)}
}

func toJoin(room letagents.Room, role letagents.Role, authenticated bool) wire.Join {
	code, name := codeAndName(room)
	j := wire.Join{RoomID: room.ID, Name: name, Code: code, DisplayName: room.DisplayName,
		CreatedAt: letagents.FormatTime(room.CreatedAt), Role: string(role), Authenticated: authenticated}
	locator, branch := room.ID, ""
	if room.Kind == letagents.RoomBranch {
		locator, branch, _ = rooms.ParseBranchRoom(room.ID)
	}
	if room.Kind == letagents.RoomRepo || room.Kind == letagents.RoomBranch {
		host, owner, repo := splitLocator(locator)
		ref := wire.Ref{Type: "default_branch"}
		if branch != "" {
			ref = wire.Ref{Type: "branch", Name: &branch}
		}
		j.GitRoom = &wire.GitRoom{Provider: provider(host), Host: host,
			Repository: wire.Repository{Owner: owner, Name: repo}, Ref: ref}
	}
	return j
}

func splitLocator(locator string) (host, owner, repo string) {
	parts := strings.SplitN(locator, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

func provider(host string) string {
	switch host {
	case "github.com":
		return "github"
	case "gitlab.com":
		return "gitlab"
	case "bitbucket.org":
		return "bitbucket"
	}
	return "unknown"
}

// roomParam normalises the room id captured from the path.
func roomParam(ps params) (string, error) {
	id, err := rooms.Normalize(ps["room"])
	if err != nil {
		return "", letagents.Errorf(letagents.Invalid, "%v", err)
	}
	return id, nil
}

// enter normalises the room id of the path and lets the caller in, or
// refuses (401 auth_required, 403 private_repo_no_access). join asks for
// everything a join needs to know (the caller's GitHub admin bit).
func (s *server) enter(r *http.Request, ps params, join bool) (string, auth.Access, error) {
	id, err := roomParam(ps)
	if err != nil {
		return "", auth.Access{}, err
	}
	a, err := s.Auth.Gate(r.Context(), identity(r), id, s.baseURL(r), join)
	return id, a, err
}

// enterWith is enter for routes with a JSON body, which it decodes into v.
func (s *server) enterWith(w http.ResponseWriter, r *http.Request, ps params, v any) (string, auth.Access, error) {
	id, a, err := s.enter(r, ps, false)
	if err == nil {
		err = decode(w, r, v)
	}
	return id, a, err
}

// joined opens (creating when allowed) the room a join asks for, after
// counting the attempt against the client's join rate, and works out the
// caller's role in it.
func (s *server) joined(r *http.Request, ps params) (letagents.Room, letagents.Role, bool, error) {
	if err := s.Auth.LimitJoin(r.Context(), clientAddress(r)); err != nil {
		return letagents.Room{}, "", false, err
	}
	id, a, err := s.enter(r, ps, true)
	if err != nil {
		return letagents.Room{}, "", false, err
	}
	room, created, err := s.Store.EnsureRoom(r.Context(), id)
	if err != nil {
		return room, "", false, err
	}
	role, err := s.Auth.Role(r.Context(), identity(r), room, a, true)
	return room, role, created, err
}

func (s *server) createInviteRoom(w http.ResponseWriter, r *http.Request, _ params) {
	if err := s.Auth.LimitInviteRoom(r.Context(), clientAddress(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	room, err := s.Store.CreateInviteRoom(r.Context(), identity(r).Account.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toProject(room))
}

func (s *server) joinByCode(w http.ResponseWriter, r *http.Request, ps params) {
	if err := s.Auth.LimitJoin(r.Context(), clientAddress(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := rooms.Normalize(ps["code"])
	if err != nil || rooms.KindOf(id) != rooms.KindInvite {
		s.fail(w, r, letagents.Errorf(letagents.Invalid, "%q is not an invite code like FEH7-YWH4-ZYT3", ps["code"]))
		return
	}
	room, err := s.Store.Room(r.Context(), id)
	if err != nil {
		s.fail(w, r, notFoundAs(err, "Project not found for the given code"))
		return
	}
	writeJSON(w, http.StatusOK, toProject(room))
}

func (s *server) openNamedRoom(w http.ResponseWriter, r *http.Request, ps params) {
	room, _, created, err := s.joined(r, ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toProject(room))
}

func (s *server) joinRoom(w http.ResponseWriter, r *http.Request, ps params) {
	room, role, _, err := s.joined(r, ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJoin(room, role, identity(r).SignedIn()))
}

// roomAccess tells the caller what they are in a room (legacy route).
func (s *server) roomAccess(w http.ResponseWriter, r *http.Request, ps params) {
	room, role, err := s.existingRoom(r, ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	who := identity(r)
	j := wire.Access{ProjectID: room.ID, RoomType: "discoverable", Authenticated: who.SignedIn(), Role: string(role)}
	if room.Kind == letagents.RoomInvite {
		j.RoomType = "invite"
	}
	if who.SignedIn() {
		j.Account = &wire.AccessAccount{ID: letagents.WireID(letagents.AccountPrefix, who.Account.ID), Login: who.Account.Login, Provider: who.Account.Provider}
	}
	writeJSON(w, http.StatusOK, j)
}

// rotateCode gives an invite room a new code; admins only.
func (s *server) rotateCode(w http.ResponseWriter, r *http.Request, ps params) {
	room, role, err := s.existingRoom(r, ps)
	if err == nil {
		err = requireAdmin(identity(r), role)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	room, err = s.Store.RotateInviteCode(r.Context(), room.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toProject(room))
}

// existingRoom lets the caller into a room that must exist and says their role.
func (s *server) existingRoom(r *http.Request, ps params) (letagents.Room, letagents.Role, error) {
	id, a, err := s.enter(r, ps, false)
	if err != nil {
		return letagents.Room{}, "", err
	}
	room, err := s.Store.Room(r.Context(), id)
	if err != nil {
		return room, "", err
	}
	role, err := s.Auth.Role(r.Context(), identity(r), room, a, false)
	return room, role, err
}

// requireAdmin refuses callers who are not admins of the room.
func requireAdmin(who auth.Identity, role letagents.Role) error {
	if err := requireAccount(who); err != nil {
		return err
	}
	if role != letagents.RoleAdmin {
		return letagents.Errorf(letagents.Forbidden, "Admin privileges required")
	}
	return nil
}

// notFoundAs rewords a not-found error for routes whose clients expect
// their own message.
func notFoundAs(err error, msg string) error {
	var e *letagents.Error
	if errors.As(err, &e) && e.Code == letagents.NotFound {
		return letagents.Errorf(letagents.NotFound, "%s", msg)
	}
	return err
}
