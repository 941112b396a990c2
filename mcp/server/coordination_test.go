package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
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
	// It waits after the status line, the newest message, so that the wake
	// is the one message it answers whether the poll reads before or after
	// the wake is sent (the roster shows the connection before its read).
	done := make(chan answer, 1)
	go func() {
		done <- a.call(t, "wait_for_messages", map[string]any{"after_message_id": st.str("message_id"), "timeout": 120000})
	}()
	testwait.Until(t, "the waiting agent to show as connected", func() bool { return roster()["connected"] == true })
	if _, _, err := b.svc.Store.SendMessage(context.Background(), letagents.NewMessage{RoomID: "github.com/acme/app", Sender: "someone", Text: "wake"}); err != nil {
		t.Fatal(err)
	}
	if woken := testwait.Recv(t, "the wait to be woken", done).ok(t); len(woken.list("messages")) != 1 || woken.list("messages")[0]["text"] != "wake" {
		t.Errorf("woken wait = %s, want the one message sent", woken.raw)
	}
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

func TestRestartKeepsTheAgentSession(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	env := map[string]string{"LETAGENTS_AGENT_NAME": "keeper", "LETAGENTS_AGENT_INSTANCE_ID": "keeper-1"}
	first := newAgent(t, b, "", env)
	first.call(t, "join_room", map[string]any{"name": "steady"}).ok(t)
	first.signIn(t, b, "kim")
	reg := first.call(t, "register_agent_session", nil).ok(t)
	id := reg.str("agent_session_id")

	// The same agent (same instance id), a new process, the same state file.
	env["LETAGENTS_STATE_PATH"] = first.state
	second := newAgent(t, b, "", env)
	second.call(t, "join_room", map[string]any{"name": "steady"}).ok(t)
	sent := second.call(t, "send_message", map[string]any{"text": "back again"}).ok(t)
	label, _ := reg.obj["agent_session"].(map[string]any)["actor_label"].(string)
	if sent.str("sender") != label || sent.str("source") != "agent" {
		t.Errorf("after a restart: %s, want it signed by the saved session %s (%s)", sent.raw, id, label)
	}
	var p struct {
		Participants []map[string]any `json:"participants"`
	}
	if err := json.Unmarshal(getJSON(t, b, "/rooms/steady/participants", second), &p); err != nil || len(p.Participants) != 1 || p.Participants[0]["session_id"] != id {
		t.Errorf("participants = %+v, want the one session %s, not a second", p.Participants, id)
	}
	// Another agent on the machine (another instance id) does not take it over.
	other := newAgent(t, b, "", map[string]string{"LETAGENTS_STATE_PATH": first.state, "LETAGENTS_AGENT_INSTANCE_ID": "other-1"})
	other.call(t, "join_room", map[string]any{"name": "steady"}).ok(t)
	other.call(t, "post_status", map[string]any{"status": "working"}).failed(t, "register_agent_session")

	// A session ended elsewhere (its owner, from another client) is
	// forgotten at the first refusal, with the way forward.
	saved, _ := readState(t, first.state)["agent_sessions"].(map[string]any)[id].(map[string]any)
	body := `{"agent_session_id": "` + id + `", "agent_session_token": "` + saved["session_token"].(string) + `"}`
	req, _ := http.NewRequest(http.MethodPost, b.url+"/rooms/steady/agent-sessions/"+id+"/disconnect", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+second.srv.token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("disconnect over HTTP: %v %v", resp, err)
	}
	resp.Body.Close()
	second.call(t, "post_status", map[string]any{"status": "working"}).failed(t, "Call register_agent_session again")
	second.call(t, "post_status", map[string]any{"status": "working"}).failed(t, "Call register_agent_session first")
	if st := readState(t, first.state); st["agent_sessions"] != nil {
		t.Errorf("the ended session is still saved: %v", st["agent_sessions"])
	}
}
