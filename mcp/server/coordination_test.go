package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// getJSON reads a route of the API with the agent's owner token.
func getJSON(t *testing.T, b *backend, path string, a *agent) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.srv.token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s %v", path, resp.StatusCode, raw, err)
	}
	return raw
}

// signIn runs the device sign-in of an agent as login on the fake GitHub.
func (a *agent) signIn(t *testing.T, b *backend, login string) {
	t.Helper()
	b.gh.AddUser(login)
	a.call(t, "start_device_auth", map[string]any{"force": true}).ok(t)
	b.gh.ApproveDevice(b.gh.LastUserCode(), login)
	b.clock.Advance(time.Minute)
	r := a.call(t, "poll_device_auth", map[string]any{"auto_join": false}).ok(t)
	if r.str("status") != "authorized" {
		t.Fatalf("sign-in as %s: %s", login, r.raw)
	}
}

// result decodes the server's answer that a coordination tool passes on.
func (r answer) result(t *testing.T) map[string]any {
	t.Helper()
	out, _ := r.obj["result"].(map[string]any)
	if out == nil {
		t.Fatalf("no result in %s", r.raw)
	}
	return out
}

func TestAgentSessionTools(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/app", false)
	a := newAgent(t, b, "", map[string]string{"LETAGENTS_AGENT_NAME": "builder", "LETAGENTS_AGENT_IDE": "Codex"})
	a.call(t, "join_room", map[string]any{"name": "github.com/acme/app"}).ok(t)
	a.call(t, "register_agent_session", nil).failed(t, "Authenticated agent identity is required")
	a.call(t, "post_status", map[string]any{"status": "working"}).failed(t, "register_agent_session")

	a.signIn(t, b, "ann")
	reg := a.call(t, "register_agent_session", nil).ok(t)
	sess, _ := reg.obj["agent_session"].(map[string]any)
	id := reg.str("agent_session_id")
	if !strings.HasPrefix(id, "as_") || sess["session_token"] != nil || sess["agent_key"] != "ann/builder" ||
		!strings.Contains(sess["actor_label"].(string), "Codex") {
		t.Fatalf("register = %s (the token must not be shown to the model)", reg.raw)
	}
	label := sess["actor_label"].(string)

	// Sends default to the session: the server signs them.
	sent := a.call(t, "send_message", map[string]any{"text": "hello"}).ok(t)
	if sent.str("sender") != label || sent.str("source") != "agent" {
		t.Errorf("send with a session = %s, want sender %q, source agent", sent.raw, label)
	}
	st := a.call(t, "post_status", map[string]any{"status": "blocked: waiting for the API key"}).ok(t)
	if st.str("status_posted") != "blocked" {
		t.Errorf("post_status = %s, want blocked", st.raw)
	}
	roster := func() map[string]any {
		t.Helper()
		var p struct {
			Participants []map[string]any `json:"participants"`
		}
		raw := getJSON(t, b, "/rooms/github.com/acme/app/participants", a)
		if err := json.Unmarshal(raw, &p); err != nil || len(p.Participants) != 1 {
			t.Fatalf("participants = %s", raw)
		}
		return p.Participants[0]
	}
	if p := roster(); p["status"] != "blocked" || p["status_text"] != "blocked: waiting for the API key" {
		t.Errorf("roster after post_status = %v", p)
	}
	// A wait with the session is a delivery connection: connected meanwhile.
	done := make(chan answer, 1)
	go func() {
		done <- a.call(t, "wait_for_messages", map[string]any{"after_message_id": sent.str("id"), "timeout": 5000})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for roster()["connected"] != true {
		if time.Now().After(deadline) {
			t.Fatal("the waiting agent never showed as connected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	<-done
	a.call(t, "wait_for_messages", map[string]any{"agent_session_id": "as_999", "timeout": 1000}).failed(t, "unknown agent_session_id")

	out := a.call(t, "disconnect_agent_session", nil).ok(t)
	if out.str("local_state") != "ended" {
		t.Errorf("disconnect = %s", out.raw)
	}
	// Without a session the agent speaks with its identity alone again.
	if r := a.call(t, "send_message", map[string]any{"text": "bye"}).ok(t); r.obj["source"] != "agent" && r.obj["source"] != nil {
		t.Errorf("after disconnect: %s", r.raw)
	}
}
