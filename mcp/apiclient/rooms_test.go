package apiclient_test

import (
	"slices"
	"testing"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	h, err := e.client("").Health(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != "ok" || h.Service != "letagents-api" || h.Version == "" {
		t.Errorf("Health = %+v, want status ok, service letagents-api and a version", h)
	}
}

// RoomInfo reads a room without joining or creating it.
func TestRoomInfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	ctx := testContext(t)
	join(t, c, "github.com/o/info")
	tests := []struct {
		name, room string
		wantStatus int // 0 for found
	}{
		{"joined before", "github.com/o/info", 0},
		{"never joined", "github.com/o/nobody", 404},
		{"unknown invite code", "ZZZZ-ZZZZ-ZZZZ", 404},
	}
	for _, tt := range tests {
		j, err := c.RoomInfo(ctx, tt.room)
		switch {
		case tt.wantStatus == 0 && (err != nil || j.RoomID != tt.room || j.Role == "" || j.GitRoom == nil):
			t.Errorf("%s: RoomInfo = %+v, %v; want the room, a role and its git_room", tt.name, j, err)
		case tt.wantStatus != 0 && !apiclient.IsStatus(err, tt.wantStatus):
			t.Errorf("%s: RoomInfo = %+v, %v; want status %d", tt.name, j, err, tt.wantStatus)
		}
	}
	// Asking did not create the room.
	if _, err := c.RoomInfo(ctx, "github.com/o/nobody"); !apiclient.IsStatus(err, 404) {
		t.Errorf("RoomInfo after RoomInfo = %v; want 404 still", err)
	}
}

func TestCreateAndJoin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	ctx := testContext(t)

	created, err := c.CreateRoom(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rooms.IsInviteCode(created.ID) || created.Code == nil || *created.Code != created.ID || created.Name != nil {
		t.Fatalf("CreateRoom = %+v, want an invite room whose code is its id", created)
	}
	branch, err := rooms.BranchRoomID("github.com/o/r", "feature/x")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		room     string
		wantPath string // as sent, escaped
		wantCode bool   // the room has a code, else a name
		wantRef  string // git_room.ref.type; "" for no git_room
	}{
		{"invite code", created.ID, "/rooms/" + created.ID + "/join", true, ""},
		{"named", "team room", "/rooms/team%20room/join", false, ""},
		{"repo", "github.com/o/r", "/rooms/github.com/o/r/join", false, "default_branch"},
		{"branch", branch, "/rooms/git-room:github.com:o/r:branch:ZmVhdHVyZS94/join", false, "branch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := join(t, c, tt.room)
			if j.RoomID != tt.room || j.Role == "" || j.CreatedAt == "" || j.DisplayName == "" {
				t.Errorf("Join(%q) = %+v, want room_id %q, a role, created_at and display_name", tt.room, j, tt.room)
			}
			switch {
			case tt.wantCode && (j.Code == nil || *j.Code != tt.room || j.Name != nil):
				t.Errorf("Join(%q): code %v, name %v, want code %q and no name", tt.room, j.Code, j.Name, tt.room)
			case !tt.wantCode && (j.Name == nil || *j.Name != tt.room || j.Code != nil):
				t.Errorf("Join(%q): code %v, name %v, want name %q and no code", tt.room, j.Code, j.Name, tt.room)
			}
			gotRef := ""
			if j.GitRoom != nil {
				gotRef = j.GitRoom.Ref.Type
			}
			if gotRef != tt.wantRef {
				t.Errorf("Join(%q): git_room %+v, want ref type %q", tt.room, j.GitRoom, tt.wantRef)
			}
			if tt.wantRef == "branch" && (j.GitRoom.Ref.Name == nil || *j.GitRoom.Ref.Name != "feature/x") {
				t.Errorf("Join(%q): ref %+v, want branch feature/x", tt.room, j.GitRoom.Ref)
			}
			if got := e.api.last(t, "/join"); got.Path != tt.wantPath || got.Method != "POST" {
				t.Errorf("Join(%q) sent %s %s, want POST %s", tt.room, got.Method, got.Path, tt.wantPath)
			}
		})
	}
}

func TestJoinRejectsEmptyRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	if _, err := e.client("").Join(testContext(t), " "); err == nil {
		t.Error("Join(\" \") succeeded, want an error")
	}
	if got := e.api.paths(); len(got) != 0 {
		t.Errorf("Join(\" \") sent %q, want nothing sent", got)
	}
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client("")
	ctx := testContext(t)
	const room = "github.com/o/r"
	join(t, c, room)

	pr, err := c.PublishArtifact(ctx, room, wire.PublishArtifact{
		Artifact: &wire.ArtifactFields{Kind: "pull_request", Number: 7, Title: "Add the client", URL: "https://github.com/o/r/pull/7"},
		TaskID:   "task_1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if pr.RoomID != room || pr.Artifact.Kind != "pull_request" || pr.Artifact.Provider != "github" ||
		pr.Artifact.ArtifactNumber == nil || *pr.Artifact.ArtifactNumber != 7 || len(pr.Artifact.LinkedTaskIDs) != 1 {
		t.Fatalf("PublishArtifact = %+v", pr)
	}
	// The fields flat, as older publishers send them.
	if _, err := c.PublishArtifact(ctx, room, wire.PublishArtifact{
		ArtifactFields: wire.ArtifactFields{Kind: "issue", Number: 3, URL: "https://github.com/o/r/issues/3"},
	}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		taskID    string
		limit     int
		wantKinds []string
		wantQuery string
	}{
		{"all", "", 0, []string{"issue", "pull_request"}, ""},
		{"one task", "task_1", 0, []string{"pull_request"}, "task_id=task_1"},
		{"limit", "", 1, []string{"issue"}, "limit=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := c.Artifacts(ctx, room, tt.taskID, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, a := range list.Artifacts {
				kinds = append(kinds, a.Kind)
			}
			if list.RoomID != room || !slices.Equal(kinds, tt.wantKinds) {
				t.Errorf("Artifacts(%q, %d) = room %q, kinds %q; want %q, %q", tt.taskID, tt.limit, list.RoomID, kinds, room, tt.wantKinds)
			}
			if got := e.api.last(t, "/artifacts"); got.Query != tt.wantQuery || got.Path != "/rooms/github.com/o/r/artifacts" {
				t.Errorf("Artifacts sent %s?%s, want /rooms/github.com/o/r/artifacts?%s", got.Path, got.Query, tt.wantQuery)
			}
		})
	}

	if _, err := c.Artifacts(ctx, room, "not-a-task", 0); !apiclient.IsStatus(err, 400) {
		t.Errorf("Artifacts with a bad task id: %v, want a 400", err)
	}
}
