package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/rooms"
)

func TestPrivateRepoRoom(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000"})
	e.gh.AddRepo("Acme/Secret", true)
	e.gh.AddUser("carol")
	e.gh.AddUser("dave")
	e.gh.AddUser("erin")
	e.gh.Grant("acme/secret", "carol", "write")
	e.gh.Grant("acme/secret", "erin", "admin")
	carol, dave, erin := e.signIn(t, "carol"), e.signIn(t, "dave"), e.signIn(t, "erin")
	branch, err := rooms.BranchRoomID("github.com/acme/secret", "feature/x")
	if err != nil {
		t.Fatal(err)
	}

	for _, room := range []string{"github.com/acme/secret", "github.com/Acme/Secret.git", branch} {
		id, err := rooms.Normalize(room)
		if err != nil {
			t.Fatal(err)
		}
		anon := e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 401, "auth_required")
		if anon.str("code") != "NOT_AUTHENTICATED" || anon.str("message") == "" || anon.str("room_id") != id ||
			anon.str("device_flow_url") != e.url+"/auth/device/start?room_id="+url.QueryEscape(id) {
			t.Errorf("anonymous join of %s = %s", room, anon.raw)
		}
		no := e.as(t, dave, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 403, "private_repo_no_access")
		if no.str("code") != "PRIVATE_REPO_NO_ACCESS" || !strings.Contains(no.str("message"), "dave") {
			t.Errorf("non-collaborator join of %s = %s", room, no.raw)
		}
		yes := e.as(t, carol, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
		if yes.str("role") != "participant" || yes.obj["authenticated"] != true {
			t.Errorf("collaborator join of %s = %s", room, yes.raw)
		}
		if r := e.as(t, erin, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
			t.Errorf("GitHub admin join of %s = %s, want role admin", room, r.raw)
		}
	}

	// Every route of the room, not only the join, is behind the gate.
	msgs := "/rooms/github.com/acme/secret/messages"
	e.as(t, carol, http.MethodPost, "/agents", `{"name": "scout", "owner_label": "Carol"}`).want(t, 201, "")
	sent := e.as(t, carol, http.MethodPost, msgs, `{"sender": "scout | Carol's agent | Codex", "text": "private plans"}`).want(t, 201, "")
	if sent.str("source") != "agent" {
		t.Errorf("message sent with an owner token has source %v, want agent", sent.obj["source"])
	}
	for _, path := range []string{msgs, msgs + "/poll?timeout=0", "/projects/github.com/acme/secret/messages"} {
		e.call(t, http.MethodGet, path, "").want(t, 401, "auth_required")
		e.as(t, dave, http.MethodGet, path, "").want(t, 403, "private_repo_no_access")
		if r := e.as(t, carol, http.MethodGet, path, "").want(t, 200, ""); len(r.messages(t)) != 1 {
			t.Errorf("collaborator read of %s = %s", path, r.raw)
		}
	}
	e.call(t, http.MethodPost, msgs, `{"sender": "intruder", "text": "hi"}`).want(t, 401, "auth_required")

	// GitHub is asked once per account and repository, then the cache answers.
	before := e.gh.Requests("/repos/acme/secret")
	for range 5 {
		e.as(t, carol, http.MethodGet, msgs, "").want(t, 200, "")
	}
	if after := e.gh.Requests("/repos/acme/secret"); after != before {
		t.Errorf("5 reads asked GitHub %d more times, want 0 (cached)", after-before)
	}
	// Access taken away at GitHub shows once the cache entry ages out.
	e.gh.Grant("acme/secret", "carol", "none")
	e.as(t, carol, http.MethodGet, msgs, "").want(t, 200, "")
	e.clock.Advance(31 * time.Minute)
	e.as(t, carol, http.MethodGet, msgs, "").want(t, 403, "private_repo_no_access")
}

