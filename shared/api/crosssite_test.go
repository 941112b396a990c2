package api_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
)

// cookieWrite is a request of a browser: its session cookie, and the
// other headers given as name, value pairs ("" leaves one out, even the
// Content-Type callWith would set).
func (e *env) cookieWrite(t *testing.T, cookie, method, path, body string, kv ...string) reply {
	t.Helper()
	h := http.Header{"Cookie": {cookie}, "Content-Type": nil}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			h.Set(kv[i], kv[i+1])
		}
	}
	return e.callWith(context.Background(), t, method, path, body, h)
}

// writeRoutePath is a path of a route with every parameter filled in.
func writeRoutePath(t *testing.T, pattern, room string) string {
	t.Helper()
	r := strings.NewReplacer("{code}", "ABCD-EFGH-IJKL", "{request_id}", strings.Repeat("0", 64))
	return roomRoutePath(t, r.Replace(pattern), url.PathEscape(room))
}

// TestCookieWritesRefusedCrossSite walks every route that writes (from
// api.Routes(), so a new one is covered the day it is added) with a
// signed-in browser's session cookie and every shape a page of another
// origin can give a request: plain HTML forms, text/plain and body-less
// posts, foreign and same-site origins, Sec-Fetch-Site without an Origin.
// Each is refused, 403 with its code, before the route runs; JSON from
// the service's own origin is let through to the route.
func TestCookieWritesRefusedCrossSite(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("alice")
	cookie := e.browserSignIn(t, "alice").Get("Cookie")
	const room = "cross site room"
	e.cookieWrite(t, cookie, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/join", "{}", "Origin", e.url, "Content-Type", "application/json").want(t, 200, "")

	own := e.url
	u, _ := url.Parse(e.url)
	sameSite := "http://" + u.Hostname() + ":1" // another port of the same host
	refused := []struct {
		name                           string
		origin, fetchSite, ctype, body string
		code                           string
	}{
		{"urlencoded form", own, "same-origin", "application/x-www-form-urlencoded", "text=hi", "JSON_REQUIRED"},
		{"multipart form", own, "same-origin", "multipart/form-data; boundary=x", "--x\r\n\r\nhi\r\n--x--", "JSON_REQUIRED"},
		{"text/plain holding JSON", own, "same-origin", "text/plain", `{"sender":"alice","text":"hi"}`, "JSON_REQUIRED"},
		{"no content type", own, "", "", "", "JSON_REQUIRED"},
		{"json+ but not JSON", own, "", "application/jsonx", "{}", "JSON_REQUIRED"},
		{"foreign origin", "http://evil.example", "cross-site", "application/json", "{}", "CROSS_SITE_REFUSED"},
		{"foreign origin, text/plain", "http://evil.example", "", "text/plain", "{}", "CROSS_SITE_REFUSED"},
		{"same site, other port", sameSite, "same-site", "application/json", "{}", "CROSS_SITE_REFUSED"},
		{"opaque origin", "null", "", "application/json", "{}", "CROSS_SITE_REFUSED"},
		{"own origin but cross-site fetch", own, "cross-site", "application/json", "{}", "CROSS_SITE_REFUSED"},
		{"no origin, cross-site fetch", "", "cross-site", "application/json", "{}", "CROSS_SITE_REFUSED"},
		{"no origin, same-site fetch", "", "same-site", "application/json", "{}", "CROSS_SITE_REFUSED"},
		{"no origin, nothing said", "", "", "application/json", "{}", "CROSS_SITE_REFUSED"},
	}
	var writes []api.Route
	for _, rt := range api.Routes() {
		if rt.Method != http.MethodGet {
			writes = append(writes, rt)
		}
	}
	// Logout, let through, ends the cookie: walk it last.
	slices.SortStableFunc(writes, func(a, b api.Route) int {
		return boolInt(a.Pattern == "/auth/logout") - boolInt(b.Pattern == "/auth/logout")
	})
	if len(writes) < 30 {
		t.Fatalf("only %d write routes in the table", len(writes))
	}
	count := func() (n int) {
		if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM messages`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, rt := range writes {
		path := writeRoutePath(t, rt.Pattern, room)
		for _, c := range refused {
			r := e.cookieWrite(t, cookie, rt.Method, path, c.body, "Origin", c.origin, "Sec-Fetch-Site", c.fetchSite, "Content-Type", c.ctype)
			if r.status != http.StatusForbidden || r.str("code") != c.code || r.str("error") == "" {
				t.Errorf("%s %s, %s: %d %s; want 403 %s", rt.Method, rt.Pattern, c.name, r.status, r.raw, c.code)
			}
		}
	}
	if after := count(); after != before {
		t.Errorf("refused writes stored %d messages", after-before)
	}
	if r := e.callWith(context.Background(), t, http.MethodGet, "/auth/session", "", http.Header{"Cookie": {cookie}}).want(t, 200, ""); r.obj["authenticated"] != true {
		t.Fatalf("a refused logout signed the browser out: %s", r.raw)
	}
	// JSON from the service's own page reaches the route, whatever it then
	// answers (the ids in these paths name nothing).
	for _, rt := range writes {
		path := writeRoutePath(t, rt.Pattern, room)
		for _, h := range [][]string{{"Origin", own, "Sec-Fetch-Site", "same-origin"}, {"Origin", own}, {"Sec-Fetch-Site", "same-origin"}} {
			if rt.Pattern == "/auth/logout" && h[0] == "Origin" && len(h) == 2 {
				continue // the first let-through logout already ended the session
			}
			r := e.cookieWrite(t, cookie, rt.Method, path, "{}", append(h, "Content-Type", "application/json; charset=utf-8")...)
			if code := r.str("code"); code == "CROSS_SITE_REFUSED" || code == "JSON_REQUIRED" {
				t.Errorf("%s %s from the own page %v: %d %s", rt.Method, rt.Pattern, h, r.status, r.raw)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCrossSiteFormsOfTheAudit replays the audit's forged writes with
// alice's cookie from another site (a message, an intent approval, an
// invite code rotation, a task) and checks each is refused and changes
// nothing, while the same writes with her owner token, and anonymous
// text/plain posts, which carry no one's cookie, are served as before.
func TestCrossSiteFormsOfTheAudit(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("alice")
	cookie, token := e.browserSignIn(t, "alice").Get("Cookie"), e.signIn(t, "alice")
	own := []string{"Origin", e.url, "Content-Type", "application/json"}
	room := e.cookieWrite(t, cookie, http.MethodPost, "/projects", "{}", own...).want(t, 201, "")
	code := room.str("code")
	evil := []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}

	e.cookieWrite(t, cookie, http.MethodPost, "/rooms/"+code+"/messages", `{"sender":"alice","text":"forged"}`, evil...).want(t, 403, "own pages")
	e.cookieWrite(t, cookie, http.MethodPost, "/projects/"+code+"/code/rotate", "", evil...).want(t, 403, "own pages")
	e.cookieWrite(t, cookie, http.MethodPost, "/rooms/"+code+"/tasks", `{"title":"forged","created_by":"alice"}`, evil...).want(t, 403, "own pages")
	e.cookieWrite(t, cookie, http.MethodPost, "/rooms/"+code+"/board-intents/bi_1/approve", "", evil...).want(t, 403, "own pages")
	if r := e.cookieWrite(t, cookie, http.MethodGet, "/rooms/"+code+"/messages", "", evil...).want(t, 200, ""); len(r.messages(t)) != 0 {
		t.Errorf("forged writes left messages: %s", r.raw)
	}
	if r := e.as(t, token, http.MethodGet, "/rooms/"+code+"/tasks", "").want(t, 200, ""); strings.Contains(r.raw, "forged") {
		t.Errorf("a forged task was created: %s", r.raw)
	}
	if r := e.as(t, token, http.MethodGet, "/rooms/"+code+"/info", "").want(t, 200, ""); r.str("code") != code {
		t.Errorf("the invite code changed: %s", r.raw)
	}

	// Agents' credentials are headers no page can forge: untouched, as are
	// anonymous clients, which carry nobody's cookie.
	h := http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://evil.example"}, "Content-Type": {"text/plain"}}
	e.callWith(context.Background(), t, http.MethodPost, "/rooms/"+code+"/messages", `{"sender":"alice","text":"by token"}`, h).want(t, 201, "")
	e.callWith(context.Background(), t, http.MethodPost, "/rooms/"+code+"/messages", `{"sender":"anon","text":"hi"}`,
		http.Header{"Content-Type": {"text/plain"}}).want(t, 201, "")
	// A cookie alongside a token is not a page's request either.
	h.Set("Cookie", cookie)
	e.callWith(context.Background(), t, http.MethodPost, "/rooms/"+code+"/messages", `{"sender":"alice","text":"both"}`, h).want(t, 201, "")
}

// TestDevOrigins: a development server's page (LETAGENTS_DEV_ORIGINS) is
// let through, and gets credentialed CORS, only when configured; the
// former defaults (localhost:3000, letagents.chat) are not.
func TestDevOrigins(t *testing.T) {
	t.Parallel()
	const dev = "http://localhost:3000"
	for _, tt := range []struct {
		name    string
		vars    map[string]string
		allowed []string
		refused []string
	}{
		{"unset", nil, nil, []string{dev, "http://127.0.0.1:3001", "https://letagents.chat"}},
		{"set", map[string]string{"LETAGENTS_DEV_ORIGINS": dev + ", http://127.0.0.1:5173"}, []string{dev, "http://127.0.0.1:5173"}, []string{"http://localhost:3001", "https://letagents.chat"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newAuthEnv(t, tt.vars)
			e.gh.AddUser("dev")
			cookie := e.browserSignIn(t, "dev").Get("Cookie")
			for _, origin := range append(slices.Clone(tt.allowed), tt.refused...) {
				want := slices.Contains(tt.allowed, origin)
				pre := e.callWith(context.Background(), t, http.MethodOptions, "/rooms/x/messages", "", http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"POST"}})
				if got := pre.header.Get("Access-Control-Allow-Origin") == origin && pre.header.Get("Access-Control-Allow-Credentials") == "true"; got != want {
					t.Errorf("preflight from %s: allowed %v, want %v (%v)", origin, got, want, pre.header)
				}
				r := e.cookieWrite(t, cookie, http.MethodPost, "/rooms/dev%20room/join", "{}", "Origin", origin, "Sec-Fetch-Site", "same-site", "Content-Type", "application/json")
				if got := r.status == http.StatusOK; got != want {
					t.Errorf("cookie write from %s: %d %s, want allowed %v", origin, r.status, r.raw, want)
				}
			}
		})
	}
}
