package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/rooms"
)

func TestCreateAndJoinInviteRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	created := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "")
	id := created.str("id")
	if !rooms.IsInviteCode(id) || created.str("code") != id || created.str("display_name") != rooms.DisplayName(id) ||
		!isTimestamp(created.str("created_at")) || created.obj["name"] != nil {
		t.Fatalf("POST /projects = %s", created.raw)
	}
	if ct := created.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	joined := e.call(t, http.MethodGet, "/projects/join/"+strings.ToLower(id), "").want(t, 200, "")
	if joined.str("id") != id || joined.str("code") != id || joined.str("created_at") != created.str("created_at") {
		t.Errorf("join by lower-case code = %s, want room %s", joined.raw, id)
	}
	j := e.call(t, http.MethodPost, "/rooms/"+id+"/join", "").want(t, 200, "")
	if j.str("room_id") != id || j.str("code") != id || j.obj["name"] != nil || j.str("role") != "participant" ||
		j.obj["authenticated"] != false || j.obj["git_room"] != nil {
		t.Errorf("POST /rooms/%s/join = %s", id, j.raw)
	}
	again := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "")
	if again.str("id") == id {
		t.Error("two POST /projects gave the same code")
	}
}

func TestOpenNamedRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first := e.call(t, http.MethodPost, "/projects/room/team%20alpha", "").want(t, 201, "")
	if first.str("id") != "team alpha" || first.str("name") != "team alpha" || first.obj["code"] != nil {
		t.Fatalf("first open = %s", first.raw)
	}
	second := e.call(t, http.MethodPost, "/projects/room/team%20alpha", "").want(t, 200, "")
	if second.str("id") != "team alpha" || second.str("created_at") != first.str("created_at") {
		t.Errorf("second open = %s, want the same room with 200", second.raw)
	}
	// The legacy web page encodes the whole id as one segment.
	repo := e.call(t, http.MethodPost, "/projects/room/"+strings.ReplaceAll("https://GitHub.com/Owner/Repo.git", "/", "%2F"), "").want(t, 201, "")
	if repo.str("id") != "github.com/owner/repo" {
		t.Errorf("repo room id = %q, want normalised github.com/owner/repo", repo.str("id"))
	}
}

func TestJoinGitRooms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	repo := e.call(t, http.MethodPost, "/rooms/github.com/Owner/Repo/join", "").want(t, 200, "")
	if repo.str("room_id") != "github.com/owner/repo" || repo.str("name") != "github.com/owner/repo" || repo.str("role") != "anonymous" {
		t.Fatalf("repo join = %s", repo.raw)
	}
	gr, _ := repo.obj["git_room"].(map[string]any)
	if gr["provider"] != "github" || gr["host"] != "github.com" {
		t.Errorf("git_room = %v", gr)
	}
	if r, _ := gr["repository"].(map[string]any); r["owner"] != "owner" || r["name"] != "repo" {
		t.Errorf("git_room.repository = %v", gr["repository"])
	}
	if ref, _ := gr["ref"].(map[string]any); ref["type"] != "default_branch" || ref["name"] != nil {
		t.Errorf("git_room.ref = %v", gr["ref"])
	}

	branchID, err := rooms.BranchRoomID("github.com/o/r", "Feature/Caps")
	if err != nil {
		t.Fatal(err)
	}
	b := e.call(t, http.MethodPost, "/rooms/"+branchID+"/join", "").want(t, 200, "")
	if b.str("room_id") != branchID || b.str("display_name") != "Branch: Feature/Caps" {
		t.Fatalf("branch join = %s", b.raw)
	}
	bgr, _ := b.obj["git_room"].(map[string]any)
	if ref, _ := bgr["ref"].(map[string]any); ref["type"] != "branch" || ref["name"] != "Feature/Caps" {
		t.Errorf("branch git_room.ref = %v", bgr["ref"])
	}
	// Joining the branch room created its repo room.
	e.call(t, http.MethodGet, "/rooms/github.com/o/r/messages", "").want(t, 200, "")

	other := e.call(t, http.MethodPost, "/rooms/example.com/team/app/join", "").want(t, 200, "")
	ogr, _ := other.obj["git_room"].(map[string]any)
	if ogr["provider"] != "unknown" || ogr["host"] != "example.com" {
		t.Errorf("self-hosted git_room = %v", ogr)
	}
}

func TestRoomErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tests := []struct {
		name, method, path string
		status             int
		msg                string
	}{
		{"unknown invite code read", http.MethodGet, "/rooms/ZZZZ-ZZZZ-ZZZZ/messages", 404, "Room not found"},
		{"unknown code", http.MethodGet, "/projects/join/ZZZZ-ZZZZ-ZZZZ", 404, "Project not found for the given code"},
		{"not a code", http.MethodGet, "/projects/join/hello", 400, "not an invite code"},
		{"malformed branch room", http.MethodPost, "/rooms/git-room:github.com:o%2Fr:branch:%25%25/join", 400, "malformed branch room id"},
		{"control character", http.MethodPost, "/rooms/a%01b/join", 400, "control character"},
		{"dot segment", http.MethodPost, "/projects/room/a%2F..%2Fb", 400, `".."`},
		{"too many segments", http.MethodPost, "/rooms/" + strings.Repeat("a/", rooms.MaxSegments) + "a/join", 404, "Not Found"},
		{"too many segments encoded", http.MethodPost, "/rooms/" + strings.Repeat("a%2F", rooms.MaxSegments) + "a/join", 400, "more than 24 path segments"},
		{"github subpath", http.MethodPost, "/rooms/github.com%2Fo%2Fr%2Ftree/join", 400, "a github.com room is github.com/owner/repo"},
		{"long id", http.MethodPost, "/projects/room/" + strings.Repeat("x", rooms.MaxIDLength+1), 400, "longer than"},
		{"unknown route", http.MethodGet, "/nowhere", 404, "Not Found"},
		{"wrong method", http.MethodDelete, "/projects", 405, "Method Not Allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e.call(t, tt.method, tt.path, "").want(t, tt.status, tt.msg)
		})
	}
	// PATCH /rooms/{room} would rename a room x/messages, as the
	// original's greedy pattern does.
	if got := e.call(t, http.MethodPut, "/rooms/x/messages", "").header.Get("Allow"); got != "POST, GET, PATCH" {
		t.Errorf("Allow = %q, want POST, GET, PATCH", got)
	}
}

func TestHealthAndPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	h := e.call(t, http.MethodGet, "/api/health", "").want(t, 200, "")
	if h.str("status") != "ok" || h.str("service") != "letagents-api" || h.str("version") == "" {
		t.Errorf("health = %s", h.raw)
	}
	for _, path := range []string{"/", "/in/FEH7-YWH4-ZYT3", "/in/github.com/o/r"} {
		p := e.call(t, http.MethodGet, path, "").want(t, 200, "")
		if !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") || !strings.Contains(p.raw, "<title>") {
			t.Errorf("GET %s: %s %q", path, p.header.Get("Content-Type"), p.raw[:min(len(p.raw), 80)])
		}
	}
}
