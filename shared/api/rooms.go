package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

// projectJSON is a room as the legacy /projects routes return it.
type projectJSON struct {
	ID          string  `json:"id"`
	Code        *string `json:"code"`
	Name        *string `json:"name"`
	DisplayName string  `json:"display_name"`
	CreatedAt   string  `json:"created_at"`
}

// joinJSON is a room as POST /rooms/{room}/join returns it.
type joinJSON struct {
	RoomID        string       `json:"room_id"`
	Name          *string      `json:"name"`
	DisplayName   string       `json:"display_name"`
	Code          *string      `json:"code"`
	CreatedAt     string       `json:"created_at"`
	Role          string       `json:"role"`
	Authenticated bool         `json:"authenticated"`
	GitRoom       *gitRoomJSON `json:"git_room,omitempty"`
}

type gitRoomJSON struct {
	Provider   string         `json:"provider"`
	Host       string         `json:"host"`
	Repository repositoryJSON `json:"repository"`
	Ref        refJSON        `json:"ref"`
}

type repositoryJSON struct {
	ID    *string `json:"id"`
	Owner string  `json:"owner"`
	Name  string  `json:"name"`
}

type refJSON struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// codeAndName splits a room id into the code (invite rooms) or the name
// (every other room) that the wire carries, the other being null.
func codeAndName(room letagents.Room) (code, name *string) {
	id := room.ID
	if room.Kind == letagents.RoomInvite {
		return &id, nil
	}
	return nil, &id
}

func toProject(room letagents.Room) projectJSON {
	code, name := codeAndName(room)
	return projectJSON{ID: room.ID, Code: code, Name: name, DisplayName: room.DisplayName, CreatedAt: letagents.FormatTime(room.CreatedAt)}
}

func toJoin(room letagents.Room) joinJSON {
	code, name := codeAndName(room)
	j := joinJSON{RoomID: room.ID, Name: name, Code: code, DisplayName: room.DisplayName,
		CreatedAt: letagents.FormatTime(room.CreatedAt), Role: "participant"}
	locator, branch := room.ID, ""
	if room.Kind == letagents.RoomBranch {
		locator, branch, _ = rooms.ParseBranchRoom(room.ID)
	}
	if room.Kind == letagents.RoomRepo || room.Kind == letagents.RoomBranch {
		// Until sign-in exists nobody is known in a repo room.
		j.Role = "anonymous"
		host, owner, repo := splitLocator(locator)
		ref := refJSON{Type: "default_branch"}
		if branch != "" {
			ref = refJSON{Type: "branch", Name: &branch}
		}
		j.GitRoom = &gitRoomJSON{Provider: provider(host), Host: host,
			Repository: repositoryJSON{Owner: owner, Name: repo}, Ref: ref}
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

func (s *server) createInviteRoom(w http.ResponseWriter, r *http.Request, _ params) {
	room, err := s.Store.CreateInviteRoom(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toProject(room))
}

func (s *server) joinByCode(w http.ResponseWriter, r *http.Request, ps params) {
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
	id, err := roomParam(ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	room, created, err := s.Store.EnsureRoom(r.Context(), id)
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
	id, err := roomParam(ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	room, _, err := s.Store.EnsureRoom(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJoin(room))
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
