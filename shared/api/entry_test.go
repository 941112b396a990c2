package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/rooms"
)

// GET /projects lists a signed-in account's rooms as the original shapes
// them ({projects: [{id, display_name}]}), never an invite room; nobody
// signed in is 401.
func TestListRooms(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	ann, bob := e.signIn(t, "ann"), e.signIn(t, "bob")
	// The first signed-in joiner of a named room is its admin.
	e.as(t, ann, http.MethodPost, "/rooms/ann%20room/join", "").want(t, 200, "")
	e.as(t, ann, http.MethodPost, "/projects", "").want(t, 201, "")
	e.as(t, bob, http.MethodPost, "/rooms/bob%20room/join", "").want(t, 200, "")
	// An agent session of ann's in a room bob opened makes it one of hers.
	e.register(t, ann, "bob%20room", "builder", `{"actor_key": "ann/builder"}`)

	tests := []struct {
		name, token string
		status      int
		want        []string
	}{
		{"nobody", "", 401, nil},
		{"ann", ann, 200, []string{"ann room", "bob room"}},
		{"bob", bob, 200, []string{"bob room"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.as(t, tt.token, http.MethodGet, "/projects", "")
			if tt.token == "" {
				r = e.call(t, http.MethodGet, "/projects", "")
			}
			r.want(t, tt.status, "Authentication required")
			if tt.status != 200 {
				if r.str("code") != "NOT_AUTHENTICATED" {
					t.Errorf("code = %q, want NOT_AUTHENTICATED", r.str("code"))
				}
				return
			}
			var got struct {
				Projects []map[string]any `json:"projects"`
			}
			if err := json.Unmarshal([]byte(r.raw), &got); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, p := range got.Projects {
				if len(p) != 2 || p["display_name"] != rooms.DisplayName(p["id"].(string)) {
					t.Errorf("listed room %v, want exactly {id, display_name}", p)
				}
				ids = append(ids, p["id"].(string))
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Errorf("rooms = %v, want %v", ids, tt.want)
			}
		})
	}
}

