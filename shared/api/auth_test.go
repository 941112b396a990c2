package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github/githubtest"
)

const deviceInterval = 5 * time.Second // the fake GitHub's default

// startDevice begins a device sign-in and returns its request id and the
// user code GitHub showed.
func (e *env) startDevice(t *testing.T) (requestID, userCode string) {
	t.Helper()
	r := e.call(t, http.MethodPost, "/auth/device/start", "").want(t, 201, "")
	return r.str("request_id"), r.str("user_code")
}

// pollDevice polls once, after letting the interval pass.
func (e *env) pollDevice(t *testing.T, id string) reply {
	t.Helper()
	e.clock.Advance(time.Minute)
	return e.call(t, http.MethodGet, "/auth/device/poll/"+id, "")
}

// signIn runs a whole device sign-in as login (a new GitHub user unless
// known) and returns the owner token.
func (e *env) signIn(t *testing.T, login string) string {
	t.Helper()
	id, code := e.startDevice(t)
	e.gh.ApproveDevice(code, login)
	r := e.pollDevice(t, id).want(t, 200, "")
	if r.str("status") != "authorized" || r.str("letagents_token") == "" {
		t.Fatalf("sign-in as %s: %s", login, r.raw)
	}
	return r.str("letagents_token")
}

func TestDeviceFlow(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	other := e.twin(t) // a second Lambda instance on the same database
	alice := e.gh.AddUser("alice")

	start := e.call(t, http.MethodPost, "/auth/device/start", "").want(t, 201, "")
	id := start.str("request_id")
	if len(id) != 64 || start.str("user_code") != e.gh.LastUserCode() || start.str("verification_uri") != e.gh.URL+"/login/device" ||
		start.num("expires_in") != 900 || start.num("interval") != 5 {
		t.Fatalf("start = %s", start.raw)
	}
	code := start.str("user_code")
	poll := func(on *env) reply {
		t.Helper()
		return on.call(t, http.MethodGet, "/auth/device/poll/"+id, "")
	}

	p := poll(e).want(t, 200, "")
	if p.str("status") != "pending" || p.num("interval") != 5 || p.num("expires_in") != 900 {
		t.Errorf("first poll = %s, want pending, interval 5, expires_in 900", p.raw)
	}
	// The other instance knows the flow, and its last poll: too soon.
	tooSoon := poll(other).want(t, 429, "Polling too quickly")
	if tooSoon.num("interval") != 5 || tooSoon.header.Get("Retry-After") != "5" {
		t.Errorf("too-soon poll = %s (Retry-After %q), want interval 5, Retry-After 5", tooSoon.raw, tooSoon.header.Get("Retry-After"))
	}

	e.clock.Advance(deviceInterval)
	e.gh.SlowDown(code)
	if p := poll(other).want(t, 200, ""); p.str("status") != "slow_down" || p.num("interval") != 10 {
		t.Errorf("slowed poll = %s, want slow_down with interval 10", p.raw)
	}
	e.clock.Advance(deviceInterval)
	poll(e).want(t, 429, "Polling too quickly") // the interval is 10 s now
	e.clock.Advance(deviceInterval)
	if p := poll(e).want(t, 200, ""); p.str("status") != "pending" || p.num("interval") != 10 || p.num("expires_in") != 900-15 {
		t.Errorf("poll after slow_down = %s, want pending, interval 10, expires_in 885", p.raw)
	}

	e.gh.ApproveDevice(code, "alice")
	e.clock.Advance(10 * time.Second)
	done := poll(other).want(t, 200, "")
	acct, _ := done.obj["account"].(map[string]any)
	if done.str("status") != "authorized" || len(done.str("letagents_token")) != 64 || done.str("owner_token_id") != "owner_token_1" ||
		acct["login"] != "alice" || acct["provider"] != "github" || acct["provider_user_id"] != "1001" || acct["id"] != "acct_1" ||
		acct["display_name"] != alice.Name || acct["avatar_url"] != alice.AvatarURL {
		t.Fatalf("authorized poll = %s", done.raw)
	}
	if v, ok := done.obj["oauth_token_expires_at"]; !ok || v != nil {
		t.Errorf("oauth_token_expires_at = %v (present %v), want null: the fake's tokens do not expire", v, ok)
	}
	e.clock.Advance(10 * time.Second)
	poll(e).want(t, 404, "not found")

	// The token works on either instance.
	for _, on := range []*env{e, other} {
		s := on.as(t, done.str("letagents_token"), http.MethodGet, "/auth/session", "").want(t, 200, "")
		if s.obj["authenticated"] != true {
			t.Errorf("session with the new token = %s", s.raw)
		}
	}
}

