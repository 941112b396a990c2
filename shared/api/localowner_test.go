package api_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
)

// localSession is a session of the local owner: its credentials only, no
// Authorization.
func localSession(id, token string) http.Header {
	return http.Header{"X-Letagents-Agent-Session-Id": {id}, "X-Letagents-Agent-Session-Token": {token}}
}

// TestLocalOwner: with sign-in off, every room open and
// LETAGENTS_LOCAL_OWNER=on, a caller with no credential is the local
// owner: signed in as the account "local", admin of a repo room, able to
// register agents and their sessions, whose credentials count without a
// token. The same request from another site's page, or to a name that is
// not this machine, stays anonymous.
func TestLocalOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t, map[string]string{"LETAGENTS_LOCAL_OWNER": "on"})
	const room = "github.com/acme/app"
	ctx := context.Background()

	s := e.call(t, http.MethodGet, "/auth/session", "").want(t, 200, "")
	acct, _ := s.obj["account"].(map[string]any)
	if s.obj["authenticated"] != true || s.obj["local_owner"] != true || acct["login"] != "local" || acct["provider"] != "local" ||
		s.obj["sign_in_configured"] != false {
		t.Fatalf("GET /auth/session = %s; want authenticated as the local owner (login local), sign-in not configured", s.raw)
	}
	agent := e.call(t, http.MethodPost, "/agents", `{"name": "alpha"}`).want(t, 201, "")
	if agent.str("canonical_key") != "local/alpha" || agent.str("owner_login") != "local" {
		t.Fatalf("POST /agents as the local owner = %s; want canonical_key local/alpha", agent.raw)
	}
	if j := e.call(t, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); j.str("role") != "admin" || j.obj["authenticated"] != true {
		t.Fatalf("join %s as the local owner = %s; want role admin, authenticated", room, j.raw)
	}
	reg := e.call(t, http.MethodPost, "/rooms/"+room+"/agent-sessions", `{"actor_key": "local/alpha", "ide_label": "Codex"}`).want(t, 201, "")
	id, token := reg.str("session_id"), reg.str("session_token")
	if reg.str("agent_key") != "local/alpha" || token == "" || !strings.Contains(reg.str("actor_label"), "Local owner's agent") {
		t.Fatalf("registration = %s; want a session of local/alpha labelled as the local owner's agent", reg.raw)
	}
	sent := e.callWith(ctx, t, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "whoever", "text": "hello"}`, localSession(id, token)).want(t, 201, "")
	if sent.str("sender") != reg.str("actor_label") || sent.str("source") != "agent" {
		t.Errorf("send with the session = %s; want sent as %q, source agent", sent.raw, reg.str("actor_label"))
	}
	// A task: proposed by the agent, accepted by the owner (admin), claimed.
	task := e.callWith(ctx, t, http.MethodPost, "/rooms/"+room+"/tasks", `{"title": "Fix it"}`, localSession(id, token)).want(t, 201, "")
	e.call(t, http.MethodPatch, "/rooms/"+room+"/tasks/"+task.str("id"), `{"status": "accepted"}`).want(t, 200, "")
	claimed := e.callWith(ctx, t, http.MethodPatch, "/rooms/"+room+"/tasks/"+task.str("id"), `{"status": "assigned"}`, localSession(id, token)).want(t, 200, "")
	if claimed.str("assignee") != reg.str("actor_label") {
		t.Errorf("claim = %s; want assigned to %q", claimed.raw, reg.str("actor_label"))
	}
	e.callWith(ctx, t, http.MethodPost, "/rooms/"+room+"/presence", `{"status": "working"}`, localSession(id, token)).want(t, 200, "")
	e.callWith(ctx, t, http.MethodPost, "/rooms/"+room+"/presence", `{"status": "working"}`, localSession(id, "wrong")).want(t, 401, "Invalid agent session credentials")

	// Work the agent opens is the local owner's: the page (no session)
	// may write to it, as its owner; a reasoning write that brings a
	// session must bring a valid one.
	rs := e.call(t, http.MethodPost, "/rooms/"+room+"/reasoning-sessions",
		`{"summary": "reading", "agent_session_id": "`+id+`", "agent_session_token": "`+token+`"}`).want(t, 201, "")
	rsID, _ := rs.obj["session"].(map[string]any)["id"].(string)
	e.call(t, http.MethodPost, "/rooms/"+room+"/reasoning-sessions/"+rsID+"/updates", `{"summary": "from the page"}`).want(t, 201, "")
	e.call(t, http.MethodPost, "/rooms/"+room+"/reasoning-sessions/"+rsID+"/updates",
		`{"summary": "forged", "agent_session_id": "`+id+`", "agent_session_token": "wrong"}`).want(t, 401, "Invalid agent session credentials")
	art := `{"kind": "pull_request", "url": "https://github.com/acme/app/pull/7"}`
	e.callWith(ctx, t, http.MethodPost, "/rooms/"+room+"/artifacts", art, localSession(id, token)).want(t, 200, "")
	e.call(t, http.MethodPost, "/rooms/"+room+"/artifacts", art).want(t, 200, "")

	// Never the local owner: a browser request from another site, and a
	// request to a name that is not this machine (DNS rebinding).
	strangers := []struct {
		name   string
		header http.Header
		host   string
	}{
		{"another site's page", http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, ""},
		{"another site, no Origin", http.Header{"Sec-Fetch-Site": {"cross-site"}}, ""},
		{"a same-site page of another port", http.Header{"Origin": {"http://127.0.0.1:1"}, "Sec-Fetch-Site": {"same-site"}}, ""},
		{"a rebound name", nil, "evil.example"},
		{"a rebound name from its own page", http.Header{"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"same-origin"}}, "evil.example"},
	}
	for _, st := range strangers {
		t.Run(st.name, func(t *testing.T) {
			send := func(method, path, body string) reply {
				t.Helper()
				h := st.header.Clone()
				if h == nil {
					h = http.Header{}
				}
				if st.host != "" {
					h.Set("Host", st.host)
				}
				return e.callWith(ctx, t, method, path, body, h)
			}
			if r := send(http.MethodGet, "/auth/session", ""); r.obj["authenticated"] != false || r.obj["local_owner"] != nil {
				t.Errorf("GET /auth/session = %s; want anonymous", r.raw)
			}
			send(http.MethodPost, "/agents", `{"name": "mallory"}`).want(t, 401, "Authentication required")
			send(http.MethodPatch, "/rooms/"+room+"/tasks/"+task.str("id"), `{"status": "done"}`).want(t, 401, "")
		})
	}
	// The page itself (same origin, loopback) is the local owner.
	own := http.Header{"Origin": {e.url}, "Sec-Fetch-Site": {"same-origin"}}
	if r := e.callWith(ctx, t, http.MethodGet, "/auth/session", "", own); r.obj["local_owner"] != true {
		t.Errorf("GET /auth/session from the service's own page = %s; want the local owner", r.raw)
	}
}

// TestLocalOwnerNeverWithSignIn: the local owner is refused at start
// where anyone can sign in or a room follows GitHub, and an env with
// sign-in left as deployed leaves a caller with no credential anonymous.
func TestLocalOwnerNeverWithSignIn(t *testing.T) {
	t.Parallel()
	gh := githubtest.New(t)
	pool := pgtest.New(t)
	tests := []struct {
		name string
		vars map[string]string
		want string // "" to start
	}{
		{"GitHub app", map[string]string{"LETAGENTS_LOCAL_OWNER": "on", "LETAGENTS_REPO_ACCESS": "open", "GITHUB_CLIENT_ID": githubtest.ClientID,
			"GITHUB_CLIENT_SECRET": githubtest.ClientSecret}, "sign-in off"},
		{"GitHub app in Secrets Manager", map[string]string{"LETAGENTS_LOCAL_OWNER": "on", "LETAGENTS_REPO_ACCESS": "open",
			"GITHUB_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gh"}, "sign-in off"},
		{"repo rooms follow GitHub", map[string]string{"LETAGENTS_LOCAL_OWNER": "on"}, "LETAGENTS_REPO_ACCESS=open"},
		{"off", map[string]string{"LETAGENTS_LOCAL_OWNER": "off", "LETAGENTS_REPO_ACCESS": "open"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return tt.vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			cfg.GitHub.OAuthURL, cfg.GitHub.APIURL = gh.URL, gh.URL
			cfg.TokenKeyFile = filepath.Join(t.TempDir(), "token.key")
			svc, err := service.FromPool(context.Background(), cfg, pool.Pool)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				svc.Close()
				return
			}
			if err == nil {
				svc.Close()
				t.Fatalf("the service started with %v; want it refused (%s)", tt.vars, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("refused with %q; want it to say %q", err, tt.want)
			}
		})
	}
	if _, err := config.Load(func(k string) string { return map[string]string{"LETAGENTS_LOCAL_OWNER": "yes"}[k] }); err == nil ||
		!strings.Contains(err.Error(), "LETAGENTS_LOCAL_OWNER") {
		t.Errorf("LETAGENTS_LOCAL_OWNER=yes loaded (%v); want an error naming it", err)
	}
	// Sign-in on (as deployed): nobody is the local owner, and no
	// account of it is ever made.
	e := newAuthEnv(t, map[string]string{"LETAGENTS_REPO_ACCESS": "open"})
	if r := e.call(t, http.MethodGet, "/auth/session", "").want(t, 200, ""); r.obj["authenticated"] != false || r.obj["local_owner"] != nil {
		t.Errorf("GET /auth/session with sign-in on = %s; want anonymous", r.raw)
	}
	e.call(t, http.MethodPost, "/agents", `{"name": "alpha"}`).want(t, 401, "Authentication required")
	var n int
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM accounts WHERE provider = 'local'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("local owner accounts with sign-in on: %d (%v); want none", n, err)
	}
}

// TestSessionWithoutOwnerToken: session credentials sent without the
// owner's token, or with a token the server no longer knows, are refused
// as the caller's fault (NOT_AUTHENTICATED, TOKEN_INVALID), never as the
// session's (AGENT_SESSION_INVALID, on which clients forget it); the same
// credentials with the token still work.
func TestSessionWithoutOwnerToken(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_REPO_ACCESS": "open"})
	e.gh.AddUser("ann")
	ann := e.signIn(t, "ann")
	w := e.register(t, ann, "team", "builder", `{"actor_key": "ann/builder"}`)
	ctx := context.Background()
	tests := []struct {
		name   string
		header http.Header
		status int
		code   string
	}{
		{"no token", http.Header{}, 401, "NOT_AUTHENTICATED"},
		{"unknown token", http.Header{"Authorization": {"Bearer " + strings.Repeat("a", 64)}}, 401, "TOKEN_INVALID"},
		{"not a bearer", http.Header{"Authorization": {"Basic eDp5"}}, 401, "TOKEN_INVALID"},
		{"a stale browser session", http.Header{"Cookie": {"letagents_session=" + strings.Repeat("b", 64)}}, 401, "NOT_AUTHENTICATED"},
		{"the owner's token", http.Header{"Authorization": {"Bearer " + ann}}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header.Clone()
			h.Set("X-Letagents-Agent-Session-Id", w.id)
			h.Set("X-Letagents-Agent-Session-Token", w.token)
			r := e.callWith(ctx, t, http.MethodPost, "/rooms/team/messages/unread", `{}`, h)
			if r.status != tt.status || r.str("code") != tt.code {
				t.Errorf("take unread with the session and %s: %d %s; want %d code %q", tt.name, r.status, r.raw, tt.status, tt.code)
			}
		})
	}
	// Wrong session credentials with the right token are the session's.
	h := w.headers()
	h.Set("X-Letagents-Agent-Session-Token", strings.Repeat("c", 64))
	if r := e.callWith(ctx, t, http.MethodPost, "/rooms/team/messages/unread", `{}`, h); r.status != 401 || r.str("code") != "AGENT_SESSION_INVALID" {
		t.Errorf("take unread with a wrong session token: %d %s; want 401 AGENT_SESSION_INVALID", r.status, r.raw)
	}
}
