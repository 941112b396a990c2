package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/github/githubtest"
)

// TestEveryRoomRouteIsGated walks the whole route table with the callers
// of a private repo room: every route that acts on a room must refuse
// those GitHub does not let see the repository, let a reader through its
// gate (and no further on admin routes), and let an admin through.
func TestEveryRoomRouteIsGated(t *testing.T) {
	t.Parallel()
	// With a GitHub App, so that its routes answer past the gate.
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000000", "LETAGENTS_SEND_LIMIT": "1000000",
		"GITHUB_APP_ID": "4242", "GITHUB_APP_PRIVATE_KEY": githubtest.AppKeyPEM(t), "GITHUB_APP_SLUG": "gate"})
	e.gh.AddRepo("acme/vault", true)
	for _, login := range []string{"olga", "rita", "adam"} {
		e.gh.AddUser(login)
	}
	e.gh.Grant("acme/vault", "rita", "read")
	e.gh.Grant("acme/vault", "adam", "admin")
	outsider, reader, admin := e.signIn(t, "olga"), e.signIn(t, "rita"), e.signIn(t, "adam")
	const room = "github.com/acme/vault"
	// The GitHub admin's join opens the room and makes them its admin.
	if r := e.as(t, admin, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Fatalf("GitHub admin's join = %s, want role admin", r.raw)
	}

	// The room page is static: its script calls the gated routes. Resolving
	// tells only what an id names, never a room's data.
	publicRoomRoutes := map[string]bool{"GET /in/{room}": true, "GET /rooms/resolve/{room}": true, "GET /api/rooms/resolve/{room}": true}
	walked := map[string]int{} // routes walked, by gate
	for _, rt := range api.Routes() {
		route := rt.Method + " " + rt.Pattern
		if !strings.Contains(rt.Pattern, "{room}") {
			continue
		}
		if rt.Gate() == "public" {
			if !publicRoomRoutes[route] {
				t.Errorf("%s acts on a room but declares the public gate", route)
			}
			continue
		}
		walked[rt.Gate()]++
		path, body := roomRoutePath(t, rt.Pattern, room), ""
		if rt.Method != http.MethodGet {
			body = "{}"
		}
		call := func(token string) reply {
			if strings.HasSuffix(rt.Pattern, "/stream") {
				// A stream that opens never ends: its answer's head is enough.
				var h http.Header
				if token != "" {
					h = http.Header{"Authorization": {"Bearer " + token}}
				}
				s, r := e.tryStream(t, path, h)
				if s != nil {
					s.close()
					return reply{status: http.StatusOK}
				}
				return r
			}
			if token == "" {
				return e.call(t, rt.Method, path, body)
			}
			return e.as(t, token, rt.Method, path, body)
		}
		if r := call(""); r.status != 401 || r.str("error") != "auth_required" || r.str("code") != "NOT_AUTHENTICATED" {
			t.Errorf("%s, anonymous: %d %s, want 401 auth_required", route, r.status, r.raw)
		}
		if r := call(outsider); r.status != 403 || r.str("error") != "private_repo_no_access" {
			t.Errorf("%s, signed in without access: %d %s, want 403 private_repo_no_access", route, r.status, r.raw)
		}
		r := call(reader)
		if rt.Gate() == "admin" {
			if r.status != 403 || r.str("error") != "Admin privileges required" {
				t.Errorf("%s, reader: %d %s, want 403 Admin privileges required", route, r.status, r.raw)
			}
		} else if refusedByGate(r) {
			t.Errorf("%s, reader: %d %s, want past the %s gate", route, r.status, r.raw, rt.Gate())
		}
		if r := call(admin); refusedByGate(r) || r.str("error") == "Admin privileges required" {
			t.Errorf("%s, admin: %d %s, want past the %s gate", route, r.status, r.raw, rt.Gate())
		}
	}
	for _, g := range []string{"member", "sender", "joiner", "opener", "admin"} {
		if walked[g] == 0 {
			t.Errorf("walked no route with the %s gate; routes walked by gate: %v", g, walked)
		}
	}
}

// refusedByGate reports whether an answer is the access gate's refusal, or
// a failure, which no caller's request may cause.
func refusedByGate(r reply) bool {
	return r.status >= 500 || r.str("error") == "auth_required" || r.str("error") == "private_repo_no_access"
}

// roomRoutePath fills a room route's pattern in: the room, and ids of
// things the room does not have (the walk is about the gate, not them).
func roomRoutePath(t *testing.T, pattern, room string) string {
	t.Helper()
	ids := map[string]string{"{room}": room, "{task_id}": "task_1", "{session_id}": "as_1", "{intent_id}": "bi_1", "{message_id}": "msg_1"}
	var segs []string
	for seg := range strings.SplitSeq(pattern, "/") {
		if strings.HasPrefix(seg, "{") {
			v, ok := ids[seg]
			if !ok {
				t.Fatalf("route %s: no value for %s; add one to roomRoutePath", pattern, seg)
			}
			seg = v
		}
		segs = append(segs, seg)
	}
	path := strings.Join(segs, "/")
	if strings.HasSuffix(path, "/poll") {
		path += "?timeout=0" // answer now: a parked poll proves nothing more
	}
	return path
}