// PATCH /rooms/{room} renames a room: admins only, display_name of 2 to
// 64 characters, answered as a join.
func TestRenameRoom(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	ann, bob := e.signIn(t, "ann"), e.signIn(t, "bob")
	e.as(t, ann, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")
	e.as(t, bob, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")

	tests := []struct {
		name, token, path, body string
		status                  int
		msg, code, display      string
	}{
		{"nobody", "", "/rooms/team", `{"display_name": "Ops"}`, 401, "Authentication required", "NOT_AUTHENTICATED", ""},
		{"not an admin", bob, "/rooms/team", `{"display_name": "Ops"}`, 403, "Admin privileges required", "", ""},
		{"no such room", ann, "/rooms/nowhere", `{"display_name": "Ops"}`, 404, "Room not found", "ROOM_NOT_FOUND", ""},
		{"no name", ann, "/rooms/team", `{}`, 400, "display_name is required", "", ""},
		{"blank name", ann, "/rooms/team", `{"display_name": "  "}`, 400, "display_name is required", "", ""},
		{"too short", ann, "/rooms/team", `{"display_name": "x"}`, 400, "between 2 and 64 characters", "", ""},
		{"too long", ann, "/rooms/team", `{"display_name": "` + strings.Repeat("é", 65) + `"}`, 400, "between 2 and 64 characters", "", ""},
		{"control character", ann, "/rooms/team", `{"display_name": "a\u0007b"}`, 400, "control characters", "", ""},
		{"not JSON", ann, "/rooms/team", `nope`, 400, "not a JSON object", "", ""},
		{"renamed", ann, "/rooms/team", `{"display_name": "  Night   shift "}`, 200, "", "", "Night shift"},
		{"longest", ann, "/rooms/team", `{"display_name": "` + strings.Repeat("é", 64) + `"}`, 200, "", "", strings.Repeat("é", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r reply
			if tt.token == "" {
				r = e.call(t, http.MethodPatch, tt.path, tt.body)
			} else {
				r = e.as(t, tt.token, http.MethodPatch, tt.path, tt.body)
			}
			r.want(t, tt.status, tt.msg)
			if r.str("code") != tt.code {
				t.Errorf("code = %q, want %q", r.str("code"), tt.code)
			}
			if tt.status != 200 {
				return
			}
			if r.str("room_id") != "team" || r.str("name") != "team" || r.obj["code"] != nil || r.str("display_name") != tt.display ||
				r.str("role") != "admin" || r.obj["authenticated"] != true || !isTimestamp(r.str("created_at")) {
				t.Errorf("rename = %s, want room team named %q, role admin", r.raw, tt.display)
			}
			if j := e.call(t, http.MethodPost, "/rooms/team/join", "").want(t, 200, ""); j.str("display_name") != tt.display {
				t.Errorf("join after rename says display_name %q, want %q", j.str("display_name"), tt.display)
			}
		})
	}
}

// GET /rooms/resolve/{id} and GET /api/rooms/resolve/{id} say what an id
// names, as the original shapes it; an invite-shaped name that no invite
// room has is a room.
func TestResolveRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	code := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	tests := []struct {
		name, path string
		status     int
		want       string // the JSON answer, or the error
	}{
		{"invite code", "/rooms/resolve/" + strings.ToLower(code), 200,
			`{"input":"` + strings.ToLower(code) + `","normalized":"` + code + `","resolved":{"type":"invite","code":"` + code + `"}}`},
		{"invite-shaped name", "/rooms/resolve/Team-Chat", 200,
			`{"input":"Team-Chat","normalized":"TEAM-CHAT","resolved":{"type":"room","name":"team-chat"},"canonical_room_id":"team-chat"}`},
		{"clone URL", "/rooms/resolve/" + strings.ReplaceAll("https://GitHub.com/O/R.git", "/", "%2F"), 200,
			`{"input":"https://GitHub.com/O/R.git","normalized":"github.com/o/r","resolved":{"type":"room","name":"github.com/o/r"},"canonical_room_id":"github.com/o/r"}`},
		{"slashes", "/rooms/resolve/github.com/O/R", 200,
			`{"input":"github.com/O/R","normalized":"github.com/o/r","resolved":{"type":"room","name":"github.com/o/r"},"canonical_room_id":"github.com/o/r"}`},
		{"api invite code", "/api/rooms/resolve/" + code, 200, `{"type":"invite","code":"` + code + `"}`},
		{"api room", "/api/rooms/resolve/github.com/O/R", 200, `{"type":"room","name":"github.com/o/r","canonical_room_id":"github.com/o/r"}`},
		{"api named", "/api/rooms/resolve/demo-room", 200, `{"type":"room","name":"demo-room","canonical_room_id":"demo-room"}`},
		{"bad id", "/rooms/resolve/a%01b", 400, "control character"},
		{"api bad id", "/api/rooms/resolve/a%2F..%2Fb", 400, `".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := e.call(t, http.MethodGet, tt.path, "").want(t, tt.status, tt.want)
			if tt.status == 200 && strings.TrimSpace(r.raw) != tt.want {
				t.Errorf("GET %s = %s, want %s", tt.path, r.raw, tt.want)
			}
		})
	}
}

// GET /{provider}/{owner}/{repo} sends a browser to the repository room's
// page, 301 like the original, for the providers it knows.
func TestRepoPageRedirect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tests := []struct {
		path     string
		status   int
		location string
	}{
		{"/github.com/BrosInCode/LetAgents", 301, "/in/github.com/brosincode/letagents"},
		{"/github.com/o/r.git", 301, "/in/github.com/o/r"},
		{"/gitlab.com/Group/Proj", 301, "/in/gitlab.com/Group/Proj"},
		{"/bitbucket.org/Team/Repo", 301, "/in/bitbucket.org/Team/Repo"},
		{"/example.com/o/r", 404, ""},
		{"/github.com/o", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			r := e.call(t, http.MethodGet, tt.path, "")
			if r.status != tt.status || r.header.Get("Location") != tt.location {
				t.Errorf("GET %s = %d Location %q, want %d %q", tt.path, r.status, r.header.Get("Location"), tt.status, tt.location)
			}
		})
	}
}

// A name shaped like an invite code (team-chat, demo-room) opens the
// named room of that name, in any case, when no invite room has the code;
// the original answered "Room not found" to every such name.
func TestInviteShapedNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	code := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	tests := []struct {
		name, method, path, body string
		status                   int
		key, want                string // a key of the answer and its value
	}{
		{"join creates it", http.MethodPost, "/rooms/team-chat/join", "", 200, "room_id", "team-chat"},
		{"join in another case", http.MethodPost, "/rooms/TEAM-CHAT/join", "", 200, "name", "team-chat"},
		{"legacy open", http.MethodPost, "/projects/room/Demo-Room", "", 201, "id", "demo-room"},
		{"legacy open again", http.MethodPost, "/projects/room/demo-room", "", 200, "id", "demo-room"},
		{"send", http.MethodPost, "/rooms/Team-Chat/messages", `{"sender": "ann", "text": "hi"}`, 201, "room_id", "team-chat"},
		{"read", http.MethodGet, "/rooms/team-chat/messages", "", 200, "room_id", "team-chat"},
		{"legacy read", http.MethodGet, "/projects/TEAM-CHAT/messages", "", 200, "project_id", "team-chat"},
		{"invite code still wins", http.MethodPost, "/rooms/" + strings.ToLower(code) + "/join", "", 200, "room_id", code},
		{"an unknown name is no room yet", http.MethodGet, "/rooms/wxyz-wxyz/messages", "", 404, "code", "ROOM_NOT_FOUND"},
		// The legacy code route looks up codes only.
		{"legacy join by code", http.MethodGet, "/projects/join/team-chat", "", 404, "error", "Project not found for the given code"},
		{"digits name", http.MethodPost, "/rooms/1234-5678/join", "", 200, "name", "1234-5678"},
		{"digits name is no code", http.MethodGet, "/projects/join/1234-5678", "", 404, "error", "Project not found for the given code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call(t, tt.method, tt.path, tt.body).want(t, tt.status, "")
			if r.str(tt.key) != tt.want {
				t.Errorf("%s %s: %s = %q, want %q: %s", tt.method, tt.path, tt.key, r.str(tt.key), tt.want, r.raw)
			}
		})
	}
	if r := e.call(t, http.MethodPost, "/rooms/team-chat/join", "").want(t, 200, ""); r.obj["code"] != nil {
		t.Errorf("named room answers code %v, want null", r.obj["code"])
	}
}

// Every 404 about a room under /rooms/ carries code ROOM_NOT_FOUND, as the
// original's do.
func TestRoomNotFoundCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tests := []struct{ method, path, body string }{
		{http.MethodGet, "/rooms/nowhere/messages", ""},
		{http.MethodPost, "/rooms/nowhere/messages", `{"sender": "ann", "text": "hi"}`},
		{http.MethodGet, "/rooms/nowhere/messages/poll?timeout=0", ""},
		{http.MethodGet, "/rooms/nowhere/tasks", ""},
		{http.MethodPost, "/rooms/nowhere/tasks", `{"title": "t", "created_by": "ann"}`},
		{http.MethodGet, "/rooms/nowhere/artifacts", ""},
		{http.MethodPost, "/rooms/nowhere/artifacts", `{"kind": "issue", "url": "https://github.com/o/r/issues/1"}`},
		{http.MethodGet, "/rooms/nowhere/board-settings", ""},
		{http.MethodGet, "/rooms/nowhere/board-intents", ""},
		{http.MethodGet, "/rooms/nowhere/participants", ""},
		{http.MethodGet, "/rooms/nowhere/presence", ""},
		{http.MethodPatch, "/rooms/nowhere", `{"display_name": "Ops"}`},
		{http.MethodGet, "/rooms/ZZZZ-ZZZZ-ZZZZ/messages", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			t.Parallel()
			r := e.call(t, tt.method, tt.path, tt.body).want(t, 404, "Room not found")
			if r.str("code") != "ROOM_NOT_FOUND" {
				t.Errorf("%s %s = %s, want code ROOM_NOT_FOUND", tt.method, tt.path, r.raw)
			}
		})
	}
}

// Room ids deeper than host/owner/repo (GitLab subgroups) work, with their
// slashes or percent-encoded whole; github.com ids stay owner/repo.
func TestDeepRoomIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tests := []struct {
		name, path    string
		status        int
		roomID, owner string
	}{
		{"slashes", "/rooms/gitlab.com/Group/Sub/Proj/join", 200, "gitlab.com/Group/Sub/Proj", "Group/Sub"},
		{"encoded", "/rooms/" + rooms.PathOf("gitlab.com/Group/Sub/Proj") + "/join", 200, "gitlab.com/Group/Sub/Proj", "Group/Sub"},
		{"clone URL", "/rooms/" + rooms.PathOf("git@gitlab.com:a/b/c/d.git") + "/join", 200, "gitlab.com/a/b/c/d", "a/b/c"},
		{"named", "/rooms/team/a/b/c/join", 200, "team/a/b/c", ""},
		{"github subpath", "/rooms/github.com/o/r/tree/join", 400, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call(t, http.MethodPost, tt.path, "").want(t, tt.status, "")
			if tt.status != 200 {
				return
			}
			gr, _ := r.obj["git_room"].(map[string]any)
			repo, _ := gr["repository"].(map[string]any)
			if r.str("room_id") != tt.roomID || (tt.owner != "" && repo["owner"] != tt.owner) || (tt.owner == "" && gr != nil) {
				t.Errorf("POST %s = %s, want room %s, owner %q", tt.path, r.raw, tt.roomID, tt.owner)
			}
		})
	}
	e.send(t, "gitlab.com/Group/Sub/Proj", "ann", "deep")
	r := e.call(t, http.MethodGet, "/rooms/"+rooms.PathOf("gitlab.com/Group/Sub/Proj")+"/messages", "").want(t, 200, "")
	if m := r.messages(t); len(m) != 1 || m[0]["text"] != "deep" {
		t.Errorf("messages of the deep room read encoded = %s", r.raw)
	}
}

// GET /projects/{id}/access names a room's type as the original does:
// discoverable for a repository's rooms, invite for every other.
func TestAccessRoomType(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	code := e.call(t, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	branch, err := rooms.BranchRoomID("github.com/o/r", "dev")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ room, want string }{
		{code, "invite"},
		{"lobby", "invite"},
		{"github.com/o/r", "discoverable"},
		{branch, "discoverable"},
	}
	for _, tt := range tests {
		e.join(t, rooms.PathOf(tt.room))
		r := e.call(t, http.MethodGet, "/projects/"+rooms.PathOf(tt.room)+"/access", "").want(t, 200, "")
		if r.str("room_type") != tt.want || r.str("project_id") != tt.room || r.obj["account"] != nil {
			t.Errorf("access of %s = %s, want room_type %s", tt.room, r.raw, tt.want)
		}
	}
}

// GET /rooms/{room}/participants lists people and agents the room has
// seen, as 0.12.9 derives them from its history: live workers and the
// senders of recent messages, most recently seen first.
func TestParticipants(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("bob")
	bob := e.signIn(t, "bob")
	builder := e.register(t, bob, "crew", "builder", `{"actor_key": "bob/builder", "display_name": "Builder", "ide_label": "Codex"}`)
	e.send(t, "crew", "ann", "hello")
	e.send(t, "crew", "Scout | Carol's agent | Claude", "on it")
	e.as(t, bob, http.MethodPost, "/rooms/crew/messages", `{"text": "done", `+builder.creds()+`}`).want(t, 201, "")

	type want struct {
		key, kind, display, state string
		session                   bool
		flags                     string
	}
	everyone := []want{
		{"agent:" + strings.ToLower(builder.label), "agent", "Builder", "offline", true, "presence,messages"},
		{"agent:scout | carol's agent | claude", "agent", "Scout", "offline", false, "messages"},
		{"human:login:ann", "human", "ann", "", false, "messages"},
	}
	tests := []struct {
		query  string
		status int
		want   []want
	}{
		{"", 200, everyone},
		{"?limit=2", 200, everyone[:2]},
		// Read leniently, as the original does: the default, the maximum.
		{"?limit=0", 200, everyone},
		{"?limit=501", 200, everyone},
		{"?limit=1.5", 200, everyone[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := e.call(t, http.MethodGet, "/rooms/crew/participants"+tt.query, "").want(t, tt.status, "limit must be a whole number")
			if tt.status != 200 {
				return
			}
			list, _ := r.obj["participants"].([]any)
			if len(list) != len(tt.want) || r.str("room_id") != "crew" || r.obj["hidden_count"] != 0.0 {
				t.Fatalf("participants = %s, want %d", r.raw, len(tt.want))
			}
			for i, w := range tt.want {
				p := list[i].(map[string]any)
				var flags []string
				for _, f := range p["source_flags"].([]any) {
					flags = append(flags, f.(string))
				}
				state, _ := p["activity_state"].(string)
				if p["participant_key"] != w.key || p["kind"] != w.kind || p["display_name"] != w.display || state != w.state ||
					(p["session_id"] != nil) != w.session || strings.Join(flags, ",") != w.flags || !isTimestamp(p["last_seen_at"].(string)) {
					t.Errorf("participant %d = %v, want %+v", i, p, w)
				}
				if w.kind == "human" && (p["github_login"] != w.display || p["actor_label"] != nil || p["activity_state"] != nil) {
					t.Errorf("person = %v, want github_login %q, no actor label or activity", p, w.display)
				}
				if w.session && (p["session_id"] != builder.id || p["agent_key"] != "bob/builder" || p["status"] != "idle" ||
					p["status_text"] != nil || p["connected"] != false || p["ide_label"] != "Codex") {
					t.Errorf("worker = %v, want its session's fields", p)
				}
			}
		})
	}
}