func TestPublicRepoRoom(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddRepo("acme/open", false)
	e.gh.AddUser("frank")
	e.gh.Grant("acme/open", "frank", "admin")
	j := e.call(t, http.MethodPost, "/rooms/github.com/acme/open/join", "").want(t, 200, "")
	if j.str("role") != "anonymous" || j.obj["authenticated"] != false || j.obj["git_room"] == nil {
		t.Errorf("anonymous join of a public repo room = %s", j.raw)
	}
	m := e.call(t, http.MethodPost, "/rooms/github.com/acme/open/messages", `{"sender": "visitor", "text": "hello"}`).want(t, 201, "")
	if m.obj["source"] != nil {
		t.Errorf("anonymous message source = %v, want null", m.obj["source"])
	}
	if r := e.as(t, e.signIn(t, "frank"), http.MethodPost, "/rooms/github.com/acme/open/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("repository admin join = %s, want role admin", r.raw)
	}
	// Rooms of other hosts are not GitHub's to guard.
	e.call(t, http.MethodPost, "/rooms/gitlab.com/team/project/join", "").want(t, 200, "")
	// GitHub down: a repository we know is public stays open, one we
	// know nothing about is treated as private.
	e.gh.FailAPI(503)
	e.call(t, http.MethodGet, "/rooms/github.com/acme/open/messages", "").want(t, 200, "")
	e.call(t, http.MethodPost, "/rooms/github.com/acme/unknown/join", "").want(t, 401, "auth_required")
}

func TestGitHubDownWhileCheckingAccess(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddRepo("acme/secret", true)
	e.gh.AddUser("gwen")
	e.gh.Grant("acme/secret", "gwen", "read")
	gwen := e.signIn(t, "gwen")
	e.gh.FailAPI(503)
	r := e.as(t, gwen, http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 503, "try again")
	if strings.Contains(r.raw, "gho_") {
		t.Errorf("answer leaks a token: %s", r.raw)
	}
	e.gh.FailAPI(0)
	e.as(t, gwen, http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 200, "")
}

func TestRepoAccessOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"LETAGENTS_REPO_ACCESS": "open"})
	if r := e.call(t, http.MethodPost, "/rooms/github.com/any/private/join", "").want(t, 200, ""); r.str("role") != "anonymous" {
		t.Errorf("join with open access = %s", r.raw)
	}
}

