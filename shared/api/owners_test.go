package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
)

// writer is one identity of the table of who may write what: request
// headers, and the worker session whose credentials go in the body.
type writer struct {
	name    string
	headers http.Header
	session *session // nil: no session credentials
}

// browserSignIn signs login in through the web flow and returns the
// headers of that browser's same-origin requests as the room page sends
// them: its session cookie, its origin, JSON.
func (e *env) browserSignIn(t *testing.T, login string) http.Header {
	t.Helper()
	start, browser := e.webLogin(t, "")
	done := e.callWith(context.Background(), t, http.MethodGet, e.atGitHub(t, start, login), "", browser)
	c := sessionCookie(t, done.header)
	return http.Header{"Cookie": {c.Name + "=" + c.Value}, "Origin": {e.url}, "Sec-Fetch-Site": {"same-origin"},
		"Content-Type": {"application/json"}}
}

// ownedWork is what the owner made in one case of the table: each case
// gets its own, so that one case's write cannot decide another's.
type ownedWork struct {
	worker    session // the owner's worker session that made it all
	reasoning string  // a reasoning session's id
	artifact  string  // an artifact's URL
	task      string  // a task the worker holds (claimed)
}

// TestWhoMayWriteWhat is the table of who may write what others made: for
// every write route on an object one identity owns (a reasoning session,
// an artifact, a held task, a worker session), each identity's write takes
// effect only where the table says it may, and is refused (401, 403 or
// 409) without effect everywhere else. Rooms open to anyone and private
// repository rooms alike.
func TestWhoMayWriteWhat(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "100000", "LETAGENTS_SEND_LIMIT": "100000"})
	e.gh.AddRepo("acme/secret", true)
	for _, u := range []string{"alice", "bob", "carol", "dan"} {
		e.gh.AddUser(u)
	}
	e.gh.Grant("acme/secret", "alice", "write")
	e.gh.Grant("acme/secret", "bob", "write")
	e.gh.Grant("acme/secret", "carol", "read")
	e.gh.Grant("acme/secret", "dan", "admin")
	alice, bob, dan := e.signIn(t, "alice"), e.signIn(t, "bob"), e.signIn(t, "dan")
	carolBrowser, danBrowser := e.browserSignIn(t, "carol"), e.browserSignIn(t, "dan")
	e.as(t, alice, http.MethodPost, "/agents", `{"name": "builder"}`).want(t, 201, "")

	for _, room := range []string{"workshop", "github.com/acme/secret"} {
		t.Run(room, func(t *testing.T) {
			t.Parallel()
			// dan administers both: the first to join the named room, an
			// admin of the repository at GitHub.
			if r := e.as(t, dan, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
				t.Fatalf("dan's join = %s, want admin", r.raw)
			}
			e.callWith(context.Background(), t, http.MethodPost, "/rooms/"+room+"/join", "", carolBrowser).want(t, 200, "")
			ownerOther := e.register(t, alice, room, "builder", `{"actor_key": "alice/builder"}`)
			bobWorker := e.register(t, bob, room, "scout", `{"actor_key": "bob/scout"}`)
			path := "/rooms/" + room
			var n int // numbers each case's worker and artifact
			newWork := func(t *testing.T) ownedWork {
				t.Helper()
				n++
				w := ownedWork{worker: e.register(t, alice, room, "builder", fmt.Sprintf(`{"actor_key": "alice/builder", "display_name": "Maker%d"}`, n))}
				h := w.worker.headers()
				w.reasoning = e.callWith(context.Background(), t, http.MethodPost, path+"/reasoning-sessions", `{"summary": "Alice is thinking"}`, h).
					want(t, 201, "").obj["session"].(map[string]any)["id"].(string)
				w.artifact = fmt.Sprintf("https://github.com/acme/secret/pull/%d", n)
				e.callWith(context.Background(), t, http.MethodPost, path+"/artifacts",
					`{"kind": "pull_request", "url": "`+w.artifact+`", "title": "Alice's PR", "state": "open"}`, h).want(t, 200, "")
				w.task = e.callWith(context.Background(), t, http.MethodPost, path+"/tasks", `{"title": "Alice's task"}`, h).want(t, 201, "").str("id")
				e.callWith(context.Background(), t, http.MethodPatch, path+"/tasks/"+w.task, `{"status": "accepted"}`, danBrowser).want(t, 200, "")
				e.callWith(context.Background(), t, http.MethodPatch, path+"/tasks/"+w.task, `{"status": "assigned"}`, h).want(t, 200, "")
				return w
			}
			reasoning := func(t *testing.T, w ownedWork) map[string]any {
				t.Helper()
				return e.as(t, dan, http.MethodGet, path+"/reasoning-sessions/"+w.reasoning, "").want(t, 200, "").obj
			}

			writers := func(w ownedWork) []writer {
				return []writer{
					{"owner's worker session", nil, &w.worker},
					{"owner's token with another of its sessions", nil, &ownerOther},
					{"another account's token", http.Header{"Authorization": {"Bearer " + bob}}, nil},
					{"another account's worker session", nil, &bobWorker},
					{"a reader's browser", carolBrowser, nil},
					{"anonymous", nil, nil},
					{"room admin's browser", danBrowser, nil},
				}
			}
			const (
				ownerWorker = 1 << iota
				ownerToken
				otherToken
				otherWorker
				reader
				anonymous
				admin
			)
			routes := []struct {
				name    string
				allowed int // the writers (by bit, in writers' order) whose write takes effect
				// code is the refusal's code for another account's worker
				// session and a reader's browser, "" for any.
				code   string
				method string
				path   func(w ownedWork) string
				body   string
				took   func(t *testing.T, w ownedWork) bool
			}{
				{"add an update to a reasoning session", ownerWorker | ownerToken, letagents.CodeNotOwner, http.MethodPost,
					func(w ownedWork) string { return path + "/reasoning-sessions/" + w.reasoning + "/updates" },
					`{"summary": "Overwritten"}`,
					func(t *testing.T, w ownedWork) bool {
						return reasoning(t, w)["session"].(map[string]any)["summary"] == "Overwritten"
					}},
				{"change a reasoning session's task", ownerWorker | ownerToken, letagents.CodeNotOwner, http.MethodPatch,
					func(w ownedWork) string { return path + "/reasoning-sessions/" + w.reasoning },
					`{"task_id": "task_999"}`,
					func(t *testing.T, w ownedWork) bool {
						return reasoning(t, w)["session"].(map[string]any)["task_id"] == "task_999"
					}},
				{"close a reasoning session", ownerWorker | ownerToken | admin, letagents.CodeNotOwner, http.MethodPatch,
					func(w ownedWork) string { return path + "/reasoning-sessions/" + w.reasoning },
					`{"closed_at": "2026-01-02T03:04:05Z"}`,
					func(t *testing.T, w ownedWork) bool {
						return reasoning(t, w)["session"].(map[string]any)["closed_at"] != nil
					}},
				{"publish an artifact again", ownerWorker | ownerToken | admin, letagents.CodeNotOwner, http.MethodPost,
					func(ownedWork) string { return path + "/artifacts" }, "",
					func(t *testing.T, w ownedWork) bool {
						r := e.as(t, dan, http.MethodGet, path+"/artifacts", "").want(t, 200, "")
						for _, a := range r.obj["artifacts"].([]any) {
							if a := a.(map[string]any); a["url"] == w.artifact {
								return a["title"] == "Replaced"
							}
						}
						t.Fatalf("artifact %s is gone: %s", w.artifact, r.raw)
						return false
					}},
				{"change a held task", ownerWorker | ownerToken | admin, "", http.MethodPatch,
					func(w ownedWork) string { return path + "/tasks/" + w.task },
					`{"pr_url": "https://github.com/acme/secret/pull/999"}`,
					func(t *testing.T, w ownedWork) bool {
						return e.as(t, dan, http.MethodGet, path+"/tasks/"+w.task, "").want(t, 200, "").str("pr_url") != ""
					}},
				{"disconnect a worker session", ownerWorker | admin, "", http.MethodPost,
					func(w ownedWork) string { return path + "/agent-sessions/" + w.worker.id + "/disconnect" }, `{}`,
					func(t *testing.T, w ownedWork) bool { return sessionHas(t, e, w.worker, "ended_at") }},
				{"report a worker session's native activity", ownerWorker, "", http.MethodPost,
					func(w ownedWork) string { return path + "/agent-sessions/" + w.worker.id + "/native-activity" }, "",
					func(t *testing.T, w ownedWork) bool { return sessionHas(t, e, w.worker, "last_native_activity_at") }},
			}
			for _, rt := range routes {
				t.Run(rt.name, func(t *testing.T) {
					for i := range len(writers(ownedWork{})) {
						w := newWork(t)
						who := writers(w)[i]
						body := map[string]any{}
						if rt.body != "" {
							if err := json.Unmarshal([]byte(rt.body), &body); err != nil {
								t.Fatal(err)
							}
						}
						switch rt.name {
						case "publish an artifact again":
							maps.Copy(body, map[string]any{"kind": "pull_request", "url": w.artifact, "title": "Replaced", "state": "closed"})
						case "report a worker session's native activity":
							maps.Copy(body, map[string]any{"observed_at": e.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "sequence": 1, "method": "turn/started"})
						}
						h := who.headers
						if who.session != nil {
							h = http.Header{"Authorization": {"Bearer " + who.session.owner}}
							body["agent_session_id"], body["agent_session_token"] = who.session.id, who.session.token
						}
						raw, _ := json.Marshal(body)
						r := e.callWith(context.Background(), t, rt.method, rt.path(w), string(raw), h)
						want := rt.allowed&(1<<i) != 0
						took := rt.took(t, w)
						switch {
						case want && (r.status >= 300 || !took):
							t.Errorf("%s: %d %s, took effect %v; want it to", who.name, r.status, r.raw, took)
						case !want && (took || r.status != 401 && r.status != 403 && r.status != 409):
							t.Errorf("%s: %d %s, took effect %v; want 401, 403 or 409 and no effect", who.name, r.status, strings.TrimSpace(r.raw), took)
						case rt.code != "" && (1<<i)&(otherWorker|reader) != 0 && r.str("code") != rt.code:
							t.Errorf("%s: refused %d %s; want code %s", who.name, r.status, r.raw, rt.code)
						}
					}
				})
			}
		})
	}
}

// sessionHas reports whether a worker session's column (a time) is set.
func sessionHas(t *testing.T, e *env, s session, column string) bool {
	t.Helper()
	var set bool
	id, _ := letagents.ParseWireID(letagents.AgentSessionPrefix, s.id)
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT `+column+` IS NOT NULL FROM agent_sessions WHERE id = $1`, id).Scan(&set); err != nil {
		t.Fatal(err)
	}
	return set
}
