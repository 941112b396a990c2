package api_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	sessionKeys = []string{"actor_label", "agent_key", "anchor_message_id", "closed_at", "created_at", "id", "latest_payload", "room_id",
		"status", "summary", "task_id", "updated_at"}
	updateKeys = []string{"actor_label", "created_at", "id", "milestone", "payload", "room_id", "session_id", "status", "summary"}
	rsID       = regexp.MustCompile(`^rs_[0-9a-f]{32}$`)
	ruID       = regexp.MustCompile(`^ru_[0-9a-f]{32}$`)
)

// object is key of r's answer as a JSON object, checked to have exactly
// keys (0.12.9's shape), its payloads re-encoded compactly.
func object(t *testing.T, r reply, key string, keys []string) map[string]any {
	t.Helper()
	o, ok := r.obj[key].(map[string]any)
	if !ok {
		t.Fatalf("no %s object in %s", key, r.raw)
	}
	var got []string
	for k := range o {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, keys) {
		t.Fatalf("%s has keys %v, want %v", key, got, keys)
	}
	return o
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// code is the machine-readable code of an error answer.
func (r reply) code() string { return r.str("code") }

// TestReasoningRoutes pins 0.12.9's answers to the same requests: the
// shapes of sessions and updates, the trimming and copying of fields, and
// its refusals with their statuses.
func TestReasoningRoutes(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_REPO_ACCESS": "open"})
	e.gh.AddUser("ann")
	ann := e.signIn(t, "ann")
	const room = "github.com/brosincode/letagents"
	w := e.register(t, ann, room, "builder", `{"actor_key": "ann/builder", "display_name": "Builder", "ide_label": "Codex"}`)
	base := "/rooms/" + room + "/reasoning-sessions"

	// 0.12.9's "reasoning creation normalizes optional ids and structured
	// snapshot fields", anonymously: the body names the actor.
	created := e.call(t, http.MethodPost, base, `{"task_id": " task_5 ", "anchor_message_id": " msg_200 ",
		"actor_label": " LakeAnchor | EmmyMay's agent | Agent ", "agent_key": " EmmyMay/lakeanchor ",
		"summary": "auditing coverage", "goal": "cover reasoning streaming", "blocker": " ", "status": "working", "confidence": "0.6"}`).want(t, 201, "")
	s := object(t, created, "session", sessionKeys)
	u := object(t, created, "update", updateKeys)
	wantPayload := `{"blocker":null,"confidence":0.6,"goal":"cover reasoning streaming","status":"working","summary":"auditing coverage"}`
	if created.str("room_id") != room || !rsID.MatchString(s["id"].(string)) || s["room_id"] != room || s["task_id"] != "task_5" ||
		s["anchor_message_id"] != "msg_200" || s["actor_label"] != "LakeAnchor | EmmyMay's agent | Agent" || s["agent_key"] != "EmmyMay/lakeanchor" ||
		s["status"] != "working" || s["summary"] != "auditing coverage" || compact(t, s["latest_payload"]) != wantPayload ||
		!isTimestamp(s["created_at"].(string)) || s["updated_at"] != s["created_at"] || s["closed_at"] != nil {
		t.Fatalf("session = %s", created.raw)
	}
	if !ruID.MatchString(u["id"].(string)) || u["session_id"] != s["id"] || u["room_id"] != room || u["actor_label"] != s["actor_label"] ||
		u["status"] != "working" || u["summary"] != "auditing coverage" || u["milestone"] != nil || compact(t, u["payload"]) != wantPayload ||
		u["created_at"] != s["created_at"] {
		t.Fatalf("update = %s", created.raw)
	}
	id := s["id"].(string)
	// The payload keeps the original's key order.
	if !strings.Contains(created.raw, `"latest_payload":{"summary":"auditing coverage","goal":"cover reasoning streaming","blocker":null,"status":"working","confidence":0.6}`) {
		t.Errorf("payload order in %s", created.raw)
	}

	// A worker writes as itself, whatever the body says.
	signed := e.as(t, ann, http.MethodPost, base, `{"actor_label": "Someone Else", "agent_key": "x/y", "summary": "mine", `+w.creds()+`}`).want(t, 201, "")
	if ss := object(t, signed, "session", sessionKeys); ss["actor_label"] != w.label || ss["agent_key"] != "ann/builder" || ss["task_id"] != nil {
		t.Errorf("worker's session = %s", signed.raw)
	}
	headers := w.headers()
	viaHeaders := e.callWith(t.Context(), t, http.MethodPost, base, `{"summary": "from headers"}`, headers).want(t, 201, "")
	if object(t, viaHeaders, "session", sessionKeys)["actor_label"] != w.label {
		t.Errorf("session with header credentials = %s", viaHeaders.raw)
	}

	for _, c := range []struct {
		name, token, method, path, body string
		status                          int
		msg, code                       string
	}{
		{"no actor", "", http.MethodPost, base, `{"summary": "auditing coverage"}`, 400, "actor_label is required", ""},
		{"blank actor", "", http.MethodPost, base, `{"actor_label": "  ", "summary": "s"}`, 400, "actor_label is required", ""},
		{"actor not a string", "", http.MethodPost, base, `{"actor_label": 5, "summary": "s"}`, 400, "actor_label is required", ""},
		{"no body", "", http.MethodPost, base, ``, 400, "actor_label is required", ""},
		{"server's name", "", http.MethodPost, base, `{"actor_label": "LetAgents", "summary": "s"}`, 400, "reserved", ""},
		{"no summary", "", http.MethodPost, base, `{"actor_label": "a"}`, 400, "summary is required", ""},
		// Checked as a message's sender is: nobody writes as another account's agent.
		{"another account's agent", "", http.MethodPost, base, `{"actor_label": "` + w.label + `", "summary": "s"}`, 403, "another account's agent", ""},
		{"update: another account's agent", "", http.MethodPost, base + "/" + id + "/updates", `{"actor_label": "` + w.label + `", "summary": "s"}`, 403, "another account's agent", ""},
		{"bad status", "", http.MethodPost, base, `{"actor_label": "a", "summary": "s", "status": "sleeping"}`, 400, "status must be one of: idle, working, reviewing, blocked", ""},
		{"bad confidence", "", http.MethodPost, base, `{"actor_label": "a", "summary": "s", "confidence": 2}`, 400, "confidence must be a number between 0 and 1", ""},
		{"long task id", "", http.MethodPost, base, `{"actor_label": "a", "summary": "s", "task_id": "` + strings.Repeat("t", 201) + `"}`, 400, "task_id is longer than 200 bytes", ""},
		{"not an object", "", http.MethodPost, base, `["summary"]`, 400, "JSON object", ""},
		{"owner token without a worker", ann, http.MethodPost, base, `{"actor_label": "a", "summary": "s"}`, 403,
			"Registered worker session is required for agent write actions.", "WORKER_SESSION_REQUIRED"},
		{"bad worker credentials", ann, http.MethodPost, base, `{"summary": "s", "agent_session_id": "` + w.id + `", "agent_session_token": "nope"}`, 401,
			"Invalid agent session credentials.", "AGENT_SESSION_INVALID"},
		{"missing room", "", http.MethodPost, "/rooms/nowhere/reasoning-sessions", `{"actor_label": "a", "summary": "s"}`, 404, "Room not found", "ROOM_NOT_FOUND"},

		{"update: no summary, before the session is looked up", "", http.MethodPost, base + "/rs_missing/updates", `{"actor_label": "a"}`, 400, "summary is required", ""},
		{"update: missing session", "", http.MethodPost, base + "/rs_missing/updates", `{"actor_label": "LakeAnchor | EmmyMay's agent | Agent", "summary": "checking for a missing session"}`,
			404, "Reasoning session not found", ""},
		{"update: owner token without a worker", ann, http.MethodPost, base + "/" + id + "/updates", `{"summary": "s"}`, 403, "Registered worker session", "WORKER_SESSION_REQUIRED"},
		{"update: missing room", "", http.MethodPost, "/rooms/nowhere/reasoning-sessions/" + id + "/updates", `{"summary": "s"}`, 404, "Room not found", "ROOM_NOT_FOUND"},

		{"patch: nothing to change", "", http.MethodPatch, base + "/rs_9", `{}`, 400, "task_id, anchor_message_id, or closed_at is required", ""},
		{"patch: snapshot fields are not changes", "", http.MethodPatch, base + "/" + id, `{"summary": "s"}`, 400, "task_id, anchor_message_id, or closed_at is required", ""},
		{"patch: bad time", "", http.MethodPatch, base + "/" + id, `{"closed_at": "soon"}`, 400, "closed_at must be a time", ""},
		{"patch: missing session", "", http.MethodPatch, base + "/rs_missing", `{"task_id": "task_1"}`, 404, "Reasoning session not found", ""},
		{"patch: owner token without a worker", ann, http.MethodPatch, base + "/" + id, `{"task_id": "task_1"}`, 403, "Registered worker session", "WORKER_SESSION_REQUIRED"},

		{"detail: missing session", "", http.MethodGet, base + "/rs_missing", "", 404, "Reasoning session not found", ""},
		{"detail: missing room", "", http.MethodGet, "/rooms/nowhere/reasoning-sessions/" + id, "", 404, "Room not found", "ROOM_NOT_FOUND"},
		{"list: missing room", "", http.MethodGet, "/rooms/nowhere/reasoning", "", 404, "Room not found", "ROOM_NOT_FOUND"},
	} {
		var r reply
		if c.token != "" {
			r = e.as(t, c.token, c.method, c.path, c.body)
		} else {
			r = e.call(t, c.method, c.path, c.body)
		}
		if r.status != c.status || !strings.Contains(r.str("error"), c.msg) || r.code() != c.code {
			t.Errorf("%s: %s %s = %d %s; want %d %q code %q", c.name, c.method, c.path, r.status, r.raw, c.status, c.msg, c.code)
		}
	}

	// Appending: sparse snapshots merge; the writer is the body's label,
	// else the session's actor.
	up := e.call(t, http.MethodPost, base+"/"+id+"/updates", `{"summary": "checking stream wiring", "milestone": "routes done", "status": "Reviewing"}`).want(t, 201, "")
	s, u = object(t, up, "session", sessionKeys), object(t, up, "update", updateKeys)
	if s["status"] != "reviewing" || s["summary"] != "checking stream wiring" || compact(t, s["latest_payload"]) != `{"blocker":null,"confidence":0.6,"goal":"cover reasoning streaming","milestone":"routes done","status":"reviewing","summary":"checking stream wiring"}` ||
		u["actor_label"] != "LakeAnchor | EmmyMay's agent | Agent" || u["milestone"] != "routes done" ||
		compact(t, u["payload"]) != `{"milestone":"routes done","status":"reviewing","summary":"checking stream wiring"}` {
		t.Errorf("after an update = %s", up.raw)
	}
	byOther := e.call(t, http.MethodPost, base+"/"+id+"/updates", `{"summary": "second opinion", "actor_label": " Reviewer "}`).want(t, 201, "")
	if u := object(t, byOther, "update", updateKeys); u["actor_label"] != "Reviewer" || u["status"] != "reviewing" {
		t.Errorf("update by another = %s", byOther.raw)
	}
	byWorker := e.as(t, ann, http.MethodPost, base+"/"+id+"/updates", `{"summary": "worker's", "actor_label": "Nobody", `+w.creds()+`}`).want(t, 201, "")
	if u := object(t, byWorker, "update", updateKeys); u["actor_label"] != w.label {
		t.Errorf("update by the worker = %s", byWorker.raw)
	}

	// Reading: the detail has every update, oldest first, ?limit of them.
	detail := e.call(t, http.MethodGet, base+"/"+id, "").want(t, 200, "")
	object(t, detail, "session", sessionKeys)
	ups, _ := detail.obj["updates"].([]any)
	if detail.str("room_id") != room || len(ups) != 4 || ups[0].(map[string]any)["summary"] != "auditing coverage" ||
		ups[3].(map[string]any)["summary"] != "worker's" {
		t.Errorf("detail = %s", detail.raw)
	}
	if ups := e.call(t, http.MethodGet, base+"/"+id+"?limit=2", "").want(t, 200, "").obj["updates"].([]any); len(ups) != 2 {
		t.Errorf("detail ?limit=2 has %d updates", len(ups))
	}

	// Changing and closing.
	patched := e.call(t, http.MethodPatch, base+"/"+id, `{"task_id": " task_9 ", "anchor_message_id": null}`).want(t, 200, "")
	if ps := object(t, patched, "session", sessionKeys); patched.str("room_id") != room || ps["task_id"] != "task_9" || ps["anchor_message_id"] != nil ||
		ps["closed_at"] != nil || patched.obj["update"] != nil {
		t.Errorf("patched = %s", patched.raw)
	}
	closed := e.call(t, http.MethodPatch, base+"/"+id, `{"closed_at": "2026-04-22T15:00:00Z"}`).want(t, 200, "")
	if cs := object(t, closed, "session", sessionKeys); cs["closed_at"] != "2026-04-22T15:00:00.000Z" {
		t.Errorf("closed = %s", closed.raw)
	}

	// Listing: open sessions by default, newest change first, filters trimmed.
	list := func(path string) []string {
		t.Helper()
		r := e.call(t, http.MethodGet, path, "").want(t, 200, "")
		if r.str("room_id") != room {
			t.Errorf("%s: room_id in %s", path, r.raw)
		}
		if _, cut := r.obj["has_more"]; cut {
			t.Errorf("%s: has_more in an answer that was not cut: %s", path, r.raw)
		}
		var got []string
		for _, x := range r.obj["sessions"].([]any) {
			got = append(got, x.(map[string]any)["summary"].(string))
		}
		return got
	}
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/rooms/" + room + "/reasoning", []string{"from headers", "mine"}},
		{base, []string{"from headers", "mine"}},
		{base + "?open=false", []string{"worker's", "from headers", "mine"}},
		{base + "?open=0", []string{"from headers", "mine"}}, // only "false" shows closed ones, as in 0.12.9
		{base + "?open=false&task_id=%20task_9%20", []string{"worker's"}},
		{base + "?actor_label=%20" + strings.ReplaceAll(w.label, " ", "%20") + "%20&limit=1", []string{"from headers"}},
		{base + "?actor_label=nobody", nil},
		{"/rooms/" + strings.ReplaceAll(room, "/", "%2F") + "/reasoning", []string{"from headers", "mine"}},
	} {
		if got := list(c.path); !slices.Equal(got, c.want) {
			t.Errorf("%s = %v, want %v", c.path, got, c.want)
		}
	}

	// A session is found only in its own room.
	e.join(t, "elsewhere")
	e.call(t, http.MethodGet, "/rooms/elsewhere/reasoning-sessions/"+id, "").want(t, 404, "Reasoning session not found")
	e.call(t, http.MethodPost, "/rooms/elsewhere/reasoning-sessions/"+id+"/updates", `{"summary": "s"}`).want(t, 404, "Reasoning session not found")
}

// GitHub events come from webhooks, which this service does not take: the
// route answers 0.12.9's shape with none, on the repository's lane.
func TestRoomEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	branch := "git-room:github.com:acme/app:branch:ZmVhdHVyZQ"
	e.join(t, branch)
	for _, c := range []struct{ room, lane string }{
		{"github.com/acme/app", "github.com/acme/app"},
		{branch, "github.com/acme/app"},
	} {
		r := e.call(t, http.MethodGet, "/rooms/"+c.room+"/events?event_type=pull_request&limit=5", "").want(t, 200, "")
		if r.str("room_id") != c.room || r.str("github_room_id") != c.lane || r.obj["has_more"] != false ||
			!strings.Contains(r.raw, `"events":[]`) {
			t.Errorf("events of %s = %s", c.room, r.raw)
		}
	}
	e.call(t, http.MethodGet, "/rooms/nowhere/events", "").want(t, 404, "Room not found")
}
