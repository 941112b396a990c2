package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/actors"
)

// The task board as the LetAgents 0.11 client uses it: no worker
// sessions, the name it acts under in the body. Invite and named rooms
// serve it; repo rooms, and any room whose admin says so, ask for worker
// sessions (require_worker_sessions).

// oldClient is a caller without a worker session: anonymous (token "")
// or an owner token, acting under label.
type oldClient struct {
	name, token, label string
}

// do sends a request as the client.
func (c oldClient) do(t *testing.T, e *env, method, path, body string) reply {
	t.Helper()
	if c.token == "" {
		return e.call(t, method, path, body)
	}
	return e.as(t, c.token, method, path, body)
}

// jsonBody encodes the fields of a request body as the 0.11 client's
// JSON.stringify does: fields it leaves undefined are left out.
func jsonBody(t *testing.T, fields map[string]string) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// compatEnv is ann's named room "team" and invite room, bob (who owns the
// agent "builder") and the two kinds of old client.
type compatEnv struct {
	*env
	ann, bob, invite string
	clients          []oldClient
}

func newCompatEnv(t *testing.T) *compatEnv {
	t.Helper()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000000"})
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	c := &compatEnv{env: e, ann: e.signIn(t, "ann"), bob: e.signIn(t, "bob")}
	c.invite = e.as(t, c.ann, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	if r := e.as(t, c.ann, http.MethodPost, "/rooms/team/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Fatalf("ann's join = %s, want admin", r.raw)
	}
	agent := e.as(t, c.bob, http.MethodPost, "/agents", `{"name": "builder"}`).want(t, 201, "")
	c.clients = []oldClient{
		{"anonymous", "", "Scout | pat's agent | Cursor"},
		{"owner token without a session", c.bob, actors.ActorLabel(agent.str("display_name"), agent.str("owner_label"), "Codex")},
	}
	return c
}

// TestOldClientBoard runs the 0.11 client's add_task, claim_task,
// update_task and complete_task, request for request, in an invite room
// and a named room, on both its paths, anonymous and with an owner token.
func TestOldClientBoard(t *testing.T) {
	t.Parallel()
	c := newCompatEnv(t)
	pr := 0
	for _, room := range []string{c.invite, "team"} {
		settings := c.call(t, http.MethodGet, "/rooms/"+room+"/board-settings", "").want(t, 200, "")
		if settings.obj["require_worker_sessions"] != false {
			t.Errorf("%s: settings = %s, want require_worker_sessions false", room, settings.raw)
		}
		for _, cl := range c.clients {
			// A name never heard in the room proposes; once it has spoken,
			// its tasks start accepted.
			fresh := cl.do(t, c.env, http.MethodPost, "/rooms/"+room+"/tasks",
				jsonBody(t, map[string]string{"title": "First thought", "created_by": cl.label})).want(t, 201, "")
			if fresh.str("status") != "proposed" || fresh.str("created_by") != cl.label {
				t.Errorf("%s in %s: task of a name never heard = %s, want proposed, by %q", cl.name, room, fresh.raw, cl.label)
			}
			cl.do(t, c.env, http.MethodPost, "/rooms/"+room+"/messages", jsonBody(t, map[string]string{"sender": cl.label, "text": "on it"})).
				want(t, 201, "")

			for _, prefix := range []string{"/rooms/", "/projects/"} {
				name := fmt.Sprintf("%s in %s via %s", cl.name, room, prefix)
				tasks := prefix + room + "/tasks"
				added := cl.do(t, c.env, http.MethodPost, tasks, jsonBody(t, map[string]string{"title": "Wire up Jest",
					"description": "tests first", "created_by": cl.label, "source_message_id": "msg_1"})).want(t, 201, "")
				if added.str("status") != "accepted" || added.str("created_by") != cl.label || added.str("source_message_id") != "msg_1" {
					t.Fatalf("%s: add_task = %s, want accepted, by %q", name, added.raw, cl.label)
				}
				task := tasks + "/" + added.str("id")

				claimed := cl.do(t, c.env, http.MethodPatch, task, jsonBody(t, map[string]string{"status": "assigned", "assignee": cl.label})).
					want(t, 200, "")
				if claimed.str("status") != "assigned" || claimed.str("assignee") != cl.label || claimed.obj["assignee_agent_key"] != nil ||
					len(leasesOf(claimed.obj)) != 0 {
					t.Errorf("%s: claim_task = %s, want assigned to %q with no lease", name, claimed.raw, cl.label)
				}
				if r := cl.do(t, c.env, http.MethodPatch, task, jsonBody(t, map[string]string{"status": "in_progress"})).want(t, 200, ""); r.str("status") != "in_progress" {
					t.Errorf("%s: update_task = %s", name, r.raw)
				}
				pr++
				url := fmt.Sprintf("https://github.com/acme/app/pull/%d", pr)
				done := cl.do(t, c.env, http.MethodPatch, task, jsonBody(t, map[string]string{"status": "in_review", "pr_url": url})).want(t, 200, "")
				if done.str("status") != "in_review" || done.str("pr_url") != url || done.str("assignee") != cl.label {
					t.Errorf("%s: complete_task = %s", name, done.raw)
				}

				// The admin's statuses stay the admin's.
				if cl.token == "" {
					cl.do(t, c.env, http.MethodPatch, task, `{"status": "done"}`).want(t, 401, "Authentication required")
				} else {
					cl.do(t, c.env, http.MethodPatch, task, `{"status": "done"}`).want(t, 403, "Admin privileges required")
				}
				if r := c.as(t, c.ann, http.MethodPatch, task, `{"status": "done"}`).want(t, 200, ""); r.str("status") != "done" {
					t.Errorf("%s: the admin's done = %s", name, r.raw)
				}
			}
		}
	}
	// What the room read: the old client's claims, by the names it sent.
	var claims int
	for _, m := range c.call(t, http.MethodGet, "/rooms/team/messages?limit=500", "").want(t, 200, "").messages(t) {
		if text, _ := m["text"].(string); m["source"] == "system" && strings.Contains(text, " claimed task_") {
			claims++
			if !strings.Contains(text, "Scout claimed") && !strings.Contains(text, "builder claimed") {
				t.Errorf("claim line %q names neither client", text)
			}
		}
	}
	if claims != 4 {
		t.Errorf("%d claim lines in team, want 4", claims)
	}
}

// TestOldClientNames holds the names an old client acts under to the
// rules of message senders, and its claims to the leases of agents.
func TestOldClientNames(t *testing.T) {
	t.Parallel()
	c := newCompatEnv(t)
	worker := c.register(t, c.bob, "team", "helper", `{"actor_key": "bob/helper", "display_name": "Helper"}`)
	task := func(title string) string {
		t.Helper()
		return c.as(t, c.ann, http.MethodPost, "/rooms/team/tasks", jsonBody(t, map[string]string{"title": title})).want(t, 201, "").str("id")
	}
	free, held := task("Free"), task("Held")
	c.as(t, worker.owner, http.MethodPatch, "/rooms/team/tasks/"+held, `{"status": "assigned", `+worker.creds()+`}`).want(t, 200, "")
	carol := "Someone | carol's agent | Codex"
	tests := []struct {
		name         string
		token        string
		method, path string
		body         string
		status       int
		msg          string
	}{
		{"the server's name", "", http.MethodPost, "/rooms/team/tasks", `{"title": "x", "created_by": "LetAgents"}`, 400, "reserved"},
		{"another account's agent", "", http.MethodPost, "/rooms/team/tasks", `{"title": "x", "created_by": "` + worker.label + `"}`, 403,
			"another account's agent"},
		{"an agent the token does not own", c.bob, http.MethodPost, "/rooms/team/tasks", `{"title": "x", "created_by": "` + carol + `"}`, 403,
			"does not own"},
		{"no name", "", http.MethodPost, "/rooms/team/tasks", `{"title": "x"}`, 400, "title and created_by are required"},
		{"a claim as another account's agent", "", http.MethodPatch, "/rooms/team/tasks/" + free,
			`{"status": "assigned", "assignee": "` + worker.label + `"}`, 403, "another account's agent"},
		{"a claim as the server", "", http.MethodPatch, "/rooms/team/tasks/" + free, `{"status": "assigned", "assignee": "letagents"}`, 400, "reserved"},
		{"a claim with no name", "", http.MethodPatch, "/rooms/team/tasks/" + free, `{"status": "assigned"}`, 400, "assignee is required"},
		{"a claim with a TTL", "", http.MethodPatch, "/rooms/team/tasks/" + free,
			`{"status": "assigned", "assignee": "pat", "lease_ttl_seconds": 60}`, 400, "lease_ttl_seconds"},
		{"a claim of a held task", "", http.MethodPatch, "/rooms/team/tasks/" + held, `{"status": "assigned", "assignee": "pat"}`, 409,
			"already claimed"},
		{"a move of a held task", "", http.MethodPatch, "/rooms/team/tasks/" + held, `{"status": "in_review"}`, 409, "only the holder"},
		{"a PR on a held task", c.bob, http.MethodPatch, "/rooms/team/tasks/" + held, `{"pr_url": "https://github.com/acme/app/pull/1"}`, 409,
			"only the holder"},
		{"a claim of an unknown task", "", http.MethodPatch, "/rooms/team/tasks/task_99", `{"status": "assigned", "assignee": "pat"}`, 404,
			"Task not found"},
		{"a lease action", "", http.MethodPost, "/rooms/team/tasks/" + held + "/lease-action", `{"action": "release"}`, 401,
			"Authentication required"},
		{"a review", c.bob, http.MethodPost, "/rooms/team/tasks/" + held + "/review-lease-action", `{"action": "claim"}`, 403,
			"worker session is required"},
	}
	for _, tt := range tests {
		cl := oldClient{token: tt.token}
		if r := cl.do(t, c.env, tt.method, tt.path, tt.body); r.status != tt.status || !strings.Contains(r.str("error"), tt.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tt.name, r.status, r.raw, tt.status, tt.msg)
		}
	}
	// A person signed in without a session, giving no name, acts under
	// the account's.
	if r := c.as(t, c.bob, http.MethodPatch, "/rooms/team/tasks/"+free, `{"status": "assigned"}`).want(t, 200, ""); !strings.HasPrefix(r.str("assignee"), "bob") {
		t.Errorf("bob's claim without a name = %s, want his account's name", r.raw)
	}
}

