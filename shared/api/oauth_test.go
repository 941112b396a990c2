package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pkce is a PKCE S256 pair.
type pkce struct{ verifier, challenge string }

func newPKCE(seed string) pkce {
	v := strings.Repeat(seed, 64)[:64]
	sum := sha256.Sum256([]byte(v))
	return pkce{verifier: v, challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

const testRedirect = "http://127.0.0.1:33418/callback"

// registerClient registers a public client with one redirect URI and
// returns its client_id.
func (e *env) registerClient(t *testing.T, redirect string) string {
	t.Helper()
	r := e.call(t, http.MethodPost, "/oauth/register", `{"client_name": "Test Agent", "redirect_uris": ["`+redirect+`"], "token_endpoint_auth_method": "none"}`).want(t, 201, "")
	if !strings.HasPrefix(r.str("client_id"), "lac_") || r.str("token_endpoint_auth_method") != "none" {
		t.Fatalf("registration = %s", r.raw)
	}
	return r.str("client_id")
}

// authorizeQuery is a good authorization request of client.
func (e *env) authorizeQuery(client string, p pkce) url.Values {
	return url.Values{"client_id": {client}, "redirect_uri": {testRedirect}, "response_type": {"code"}, "code_challenge": {p.challenge},
		"code_challenge_method": {"S256"}, "state": {"st-123"}, "resource": {e.url + "/mcp"}}
}

var consentNonce = regexp.MustCompile(`name="consent" value="([0-9a-f]{64})"`)

// consentPage plays a browser through an authorization request: the
// GitHub sign-in as user, back to the consent page, whose HTML and the
// session cookie of the browser it returns.
func (e *env) consentPage(t *testing.T, q url.Values, user string) (page reply, browser http.Header) {
	t.Helper()
	start := e.call(t, http.MethodGet, "/oauth/authorize?"+q.Encode(), "")
	if start.status != http.StatusFound || !strings.HasPrefix(start.header.Get("Location"), e.gh.URL+"/login/oauth/authorize?") {
		t.Fatalf("authorize = %d to %q: %s", start.status, start.header.Get("Location"), start.raw)
	}
	login := cookieNamed(t, start.header, "letagents_login")
	callback := e.atGitHub(t, reply{obj: map[string]any{"auth_url": start.header.Get("Location")}}, user)
	done := e.callWith(context.Background(), t, http.MethodGet, callback, "", http.Header{"Cookie": {login.Name + "=" + login.Value}})
	to := done.header.Get("Location")
	if done.status != http.StatusFound || !strings.HasPrefix(to, "/oauth/consent?request=") {
		t.Fatalf("callback = %d to %q: %s", done.status, to, done.raw)
	}
	c := sessionCookie(t, done.header)
	browser = http.Header{"Cookie": {c.Name + "=" + c.Value}}
	page = e.callWith(context.Background(), t, http.MethodGet, to, "", browser)
	if page.status != http.StatusOK || !strings.Contains(page.raw, "Test Agent") || !strings.Contains(page.raw, "@"+user) {
		t.Fatalf("consent page = %d: %s", page.status, page.raw)
	}
	return page, browser
}

// decide answers a consent page and returns where the browser goes.
func (e *env) decide(t *testing.T, page reply, browser http.Header, decision string) *url.URL {
	t.Helper()
	m := consentNonce.FindStringSubmatch(page.raw)
	req := regexp.MustCompile(`name="request" value="([0-9a-f]{64})"`).FindStringSubmatch(page.raw)
	if m == nil || req == nil {
		t.Fatalf("no consent form in %s", page.raw)
	}
	r := e.callWith(context.Background(), t, http.MethodGet, "/oauth/decide?"+url.Values{"request": {req[1]}, "consent": {m[1]}, "decision": {decision}}.Encode(), "", browser)
	if r.status != http.StatusFound {
		t.Fatalf("decide = %d: %s", r.status, r.raw)
	}
	u, err := url.Parse(r.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// authCode runs a whole authorization as user and returns the code.
func (e *env) authCode(t *testing.T, client string, p pkce, user string) string {
	t.Helper()
	page, browser := e.consentPage(t, e.authorizeQuery(client, p), user)
	back := e.decide(t, page, browser, "allow")
	if got := back.Scheme + "://" + back.Host + back.Path; got != testRedirect || back.Query().Get("state") != "st-123" || back.Query().Get("code") == "" {
		t.Fatalf("back to the client at %s", back)
	}
	return back.Query().Get("code")
}

// token posts a form to the token endpoint.
func (e *env) token(t *testing.T, form url.Values) reply {
	t.Helper()
	return e.callWith(context.Background(), t, http.MethodPost, "/oauth/token", form.Encode(),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
}

// oauthError fails unless the answer is the OAuth error code with status.
func (r reply) oauthError(t *testing.T, status int, code string) {
	t.Helper()
	if r.status != status || r.str("error") != code || r.str("error_description") == "" {
		t.Fatalf("answer %d %s, want %d with error %q and a description", r.status, r.raw, status, code)
	}
}

func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	m := e.call(t, http.MethodGet, "/.well-known/oauth-authorization-server", "").want(t, 200, "")
	for k, want := range map[string]string{"issuer": e.url, "authorization_endpoint": e.url + "/oauth/authorize",
		"token_endpoint": e.url + "/oauth/token", "registration_endpoint": e.url + "/oauth/register"} {
		if m.str(k) != want {
			t.Errorf("%s = %q, want %q", k, m.str(k), want)
		}
	}
	if ms, _ := m.obj["code_challenge_methods_supported"].([]any); len(ms) != 1 || ms[0] != "S256" {
		t.Errorf("code_challenge_methods_supported = %v, want [S256]", m.obj["code_challenge_methods_supported"])
	}
	// Without GitHub sign-in there is no authorization server.
	newEnv(t, nil).call(t, http.MethodGet, "/.well-known/oauth-authorization-server", "").want(t, 404, "no GitHub sign-in")
}

func TestOAuthRegistration(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	for _, c := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"https", `{"redirect_uris": ["https://client.example/cb"]}`, 201, ""},
		{"loopback http", `{"redirect_uris": ["http://localhost:9999/cb", "http://[::1]/cb"], "client_name": "x"}`, 201, ""},
		{"plain http elsewhere", `{"redirect_uris": ["http://client.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"custom scheme", `{"redirect_uris": ["myapp://cb"]}`, 400, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris": ["https://client.example/cb#x"]}`, 400, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris": ["/cb"]}`, 400, "invalid_redirect_uri"},
		{"none", `{"client_name": "x"}`, 400, "invalid_redirect_uri"},
		{"too many", `{"redirect_uris": [` + strings.Repeat(`"https://a.example/cb",`, 10) + `"https://a.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"confidential", `{"redirect_uris": ["https://client.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}`, 400, "invalid_client_metadata"},
		{"implicit", `{"redirect_uris": ["https://client.example/cb"], "response_types": ["token"]}`, 400, "invalid_client_metadata"},
		{"long name", `{"redirect_uris": ["https://client.example/cb"], "client_name": "` + strings.Repeat("n", 201) + `"}`, 400, "invalid_client_metadata"},
		{"not JSON", `redirect_uris=x`, 400, "invalid_client_metadata"},
	} {
		r := e.call(t, http.MethodPost, "/oauth/register", c.body)
		if c.status == 201 {
			if r.status != 201 || r.str("client_id") == "" || r.num("client_id_issued_at") == 0 {
				t.Errorf("%s: %d %s", c.name, r.status, r.raw)
			}
			continue
		}
		if r.status != c.status || r.str("error") != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.raw, c.status, c.code)
		}
	}
	// Registration is rate limited per address.
	limited := newAuthEnv(t, nil)
	for range 20 {
		limited.call(t, http.MethodPost, "/oauth/register", `{"redirect_uris": ["https://a.example/cb"]}`).want(t, 201, "")
	}
	limited.call(t, http.MethodPost, "/oauth/register", `{"redirect_uris": ["https://a.example/cb"]}`).want(t, 429, "OAuth client registrations")
}

// TestOAuthFlow: a client registers, the person signs in with GitHub and
// allows it, and the access token acts as that person, private repo rooms
// included; refresh rotates, a replayed refresh token ends the grant, and
// an access token lasts an hour.
func TestOAuthFlow(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("carol")
	e.gh.AddRepo("acme/secret", true)
	e.gh.Grant("acme/secret", "carol", "write")
	client := e.registerClient(t, testRedirect)
	p := newPKCE("a1")
	code := e.authCode(t, client, p, "carol")

	tok := e.token(t, url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
		"redirect_uri": {testRedirect}, "code_verifier": {p.verifier}, "resource": {e.url + "/mcp"}}).want(t, 200, "")
	access, refresh := tok.str("access_token"), tok.str("refresh_token")
	if !strings.HasPrefix(access, "lat_") || !strings.HasPrefix(refresh, "lrt_") || tok.str("token_type") != "Bearer" ||
		tok.num("expires_in") != 3600 || tok.str("resource") != e.url+"/mcp" || tok.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token answer %s (%v)", tok.raw, tok.header)
	}
	// The code was spent.
	e.token(t, url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code}, "code_verifier": {p.verifier}}).
		oauthError(t, 400, "invalid_grant")

	s := e.as(t, access, http.MethodGet, "/auth/session", "").want(t, 200, "")
	if acct, _ := s.obj["account"].(map[string]any); s.obj["authenticated"] != true || acct["login"] != "carol" {
		t.Fatalf("session as the access token: %s", s.raw)
	}
	e.call(t, http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 401, "auth_required")
	if r := e.as(t, access, http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 200, ""); r.str("role") != "participant" {
		t.Fatalf("join as the access token: %s", r.raw)
	}
	e.as(t, access, http.MethodPost, "/rooms/github.com/acme/secret/messages", `{"sender": "helper", "text": "hi"}`).want(t, 201, "")

	// Refresh: a new pair; the old refresh token is spent.
	r2 := e.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}}).want(t, 200, "")
	access2, refresh2 := r2.str("access_token"), r2.str("refresh_token")
	if access2 == access || refresh2 == refresh || refresh2 == "" {
		t.Fatalf("refresh answer %s", r2.raw)
	}
	e.as(t, access2, http.MethodGet, "/auth/session", "").want(t, 200, "")

	// An access token lasts an hour.
	e.clock.Advance(time.Hour + time.Second)
	if s := e.as(t, access2, http.MethodGet, "/auth/session", "").want(t, 200, ""); s.obj["authenticated"] != false || s.header.Get("X-LetAgents-Credential") == "" {
		t.Fatalf("session with an expired access token: %s %v", s.raw, s.header)
	}
	if r := e.as(t, access2, http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 401, "auth_required"); r.header.Get("X-LetAgents-Credential") == "" {
		t.Errorf("join with an expired access token: %v, want the credential named ignored", r.header)
	}
	r3 := e.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh2}}).want(t, 200, "")

	// The spent refresh token again: the grant ends, its newest tokens too.
	e.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}}).oauthError(t, 400, "invalid_grant")
	e.as(t, r3.str("access_token"), http.MethodPost, "/rooms/github.com/acme/secret/join", "").want(t, 401, "auth_required")
	e.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {r3.str("refresh_token")}}).oauthError(t, 400, "invalid_grant")

	// A code and a grant's tokens under way, none kept in clear.
	pending := e.authCode(t, client, p, "carol")
	live := e.token(t, url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {e.authCode(t, client, p, "carol")},
		"code_verifier": {p.verifier}}).want(t, 200, "")
	e.noSecretsInClear(t, map[string]string{"code": pending, "access token": strings.TrimPrefix(live.str("access_token"), "lat_"),
		"refresh token": strings.TrimPrefix(live.str("refresh_token"), "lrt_"), "spent refresh token": strings.TrimPrefix(refresh2, "lrt_")})
}

