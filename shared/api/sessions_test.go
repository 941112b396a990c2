package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
)

// session is a registered agent session, as a test uses it.
type session struct {
	id, token, label, owner string // owner: the owner token
}

// creds are the session's credentials as body fields.
func (s session) creds() string {
	return `"agent_session_id": "` + s.id + `", "agent_session_token": "` + s.token + `"`
}

func (s session) headers() http.Header {
	return http.Header{"Authorization": {"Bearer " + s.owner}, "X-Letagents-Agent-Session-Id": {s.id}, "X-Letagents-Agent-Session-Token": {s.token}}
}

// register signs login in (once per env, cached by the caller), registers
// agent name in the directory and a session of it in room.
func (e *env) register(t *testing.T, owner, room, name, body string) session {
	t.Helper()
	e.as(t, owner, http.MethodPost, "/agents", `{"name": "`+name+`"}`).want(t, 201, "")
	e.as(t, owner, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
	r := e.as(t, owner, http.MethodPost, "/rooms/"+room+"/agent-sessions", body).want(t, 201, "")
	return session{id: r.str("session_id"), token: r.str("session_token"), label: r.str("actor_label"), owner: owner}
}

func TestAgentSessions(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	ann, bob := e.signIn(t, "ann"), e.signIn(t, "bob")
	e.as(t, ann, http.MethodPost, "/agents", `{"name": "builder", "owner_label": "Ann"}`).want(t, 201, "")
	e.as(t, ann, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")

	first := e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions",
		`{"actor_key": "ann/builder", "display_name": "Builder", "ide_label": "Codex", "runtime": "codex", "repo_branch": "main"}`).want(t, 201, "")
	if first.str("session_id") != "as_1" || len(first.str("session_token")) != 64 || first.str("actor_label") != "Builder | Ann's agent | Codex" ||
		first.str("session_kind") != "worker" || first.str("agent_key") != "ann/builder" || first.str("room_id") != "team" || first.obj["ended_at"] != nil {
		t.Fatalf("registration = %s", first.raw)
	}
	second := e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions", `{"actor_key": "ann/builder", "display_name": "Builder", "ide_label": "Codex"}`).want(t, 201, "")
	if second.str("display_name") != "Builder 1" || second.str("actor_label") != "Builder 1 | Ann's agent | Codex" || second.str("runtime") != "codex" {
		t.Errorf("second registration with the same name = %s, want Builder 1, runtime codex", second.raw)
	}
	generic := e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions", `{"actor_key": "ann/builder", "display_name": "claude", "ide_label": "Claude"}`).want(t, 201, "")
	if code, _ := actors.Codename("ann/builder"); generic.str("display_name") != code {
		t.Errorf("a generic name became %q, want the codename %q", generic.str("display_name"), code)
	}
	if e.as(t, ann, http.MethodGet, "/rooms/team/participants", "").want(t, 200, "").obj["participants"] == nil {
		t.Error("no participants list")
	}

	e.call(t, http.MethodPost, "/rooms/team/agent-sessions", `{"actor_key": "ann/builder"}`).want(t, 401, "requires authenticated owner")
	e.as(t, bob, http.MethodPost, "/rooms/team/agent-sessions", `{"actor_key": "ann/builder"}`).want(t, 403, "not owned by this account")
	e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions", `{}`).want(t, 400, "actor_key is required")
	e.as(t, ann, http.MethodPost, "/rooms/nowhere/agent-sessions", `{"actor_key": "ann/builder"}`).want(t, 404, "Room not found")

	// Sending with the session: the server signs the message.
	s := session{id: first.str("session_id"), token: first.str("session_token"), label: first.str("actor_label"), owner: ann}
	sent := e.as(t, ann, http.MethodPost, "/rooms/team/messages", `{"sender": "someone else", "text": "hi", `+s.creds()+`}`).want(t, 201, "")
	if sent.str("sender") != s.label || sent.str("source") != "agent" {
		t.Errorf("sent with a session = %s, want sender %q and source agent", sent.raw, s.label)
	}
	bad := e.as(t, ann, http.MethodPost, "/rooms/team/messages", `{"sender": "x", "text": "hi", "agent_session_id": "as_1", "agent_session_token": "`+strings.Repeat("0", 64)+`"}`)
	bad.want(t, 401, "Invalid agent session credentials")
	e.as(t, bob, http.MethodPost, "/rooms/team/messages", `{"sender": "x", "text": "hi", `+s.creds()+`}`).want(t, 401, "Invalid agent session credentials")
	// Without the owner's token the caller is at fault, not the session.
	e.call(t, http.MethodPost, "/rooms/team/messages", `{"sender": "x", "text": "hi", `+s.creds()+`}`).want(t, 401, "count only with their owner's token")
	e.as(t, ann, http.MethodPost, "/rooms/elsewhere/join", "").want(t, 200, "")
	e.as(t, ann, http.MethodPost, "/rooms/elsewhere/messages", `{"sender": "x", "text": "hi", `+s.creds()+`}`).want(t, 403, "another room")
}

func TestPresenceAndDelivery(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("cara")
	cara := e.signIn(t, "cara")
	s := e.register(t, cara, "ops", "watcher", `{"actor_key": "cara/watcher", "display_name": "Watcher"}`)
	roster := func() map[string]any {
		t.Helper()
		r := e.as(t, cara, http.MethodGet, "/rooms/ops/participants", "").want(t, 200, "")
		list, _ := r.obj["participants"].([]any)
		for _, p := range list {
			if p := p.(map[string]any); p["session_id"] == s.id {
				return p
			}
		}
		t.Fatalf("participants = %s, want the worker %s", r.raw, s.id)
		return nil
	}
	if p := roster(); p["connected"] != false || p["status"] != "idle" || p["actor_label"] != s.label {
		t.Errorf("before any poll: %v", p)
	}
	e.as(t, cara, http.MethodPost, "/rooms/ops/presence", `{"status": "working", "status_text": "fixing the build"}`).want(t, 403, "worker session is required")
	e.as(t, cara, http.MethodPost, "/rooms/ops/presence", `{"status": "napping", `+s.creds()+`}`).want(t, 400, "status must be one of")
	p := e.as(t, cara, http.MethodPost, "/rooms/ops/presence", `{"status": "working", "status_text": "fixing the build", `+s.creds()+`}`).want(t, 200, "")
	if p.str("status") != "working" || p.str("status_text") != "fixing the build" {
		t.Errorf("presence = %s", p.raw)
	}

	// A parked poll with the session's headers is an open delivery connection.
	done := make(chan reply, 1)
	go func() {
		done <- e.callWith(context.Background(), t, http.MethodGet, "/rooms/ops/messages/poll?after=msg_0&timeout=120000", "", s.headers())
	}()
	testwait.Until(t, "the parked poll to show as connected", func() bool { return roster()["connected"] == true })
	e.send(t, "ops", "someone", "wake")
	if r := testwait.Recv(t, "the woken poll", done); r.status != 200 {
		t.Fatalf("poll = %d %s", r.status, r.raw)
	}
	e.deliveryClosed(t, s.id)
	// Reachable for the reconnect grace after the poll ends, then not.
	if p := roster(); p["connected"] != true || p["status"] != "working" {
		t.Errorf("just after the poll: %v, want still connected (grace)", p)
	}
	e.clock.Advance(11 * time.Second)
	if p := roster(); p["connected"] != false {
		t.Errorf("11 s after the poll: %v, want not connected", p)
	}
	bad := s.headers()
	bad.Set("X-Letagents-Agent-Session-Token", strings.Repeat("1", 64))
	e.callWith(context.Background(), t, http.MethodGet, "/rooms/ops/messages/poll?timeout=0", "", bad).want(t, 401, "Invalid agent session credentials")
}

func TestDisconnect(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("dan")
	e.gh.AddUser("eve")
	dan, eve := e.signIn(t, "dan"), e.signIn(t, "eve")
	// dan joins first: he administers the named room.
	a := e.register(t, dan, "lab", "one", `{"actor_key": "dan/one"}`)
	b := e.register(t, eve, "lab", "two", `{"actor_key": "eve/two"}`)
	c := e.register(t, eve, "lab", "three", `{"actor_key": "eve/three"}`)

	e.as(t, eve, http.MethodPost, "/rooms/lab/agent-sessions/"+a.id+"/disconnect", `{`+b.creds()+`}`).want(t, 403, "only disconnect themselves")
	e.as(t, eve, http.MethodPost, "/rooms/lab/agent-sessions/"+a.id+"/disconnect", "").want(t, 403, "Admin privileges required")
	out := e.as(t, eve, http.MethodPost, "/rooms/lab/agent-sessions/"+b.id+"/disconnect", `{`+b.creds()+`}`).want(t, 200, "")
	sess, _ := out.obj["agent_session"].(map[string]any)
	if sess["ended_at"] == nil || out.obj["delivery_session"] == nil {
		t.Errorf("disconnect = %s", out.raw)
	}
	e.as(t, eve, http.MethodPost, "/rooms/lab/messages", `{"sender": "x", "text": "still here?", `+b.creds()+`}`).want(t, 401, "has ended")
	e.as(t, dan, http.MethodPost, "/rooms/lab/agent-sessions/"+c.id+"/disconnect", "").want(t, 200, "")
	e.as(t, dan, http.MethodPost, "/rooms/lab/agent-sessions/as_999/disconnect", "").want(t, 404, "not found")
	r := e.as(t, dan, http.MethodGet, "/rooms/lab/participants", "").want(t, 200, "")
	var list []map[string]any
	b2, _ := json.Marshal(r.obj["participants"])
	_ = json.Unmarshal(b2, &list)
	if len(list) != 1 || list[0]["session_id"] != a.id {
		t.Errorf("participants after two disconnects = %s, want only %s", r.raw, a.id)
	}
}

func TestArtifactSourceFromSession(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("fay")
	fay := e.signIn(t, "fay")
	s := e.register(t, fay, "shop", "maker", `{"actor_key": "fay/maker"}`)
	path := "/rooms/shop/artifacts"
	pr := `"kind": "pull_request", "url": "https://github.com/fay/shop/pull/1"`
	byAgent := e.as(t, fay, http.MethodPost, path, `{`+pr+`, `+s.creds()+`}`).want(t, 200, "")
	if a, _ := byAgent.obj["artifact"].(map[string]any); a["source"] != "task_workflow_artifact" {
		t.Errorf("published by a worker session = %s, want source task_workflow_artifact", byAgent.raw)
	}
	// A manual republish fills in, never downgrades the source.
	manual := e.as(t, fay, http.MethodPost, path, `{`+pr+`, "title": "Add cart"}`).want(t, 200, "")
	if a, _ := manual.obj["artifact"].(map[string]any); a["source"] != "task_workflow_artifact" || a["title"] != "Add cart" {
		t.Errorf("manual republish = %s", manual.raw)
	}
	e.as(t, fay, http.MethodPost, path, `{`+pr+`, "agent_session_id": "`+s.id+`", "agent_session_token": "`+strings.Repeat("0", 64)+`"}`).
		want(t, 401, "Invalid agent session credentials")
}

// Fields the original sends as null when they have no value are null
// here too, never "".
func TestSessionNulls(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("dee")
	dee := e.signIn(t, "dee")
	e.as(t, dee, http.MethodPost, "/agents", `{"name": "scribe"}`).want(t, 201, "")
	e.as(t, dee, http.MethodPost, "/rooms/notes/join", "").want(t, 200, "")
	tests := []struct {
		name, body       string
		instance, branch any
	}{
		{"none given", `{"actor_key": "dee/scribe"}`, nil, nil},
		{"blank", `{"actor_key": "dee/scribe", "agent_instance_id": " ", "repo_branch": ""}`, nil, nil},
		{"given", `{"actor_key": "dee/scribe", "agent_instance_id": "i-1", "repo_branch": "main"}`, "i-1", "main"},
	}
	for _, tt := range tests {
		r := e.as(t, dee, http.MethodPost, "/rooms/notes/agent-sessions", tt.body).want(t, 201, "")
		if r.obj["agent_instance_id"] != tt.instance || r.obj["repo_branch"] != tt.branch || r.str("owner_account_id") != "acct_1" {
			t.Errorf("%s: session = %s, want agent_instance_id %v, repo_branch %v, owner_account_id acct_1", tt.name, r.raw, tt.instance, tt.branch)
		}
		s := session{id: r.str("session_id"), token: r.str("session_token"), owner: dee}
		p := e.as(t, dee, http.MethodPost, "/rooms/notes/presence", `{"status": "working", `+s.creds()+`}`).want(t, 200, "")
		if v, ok := p.obj["status_text"]; !ok || v != nil {
			t.Errorf("%s: presence without text = %s, want status_text null", tt.name, p.raw)
		}
	}
}

// TestSessionRegistrationLenient pins how the original reads a
// registration: any session_kind but worker is a controller, the IDE comes
// from ide_label, else actor_label, else Agent, the runtime defaults to the
// IDE in lower case, and without a display name the session gets the
// agent's codename, not its directory name.
func TestSessionRegistrationLenient(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("gus")
	gus := e.signIn(t, "gus")
	e.as(t, gus, http.MethodPost, "/agents", `{"name": "bot", "display_name": "Directory Bot"}`).want(t, 201, "")
	e.as(t, gus, http.MethodPost, "/rooms/yard/join", "").want(t, 200, "")
	code, _ := actors.Codename("gus/bot")
	tests := []struct {
		body                        string
		kind, ide, runtime, display string
	}{
		{`"session_kind": "boss"`, "controller", "Agent", "agent", code},
		{`"session_kind": " WORKER ", "display_name": "Digger", "ide_label": "Codex"`, "worker", "Codex", "codex", "Digger"},
		{`"display_name": "Loader", "actor_label": "Loader | Gus's agent | Cursor"`, "worker", "Cursor", "cursor", "Loader"},
		{`"display_name": "Hauler", "ide_label": "Claude", "runtime": " Claude-Code "`, "worker", "Claude", "claude-code", "Hauler"},
	}
	for _, tt := range tests {
		r := e.as(t, gus, http.MethodPost, "/rooms/yard/agent-sessions", `{"actor_key": "gus/bot", `+tt.body+`}`).want(t, 201, "")
		if r.str("session_kind") != tt.kind || r.str("ide_label") != tt.ide || r.str("runtime") != tt.runtime || r.str("display_name") != tt.display {
			t.Errorf("register {%s} = %s; want kind %s, ide %s, runtime %s, display %s", tt.body, r.raw, tt.kind, tt.ide, tt.runtime, tt.display)
		}
	}
}

// TestLivePresence pins the original's live roster (GET presence) and the
// shape of its entries: only workers messages reach, or reached within
// the last 15 minutes, each with freshness, activity_state and
// source_flags.
func TestLivePresence(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("hal")
	hal := e.signIn(t, "hal")
	s := e.register(t, hal, "deck", "pilot", `{"actor_key": "hal/pilot", "display_name": "Pilot", "ide_label": "Codex"}`)
	e.register(t, hal, "deck", "idler", `{"actor_key": "hal/idler", "display_name": "Idler"}`)
	e.as(t, hal, http.MethodPost, "/rooms/deck/agent-sessions", `{"actor_key": "hal/pilot", "session_kind": "controller"}`).want(t, 201, "")
	roster := func(query string) []map[string]any {
		t.Helper()
		r := e.as(t, hal, http.MethodGet, "/rooms/deck/presence"+query, "").want(t, 200, "")
		var list []map[string]any
		raw, _ := json.Marshal(r.obj["presence"])
		_ = json.Unmarshal(raw, &list)
		if r.str("room_id") != "deck" || list == nil {
			t.Fatalf("presence = %s", r.raw)
		}
		return list
	}
	if got := roster(""); len(got) != 0 {
		t.Errorf("before any poll: %v, want nobody live", got)
	}

	p := e.as(t, hal, http.MethodPost, "/rooms/deck/presence", `{"status": " Working ", "status_text": " on it ", `+s.creds()+`}`).want(t, 200, "")
	want := map[string]any{"room_id": "deck", "actor_label": s.label, "agent_key": "hal/pilot", "agent_instance_id": nil,
		"agent_session_id": s.id, "session_kind": "worker", "runtime": "codex", "display_name": "Pilot", "ide_label": "Codex",
		"status": "working", "status_text": "on it", "freshness": "stale", "activity_state": "offline"}
	for k, v := range want {
		if p.obj[k] != v {
			t.Errorf("posted presence %s = %v, want %v", k, p.obj[k], v)
		}
	}
	if fmt.Sprint(p.obj["source_flags"]) != "[presence]" || !isTimestamp(p.str("last_heartbeat_at")) || !isTimestamp(p.str("created_at")) {
		t.Errorf("posted presence = %s", p.raw)
	}
	if got := roster(""); len(got) != 0 {
		t.Errorf("after posting, no poll yet: %v, want nobody live", got)
	}

	done := make(chan reply, 1)
	go func() {
		done <- e.callWith(context.Background(), t, http.MethodGet, "/rooms/deck/messages/poll?timeout=120000", "", s.headers())
	}()
	testwait.Until(t, "the parked poll on the live roster", func() bool { return len(roster("?limit=abc")) == 1 })
	if got := roster("")[0]; got["agent_session_id"] != s.id || got["freshness"] != "active" || got["activity_state"] != "active" ||
		fmt.Sprint(got["source_flags"]) != "[delivery presence]" {
		t.Errorf("while polling: %v", got)
	}
	e.send(t, "deck", "someone", "wake")
	testwait.Recv(t, "the woken poll", done).want(t, 200, "")
	e.deliveryClosed(t, s.id)
	e.clock.Advance(11 * time.Second)
	if got := roster(""); len(got) != 1 || got[0]["freshness"] != "stale" || got[0]["activity_state"] != "offline" {
		t.Errorf("recently offline: %v, want listed, stale", got)
	}
	e.clock.Advance(letagents.RecentlyOffline)
	if got := roster(""); len(got) != 0 {
		t.Errorf("15 minutes on: %v, want nobody live", got)
	}
}

// TestNativeActivityShown: what a worker's runtime reports (status, method,
// text) is kept, the latest report winning, and shown in the roster and
// the presence list; not before any report, and not beyond its bounds.
func TestNativeActivityShown(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("dana")
	dana := e.signIn(t, "dana")
	s := e.register(t, dana, "lab", "runner", `{"actor_key": "dana/runner", "display_name": "Runner", "runtime": "codex"}`)
	native := func(list, key string) any {
		t.Helper()
		r := e.as(t, dana, http.MethodGet, "/rooms/lab/"+list, "").want(t, 200, "")
		entries, _ := r.obj[key].([]any)
		for _, p := range entries {
			if p := p.(map[string]any); p["session_id"] == s.id || p["agent_session_id"] == s.id {
				return p["native_activity"]
			}
		}
		t.Fatalf("%s = %s, want the worker %s", list, r.raw, s.id)
		return nil
	}
	report := func(at time.Time, seq int, method, status, text string) reply {
		t.Helper()
		body := fmt.Sprintf(`{"observed_at": %q, "sequence": %d, "method": %q, "status": %q, "text": %q, %s}`,
			at.UTC().Format(time.RFC3339Nano), seq, method, status, text, s.creds())
		return e.as(t, dana, http.MethodPost, "/rooms/lab/agent-sessions/"+s.id+"/native-activity", body)
	}
	if got := native("participants", "participants"); got != nil {
		t.Errorf("before any report: native_activity = %v, want none", got)
	}
	// On the live roster (GET presence) while a poll of it is parked.
	done := make(chan reply, 1)
	go func() {
		done <- e.callWith(context.Background(), t, http.MethodGet, "/rooms/lab/messages/poll?after=msg_0&timeout=120000", "", s.headers())
	}()
	t.Cleanup(func() {
		e.send(t, "lab", "someone", "wake")
		testwait.Recv(t, "the woken poll", done)
	})
	testwait.Until(t, "the worker on the live roster", func() bool {
		r := e.as(t, dana, http.MethodGet, "/rooms/lab/presence", "").want(t, 200, "")
		return strings.Contains(r.raw, s.id)
	})
	if got := native("presence", "presence"); got != nil {
		t.Errorf("before any report: native_activity = %v, want null", got)
	}
	now := e.clock.Now()
	report(now, 1, "item/started", "working", "running go test ./...").want(t, 200, "")
	report(now.Add(-time.Second), 2, "turn/completed", "idle", "older, arriving late").want(t, 200, "")
	report(now, 3, "x", "working", strings.Repeat("x", letagents.MaxNativeText+1)).want(t, 400, "text is at most")
	want := map[string]any{"status": "working", "method": "item/started", "text": "running go test ./...",
		"observed_at": letagents.FormatTime(now)}
	for _, list := range []struct{ path, key string }{{"presence", "presence"}, {"participants", "participants"}} {
		got, _ := native(list.path, list.key).(map[string]any)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: native_activity = %v, want %v", list.path, got, want)
		}
	}
	e.clock.Advance(time.Second)
	report(e.clock.Now(), 4, "turn/completed", "blocked", "").want(t, 200, "")
	if got, _ := native("presence", "presence").(map[string]any); got["status"] != "blocked" || got["text"] != nil {
		t.Errorf("after a blocked report: native_activity = %v, want blocked with no text", got)
	}
}