// TestBoardWorkerSessionSetting: a repo room asks for worker sessions by
// default, its admin can say otherwise and back again; intent_required
// asks for them whatever the setting; a refused write to an unknown task
// is 404.
func TestBoardWorkerSessionSetting(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddRepo("acme/board", false)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	e.gh.Grant("acme/board", "ann", "admin")
	ann, bob := e.signIn(t, "ann"), e.signIn(t, "bob")
	const room = "/rooms/github.com/acme/board"
	e.as(t, ann, http.MethodPost, room+"/join", "").want(t, 200, "")
	e.as(t, bob, http.MethodPost, room+"/join", "").want(t, 200, "")
	settings := func(token, body string) reply {
		t.Helper()
		if body == "" {
			return e.as(t, token, http.MethodGet, room+"/board-settings", "")
		}
		return e.as(t, token, http.MethodPatch, room+"/board-settings", body)
	}
	if r := settings(bob, "").want(t, 200, ""); r.obj["require_worker_sessions"] != true {
		t.Fatalf("repo room settings = %s, want require_worker_sessions true", r.raw)
	}
	newTask := func() string {
		t.Helper()
		return e.as(t, ann, http.MethodPost, room+"/tasks", `{"title": "Ship"}`).want(t, 201, "").str("id")
	}
	anonymous, owner := oldClient{name: "anonymous"}, oldClient{name: "bob", token: bob}
	claim := `{"status": "assigned", "assignee": "pat"}`

	// Sessions required: refused, and an unknown task behind the refusal
	// is 404.
	task := newTask()
	refusals := []struct {
		name   string
		cl     oldClient
		method string
		suffix string
		body   string
		status int
		code   string
	}{
		{"anonymous claim", anonymous, http.MethodPatch, "", claim, 403, "WORKER_SESSION_REQUIRED"},
		{"anonymous move", anonymous, http.MethodPatch, "", `{"status": "in_progress"}`, 401, "NOT_AUTHENTICATED"},
		{"owner token claim", owner, http.MethodPatch, "", claim, 403, "WORKER_SESSION_REQUIRED"},
		{"owner token PR", owner, http.MethodPatch, "", `{"pr_url": "https://github.com/acme/board/pull/1"}`, 403, "WORKER_SESSION_REQUIRED"},
		{"owner token done", owner, http.MethodPatch, "", `{"status": "done"}`, 403, ""},
		{"anonymous release", anonymous, http.MethodPost, "/lease-action", `{"action": "release"}`, 401, "NOT_AUTHENTICATED"},
		{"owner token review", owner, http.MethodPost, "/review-lease-action", `{"action": "claim"}`, 403, "WORKER_SESSION_REQUIRED"},
		{"owner token review release", owner, http.MethodPost, "/review-lease-action", `{"action": "release"}`, 403, ""},
	}
	for _, tt := range refusals {
		if r := tt.cl.do(t, e, tt.method, room+"/tasks/"+task+tt.suffix, tt.body); r.status != tt.status || r.str("code") != tt.code {
			t.Errorf("%s: %d %s, want %d code %q", tt.name, r.status, r.raw, tt.status, tt.code)
		}
		if r := tt.cl.do(t, e, tt.method, room+"/tasks/task_99"+tt.suffix, tt.body); r.status != 404 || r.str("error") != "Task not found" {
			t.Errorf("%s of an unknown task: %d %s, want 404 Task not found", tt.name, r.status, r.raw)
		}
	}

	// Only the room's admin changes the setting.
	settings(bob, `{"require_worker_sessions": false}`).want(t, 403, "Admin privileges required")
	e.call(t, http.MethodPatch, room+"/board-settings", `{"require_worker_sessions": false}`).want(t, 401, "Authentication required")
	settings(ann, `{"require_worker_sessions": "no"}`).want(t, 400, "")
	if r := settings(ann, `{"require_worker_sessions": false}`).want(t, 200, ""); r.obj["require_worker_sessions"] != false ||
		r.str("manager_mode") != "manager_optional" {
		t.Fatalf("turned off = %s", r.raw)
	}
	if r := anonymous.do(t, e, http.MethodPatch, room+"/tasks/"+task, claim).want(t, 200, ""); r.str("assignee") != "pat" {
		t.Errorf("claim with sessions no longer required = %s", r.raw)
	}
	owner.do(t, e, http.MethodPatch, room+"/tasks/"+task, `{"pr_url": "https://github.com/acme/board/pull/2"}`).want(t, 200, "")

	// intent_required: intents are a session's to register, so sessions
	// are required again.
	other := newTask()
	settings(ann, `{"manager_mode": "intent_required"}`).want(t, 200, "")
	anonymous.do(t, e, http.MethodPatch, room+"/tasks/"+other, claim).wantCode(t, 403, "WORKER_SESSION_REQUIRED")
	settings(ann, `{"manager_mode": "manager_optional"}`).want(t, 200, "")

	// And back on.
	settings(ann, `{"require_worker_sessions": true}`).want(t, 200, "")
	anonymous.do(t, e, http.MethodPatch, room+"/tasks/"+other, claim).wantCode(t, 403, "WORKER_SESSION_REQUIRED")
	anonymous.do(t, e, http.MethodPatch, room+"/tasks/"+task, `{"status": "in_review"}`).wantCode(t, 401, "NOT_AUTHENTICATED")
	if r := settings(bob, "").want(t, 200, ""); r.obj["require_worker_sessions"] != true {
		t.Errorf("settings after turning it back on = %s", r.raw)
	}
}
