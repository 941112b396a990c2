package server

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/mcp/visibility"
	"github.com/letagents/letagents-go/shared/github/githubtest"
)

// What clients of the original server send: its arguments of both
// versions (0.11, 0.12), arguments it ignored, and arguments of tools it
// did not declare.

func TestWaitFor(t *testing.T) {
	t.Parallel()
	ms := func(v float64) *float64 { return &v }
	const pollMax = 180 * time.Second
	tests := []struct {
		name    string
		timeout *float64
		pollMax time.Duration
		want    time.Duration
	}{
		{"none: the default", nil, pollMax, defaultWait},
		{"0: the default, as the original", ms(0), pollMax, defaultWait},
		{"the default within a small cap", nil, 2 * time.Second, 2 * time.Second},
		{"a fraction is cut", ms(1500.9), pollMax, 1500 * time.Millisecond},
		{"under a second: a second", ms(0.5), pollMax, minWait},
		{"negative: a second, as the original", ms(-5), pollMax, minWait},
		{"over the cap: the cap", ms(9e6), pollMax, pollMax},
		{"huge: the cap, no overflow", ms(1e300), pollMax, pollMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := waitFor(tt.timeout, tt.pollMax); got != tt.want {
				t.Errorf("waitFor = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUnknownArgumentsIgnored: no tool's schema refuses an argument it
// does not know, as the original's did not.
func TestUnknownArgumentsIgnored(t *testing.T) {
	t.Parallel()
	s := &Server{}
	var list []mcp.Tool
	for _, st := range s.tools() {
		list = append(list, st.Tool)
	}
	v, err := newValidator(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list {
		var req mcp.CallToolRequest
		req.Params.Name = tl.Name
		req.Params.Arguments = map[string]any{"no_such_argument": 1, "conversation_id": "c-1"}
		// Required arguments left out may be missing; the unknown one
		// must not be what is wrong.
		if msg := check(v.schemas[tl.Name], req); strings.Contains(msg, "no_such_argument") || strings.Contains(msg, "additional") {
			t.Errorf("%s refuses an unknown argument: %s", tl.Name, msg)
		}
	}
}

// TestOriginalArgumentShapes drives a room's work with the arguments the
// original's clients send, each call also carrying an argument nobody
// knows: every call does what it would without them.
func TestOriginalArgumentShapes(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/app", false)
	a := newAgent(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "builder"})
	a.signIn(t, b, "ann")
	b.gh.Grant("acme/app", "ann", "admin") // the joiner becomes the room's admin, who may accept tasks
	const room = "github.com/acme/app"
	a.call(t, "join_room", map[string]any{"name": room}).ok(t)
	sess := a.call(t, "register_agent_session", map[string]any{"room_id": room, "session_kind": "worker", "runtime": "codex"}).ok(t)
	label := sess.obj["agent_session"].(map[string]any)["actor_label"].(string)
	sid := sess.str("agent_session_id")

	var sent string
	pr := "https://github.com/acme/app/pull/2"
	steps := []struct {
		tool  string
		args  map[string]any
		check func(t *testing.T, r answer)
	}{
		{"get_current_room", map[string]any{"conversation_id": "conv-1"}, func(t *testing.T, r answer) {
			if r.obj["connected"] != true || r.str("room_id") != room {
				t.Errorf("= %s; want connected to %s", r.raw, room)
			}
		}},
		// 0.11: no session, a sender and a conversation of its own.
		{"send_message", map[string]any{"room_id": room, "sender": "Impostor", "text": "hello", "conversation_id": "conv-1"}, func(t *testing.T, r answer) {
			if sent = r.str("id"); r.str("sender") != label {
				t.Errorf("sender = %q; want the session's %q, the sender argument ignored", r.str("sender"), label)
			}
		}},
		{"read_messages", map[string]any{"room_id": room}, func(t *testing.T, r answer) {
			if len(r.list("messages")) == 0 {
				t.Errorf("= %s; want the message sent", r.raw)
			}
		}},
		// A fractional timeout, as the original's number took.
		{"wait_for_messages", map[string]any{"room_id": room, "after_message_id": "msg_0", "timeout": 1500.5, "agent_session_id": sid}, func(t *testing.T, r answer) {
			if len(r.list("messages")) == 0 {
				t.Errorf("= %s; want the backlog", r.raw)
			}
		}},
		{"post_status", map[string]any{"sender": "Impostor", "status": "reviewing PR #2", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid},
			func(t *testing.T, r answer) {
				if r.str("status_posted") != "reviewing" || r.str("sender") != label {
					t.Errorf("= %s; want reviewing, sent as %q", r.raw, label)
				}
			}},
		{"add_task", map[string]any{"title": "Fix login", "description": "the form", "created_by": "Impostor", "source_message_id": "msg_1",
			"room_id": room, "conversation_id": "conv-1", "agent_session_id": sid}, func(t *testing.T, r answer) {
			if task := r.result(t); task["id"] != "task_1" || task["created_by"] != label {
				t.Errorf("= %s; want task_1 created by %q", r.raw, label)
			}
		}},
		{"get_board", map[string]any{"open_only": true, "room_id": room}, nil},
		{"update_task", map[string]any{"task_id": "task_1", "status": "accepted", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid}, nil},
		{"claim_task", map[string]any{"task_id": "task_1", "assignee": "Impostor", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid},
			func(t *testing.T, r answer) {
				if task := r.result(t); task["status"] != "assigned" || task["assignee"] != label {
					t.Errorf("= %s; want assigned to %q, the assignee argument ignored", r.raw, label)
				}
			}},
		{"release_task_lease", map[string]any{"task_id": "task_1", "reason": "lunch", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid}, nil},
		{"claim_task", map[string]any{"task_id": "task_1"}, nil},
		// 0.12: workflow artifacts with the null fields its schema took.
		{"update_task", map[string]any{"task_id": "task_1", "status": "in_progress", "pr_url": pr, "room_id": room, "conversation_id": "conv-1",
			"agent_session_id": sid, "workflow_artifacts": []any{
				map[string]any{"provider": "github", "kind": "branch", "ref": "fix-login", "id": nil, "number": nil, "title": nil, "url": nil, "state": nil},
				map[string]any{"provider": "github", "kind": "pull_request", "number": 2, "url": pr, "title": "Fix login", "state": "open"},
			}}, func(t *testing.T, r answer) {
			if got, _ := r.obj["workflow_artifacts"].([]any); len(got) != 2 || r.result(t)["status"] != "in_progress" {
				t.Errorf("= %s; want in_progress and both artifacts published", r.raw)
			}
		}},
		{"get_room_artifacts", map[string]any{"task_id": "task_1", "room_id": room}, func(t *testing.T, r answer) {
			if arts := r.list("artifacts"); len(arts) != 2 {
				t.Errorf("= %s; want the task's two workflow artifacts", r.raw)
			}
		}},
		{"complete_task", map[string]any{"task_id": "task_1", "pr_url": pr, "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid},
			func(t *testing.T, r answer) {
				if r.result(t)["status"] != "in_review" {
					t.Errorf("= %s; want in_review", r.raw)
				}
			}},
		{"check_repo", map[string]any{"cwd": t.TempDir()}, nil},
		{"get_onboarding_status", map[string]any{"cwd": t.TempDir()}, nil},
		{"resume_room_session", map[string]any{"room_id": room}, nil},
	}
	for i, st := range steps {
		st.args["no_such_argument"] = map[string]any{"from": "a newer client"}
		r := a.call(t, st.tool, st.args)
		if r.isError {
			t.Fatalf("step %d, %s(%v) = %s; want success", i, st.tool, st.args, r.raw)
		}
		if st.check != nil {
			st.check(t, r)
		}
	}
	if sent == "" {
		t.Fatal("nothing was sent")
	}

	// The API may refuse these here (one's own task, a target not
	// listening), but never for the arguments' sake.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"claim_task_review", map[string]any{"task_id": "task_1", "reason": "mine", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid}},
		{"release_task_review", map[string]any{"task_id": "task_1", "lease_id": "tl_0", "reason": "x", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid}},
		{"handoff_task_lease", map[string]any{"task_id": "task_1", "target_agent_key": "ann/other", "target_actor_instance_id": "i-1",
			"target_agent_session_id": "as_99", "lease_id": "tl_0", "reason": "x", "room_id": room, "conversation_id": "conv-1", "agent_session_id": sid}},
	} {
		r := a.call(t, c.tool, c.args)
		if strings.Contains(r.raw, "invalid arguments") || r.isError && r.obj["status"] == nil {
			t.Errorf("%s(%v) = %s; want the API's own answer", c.tool, c.args, r.raw)
		}
	}
}

func TestSetAgentName(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	a := newAgent(t, b, "", nil) // a codename
	a.call(t, "join_room", map[string]any{"name": "names"}).ok(t)
	identityOf := func(r answer) map[string]any { id, _ := r.obj["agent_identity"].(map[string]any); return id }
	codename := identityOf(a.call(t, "get_current_room", nil).ok(t))["display_name"]

	a.call(t, "set_agent_name", map[string]any{"name": "Builder Bot"}).failed(t, "Authentication required")
	a.signIn(t, b, "ann")
	a.call(t, "set_agent_name", map[string]any{"name": "  x  "}).failed(t, "between 2 and 64")
	a.call(t, "set_agent_name", map[string]any{"name": "!!"}).failed(t, "no letters or digits")

	// For one conversation: remembered, not registered.
	scoped := a.call(t, "set_agent_name", map[string]any{"name": "Scout", "conversation_id": "c-1"}).ok(t)
	if id := identityOf(scoped); id["display_name"] != "Scout" || id["canonical_key"] != nil {
		t.Errorf("scoped rename = %s; want Scout, unregistered", scoped.raw)
	}
	if id := identityOf(a.call(t, "get_current_room", map[string]any{"conversation_id": "c-1"}).ok(t)); id["display_name"] != "Scout" {
		t.Errorf("in conversation c-1 the identity is %v; want Scout", id)
	}
	if id := identityOf(a.call(t, "get_current_room", nil).ok(t)); id["display_name"] != codename {
		t.Errorf("outside the conversation the identity is %v; want the codename %v", id, codename)
	}

	// For the agent: registered in the directory, used for writes, kept.
	renamed := a.call(t, "set_agent_name", map[string]any{"name": "Builder Bot"}).ok(t)
	if id := identityOf(renamed); id["display_name"] != "Builder Bot" || id["canonical_key"] != "ann/builder-bot" ||
		!strings.Contains(renamed.str("message"), "Builder Bot") {
		t.Fatalf("rename = %s; want Builder Bot, registered as ann/builder-bot", renamed.raw)
	}
	if sent := a.call(t, "send_message", map[string]any{"text": "hi"}).ok(t); !strings.HasPrefix(sent.str("sender"), "Builder Bot | ") {
		t.Errorf("sent as %q; want the new name", sent.str("sender"))
	}
	var me struct {
		Agents []struct {
			Name string `json:"name"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(getJSON(t, b, "/agents/me", a), &me); err != nil {
		t.Fatal(err)
	}
	names := fmt.Sprint(me.Agents)
	if !strings.Contains(names, "builder-bot") || strings.Contains(names, "scout") {
		t.Errorf("agents directory = %s; want builder-bot and not the conversation's scout", names)
	}
	saved, _ := readState(t, a.state)["agent_identities"].(map[string]any)["test-"+t.Name()].(map[string]any)
	if saved["name"] != "builder-bot" || saved["display_name"] != "Builder Bot" {
		t.Errorf("saved identity = %v; want builder-bot for the next start", saved)
	}

	// The original kept twenty conversations' names, forgetting the oldest.
	for i := range maxConversations {
		a.call(t, "set_agent_name", map[string]any{"name": fmt.Sprintf("Helper %d", i), "conversation_id": fmt.Sprintf("more-%d", i)}).ok(t)
	}
	if id := identityOf(a.call(t, "get_current_room", map[string]any{"conversation_id": "c-1"}).ok(t)); id["display_name"] != "Builder Bot" {
		t.Errorf("after %d newer conversations, c-1's identity is %v; want it forgotten (Builder Bot)", maxConversations, id)
	}
	if id := identityOf(a.call(t, "get_current_room", map[string]any{"conversation_id": "more-0"}).ok(t)); id["display_name"] != "Helper 0" {
		t.Errorf("conversation more-0's identity is %v; want Helper 0", id)
	}
}

func TestCheckRepoVisibility(t *testing.T) {
	t.Parallel()
	gh := githubtest.New(t)
	gh.AddRepo("acme/open", false)
	gh.AddRepo("acme/closed", true)
	a := newAgent(t, newBackend(t, false), "", nil)
	a.srv.visibility = visibility.Checker{GitHubAPI: gh.Config().APIURL}
	repo := func(remote string) string {
		dir := t.TempDir()
		git := func(args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("init", "-q", "-b", "main")
		if remote != "" {
			git("remote", "add", "origin", remote)
		}
		return dir
	}
	tests := []struct {
		name, remote      string
		key, vis, roomTyp string
	}{
		{"public", "git@github.com:Acme/Open.git", "github.com/acme/open", "public", "discoverable"},
		{"private", "https://github.com/acme/closed", "github.com/acme/closed", "private", "invite"},
		{"another host", "https://git.example.com/acme/open.git", "git.example.com/acme/open", "unknown", "invite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := a.call(t, "check_repo_visibility", map[string]any{"cwd": repo(tt.remote)}).ok(t)
			if r.str("canonicalKey") != tt.key || r.str("visibility") != tt.vis || r.str("roomType") != tt.roomTyp {
				t.Errorf("= %s; want %s %s, room type %s", r.raw, tt.key, tt.vis, tt.roomTyp)
			}
		})
	}
	a.call(t, "check_repo_visibility", map[string]any{"cwd": repo("")}).failed(t, "no remote configured")
	a.call(t, "check_repo_visibility", nil).failed(t, "no remote configured") // the agent's directory is no repository
}
