package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHandler throws arbitrary methods, paths, queries and bodies at every
// route, on a real database: whatever comes in, the answer is a page or a
// JSON object, and never a panic or a 5xx.
func FuzzHandler(f *testing.F) {
	// Polls on an existing room may wait: at most a second each.
	e := newEnv(f, map[string]string{"LETAGENTS_POLL_MAX_MS": "1000"})
	if _, _, err := e.svc.Store.EnsureRoom(context.Background(), "fuzz room"); err != nil {
		f.Fatal(err)
	}
	seeds := []struct {
		method       uint8
		target, body string
	}{
		{0, "/rooms/fuzz%20room/messages?after=msg_0&limit=5", ""},
		{1, "/rooms/fuzz%20room/messages", `{"sender":"a","text":"b"}`},
		{1, "/rooms/fuzz%20room/messages", `{"sender":"a","text":"b","thread_parent_id":"msg_1"}`},
		{1, "/projects/fuzz%20room/messages", `{"sender":"a","text":"\u0000"}`},
		{0, "/rooms/fuzz%20room/messages/poll?after=msg_0&timeout=10", ""},
		{0, "/rooms/fuzz%20room/messages?before=latest&limit=500", ""},
		{1, "/projects", ""},
		{1, "/projects/room/github.com%2FO%2FR.git", ""},
		{1, "/rooms/git-room:github.com:o%2Fr:branch:Y29kZXg/join", ""},
		{1, "/rooms/git-room:github.com:o%2Fr:branch:%25%25/join", ""},
		{0, "/projects/join/abcd-efgh", ""},
		{0, "/in/github.com/o/r", ""},
		{2, "/rooms/x/messages", "{"},
		{0, "/rooms/%01/messages?after=%ff", ""},
		{5, "/api/health", ""},
		{1, "/rooms/fuzz%20room/agent-sessions", `{"actor_key":"a/b"}`},
		{1, "/rooms/fuzz%20room/agent-sessions/as_1/disconnect", `{"agent_session_id":"as_1","agent_session_token":"x"}`},
		{1, "/rooms/fuzz%20room/presence", `{"status":"working"}`},
		{0, "/rooms/fuzz%20room/participants", ""},
		{0, "/rooms/fuzz%20room/tasks?open=true&limit=5&after=task_1&status=accepted", ""},
		{1, "/rooms/fuzz%20room/tasks", `{"title":"t","created_by":"x"}`},
		{3, "/rooms/fuzz%20room/tasks/task_1", `{"status":"assigned"}`},
		{1, "/rooms/fuzz%20room/tasks/task_1/lease-action", `{"action":"handoff","target_actor_key":"\u0000"}`},
		{1, "/rooms/fuzz%20room/tasks/task_1/review-lease-action", `{"action":"claim"}`},
		{1, "/rooms/fuzz%20room/board-intents", `{"action":"task_create","payload":{"title":1}}`},
		{1, "/rooms/fuzz%20room/board-intents/bi_1/approve", ""},
		{3, "/rooms/fuzz%20room/board-settings", `{"manager_mode":"x"}`},
		{1, "/rooms/fuzz%20room/artifacts", `{"artifact":{"kind":"merge","number":9007199254740993}}`},
		{1, "/auth/device/start?room_id=%ff", ""},
		{0, "/auth/device/poll/%00", ""},
		{1, "/agents", `{"name":"\u0000"}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.body)
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}
	f.Fuzz(func(t *testing.T, m uint8, target, body string) {
		req, err := http.NewRequest(methods[int(m)%len(methods)], "http://letagents.test/"+strings.TrimPrefix(target, "/"), strings.NewReader(body))
		if err != nil {
			return // no server would receive this request
		}
		rec := httptest.NewRecorder()
		e.svc.Handler.ServeHTTP(rec, req)
		// This env has no GitHub app: sign-in routes say so with a 503,
		// the one 5xx that is not a fault.
		unconfigured := rec.Code == http.StatusServiceUnavailable && strings.Contains(rec.Body.String(), "sign-in is not configured")
		if rec.Code >= 500 && !unconfigured {
			t.Fatalf("%s %s with %q: status %d: %s", req.Method, target, body, rec.Code, rec.Body)
		}
		switch ct := rec.Header().Get("Content-Type"); {
		case rec.Code == http.StatusNoContent && req.Method == http.MethodOptions && rec.Body.Len() == 0:
			// A CORS preflight.
		case rec.Code == http.StatusFound && rec.Header().Get("Location") != "":
			// A redirect (the sign-in callback).
		case strings.HasPrefix(ct, "text/html"):
		case strings.HasPrefix(ct, "application/json"):
			var obj map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &obj); err != nil {
				t.Fatalf("%s %s: answer is not a JSON object: %s", req.Method, target, rec.Body)
			}
			if _, ok := obj["error"].(string); rec.Code >= 400 && !ok {
				t.Fatalf("%s %s: status %d without an error message: %s", req.Method, target, rec.Code, rec.Body)
			}
		default:
			t.Fatalf("%s %s: answer of type %q", req.Method, target, ct)
		}
	})
}

// FuzzCredentialHeaders throws arbitrary Authorization and Cookie headers
// at the middleware in front of every route, with sign-in and repo access
// on: whatever a client sends as a credential, the answer is a JSON object
// and never a panic or a 5xx.
func FuzzCredentialHeaders(f *testing.F) {
	e := newAuthEnv(f, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000000"})
	for _, s := range []struct{ authorization, cookie string }{
		{"", ""},
		{"Bearer " + strings.Repeat("a", 64), ""},
		{"bearer x", "letagents_session=abc"},
		{"Basic dXNlcjpwYXNz", ""},
		{"Bearer", "letagents_session="},
		{"Bearer \x00\xff", "letagents_session=\x01; other=1"},
		{"", "letagents_session=" + strings.Repeat("b", 64) + "; letagents_session=c"},
		{"Bearer a b c", "=;;=;letagents_session"},
	} {
		f.Add(s.authorization, s.cookie)
	}
	paths := []string{"/auth/session", "/rooms/github.com/o/r/messages", "/agents/me", "/auth/logout"}
	f.Fuzz(func(t *testing.T, authorization, cookie string) {
		for i, path := range paths {
			method := http.MethodGet
			if i == len(paths)-1 {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, path, nil)
			req.Header["Authorization"] = []string{authorization}
			req.Header["Cookie"] = []string{cookie}
			rec := httptest.NewRecorder()
			e.svc.Handler.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s with Authorization %q, Cookie %q: status %d: %s", method, path, authorization, cookie, rec.Code, rec.Body)
			}
			var obj map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &obj); err != nil {
				t.Fatalf("%s %s: answer is not a JSON object: %s", method, path, rec.Body)
			}
		}
	})
}
