package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"
)

// intentRoom is a room whose admin is ann (she joined first) with a worker
// session of bob's, who is only a participant.
func intentRoom(t *testing.T, room string) (e *env, ann, bob string, worker session) {
	t.Helper()
	e = newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	ann, bob = e.signIn(t, "ann"), e.signIn(t, "bob")
	if r := e.as(t, ann, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Fatalf("ann's join = %s, want admin", r.raw)
	}
	worker = e.register(t, bob, room, "builder", `{"actor_key": "bob/builder", "display_name": "Builder"}`)
	return e, ann, bob, worker
}

func TestBoardSettingsHTTP(t *testing.T) {
	t.Parallel()
	e, ann, bob, _ := intentRoom(t, "board")
	got := e.call(t, http.MethodGet, "/rooms/board/board-settings", "").want(t, 200, "")
	if got.str("room_id") != "board" || got.str("manager_mode") != "manager_optional" || got.num("intent_ttl_seconds") != 900 {
		t.Fatalf("default settings = %s", got.raw)
	}
	e.call(t, http.MethodPatch, "/rooms/board/board-settings", `{"manager_mode": "intent_required"}`).want(t, 401, "Authentication required")
	e.as(t, bob, http.MethodPatch, "/rooms/board/board-settings", `{"manager_mode": "intent_required"}`).want(t, 403, "Admin privileges required")
	for _, body := range []string{`{"manager_mode": "anarchy"}`, `{}`, `{"manager_mode": 3}`, `{"intent_ttl_seconds": 5}`, `{"intent_ttl_seconds": 9223372036854775807}`, `not json`} {
		e.as(t, ann, http.MethodPatch, "/rooms/board/board-settings", body).want(t, 400, "")
	}
	set := e.as(t, ann, http.MethodPatch, "/rooms/board/board-settings", `{"manager_mode": "intent_required"}`).want(t, 200, "")
	if set.str("manager_mode") != "intent_required" || set.num("intent_ttl_seconds") != 900 {
		t.Errorf("PATCH answer = %s", set.raw)
	}
	e.as(t, ann, http.MethodPatch, "/rooms/board/board-settings", `{"intent_ttl_seconds": 120}`).want(t, 200, "")
	if got := e.as(t, bob, http.MethodGet, "/rooms/board/board-settings", "").want(t, 200, ""); got.str("manager_mode") != "intent_required" ||
		got.num("intent_ttl_seconds") != 120 {
		t.Errorf("settings after PATCH = %s", got.raw)
	}
	e.call(t, http.MethodGet, "/rooms/nowhere/board-settings", "").want(t, 404, "Room not found")
	e.as(t, ann, http.MethodPatch, "/rooms/nowhere/board-settings", `{"manager_mode": "off"}`).want(t, 404, "Room not found")
}

