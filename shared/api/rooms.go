package api

import (
	"errors"
	"net/http"

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
		host, owner, repo := rooms.SplitRepoLocator(locator)
		ref := wire.Ref{Type: "default_branch"}
		if branch != "" {
			ref = wire.Ref{Type: "branch", Name: &branch}
		}
		j.GitRoom = &wire.GitRoom{Provider: provider(host), Host: host,
			Repository: wire.Repository{Owner: owner, Name: repo}, Ref: ref}
	}
	return j
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

// joined opens (creating when allowed) the room a join asks for and works
// out the caller's role in it, recording what joining means (auth.Role).
func (s *server) joined(r *http.Request, c call) (letagents.Room, letagents.Role, bool, error) {
	room, created, err := s.Store.EnsureRoom(r.Context(), c.room)
	if err != nil {
		return room, "", false, err
	}
	role, err := s.Auth.Role(r.Context(), identity(r), room, c.access, true)
	return room, role, created, err
}

func (s *server) createInviteRoom(w http.ResponseWriter, r *http.Request, _ call) error {
	if err := s.Auth.LimitInviteRoom(r.Context(), clientAddress(r)); err != nil {
		return err
	}
	room, err := s.Store.CreateInviteRoom(r.Context(), identity(r).Account.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toProject(room))
	return nil
}

// joinByCode looks an invite room up by its code. Unlike POST
// /rooms/{room}/join it is not counted against the join rate, as in the
// original: it creates nothing, and guessing codes 12 characters long is
// hopeless at any rate.
func (s *server) joinByCode(w http.ResponseWriter, r *http.Request, c call) error {
	id, err := rooms.Normalize(c.ps["code"])
	if err != nil || rooms.KindOf(id) != letagents.RoomInvite {
		return letagents.Errorf(letagents.Invalid, "%q is not an invite code like FEH7-YWH4-ZYT3", c.ps["code"])
	}
	room, err := s.Store.Room(r.Context(), id)
	if err == nil && room.Kind != letagents.RoomInvite {
		err = letagents.RoomNotFound() // a named room such as 1234-5678 has no code
	}
	if err != nil {
		return notFoundAs(err, "Project not found for the given code")
	}
	writeJSON(w, http.StatusOK, toProject(room))
	return nil
}

func (s *server) openNamedRoom(w http.ResponseWriter, r *http.Request, c call) error {
	room, _, created, err := s.joined(r, c)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toProject(room))
	return nil
}

func (s *server) joinRoom(w http.ResponseWriter, r *http.Request, c call) error {
	room, role, _, err := s.joined(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toJoin(room, role, identity(r).SignedIn()))
	return nil
}

// roomInfo shows a room as a join answers it, without joining: it creates
// nothing, records nothing and is not counted against the join rate, so
// the room page can open an existing room on every load (a join counts,
// and ten reloads a minute would use up an address's joins). A room that
// does not exist is 404: the page joins it then.
func (s *server) roomInfo(w http.ResponseWriter, r *http.Request, c call) error {
	room, role, err := s.roleIn(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toJoin(room, role, identity(r).SignedIn()))
	return nil
}