func TestOAuthAuthorizeRefusals(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_MCP_URL": "https://poll.example/mcp"})
	client := e.registerClient(t, testRedirect)
	p := newPKCE("b2")
	// Before the client and its redirect URI are known good: an error for
	// the person at the browser, no redirect.
	for _, c := range []struct {
		name string
		edit func(url.Values)
		msg  string
	}{
		{"no client", func(q url.Values) { q.Del("client_id") }, "client_id is required"},
		{"unknown client", func(q url.Values) { q.Set("client_id", "lac_nobody") }, "unknown client_id"},
		{"wrong redirect", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, "redirect_uri is not one this client registered"},
	} {
		q := e.authorizeQuery(client, p)
		c.edit(q)
		if r := e.call(t, http.MethodGet, "/oauth/authorize?"+q.Encode(), ""); r.status != 400 || !strings.Contains(r.str("error"), c.msg) {
			t.Errorf("%s: %d %s", c.name, r.status, r.raw)
		}
	}
	// After: back to the client with the error and its state.
	for _, c := range []struct {
		name string
		edit func(url.Values)
		code string
	}{
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		{"short challenge", func(q url.Values) { q.Set("code_challenge", "abc") }, "invalid_request"},
		{"implicit", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"wrong resource", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, "invalid_target"},
		{"resource not /mcp", func(q url.Values) { q.Set("resource", e.url+"/api") }, "invalid_target"},
		{"long state", func(q url.Values) { q.Set("state", strings.Repeat("s", 1001)) }, "invalid_request"},
	} {
		q := e.authorizeQuery(client, p)
		c.edit(q)
		r := e.call(t, http.MethodGet, "/oauth/authorize?"+q.Encode(), "")
		u, _ := url.Parse(r.header.Get("Location"))
		if r.status != http.StatusFound || u == nil || !strings.HasPrefix(u.String(), testRedirect+"?") || u.Query().Get("error") != c.code {
			t.Errorf("%s: %d to %q, want a redirect to the client with error=%s", c.name, r.status, r.header.Get("Location"), c.code)
			continue
		}
		if c.name != "long state" && u.Query().Get("state") != "st-123" {
			t.Errorf("%s: state %q not passed back", c.name, u.Query().Get("state"))
		}
	}
	// A resource left out is this server's /mcp; one with a trailing
	// slash or another case of scheme is the same resource.
	// So is the poll server's, configured.
	for _, res := range []string{"", e.url + "/mcp/", strings.ToUpper(e.url[:4]) + e.url[4:] + "/mcp", "https://poll.example/mcp"} {
		q := e.authorizeQuery(client, p)
		q.Set("resource", res)
		if r := e.call(t, http.MethodGet, "/oauth/authorize?"+q.Encode(), ""); r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), e.gh.URL) {
			t.Errorf("resource %q: %d to %q, want the GitHub sign-in", res, r.status, r.header.Get("Location"))
		}
	}
}