func TestDeviceFlowEndings(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("bob")
	tests := []struct {
		name       string
		act        func(code string)
		wait       time.Duration // of the clock before the poll
		wantStatus int
		want       string
	}{
		{"denied", func(code string) { e.gh.DenyDevice(code) }, deviceInterval, 403, "denied"},
		{"expired at GitHub", func(code string) { e.gh.ExpireDevice(code) }, deviceInterval, 410, "expired"},
		{"expired here", func(string) {}, 901 * time.Second, 410, "expired"},
	}
	for _, tt := range tests {
		id, code := e.startDevice(t)
		tt.act(code)
		e.clock.Advance(tt.wait)
		r := e.call(t, http.MethodGet, "/auth/device/poll/"+id, "")
		if r.status != tt.wantStatus || r.str("status") != tt.want || r.str("error") == "" {
			t.Errorf("%s: poll = %d %s, want %d with status %q and an error", tt.name, r.status, r.raw, tt.wantStatus, tt.want)
		}
		e.clock.Advance(deviceInterval)
		e.call(t, http.MethodGet, "/auth/device/poll/"+id, "").want(t, 404, "not found")
	}
	e.call(t, http.MethodGet, "/auth/device/poll/"+strings.Repeat("0", 64), "").want(t, 404, "not found")
	e.call(t, http.MethodGet, "/auth/device/poll/nonsense", "").want(t, 404, "not found")
}

func TestSignInUnavailableWithoutGitHub(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil) // no GitHub app configured
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/auth/device/start"},
		{http.MethodGet, "/auth/device/poll/abc"},
		{http.MethodPost, "/auth/github/login"},
		{http.MethodGet, "/auth/github/callback?code=a&state=b"},
	} {
		e.call(t, c.method, c.path, "").want(t, 503, "not configured")
	}
	if r := e.call(t, http.MethodGet, "/auth/session", "").want(t, 200, ""); r.obj["authenticated"] != false {
		t.Errorf("anonymous session = %s", r.raw)
	}
}

func TestGitHubOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("carol")
	id, code := e.startDevice(t)
	e.gh.ApproveDevice(code, "carol")
	e.gh.FailAPI(502) // the token exchange works, reading the user does not
	r := e.pollDevice(t, id).want(t, 503, "GitHub did not answer")
	if strings.Contains(r.raw, "gho_") {
		t.Errorf("answer leaks a GitHub token: %s", r.raw)
	}
}

func TestWebSignIn(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("dana")
	login, browser := e.webLogin(t, `{"redirect_to": "/in/team?x=1"}`)
	state := login.str("state")
	if len(state) != 48 || login.str("redirect_to") != "/in/team?x=1" || !strings.HasPrefix(login.str("auth_url"), e.gh.URL+"/login/oauth/authorize?") {
		t.Fatalf("login = %s", login.raw)
	}
	authURL, _ := url.Parse(login.str("auth_url"))
	if q := authURL.Query(); q.Get("state") != state || q.Get("client_id") != githubtest.ClientID || q.Get("redirect_uri") != e.url+"/auth/github/callback" {
		t.Errorf("auth_url query = %v", q)
	}

	if c := cookieNamed(t, login.header, "letagents_login"); !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/auth/github" ||
		c.MaxAge != 15*60 || c.Secure || len(c.Value) != 64 {
		t.Errorf("login cookie = %+v, want HttpOnly, SameSite=Lax, Path=/auth/github, 15 minutes, not Secure on http, a 64-char nonce", c)
	}

	// The browser, signed in at GitHub, is sent back to the callback.
	path := e.atGitHub(t, login, "dana")
	done := e.callWith(context.Background(), t, http.MethodGet, path, "", browser)
	if done.status != http.StatusFound || done.header.Get("Location") != "/in/team?x=1" {
		t.Fatalf("callback = %d, Location %q, want 302 to /in/team?x=1", done.status, done.header.Get("Location"))
	}
	if c := cookieNamed(t, done.header, "letagents_login"); c.MaxAge >= 0 || c.Path != "/auth/github" {
		t.Errorf("login cookie after the callback = %+v, want it cleared", c)
	}
	cookie := sessionCookie(t, done.header)
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" || cookie.MaxAge != 30*24*3600 || cookie.Secure || len(cookie.Value) != 64 {
		t.Errorf("session cookie = %+v, want HttpOnly, SameSite=Lax, Path=/, 30 days, not Secure on http, a 64-char token", cookie)
	}
	withCookie := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}}

	// The state was used: the same callback again is refused.
	e.callWith(context.Background(), t, http.MethodGet, path, "", browser).want(t, 400, "Invalid or expired auth state")

	s := e.callWith(context.Background(), t, http.MethodGet, "/auth/session", "", withCookie).want(t, 200, "")
	if acct, _ := s.obj["account"].(map[string]any); s.obj["authenticated"] != true || acct["login"] != "dana" {
		t.Fatalf("session = %s", s.raw)
	}
	// The room page's logout: JSON from its own origin.
	out := e.callWith(context.Background(), t, http.MethodPost, "/auth/logout", "{}",
		http.Header{"Cookie": withCookie["Cookie"], "Origin": {e.url}}).want(t, 200, "")
	if out.obj["success"] != true || sessionCookie(t, out.header).MaxAge >= 0 {
		t.Errorf("logout = %s, Set-Cookie %q; want success and the cookie cleared", out.raw, out.header.Values("Set-Cookie"))
	}
	after := e.callWith(context.Background(), t, http.MethodGet, "/auth/session", "", withCookie).want(t, 200, "")
	if after.obj["authenticated"] != false || sessionCookie(t, after.header).MaxAge >= 0 {
		t.Errorf("session after logout = %s (Set-Cookie %q), want signed out and the stale cookie cleared", after.raw, after.header.Values("Set-Cookie"))
	}
}