func TestBoardIntentsHTTP(t *testing.T) {
	t.Parallel()
	e, ann, bob, w := intentRoom(t, "board")
	post := func(body string) reply {
		t.Helper()
		return e.as(t, bob, http.MethodPost, "/rooms/board/board-intents", body)
	}

	// Registering: a worker session is the proposer; the payload is
	// rebuilt in its canonical form and hashed.
	e.as(t, bob, http.MethodPost, "/rooms/board/board-intents", `{"action": "task_create", "payload": {"title": "x"}}`).
		want(t, 403, "worker session is required")
	first := post(`{"action": "task_create", "payload": {"title": "  Fix the build ", "description": ""}, "reason": "CI is red", `+w.creds()+`}`).want(t, 201, "")
	canonical := `{"title":"Fix the build","description":null,"source_message_id":null}`
	sum := sha256.Sum256([]byte(canonical))
	created, _ := time.Parse(time.RFC3339Nano, first.str("created_at"))
	expires, _ := time.Parse(time.RFC3339Nano, first.str("expires_at"))
	if first.str("id") != "bi_1" || first.str("room_id") != "board" || first.str("action") != "task_create" || first.str("status") != "pending" ||
		first.str("payload_hash") != hex.EncodeToString(sum[:]) || first.str("proposer_session_id") != w.id ||
		first.str("proposer_actor_label") != w.label || first.str("proposer_agent_key") != "bob/builder" || first.str("reason") != "CI is red" ||
		first.obj["decided_by"] != nil || first.obj["decided_at"] != nil || first.obj["approval_token"] != nil || expires.Sub(created) != 15*time.Minute {
		t.Fatalf("registered intent = %s", first.raw)
	}
	if !strings.Contains(first.raw, `"payload":`+canonical) {
		t.Errorf("payload not canonical in %s", first.raw)
	}
	// The same payload, spelled differently, is the same pending intent.
	again := post(`{"action": "task_create", "payload": {"source_message_id": null, "title": "Fix the build", "description": null}, `+w.creds()+`}`).want(t, 200, "")
	if again.str("id") != "bi_1" {
		t.Errorf("the same intent again = %s, want bi_1", again.raw)
	}

	for _, c := range []struct{ name, body, msg string }{
		{"unknown action", `{"action": "task_delete", "payload": {"task_id": "task_1"}`, "action must be one of"},
		{"no payload", `{"action": "task_create"`, "payload is required"},
		{"null payload", `{"action": "task_create", "payload": null`, "payload is required"},
		{"array payload", `{"action": "task_create", "payload": [1]`, "payload must be a JSON object"},
		{"empty title", `{"action": "task_create", "payload": {"title": "  "}`, "payload.title is required"},
		{"title not a string", `{"action": "task_create", "payload": {"title": 7}`, "payload.title must be a string"},
		{"create payload for a claim", `{"action": "task_claim", "payload": {"title": "x"}`, `payload field "title" is not part of a task_claim payload`},
		{"claim without task", `{"action": "task_claim", "payload": {"status": "assigned"}`, "payload.task_id"},
		{"bad task id", `{"action": "task_update", "payload": {"task_id": "12"}`, "payload.task_id"},
		{"bad lease action", `{"action": "task_lease_action", "payload": {"task_id": "task_1", "action": "steal"}`, "payload.action must be release or handoff"},
		{"long reason", `{"action": "task_close", "payload": {"task_id": "task_1"}, "reason": "` + strings.Repeat("r", 2001) + `"`, "reason"},
	} {
		post(c.body+`, `+w.creds()+`}`).want(t, 400, c.msg)
	}
	post(`{"action": "task_create", "payload": {"title": "x"`).want(t, 400, "")
	e.as(t, bob, http.MethodPost, "/rooms/nowhere/board-intents", `{"action": "task_create", "payload": {"title": "x"}, `+w.creds()+`}`).want(t, 403, "another room")

	claim := post(`{"action": "task_claim", "payload": {"task_id": "task_1", "status": "assigned", "assignee": "`+w.label+`", "assignee_agent_key": "bob/builder"}, `+w.creds()+`}`).want(t, 201, "")
	lease := post(`{"action": "task_lease_action", "payload": {"task_id": "task_1", "action": "release"}, `+w.creds()+`}`).want(t, 201, "")
	if claim.str("id") != "bi_2" || lease.str("id") != "bi_3" ||
		!strings.Contains(lease.raw, `"payload":{"task_id":"task_1","action":"release","lease_id":null,"target_actor_key":null,"target_agent_session_id":null}`) {
		t.Errorf("claim = %s\nlease = %s", claim.raw, lease.raw)
	}

	// Listing, newest first.
	list := func(query string) []string {
		t.Helper()
		r := e.as(t, bob, http.MethodGet, "/rooms/board/board-intents"+query, "").want(t, 200, "")
		items, _ := r.obj["intents"].([]any)
		out := []string{}
		for _, it := range items {
			m := it.(map[string]any)
			if m["approval_token"] != nil {
				t.Errorf("a listed intent shows its approval token: %v", m)
			}
			out = append(out, m["id"].(string)+":"+m["status"].(string))
		}
		return out
	}
	if got := strings.Join(list(""), " "); got != "bi_3:pending bi_2:pending bi_1:pending" {
		t.Errorf("list = %s", got)
	}
	if got := strings.Join(list("?limit=1"), " "); got != "bi_3:pending" {
		t.Errorf("list limit 1 = %s", got)
	}
	e.as(t, bob, http.MethodGet, "/rooms/board/board-intents?status=lost", "").want(t, 400, "status must be one of")
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x"} {
		if got := strings.Join(list(q), " "); got != "bi_3:pending bi_2:pending bi_1:pending" {
			t.Errorf("list%s = %s, want all three (the limit read as the default or the maximum)", q, got)
		}
	}
	e.call(t, http.MethodGet, "/rooms/nowhere/board-intents", "").want(t, 404, "Room not found")

	// Deciding: room admins only. Five minutes pass first, so that the
	// approval's restarted clock shows.
	e.clock.Advance(5 * time.Minute)
	e.call(t, http.MethodPost, "/rooms/board/board-intents/bi_1/approve", "").want(t, 401, "Authentication required")
	e.as(t, bob, http.MethodPost, "/rooms/board/board-intents/bi_1/approve", "").want(t, 403, "Admin privileges required")
	e.as(t, bob, http.MethodPost, "/rooms/board/board-intents/bi_1/deny", "").want(t, 403, "Admin privileges required")
	for _, id := range []string{"bi_999", "bi_x", "1", "bi_0", "task_1"} {
		e.as(t, ann, http.MethodPost, "/rooms/board/board-intents/"+id+"/approve", "").want(t, 404, "Board intent not found")
	}
	e.as(t, ann, http.MethodPost, "/rooms/nowhere/board-intents/bi_1/approve", "").want(t, 404, "Room not found")
	ok := e.as(t, ann, http.MethodPost, "/rooms/board/board-intents/bi_1/approve", `{"reason": "go"}`).want(t, 200, "")
	if ok.str("status") != "approved" || ok.str("decided_by") != "ann" || !isTimestamp(ok.str("decided_at")) || len(ok.str("approval_token")) != 64 {
		t.Errorf("approval = %s", ok.raw)
	}
	twice := e.as(t, ann, http.MethodPost, "/rooms/board/board-intents/bi_1/approve", "").want(t, 409, "only a pending intent")
	if twice.str("code") != "board_intent_not_pending" || twice.str("status") != "approved" || twice.obj["approval_token"] != nil {
		t.Errorf("second approval = %s", twice.raw)
	}
	no := e.as(t, ann, http.MethodPost, "/rooms/board/board-intents/bi_2/deny", "").want(t, 200, "")
	if no.str("status") != "denied" || no.obj["approval_token"] != nil {
		t.Errorf("denial = %s", no.raw)
	}
	if r := e.as(t, ann, http.MethodPost, "/rooms/board/board-intents/bi_2/approve", "").want(t, 409, "denied"); r.str("code") != "board_intent_not_pending" {
		t.Errorf("approving a denied intent = %s", r.raw)
	}
	if got := strings.Join(list("?status=approved"), " "); got != "bi_1:approved" {
		t.Errorf("approved = %s", got)
	}

	// Time runs out: a pending intent can no longer be approved.
	e.clock.Advance(10*time.Minute + time.Second)
	if r := e.as(t, ann, http.MethodPost, "/rooms/board/board-intents/bi_3/approve", "").want(t, 409, "expired"); r.str("code") != "board_intent_expired" {
		t.Errorf("approving an expired intent = %s", r.raw)
	}
	if got := strings.Join(list(""), " "); got != "bi_3:expired bi_2:denied bi_1:approved" {
		t.Errorf("after 15 min = %s (the approval restarted bi_1's clock)", got)
	}
	// An expired intent does not stop the agent from asking again.
	if r := post(`{"action": "task_lease_action", "payload": {"task_id": "task_1", "action": "release"}, `+w.creds()+`}`).want(t, 201, ""); r.str("id") != "bi_4" {
		t.Errorf("registering again after expiry = %s", r.raw)
	}
}