// TestOAuthConsent: the person may deny; a consent answer needs the
// nonce of the page shown to that signed-in browser, once; a request
// shown to one account is not another's.
func TestOAuthConsent(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("dana")
	e.gh.AddUser("eve")
	client := e.registerClient(t, testRedirect)
	p := newPKCE("c3")

	page, browser := e.consentPage(t, e.authorizeQuery(client, p), "dana")
	if page.header.Get("X-Frame-Options") != "DENY" || !strings.Contains(page.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("consent page headers %v, want it unframeable", page.header)
	}
	back := e.decide(t, page, browser, "deny")
	if back.Query().Get("error") != "access_denied" || back.Query().Get("state") != "st-123" || back.Query().Get("code") != "" {
		t.Fatalf("denied: back to %s", back)
	}

	page, browser = e.consentPage(t, e.authorizeQuery(client, p), "dana")
	req := regexp.MustCompile(`name="request" value="([0-9a-f]{64})"`).FindStringSubmatch(page.raw)[1]
	nonce := consentNonce.FindStringSubmatch(page.raw)[1]
	decide := func(nonce string, h http.Header) reply {
		return e.callWith(context.Background(), t, http.MethodGet, "/oauth/decide?"+url.Values{"request": {req}, "consent": {nonce}, "decision": {"allow"}}.Encode(), "", h)
	}
	decide(strings.Repeat("0", 64), browser).want(t, 404, "unknown, expired or already answered")
	decide(nonce, nil).want(t, 401, "Sign in")
	// Another account's browser, even with the nonce, is refused; nor can
	// it be shown the request.
	_, other := e.consentPage(t, e.authorizeQuery(client, p), "eve")
	decide(nonce, other).want(t, 404, "unknown, expired or already answered")
	e.callWith(context.Background(), t, http.MethodGet, "/oauth/consent?request="+req, "", other).want(t, 404, "unknown or expired")
	e.callWith(context.Background(), t, http.MethodGet, "/oauth/decide?request="+req+"&consent="+nonce+"&decision=maybe", "", browser).want(t, 400, "decision")
	if r := decide(nonce, browser); r.status != http.StatusFound || !strings.Contains(r.header.Get("Location"), "code=") {
		t.Fatalf("allowed: %d %q", r.status, r.header.Get("Location"))
	}
	decide(nonce, browser).want(t, 404, "already answered")

	// A signed-in browser goes straight to the consent page.
	r := e.callWith(context.Background(), t, http.MethodGet, "/oauth/authorize?"+e.authorizeQuery(client, p).Encode(), "", browser)
	if r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), "/oauth/consent?request=") {
		t.Fatalf("authorize while signed in: %d to %q", r.status, r.header.Get("Location"))
	}
	// A request waits ten minutes.
	e.clock.Advance(10*time.Minute + time.Second)
	e.callWith(context.Background(), t, http.MethodGet, r.header.Get("Location"), "", browser).want(t, 404, "unknown or expired")
}

