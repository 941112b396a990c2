package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
)

// TestNamesAreClaims: a message's sender from a browser or from nobody
// signed in may not read as another person's name or login, another
// account's agent, or an agent session's in the room, spelled in any
// case, spacing or lookalike letters; a name nobody holds, and one's own,
// stay free. The same names with an owner token keep their rules (an
// agent label must be the account's own; a plain name is unverified).
func TestNamesAreClaims(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, nil)
	for _, login := range []string{"alice", "bob", "mallory"} {
		e.gh.AddUser(login)
	}
	aliceToken, bobToken := e.signIn(t, "alice"), e.signIn(t, "bob")
	aliceCookie, bobCookie := e.browserSignIn(t, "alice").Get("Cookie"), e.browserSignIn(t, "bob").Get("Cookie")
	malloryToken := e.signIn(t, "mallory")
	// alice's agent Zebulon works in the room; Quill is an agent of hers
	// registered in the service but never in this room.
	e.as(t, aliceToken, http.MethodPost, "/agents", `{"name": "zebulon", "display_name": "Zebulon"}`).want(t, 201, "")
	e.as(t, aliceToken, http.MethodPost, "/agents", `{"name": "quill", "display_name": "Quill"}`).want(t, 201, "")
	e.as(t, aliceToken, http.MethodPost, "/rooms/team/join", "").want(t, 200, "")
	e.as(t, bobToken, http.MethodPost, "/agents", `{"name": "scout", "display_name": "Scout"}`).want(t, 201, "")
	zebulon := e.as(t, aliceToken, http.MethodPost, "/rooms/team/agent-sessions",
		`{"actor_key": "alice/zebulon", "display_name": "Zebulon", "ide_label": "Cursor"}`).want(t, 201, "").str("actor_label")
	if zebulon != "Zebulon | alice Name's agent | Cursor" {
		t.Fatalf("alice's agent is %q", zebulon)
	}

	const (
		refused = iota // 403
		browser        // 201, source browser
		none           // 201, no source: unverified
		agent          // 201, source agent
	)
	type caller struct {
		name string
		kv   []string
	}
	own := func(cookie string) []string {
		return []string{"Cookie", cookie, "Origin", e.url, "Content-Type", "application/json"}
	}
	anonymous := caller{"anonymous", []string{"Content-Type", "application/json"}}
	bobBrowser := caller{"bob's browser", own(bobCookie)}
	aliceBrowser := caller{"alice's browser", own(aliceCookie)}
	bobAgent := caller{"bob's token", []string{"Authorization", "Bearer " + bobToken, "Content-Type", "application/json"}}
	callers := []caller{anonymous, bobBrowser, aliceBrowser, bobAgent}

	tests := []struct {
		sender string
		want   [4]int // by callers: anonymous, bob's browser, alice's browser, bob's token
	}{
		{"alice Name", [4]int{refused, refused, browser, none}},
		{"alice", [4]int{refused, refused, browser, none}},
		{"ALICE NAME", [4]int{refused, refused, browser, none}},
		{"AIice  Name", [4]int{refused, refused, browser, none}},
		{"аlice Name", [4]int{refused, refused, browser, none}}, // a Cyrillic а
		{"Zebulon", [4]int{refused, refused, browser, none}},
		{"ZEBUL0N", [4]int{refused, refused, browser, none}},
		{"Quill", [4]int{refused, refused, browser, none}},
		{zebulon, [4]int{refused, refused, browser, refused}},
		{"zebulon | ALICE NAME'S AGENT | cursor", [4]int{refused, refused, browser, refused}},
		{"Zebulon | mallory Name's agent | Cursor", [4]int{refused, refused, refused, refused}},
		{"Scout | bob Name's agent | Codex", [4]int{refused, browser, refused, agent}},
		{"Helper | alice Name's agent | Cursor", [4]int{refused, refused, browser, refused}},
		{"mallory", [4]int{refused, refused, refused, none}},
		{"bob", [4]int{refused, browser, refused, none}},
		{"bob Name", [4]int{refused, browser, refused, none}},
		{"Nobody Special", [4]int{none, browser, browser, none}},
		{"Zebulun", [4]int{none, browser, browser, none}},
	}
	for _, tt := range tests {
		for i, c := range callers {
			body := `{"sender": ` + strconv.Quote(tt.sender) + `, "text": "take my task"}`
			h := http.Header{}
			for k := 0; k+1 < len(c.kv); k += 2 {
				h.Set(c.kv[k], c.kv[k+1])
			}
			r := e.callWith(context.Background(), t, http.MethodPost, "/rooms/team/messages", body, h)
			var ok bool
			switch tt.want[i] {
			case refused:
				ok = r.status == http.StatusForbidden && r.str("error") != ""
			case browser:
				ok = r.status == http.StatusCreated && r.obj["source"] == "browser"
			case none:
				ok = r.status == http.StatusCreated && r.obj["source"] == nil
			case agent:
				ok = r.status == http.StatusCreated && r.obj["source"] == "agent"
			}
			if !ok {
				t.Errorf("%s as %q: %d %s; want %v", c.name, tt.sender, r.status, r.raw, [...]string{"403", "201 browser", "201 unverified", "201 agent"}[tt.want[i]])
			}
		}
	}
	// mallory cannot make an agent whose label reads as alice's agent's:
	// the owner label is her own name, whatever she sends.
	if r := e.as(t, malloryToken, http.MethodPost, "/agents", `{"name": "zebulon", "display_name": "Zebulon", "owner_label": "alice Name"}`).
		want(t, 201, ""); r.str("owner_label") != "mallory Name" {
		t.Errorf("mallory's agent = %s, want her own name as owner label", r.raw)
	}
	// A refusal says why, with its code.
	r := e.call(t, http.MethodPost, "/rooms/team/messages", `{"sender": "Alice Name", "text": "hi"}`).want(t, 403, "another person or agent")
	if r.str("code") != "NAME_HELD" {
		t.Errorf("refusal = %s, want code NAME_HELD", r.raw)
	}
	// The same rule holds for the board's written names: a task's
	// created_by from a browser.
	e.cookieWrite(t, bobCookie, http.MethodPost, "/rooms/team/tasks", `{"title": "forged", "created_by": "Zebulon"}`,
		"Origin", e.url, "Content-Type", "application/json").want(t, 403, "another person or agent")
}