// The whole round through the task routes: under intent_required an
// agent's board action needs an approved intent for exactly that action,
// which it uses once; people are never asked for one.
func TestBoardIntentsGovernTaskRoutes(t *testing.T) {
	t.Parallel()
	e, ann, bob, w := intentRoom(t, "gov")
	e.as(t, ann, http.MethodPatch, "/rooms/gov/board-settings", `{"manager_mode": "intent_required"}`).want(t, 200, "")
	grant := func(id, token string) string {
		return `, "board_intent_id": "` + id + `", "board_approval_token": "` + token + `", ` + w.creds()
	}
	propose := func(action, payload string) string {
		t.Helper()
		return e.as(t, bob, http.MethodPost, "/rooms/gov/board-intents", `{"action": "`+action+`", "payload": `+payload+`, `+w.creds()+`}`).
			want(t, 201, "").str("id")
	}
	approve := func(id string) string {
		t.Helper()
		return e.as(t, ann, http.MethodPost, "/rooms/gov/board-intents/"+id+"/approve", "").want(t, 200, "").str("approval_token")
	}
	wantCode := func(r reply, status int, code string) {
		t.Helper()
		if r.status != status || r.str("code") != code {
			t.Errorf("status %d code %q, want %d %s: %s", r.status, r.str("code"), status, code, r.raw)
		}
	}
	create := func(title, rest string) reply {
		t.Helper()
		return e.as(t, bob, http.MethodPost, "/rooms/gov/tasks", `{"title": "`+title+`"`+rest+`}`)
	}

	wantCode(create("Ship it", ", "+w.creds()), 403, "board_intent_required")
	id := propose("task_create", `{"title": "Ship it"}`)
	token := approve(id)
	wantCode(create("Ship it now", grant(id, token)), 403, "board_intent_mismatch")
	wantCode(create("Ship it", grant(id, strings.Repeat("0", 64))), 401, "board_approval_token_invalid")
	task := create("Ship it", grant(id, token)).want(t, 201, "")
	wantCode(create("Ship it", grant(id, token)), 403, "board_intent_used")
	taskID := task.str("id")
	// People are never asked for an intent.
	e.as(t, ann, http.MethodPost, "/rooms/gov/tasks", `{"title": "By hand"}`).want(t, 201, "")

	// A claim, once the task is accepted.
	e.as(t, ann, http.MethodPatch, "/rooms/gov/tasks/"+taskID, `{"status": "accepted"}`).want(t, 200, "")
	claimBody := `{"status": "assigned", "assignee": "` + w.label + `", "assignee_agent_key": "bob/builder"`
	wantCode(e.as(t, bob, http.MethodPatch, "/rooms/gov/tasks/"+taskID, claimBody+", "+w.creds()+"}"), 403, "board_intent_required")
	id = propose("task_claim", `{"task_id": "`+taskID+`", "status": "assigned", "assignee": "`+w.label+`", "assignee_agent_key": "bob/builder"}`)
	claimed := e.as(t, bob, http.MethodPatch, "/rooms/gov/tasks/"+taskID, claimBody+grant(id, approve(id))+"}").want(t, 200, "")
	if claimed.str("status") != "assigned" {
		t.Errorf("claim = %s", claimed.raw)
	}

	// A denied intent and an expired approval allow nothing.
	release := `{"task_id": "` + taskID + `", "action": "release"}`
	id = propose("task_lease_action", release)
	e.as(t, ann, http.MethodPost, "/rooms/gov/board-intents/"+id+"/deny", "").want(t, 200, "")
	wantCode(e.as(t, bob, http.MethodPost, "/rooms/gov/tasks/"+taskID+"/lease-action", `{"action": "release"`+grant(id, strings.Repeat("0", 64))+"}"),
		403, "board_intent_not_approved")
	id = propose("task_lease_action", release)
	token = approve(id)
	e.clock.Advance(15*time.Minute + time.Second)
	wantCode(e.as(t, bob, http.MethodPost, "/rooms/gov/tasks/"+taskID+"/lease-action", `{"action": "release"`+grant(id, token)+"}"),
		403, "board_intent_expired")
	id = propose("task_lease_action", release)
	released := e.as(t, bob, http.MethodPost, "/rooms/gov/tasks/"+taskID+"/lease-action", `{"action": "release"`+grant(id, approve(id))+"}").want(t, 200, "")
	if task, _ := released.obj["task"].(map[string]any); task["status"] != "accepted" {
		t.Errorf("release = %s", released.raw)
	}
}