func TestOAuthTokenRefusals(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("fay")
	client := e.registerClient(t, testRedirect)
	otherClient := e.registerClient(t, testRedirect)
	p := newPKCE("d4")
	good := func(code string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
			"redirect_uri": {testRedirect}, "code_verifier": {p.verifier}, "resource": {e.url + "/mcp"}}
	}
	for _, c := range []struct {
		name   string
		edit   func(url.Values)
		status int
		code   string
		spends bool // the code it was sent with
	}{
		{"bad verifier", func(f url.Values) { f.Set("code_verifier", newPKCE("zz").verifier) }, 400, "invalid_grant", true},
		{"short verifier", func(f url.Values) { f.Set("code_verifier", "abc") }, 400, "invalid_grant", true},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_request", false},
		{"wrong redirect", func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:1/other") }, 400, "invalid_grant", true},
		{"wrong resource", func(f url.Values) { f.Set("resource", "https://other.example/mcp") }, 400, "invalid_target", true},
		{"another client", func(f url.Values) { f.Set("client_id", otherClient) }, 400, "invalid_grant", true},
		{"unknown client", func(f url.Values) { f.Set("client_id", "lac_nobody") }, 401, "invalid_client", false},
		{"no client", func(f url.Values) { f.Del("client_id") }, 401, "invalid_client", false},
		{"unknown grant type", func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type", false},
		{"forged code", func(f url.Values) { f.Set("code", strings.Repeat("f", 64)) }, 400, "invalid_grant", false},
	} {
		code := e.authCode(t, client, p, "fay")
		f := good(code)
		c.edit(f)
		r := e.token(t, f)
		if r.status != c.status || r.str("error") != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.raw, c.status, c.code)
		}
		// A code refused for a bad exchange is spent all the same (save
		// refusals that never reached it).
		again := e.token(t, good(code))
		if c.spends != (again.status == 400) {
			t.Errorf("%s: the good exchange afterwards: %d %s", c.name, again.status, again.raw)
		}
	}
	// A code waits ten minutes.
	code := e.authCode(t, client, p, "fay")
	e.clock.Advance(10*time.Minute + time.Second)
	e.token(t, good(code)).oauthError(t, 400, "invalid_grant")

	// A refresh token is its client's, for its resource.
	tok := e.token(t, good(e.authCode(t, client, p, "fay"))).want(t, 200, "")
	refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {otherClient}, "refresh_token": {tok.str("refresh_token")}}
	e.token(t, refresh).oauthError(t, 400, "invalid_grant")
	refresh.Set("client_id", client)
	refresh.Set("resource", "https://other.example/mcp")
	e.token(t, refresh).oauthError(t, 400, "invalid_grant")
	refresh.Set("resource", e.url+"/mcp")
	e.token(t, refresh).want(t, 200, "") // still good after those refusals
	// A refresh token lasts 30 days.
	refresh.Set("refresh_token", e.token(t, good(e.authCode(t, client, p, "fay"))).want(t, 200, "").str("refresh_token"))
	e.clock.Advance(30*24*time.Hour + time.Second)
	e.token(t, refresh).oauthError(t, 400, "invalid_grant")

	// The body must be a form.
	r := e.call(t, http.MethodPost, "/oauth/token", `{"grant_type": "authorization_code"}`)
	r.oauthError(t, 400, "invalid_request")
}