func TestRoomAdmins(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("hana")
	e.gh.AddUser("ivan")
	hana, ivan := e.signIn(t, "hana"), e.signIn(t, "ivan")

	// The signed-in creator of an invite room administers it.
	room := e.as(t, hana, http.MethodPost, "/projects", "").want(t, 201, "").str("id")
	e.as(t, hana, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "h", "text": "before the rotation"}`).want(t, 201, "")
	if r := e.as(t, hana, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("creator's join = %s, want admin", r.raw)
	}
	if r := e.as(t, ivan, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "participant" {
		t.Errorf("second joiner = %s, want participant", r.raw)
	}
	access := e.as(t, hana, http.MethodGet, "/projects/"+room+"/access", "").want(t, 200, "")
	if access.str("room_type") != "invite" || access.str("role") != "admin" || access.obj["authenticated"] != true || access.str("project_id") != room {
		t.Errorf("access = %s", access.raw)
	}
	if a := e.call(t, http.MethodGet, "/projects/"+room+"/access", "").want(t, 200, ""); a.str("role") != "participant" || a.obj["account"] != nil {
		t.Errorf("anonymous access = %s", a.raw)
	}

	e.call(t, http.MethodPost, "/projects/"+room+"/code/rotate", "").want(t, 401, "Authentication required")
	e.as(t, ivan, http.MethodPost, "/projects/"+room+"/code/rotate", "").want(t, 403, "Admin privileges required")
	rotated := e.as(t, hana, http.MethodPost, "/projects/"+room+"/code/rotate", "").want(t, 200, "")
	code := rotated.str("id")
	if !rooms.IsInviteCode(code) || code == room || rotated.str("code") != code {
		t.Fatalf("rotate = %s", rotated.raw)
	}
	e.call(t, http.MethodGet, "/projects/join/"+room, "").want(t, 404, "Project not found")
	if r := e.call(t, http.MethodGet, "/rooms/"+code+"/messages", "").want(t, 200, ""); len(r.messages(t)) != 1 {
		t.Errorf("messages after the rotation = %s, want the one sent before", r.raw)
	}
	if r := e.as(t, hana, http.MethodGet, "/projects/"+code+"/access", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("the admin after the rotation = %s", r.raw)
	}

	// A named room's first signed-in joiner administers it; codes are
	// only for invite rooms.
	if r := e.as(t, ivan, http.MethodPost, "/rooms/team%20room/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("first joiner of a named room = %s, want admin", r.raw)
	}
	if r := e.as(t, hana, http.MethodPost, "/rooms/team%20room/join", "").want(t, 200, ""); r.str("role") != "participant" {
		t.Errorf("second joiner of a named room = %s, want participant", r.raw)
	}
	e.as(t, ivan, http.MethodPost, "/projects/team%20room/code/rotate", "").want(t, 400, "Only invite rooms")
	e.as(t, ivan, http.MethodPost, "/projects/NOPE-NOPE-NOPE/code/rotate", "").want(t, 404, "not found")
}

func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"LETAGENTS_BASE_URL": "https://chat.example.com/", "PUBLIC_API_URL": "https://api.example.com"})
	preflight := func(origin string) reply {
		return e.callWith(context.Background(), t, http.MethodOptions, "/rooms/x/messages", "",
			http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"POST"}})
	}
	for _, origin := range []string{"https://chat.example.com", "https://api.example.com"} {
		r := preflight(origin)
		h := r.header
		if r.status != 204 || h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Credentials") != "true" ||
			!strings.Contains(h.Get("Vary"), "Origin") || h.Get("Access-Control-Allow-Methods") != "GET, POST, PATCH, OPTIONS" ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("preflight from %s = %d %v", origin, r.status, h)
		}
	}
	// The original's defaults (its site, local dev servers) are no longer
	// allowed unless configured (TestDevOrigins).
	for _, origin := range []string{"https://evil.example", "https://letagents.chat", "http://localhost:3000", "http://127.0.0.1:3001"} {
		if r := preflight(origin); r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight from %s = %d %v, want 204 without allow headers", origin, r.status, r.header)
		}
	}
	// Any path, even one no route serves, answers a preflight.
	if r := e.callWith(context.Background(), t, http.MethodOptions, "/no/such/route", "", nil); r.status != 204 {
		t.Errorf("OPTIONS /no/such/route = %d, want 204", r.status)
	}
	get := e.callWith(context.Background(), t, http.MethodGet, "/api/health", "", http.Header{"Origin": {"https://api.example.com"}})
	if get.header.Get("Access-Control-Allow-Origin") != "https://api.example.com" {
		t.Errorf("GET from an allowed origin: headers %v", get.header)
	}
}

// TestUnusableCredentials pins the original service's treatment of an
// Authorization header that signs nobody in (a stale LETAGENTS_TOKEN, a
// proxy's Basic): the caller is anonymous wherever anonymous callers are
// served, every answer says why in X-LetAgents-Credential, and only what
// needs an account answers 401, as TOKEN_INVALID.
func TestUnusableCredentials(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000"})
	e.gh.AddUser("jo")
	e.gh.AddRepo("acme/vault", true)
	revoked := e.signIn(t, "jo")
	if _, err := e.db.Pool.Exec(context.Background(), `DELETE FROM owner_tokens`); err != nil {
		t.Fatal(err)
	}
	credentials := []struct{ name, authorization, reason string }{
		{"basic from a proxy", "Basic dXNlcjpwYXNz", "scheme"},
		{"bearer without a token", "Bearer", "scheme"},
		{"unknown token", "Bearer " + strings.Repeat("f", 64), "unknown"},
		{"token no server mints", "Bearer " + strings.Repeat("x", 300), "unknown"},
		{"revoked token", "Bearer " + revoked, "unknown"},
	}
	const room = "/rooms/openroom"
	routes := []struct {
		method, path, body string
		status             int
		code               string             // the error's code, or "" for none
		check              func(r reply) bool // more about a success, nil for nothing
	}{
		// Served to anonymous callers, and so to these.
		{"GET", "/api/health", "", 200, "", nil},
		{"GET", "/auth/session", "", 200, "", func(r reply) bool { return r.obj["authenticated"] == false }},
		{"POST", "/projects", "", 201, "", nil},
		{"POST", room + "/join", "", 200, "", func(r reply) bool { return r.obj["authenticated"] == false && r.str("role") == "participant" }},
		{"POST", room + "/messages", `{"sender": "ann", "text": "hi"}`, 201, "", func(r reply) bool { return r.obj["source"] == nil }},
		{"GET", room + "/messages", "", 200, "", nil},
		{"POST", "/auth/logout", "", 200, "", nil},
		// A private repository's room refuses them as it refuses anyone anonymous.
		{"GET", "/rooms/github.com/acme/vault/messages", "", 401, "NOT_AUTHENTICATED", nil},
		// Only an account may act here: the token is at fault, and said to be.
		{"GET", "/agents/me", "", 401, "TOKEN_INVALID", nil},
		{"GET", "/search?q=hi", "", 401, "TOKEN_INVALID", nil},
		{"POST", "/agents", `{"name": "x"}`, 401, "TOKEN_INVALID", nil},
		{"POST", room + "/agent-sessions", `{"actor_key": "jo/x"}`, 401, "TOKEN_INVALID", nil},
		{"POST", room + "/messages", `{"sender": "ann", "text": "hi", "agent_session_id": "as_1", "agent_session_token": "t"}`, 401, "TOKEN_INVALID", nil},
	}
	for _, c := range credentials {
		t.Run(c.name, func(t *testing.T) {
			for _, rt := range routes {
				r := e.callWith(context.Background(), t, rt.method, rt.path, rt.body, http.Header{"Authorization": {c.authorization}})
				code := "" // a room's code is no error's
				if r.status >= 400 {
					code = r.str("code")
				}
				if r.status != rt.status || code != rt.code || (rt.check != nil && !rt.check(r)) {
					t.Errorf("%s %s = %d %s; want %d, code %q", rt.method, rt.path, r.status, r.raw, rt.status, rt.code)
				}
				if got, want := r.header.Get("X-LetAgents-Credential"), "ignored; reason="+c.reason; got != want {
					t.Errorf("%s %s: X-LetAgents-Credential %q; want %q", rt.method, rt.path, got, want)
				}
			}
		})
	}
	// A usable credential, or none, is not remarked on.
	e.gh.AddUser("kim")
	kim := e.signIn(t, "kim")
	for _, h := range []http.Header{nil, {"Authorization": {"Bearer " + kim}}} {
		if r := e.callWith(context.Background(), t, http.MethodGet, "/auth/session", "", h).want(t, 200, ""); r.header.Get("X-LetAgents-Credential") != "" {
			t.Errorf("session with %v: X-LetAgents-Credential %q; want none", h, r.header.Get("X-LetAgents-Credential"))
		}
	}
}

// TestLogoutLeavesOwnerToken pins the original: a sign-out ends only the
// browser session; an agent's token sent along keeps working.
func TestLogoutLeavesOwnerToken(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("jo")
	tok := e.signIn(t, "jo")
	for range 2 {
		e.as(t, tok, http.MethodPost, "/auth/logout", "").want(t, 200, "")
	}
	if r := e.as(t, tok, http.MethodGet, "/auth/session", "").want(t, 200, ""); r.obj["authenticated"] != true {
		t.Errorf("session after two logouts with the token = %s; want still signed in", r.raw)
	}
	e.as(t, tok, http.MethodGet, "/agents/me", "").want(t, 200, "")
}

func TestAgentsDirectory(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("Kim")
	e.gh.AddUser("lee")
	kim, lee := e.signIn(t, "Kim"), e.signIn(t, "lee")
	e.call(t, http.MethodPost, "/agents", `{"name": "x"}`).want(t, 401, "Authentication required")
	e.call(t, http.MethodGet, "/agents/me", "").want(t, 401, "Authentication required")

	// The name is kept as given, and the canonical key is the login as
	// GitHub spells it and the name, as the original derives them.
	a := e.as(t, kim, http.MethodPost, "/agents", `{"name": " Claude Code "}`).want(t, 201, "")
	if a.str("name") != "Claude Code" || a.str("canonical_key") != "Kim/Claude Code" || a.str("display_name") != "Claude Code" ||
		a.str("owner_login") != "Kim" || a.str("owner_label") == "" || a.str("owner_account_id") != "acct_1" || !strings.HasPrefix(a.str("id"), "agent_") ||
		!isTimestamp(a.str("created_at")) {
		t.Fatalf("register = %s", a.raw)
	}
	// The owner label is the account's own name, spelled as the client
	// likes; another's, or free text, is not taken.
	for _, other := range []string{"Kim's team", "lee", "lee Name"} {
		if r := e.as(t, kim, http.MethodPost, "/agents", `{"name": "Claude Code", "owner_label": "`+other+`"}`).want(t, 201, ""); r.str("owner_label") != "Kim Name" {
			t.Errorf("owner label %q = %s, want the account's name", other, r.raw)
		}
	}
	again := e.as(t, kim, http.MethodPost, "/agents", `{"name": "Claude Code", "display_name": "Claude", "owner_label": " KIM "}`).want(t, 201, "")
	if again.str("id") != a.str("id") || again.str("display_name") != "Claude" || again.str("owner_label") != "KIM" || again.str("created_at") != a.str("created_at") {
		t.Errorf("re-register = %s, want the same agent with new labels", again.raw)
	}
	names := []struct{ name, key string }{
		{"claude-code", "Kim/claude-code"}, // another name than "Claude Code"
		{"!!!", "Kim/!!!"},
		{"héllo wörld", "Kim/héllo wörld"},
	}
	for _, n := range names {
		body, _ := json.Marshal(map[string]string{"name": n.name})
		r := e.as(t, kim, http.MethodPost, "/agents", string(body)).want(t, 201, "")
		if r.str("name") != n.name || r.str("canonical_key") != n.key || r.str("id") == a.str("id") {
			t.Errorf("register %q = %s, want name as given, key %q", n.name, r.raw, n.key)
		}
	}
	e.as(t, kim, http.MethodPost, "/agents", `{"name": "amber-wolf"}`).want(t, 201, "")
	e.as(t, lee, http.MethodPost, "/agents", `{"name": "codex"}`).want(t, 201, "")
	me := e.as(t, kim, http.MethodGet, "/agents/me", "").want(t, 200, "")
	list, _ := me.obj["agents"].([]any)
	acct, _ := me.obj["account"].(map[string]any)
	var got []string
	for _, a := range list {
		got = append(got, a.(map[string]any)["name"].(string))
	}
	slices.Sort(got)
	if want := []string{"!!!", "Claude Code", "amber-wolf", "claude-code", "héllo wörld"}; !slices.Equal(got, want) || acct["login"] != "Kim" {
		t.Errorf("agents/me = %s, want kim's agents %v", me.raw, want)
	}
	for _, body := range []string{`{}`, `{"name": ""}`, `{"name": "  "}`, `{"name": "` + strings.Repeat("a", 65) + `"}`, `{"name": "a\u0007b"}`,
		`{"name": "ok", "display_name": "` + strings.Repeat("d", 101) + `"}`, `{"name": "ok", "owner_label": "a\u0001b"}`, `{"name": 7}`} {
		e.as(t, kim, http.MethodPost, "/agents", body).want(t, 400, "")
	}
}