func TestWebSignInStateAndRedirects(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_BASE_URL": "https://chat.example.com"})
	for in, want := range map[string]string{
		`{}`:                                  "/",
		`{"redirect_to": "//evil.example/x"}`: "/",
		`{"redirect_to": "https://evil.example"}`: "/",
		`{"redirect_to": "/\\evil.example"}`:      "/",
		`{"redirect_to": "/in/ABCD-EFGH-IJKL"}`:   "/in/ABCD-EFGH-IJKL",
	} {
		r := e.call(t, http.MethodPost, "/auth/github/login", in).want(t, 200, "")
		if r.str("redirect_to") != want {
			t.Errorf("login %s: redirect_to %q, want %q", in, r.str("redirect_to"), want)
		}
		if u, _ := url.Parse(r.str("auth_url")); u.Query().Get("redirect_uri") != "https://chat.example.com/auth/github/callback" {
			t.Errorf("login %s: redirect_uri %q, want the callback under LETAGENTS_BASE_URL", in, u.Query().Get("redirect_uri"))
		}
	}
	// A state waits 15 minutes, no more.
	state := e.call(t, http.MethodPost, "/auth/github/login", "").want(t, 200, "").str("state")
	e.clock.Advance(15*time.Minute + time.Second)
	e.call(t, http.MethodGet, "/auth/github/callback?code=x&state="+state, "").want(t, 400, "Invalid or expired auth state")
	e.call(t, http.MethodGet, "/auth/github/callback?state="+state, "").want(t, 400, "Missing code or state")
	e.call(t, http.MethodGet, "/auth/github/callback?error=access_denied&state="+state, "").want(t, 400, "did not complete")
	// A code GitHub does not know, with a good state.
	login, browser := e.webLogin(t, "")
	e.callWith(context.Background(), t, http.MethodGet, "/auth/github/callback?code=forged&state="+login.str("state"), "", browser).
		want(t, 400, "GitHub did not accept")
	if c := cookieNamed(t, login.header, "letagents_login"); !c.Secure {
		t.Errorf("login cookie = %+v, want Secure (the base URL is https)", c)
	}
}

// TestWebSignInBoundToBrowser is login CSRF: an attacker starts a sign-in
// as themselves and hands its callback link to a victim, whose browser
// must not end up signed in as the attacker.
func TestWebSignInBoundToBrowser(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("mallory")
	e.gh.AddUser("victor")
	attack, attacker := e.webLogin(t, "")
	link := e.atGitHub(t, attack, "mallory")
	_, victim := e.webLogin(t, "") // the victim's own sign-in, under way
	for _, tt := range []struct {
		name    string
		browser http.Header
	}{
		{"no login cookie", nil},
		{"another sign-in's cookie", victim},
		{"a forged cookie", http.Header{"Cookie": {"letagents_login=" + strings.Repeat("f", 64)}}},
	} {
		fresh, _ := e.webLogin(t, "")
		r := e.callWith(context.Background(), t, http.MethodGet, e.atGitHub(t, fresh, "mallory"), "", tt.browser).
			want(t, 400, "started in another browser")
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == "letagents_session" {
				t.Errorf("%s: the refused callback set a session cookie %+v", tt.name, c)
			}
		}
	}
	// A refused callback spends the state: not even its own browser can
	// use it afterwards.
	e.callWith(context.Background(), t, http.MethodGet, link, "", victim).want(t, 400, "started in another browser")
	e.callWith(context.Background(), t, http.MethodGet, link, "", attacker).want(t, 400, "Invalid or expired auth state")
	// The victim's own sign-in still completes in the victim's browser.
	mine, victim := e.webLogin(t, "")
	done := e.callWith(context.Background(), t, http.MethodGet, e.atGitHub(t, mine, "victor"), "", victim)
	if done.status != http.StatusFound || sessionCookie(t, done.header).MaxAge <= 0 {
		t.Fatalf("the victim's own callback = %d %s (Set-Cookie %q), want 302 with a session", done.status, done.raw, done.header.Values("Set-Cookie"))
	}
}