// roomAccess tells the caller what they are in a room (legacy route).
func (s *server) roomAccess(w http.ResponseWriter, r *http.Request, c call) error {
	room, role, err := s.roleIn(r, c)
	if err != nil {
		return err
	}
	who := identity(r)
	// As the original says: discoverable for a room of a repository, and
	// invite for every other, named rooms included.
	j := wire.Access{ProjectID: room.ID, RoomType: "invite", Authenticated: who.SignedIn(), Role: string(role)}
	if room.Kind == letagents.RoomRepo || room.Kind == letagents.RoomBranch {
		j.RoomType = "discoverable"
	}
	if who.SignedIn() {
		j.Account = &wire.AccessAccount{ID: letagents.WireID(letagents.AccountPrefix, who.Account.ID), Login: who.Account.Login, Provider: who.Account.Provider}
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// rotateCode gives an invite room a new code (the admin gate).
func (s *server) rotateCode(w http.ResponseWriter, r *http.Request, c call) error {
	room, err := s.Store.RotateInviteCode(r.Context(), c.room)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProject(room))
	return nil
}

// notFoundAs rewords a not-found error for routes whose clients expect
// their own message.
func notFoundAs(err error, msg string) error {
	var e *letagents.Error
	if errors.As(err, &e) && e.Kind == letagents.NotFound {
		return letagents.Errorf(letagents.NotFound, "%s", msg)
	}
	return err
}

// listRooms lists the signed-in account's rooms (Store.RoomsOf), never an
// invite room, whose id is its secret (GET /projects): only those it may
// read now (auth.Readable), so a room whose access ended, or GitHub cannot
// confirm just now, is not shown, nor its current name.
func (s *server) listRooms(w http.ResponseWriter, r *http.Request, _ call) error {
	who := identity(r)
	if err := requireAccount(who); err != nil {
		return err
	}
	mine, err := s.Store.RoomsOf(r.Context(), who.Account.ID)
	if err != nil {
		return err
	}
	list, _, err := s.Auth.Readable(r.Context(), who, mine)
	if err != nil {
		return err
	}
	j := wire.RoomList{Projects: make([]wire.ListedRoom, len(list))}
	for i, room := range list {
		j.Projects[i] = wire.ListedRoom{ID: room.ID, DisplayName: room.DisplayName}
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// renameRoom sets a room's display name (the admin gate) and answers the
// room as a join does.
func (s *server) renameRoom(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.RenameRoom
	if err := decode(w, r, &req); err != nil {
		return err
	}
	name, err := letagents.RoomDisplayName(req.DisplayName)
	if err != nil {
		return err
	}
	room, err := s.Store.RenameRoom(r.Context(), c.room, name)
	if err != nil {
		return err
	}
	role, err := s.Auth.Role(r.Context(), identity(r), room, c.access, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toJoin(room, role, identity(r).SignedIn()))
	return nil
}

// resolved says what the room id of the path names: the normalised id,
// and an invite room's code or any other room's canonical id.
func (s *server) resolved(r *http.Request, c call) (normalized string, res wire.Resolved, err error) {
	normalized, err = rooms.Normalize(c.ps["room"])
	if err != nil {
		return "", res, letagents.Errorf(letagents.Invalid, "%v", err)
	}
	if rooms.IsInviteCode(normalized) {
		// The answer says whether an invite room has the code: count the
		// question as a join, as guessing codes here is guessing them there.
		if err := s.Auth.LimitJoin(r.Context(), clientAddress(r)); err != nil {
			return "", res, err
		}
	}
	id, invite, err := s.Store.RoomID(r.Context(), normalized)
	if err != nil {
		return "", res, err
	}
	if invite {
		return normalized, wire.Resolved{Type: "invite", Code: &id}, nil
	}
	return normalized, wire.Resolved{Type: "room", Name: &id}, nil
}

// resolveRoom is GET /rooms/resolve/{room}.
func (s *server) resolveRoom(w http.ResponseWriter, r *http.Request, c call) error {
	normalized, res, err := s.resolved(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Resolve{Input: c.ps["room"], Normalized: normalized, Resolved: res, CanonicalRoomID: res.Name})
	return nil
}

// apiResolveRoom is GET /api/rooms/resolve/{room}.
func (s *server) apiResolveRoom(w http.ResponseWriter, r *http.Request, c call) error {
	_, res, err := s.resolved(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.APIResolve{Resolved: res, CanonicalRoomID: res.Name})
	return nil
}

// repoPage sends /<host>/<owner>/<repo> to the page of that repository's
// room, permanently.
func (s *server) repoPage(host string) handler {
	return func(w http.ResponseWriter, r *http.Request, c call) error {
		id, err := rooms.Normalize(host + "/" + c.ps["owner"] + "/" + c.ps["repo"])
		if err != nil {
			return letagents.Errorf(letagents.Invalid, "%v", err)
		}
		w.Header().Set("Location", "/in/"+rooms.PathOf(id))
		w.WriteHeader(http.StatusMovedPermanently)
		return nil
	}
}
