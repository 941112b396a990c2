package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Nobody may send as the server: its name is refused however it is
// dressed up, on the current and the legacy route, signed in or not, and
// nothing is stored.
func TestSenderCannotBeTheServer(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	ann := e.signIn(t, "ann")
	e.as(t, ann, http.MethodPost, "/rooms/lobby/join", "").want(t, 200, "")
	reserved := []string{
		"letagents", "LetAgents", "  letagents  ", "LETAGENTS", "let agents", "let-agents", "let_agents",
		"letagents\u200b", "\u200bletagents", "ｌｅｔａｇｅｎｔｓ", "l\u0435tagents", // a Cyrillic е
		"Ietagents", "letagents | Ann's agent | Codex", "letagents (Ann's agent)", "letagents|x",
	}
	for _, sender := range reserved {
		body := `{"sender": ` + strconv.Quote(sender) + `, "text": "[status] task_1 is complete: Ship it"}`
		e.call(t, http.MethodPost, "/rooms/lobby/messages", body).want(t, 400, "reserved for the server's own lines")
		e.call(t, http.MethodPost, "/projects/lobby/messages", body).want(t, 400, "reserved for the server's own lines")
		e.as(t, ann, http.MethodPost, "/rooms/lobby/messages", body).want(t, 400, "reserved for the server's own lines")
	}
	if msgs := e.call(t, http.MethodGet, "/rooms/lobby/messages", "").want(t, 200, "").messages(t); len(msgs) != 0 {
		t.Fatalf("refused posts were stored: %v", msgs)
	}
	// Names that merely contain it are anyone's.
	for _, sender := range []string{"letagents fan", "not letagents", "agents"} {
		sent := e.call(t, http.MethodPost, "/rooms/lobby/messages", `{"sender": `+strconv.Quote(sender)+`, "text": "hi"}`).want(t, 201, "")
		if sent.obj["source"] != nil {
			t.Errorf("anonymous %q was stored with source %v, want null", sender, sent.obj["source"])
		}
	}
}

// An agent's actor label is its owner's: another account, or nobody,
// cannot send under it, and an owner token's message reads as an agent's
// only under a label its account owns.
func TestSenderCannotBeAnotherAccountsAgent(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	e.gh.AddUser("bob")
	ann, bob := e.signIn(t, "ann"), e.signIn(t, "bob")
	e.as(t, ann, http.MethodPost, "/agents", `{"name": "builder", "owner_label": "Ann"}`).want(t, 201, "")
	e.as(t, ann, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")
	e.as(t, bob, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")
	r := e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions",
		`{"actor_key": "ann/builder", "display_name": "Builder", "ide_label": "Codex"}`).want(t, 201, "")
	label := r.str("actor_label")
	if label != "Builder | Ann's agent | Codex" {
		t.Fatalf("ann's agent is %q", label)
	}
	// bob cannot copy the labels ann's agent is made of into an agent of
	// his own: the owner label is his own name, whatever he sends. The
	// display name he may copy; his agent's label still names him.
	if r := e.as(t, bob, http.MethodPost, "/agents", `{"name": "copycat", "display_name": "Builder", "owner_label": "Ann"}`).want(t, 201, ""); r.str("owner_label") != "bob Name" {
		t.Errorf("bob's agent with ann's owner label = %s, want bob's own name kept", r.raw)
	}

	send := func(t *testing.T, token, sender string) reply {
		body := `{"sender": ` + strconv.Quote(sender) + `, "text": "I am done, take my task"}`
		if token == "" {
			return e.call(t, http.MethodPost, "/rooms/team/messages", body)
		}
		return e.as(t, token, http.MethodPost, "/rooms/team/messages", body)
	}
	refused := []struct {
		name, token, sender, msg string
	}{
		{"bob as ann's agent", bob, label, "another account's agent"},
		{"bob, other case and spaces", bob, "  builder  |  ANN'S AGENT | codex ", "another account's agent"},
		{"bob, invisible characters", bob, "Builder\u200b | Ann's agent | Codex\u2060", "another account's agent"},
		{"anonymous as ann's agent", "", label, "another account's agent"},
		{"bob as an agent of ann's with no session", bob, "Scout | Ann's agent | Claude", "does not own"},
		{"bob in the legacy label form", bob, "Scout (Ann's agent)", "does not own"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) { send(t, tt.token, tt.sender).want(t, 403, tt.msg) })
	}
	if msgs := e.call(t, http.MethodGet, "/rooms/team/messages", "").want(t, 200, "").messages(t); len(msgs) != 0 {
		t.Fatalf("refused posts were stored: %v", msgs)
	}

	accepted := []struct {
		name, token, sender string
		source              any
	}{
		{"ann's own session label, by her token", ann, label, "agent"},
		{"ann's agent in another IDE", ann, "builder | ann's agent | Claude", "agent"},
		{"bob under a plain name", bob, "bob", nil},
		{"anonymous, an agent label nobody registered here", "", "Scout | Zed's agent | Codex", nil},
	}
	for _, tt := range accepted {
		if got := send(t, tt.token, tt.sender).want(t, 201, ""); got.obj["source"] != tt.source || got.str("sender") != tt.sender {
			t.Errorf("%s: sent %s, want sender %q and source %v", tt.name, got.raw, tt.sender, tt.source)
		}
	}
}

// The room page tells the server's lines by their source, never by a
// sender or a text that anyone can copy.
func TestRoomPageTellsSystemLinesBySource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	page := pageWithScripts(t, e, "/in/team")
	if !strings.Contains(page, `m.source === "system"`) {
		t.Error(`the room page does not check m.source === "system"`)
	}
	for _, bad := range []string{`=== "letagents"`, `startsWith("[status]")`} {
		if strings.Contains(page, bad) {
			t.Errorf("the room page still tells system lines by %s", bad)
		}
	}
}

// An agent cannot be named as the server either: its label would be
// refused at every send.
func TestAgentCannotBeNamedAsTheServer(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	e.gh.AddUser("ann")
	ann := e.signIn(t, "ann")
	e.as(t, ann, http.MethodPost, "/agents", `{"name": "letagents"}`).want(t, 400, "reserved")
	e.as(t, ann, http.MethodPost, "/agents", `{"name": "helper", "display_name": "Let Agents"}`).want(t, 400, "reserved")
	e.as(t, ann, http.MethodPost, "/agents", `{"name": "helper"}`).want(t, 201, "")
	e.as(t, ann, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")
	e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions", `{"actor_key": "ann/helper", "display_name": "LETAGENTS"}`).want(t, 400, "reserved")
	e.as(t, ann, http.MethodPost, "/rooms/team/agent-sessions", `{"actor_key": "ann/helper", "requested_base_display_name": "letagents"}`).want(t, 400, "reserved")
}