func TestSecureCookieOverHTTPS(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_BASE_URL": "https://chat.example.com"})
	// A stale cookie is cleared with the same attributes it was set with.
	r := e.callWith(context.Background(), t, http.MethodGet, "/auth/session", "", http.Header{"Cookie": {"letagents_session=" + strings.Repeat("a", 64)}})
	if c := sessionCookie(t, r.header); !c.Secure || c.MaxAge >= 0 {
		t.Errorf("cleared cookie = %+v, want Secure (the base URL is https) and expired", c)
	}
}

func sessionCookie(t *testing.T, h http.Header) *http.Cookie {
	t.Helper()
	return cookieNamed(t, h, "letagents_session")
}

// cookieNamed is the cookie of that name among h's Set-Cookie headers.
func cookieNamed(t *testing.T, h http.Header, name string) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s cookie in %q", name, h.Values("Set-Cookie"))
	return nil
}

// webLogin starts a browser sign-in with body (JSON, or "" for none) and
// returns the answer and the headers of that browser from then on: its
// login cookie.
func (e *env) webLogin(t *testing.T, body string) (reply, http.Header) {
	t.Helper()
	r := e.call(t, http.MethodPost, "/auth/github/login", body).want(t, 200, "")
	c := cookieNamed(t, r.header, "letagents_login")
	return r, http.Header{"Cookie": {c.Name + "=" + c.Value}}
}

// atGitHub plays the browser at GitHub, signed in there as user: it
// follows the login's auth_url and returns the callback path (with code
// and state) GitHub sends the browser back to.
func (e *env) atGitHub(t *testing.T, login reply, user string) string {
	t.Helper()
	e.gh.SignIn(user)
	resp, err := noRedirects.Get(login.str("auth_url"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	path, ok := strings.CutPrefix(callback, e.url+"/auth/github/callback?")
	if !ok {
		t.Fatalf("GitHub sent the browser to %q", callback)
	}
	return "/auth/github/callback?" + path
}

func TestTokensAreStoredHashed(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("erin")
	// An owner token, a pending device flow, a GitHub token and a session.
	owner := e.signIn(t, "erin")
	pendingID, _ := e.startDevice(t)
	login, browser := e.webLogin(t, "")
	done := e.callWith(context.Background(), t, http.MethodGet, e.atGitHub(t, login, "erin"), "", browser)
	session := sessionCookie(t, done.header).Value
	_, pendingLogin := e.webLogin(t, "") // a browser sign-in under way

	ctx := context.Background()
	var hash []byte
	if err := e.db.Pool.QueryRow(ctx, `SELECT token_hash FROM owner_tokens`).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(owner)); string(hash) != string(sum[:]) {
		t.Errorf("owner_tokens.token_hash = %x, want sha256 of the token", hash)
	}
	e.noSecretsInClear(t, map[string]string{"owner token": owner, "session token": session, "device request id": pendingID, "GitHub token": "gho_",
		"login nonce": strings.TrimPrefix(pendingLogin.Get("Cookie"), "letagents_login=")})
}

// noSecretsInClear fails if any row of any table holds one of secrets in
// clear, as text or as bytes.
func (e *env) noSecretsInClear(t *testing.T, secrets map[string]string) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.db.Pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if rows.Err() != nil || len(tables) < 10 {
		t.Fatalf("tables %v, %v", tables, rows.Err())
	}
	for _, table := range tables {
		rows, err := e.db.Pool.Query(ctx, `SELECT t::text FROM `+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				t.Fatal(err)
			}
			for what, secret := range secrets {
				if strings.Contains(row, secret) || strings.Contains(row, hex.EncodeToString([]byte(secret))) {
					t.Errorf("table %s holds the %s in clear: %s", table, what, row)
				}
			}
		}
		rows.Close()
	}
}