// TestRosterReachedBy: a worker whose only traffic is its hooks (POST
// …/messages/unread) is on the live roster, reached "by hook", as one with
// a parked wait is "live"; one that did neither is not on it. Hook reach
// lapses HookGrace after the last run, and the worker then stays listed
// as recently offline, as a polling one does.
func TestRosterReachedBy(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("gus")
	gus := e.signIn(t, "gus")
	live := e.register(t, gus, "crew", "waiter", `{"actor_key": "gus/waiter", "display_name": "Waiter"}`)
	hooked := e.register(t, gus, "crew", "hooker", `{"actor_key": "gus/hooker", "display_name": "Hooker"}`)
	silent := e.register(t, gus, "crew", "mute", `{"actor_key": "gus/mute", "display_name": "Mute"}`)

	done := make(chan reply, 1)
	go func() {
		done <- e.callWith(context.Background(), t, http.MethodGet, "/rooms/crew/messages/poll?after=msg_0&timeout=120000", "", live.headers())
	}()
	type entry struct{ reachedBy, activity, freshness string }
	presence := func() map[string]map[string]any {
		t.Helper()
		r := e.as(t, gus, http.MethodGet, "/rooms/crew/presence", "").want(t, 200, "")
		out := map[string]map[string]any{}
		list, _ := r.obj["presence"].([]any)
		for _, p := range list {
			p := p.(map[string]any)
			out[p["agent_session_id"].(string)] = p
		}
		return out
	}
	participants := func() map[string]map[string]any {
		t.Helper()
		r := e.as(t, gus, http.MethodGet, "/rooms/crew/participants", "").want(t, 200, "")
		out := map[string]map[string]any{}
		list, _ := r.obj["participants"].([]any)
		for _, p := range list {
			if p := p.(map[string]any); p["session_id"] != nil {
				out[p["session_id"].(string)] = p
			}
		}
		return out
	}
	testwait.Until(t, "the parked poll to show as live", func() bool { return presence()[live.id]["reached_by"] == "live" })
	e.as(t, gus, http.MethodPost, "/rooms/crew/messages/unread", `{`+hooked.creds()+`}`).want(t, 200, "")

	check := func(when string, want map[string]*entry) {
		t.Helper()
		pr, pa := presence(), participants()
		for _, s := range []session{live, hooked, silent} {
			w := want[s.id]
			p, on := pr[s.id]
			switch {
			case w == nil && on:
				t.Errorf("%s: %s is on the roster: %v; want it left out", when, s.label, p)
			case w == nil:
			case !on:
				t.Errorf("%s: %s is not on the roster; want %+v", when, s.label, *w)
			default:
				got := entry{reachedBy: fmt.Sprint(p["reached_by"]), activity: fmt.Sprint(p["activity_state"]), freshness: fmt.Sprint(p["freshness"])}
				if got != *w {
					t.Errorf("%s: %s on the roster = %+v; want %+v (%v)", when, s.label, got, *w, p)
				}
				if pp := pa[s.id]; fmt.Sprint(pp["reached_by"]) != w.reachedBy || fmt.Sprint(pp["activity_state"]) != w.activity {
					t.Errorf("%s: %s among the participants = reached_by %v, activity %v; want %s, %s", when, s.label,
						pp["reached_by"], pp["activity_state"], w.reachedBy, w.activity)
				}
			}
		}
	}
	const none = "<nil>" // reached_by left out
	check("a parked wait and a hook run", map[string]*entry{
		live.id:   {"live", "away", "active"},
		hooked.id: {"hook", "away", "active"},
	})
	if flags := fmt.Sprint(presence()[hooked.id]["source_flags"]); !strings.Contains(flags, "hook") || strings.Contains(flags, "delivery") {
		t.Errorf("the hook-only worker's source_flags = %s; want hook and no delivery", flags)
	}
	e.send(t, "crew", "someone", "wake")
	if r := testwait.Recv(t, "the woken poll", done); r.status != 200 {
		t.Fatalf("poll = %d %s", r.status, r.raw)
	}
	e.deliveryClosed(t, live.id)
	e.clock.Advance(letagents.HookGrace + time.Second)
	check("past the grace of both", map[string]*entry{
		live.id:   {none, "offline", "stale"},
		hooked.id: {none, "offline", "stale"},
	})
	e.clock.Advance(letagents.RecentlyOffline)
	check("past recently offline", nil)
}
