package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// TestNoSecretInTheLog runs every sign-in and every way to hold a room's
// secret through the whole runner, logging at debug: device sign-ins
// (polled pending, then authorized), a GitHub web sign-in, an agent and
// a worker session registered, an invite room created, joined by its
// code, written, polled, shown and its code rotated, plus paths no route
// serves. It collects every credential the runner minted or was handed
// and requires that no log line holds any of them, in any case.
func TestNoSecretInTheLog(t *testing.T) {
	t.Parallel()
	env, gh := githubEnv(t)
	env["LOG_LEVEL"] = "debug"
	in := start(t, env)
	gh.AddUser("alice")
	gh.AddUser("bob")
	gh.SetDeviceTiming(time.Second, githubtest.DefaultDeviceExpiresIn)

	secrets := map[string]string{}
	noRedirect := &http.Client{Timeout: client.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string, want int, kv ...string) (*http.Response, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, in.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, want)
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp, m
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }

	// Device sign-in: polled before and after GitHub approves.
	_, d := do("POST", "/auth/device/start", "", http.StatusCreated)
	reqID := str(d, "request_id")
	secrets["device request id"], secrets["device user code"] = reqID, str(d, "user_code")
	// Polled again within the interval: 429. A loaded machine may take
	// the whole interval between two requests, so poll until one lands
	// within it.
	do("GET", "/auth/device/poll/"+reqID, "", http.StatusOK)
	for deadline, again := time.Now().Add(testwait.Bound), true; again; {
		status, _, b := call(t, "GET", in.URL+"/auth/device/poll/"+reqID, nil)
		switch {
		case status == http.StatusTooManyRequests:
			again = false
		case status != http.StatusOK:
			t.Fatalf("device poll: %d %s", status, b)
		case time.Now().After(deadline):
			t.Fatal("no device poll came within the interval of the one before it")
		}
	}
	gh.ApproveDevice(str(d, "user_code"), "alice")
	var token string
	for deadline := time.Now().Add(testwait.Bound); token == "" && time.Now().Before(deadline); {
		// The interval (a second) must pass between polls.
		<-time.After(200 * time.Millisecond)
		status, _, b := call(t, "GET", in.URL+"/auth/device/poll/"+reqID, nil)
		var a wire.DeviceAuthorized
		if status == http.StatusOK && json.Unmarshal(b, &a) == nil {
			token = a.LetAgentsToken
		} else if status != http.StatusTooManyRequests {
			t.Fatalf("device poll: %d %s", status, b)
		}
	}
	secrets["owner token"] = token
	do("GET", "/auth/device/poll/"+reqID, "", http.StatusNotFound) // spent
	bearer := []string{"Authorization", "Bearer " + token}

	// GitHub web sign-in, as a browser: the login cookie, the state and
	// code GitHub sends back, the session cookie.
	resp, l := do("POST", "/auth/github/login", `{"redirect_to": "/in/team"}`, http.StatusOK)
	var loginCookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "letagents_login" {
			loginCookie = c
		}
	}
	if loginCookie == nil {
		t.Fatalf("no login cookie in %v", resp.Header)
	}
	secrets["login nonce"], secrets["login state"] = loginCookie.Value, str(l, "state")
	gh.SignIn("bob")
	atGitHub, err := noRedirect.Get(str(l, "auth_url"))
	if err != nil {
		t.Fatal(err)
	}
	atGitHub.Body.Close()
	back, err := url.Parse(atGitHub.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	secrets["GitHub code"] = back.Query().Get("code")
	resp, _ = do("GET", back.RequestURI(), "", http.StatusFound, "Cookie", loginCookie.Name+"="+loginCookie.Value)
	var session string
	for _, c := range resp.Cookies() {
		if c.Name == "letagents_session" {
			session = c.Value
		}
	}
	secrets["session cookie"] = session
	browser := []string{"Cookie", "letagents_session=" + session, "Origin", in.URL}

	// An agent, an invite room and a worker session in it.
	do("POST", "/agents", `{"name": "Builder"}`, http.StatusCreated, bearer...)
	_, room := do("POST", "/projects", "", http.StatusCreated, bearer...)
	code := str(room, "code")
	secrets["invite code"] = code
	do("GET", "/projects/join/"+code, "", http.StatusOK)
	do("GET", "/projects/join/"+strings.ToLower(code), "", http.StatusOK)
	do("POST", "/rooms/"+code+"/join", "{}", http.StatusOK, browser...)
	do("POST", "/rooms/"+strings.ToLower(code)+"/messages", `{"sender": "bob", "text": "hi"}`, http.StatusCreated, browser...)
	_, sess := do("POST", "/rooms/"+code+"/agent-sessions", `{"actor_key": "alice/Builder", "display_name": "Builder", "ide_label": "Codex"}`, http.StatusCreated, bearer...)
	secrets["worker session token"] = str(sess, "session_token")
	worker := append([]string{wire.SessionIDHeader, str(sess, "session_id"), wire.SessionTokenHeader, str(sess, "session_token")}, bearer...)
	do("POST", "/rooms/"+code+"/messages", `{"text": "from the worker"}`, http.StatusCreated, worker...)
	do("GET", "/rooms/"+code+"/messages/poll?after=0&timeout=0", "", http.StatusOK, worker...)
	do("GET", "/in/"+code, "", http.StatusOK)
	do("GET", "/rooms/"+code+"/no-such-route", "", http.StatusNotFound)
	_, rotated := do("POST", "/projects/"+code+"/code/rotate", "", http.StatusOK, bearer...)
	secrets["rotated invite code"] = str(rotated, "code")
	do("GET", "/rooms/"+str(rotated, "code")+"/messages", "", http.StatusOK, bearer...)

	for name, v := range secrets {
		if len(v) < 8 {
			t.Fatalf("%s is %q: the flow did not mint it", name, v)
		}
	}
	if err := in.stopped(t); err != nil {
		t.Fatal(err)
	}
	logs := in.stderr.String() + in.stdout.String()
	if n, polls := strings.Count(logs, `"msg":"request"`), strings.Count(logs, `"path":"/auth/device/poll/`); n < 20 || polls < 4 {
		t.Fatalf("the runner logged %d requests, %d of them device polls: the test proves nothing\n%s", n, polls, logs)
	}
	lower := strings.ToLower(logs)
	for name, v := range secrets {
		if strings.Contains(lower, strings.ToLower(v)) {
			for line := range strings.SplitSeq(logs, "\n") {
				if strings.Contains(strings.ToLower(line), strings.ToLower(v)) {
					t.Errorf("the log holds the %s: %s", name, line)
				}
			}
		}
	}
}
