package server

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/wire"
)

// TestStaleToken pins what an agent whose token the server does not know
// gets: as the original client does against the original server, it
// works in open rooms as anonymous, except that it may not send under its
// label, which names its account (docs/api.md, Who may send as whom); it is
// also told so, with a hint true
// to where the token came from. An outdated LETAGENTS_TOKEN leaves the
// saved sign-in alone and starts no device flow (it would not be used); a
// revoked saved sign-in is dropped, and a private room starts a new one.
func TestStaleToken(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/vault", true)
	revoke := func(t *testing.T, token string) {
		t.Helper()
		h := sha256.Sum256([]byte(token))
		if _, err := b.db.Pool.Exec(context.Background(), `DELETE FROM owner_tokens WHERE token_hash = $1`, h[:]); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		env  map[string]string
		// signIn signs the agent in and leaves the saved sign-in usable
		// (revoke false) or revoked.
		revoke bool
		source string
		hint   string // what every word of the server's refusal says
		// sending under its label, which names its account
		sendHint string
		// registering a session, which needs an account
		registerHint string
		// joining a private repository's room
		privateCode     string
		privatePending  bool // a device flow was started for it
		savedAuthRemain bool
	}{
		{name: "outdated LETAGENTS_TOKEN", env: map[string]string{"LETAGENTS_TOKEN": strings.Repeat("e", 64)},
			source: tokenFromEnv, hint: "LETAGENTS_TOKEN, set in this MCP server's environment, is not accepted",
			sendHint:     "LETAGENTS_TOKEN, set in this MCP server's environment, is not accepted",
			registerHint: "remove it from the MCP configuration", privateCode: "NOT_AUTHENTICATED", savedAuthRemain: true},
		{name: "revoked saved sign-in", revoke: true,
			source: tokenFromState, hint: "The saved sign-in is not accepted",
			sendHint:     "sign in (start_device_auth", // the join dropped the saved sign-in
			registerHint: "has been cleared. Call start_device_auth", privatePending: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, b, "", tt.env)
			login := []string{"kim", "sam"}[i]
			a.signIn(t, b, login)
			if tt.revoke {
				revoke(t, a.srv.token())
			}
			notice := func(r answer, where string) {
				t.Helper()
				n, _ := r.obj["token_ignored"].(map[string]any)
				if n["source"] != tt.source || n["reason"] != "unknown" || !strings.Contains(n["hint"].(string), tt.hint) {
					t.Errorf("%s: token_ignored = %v; want source %s, reason unknown, a hint saying %q", where, n, tt.source, tt.hint)
				}
			}

			j := a.call(t, "join_room", map[string]any{"name": "openroom"}).ok(t)
			if j.obj["authenticated"] != false {
				t.Errorf("join = %s; want joined as anonymous", j.raw)
			}
			notice(j, "join_room")
			// Its label names its account, which an anonymous send cannot
			// prove: refused (the original took it), with a way out.
			if r := a.call(t, "send_message", map[string]any{"text": "still here"}); !r.isError || r.str("code") != "NAME_HELD" || !strings.Contains(r.str("hint"), tt.sendHint) {
				t.Errorf("send_message = %s; want NAME_HELD, a hint saying %q", r.raw, tt.sendHint)
			}
			o := a.call(t, "get_onboarding_status", nil).ok(t)
			if o.obj["authenticated"] != false {
				t.Errorf("onboarding = %s; want not authenticated", o.raw)
			}
			notice(o, "get_onboarding_status")

			r := a.call(t, "register_agent_session", nil)
			if !r.isError || !strings.Contains(r.str("hint"), tt.registerHint) {
				t.Errorf("register_agent_session = %s; want a failure, a hint saying %q", r.raw, tt.registerHint)
			}

			p := a.call(t, "join_room", map[string]any{"name": "github.com/acme/vault"})
			pending := readState(t, a.state)["pending_device_auth"] != nil
			if !p.isError || pending != tt.privatePending {
				t.Errorf("join of a private room = %s, device flow pending %v; want a failure, pending %v", p.raw, pending, tt.privatePending)
			}
			if tt.privateCode != "" && (p.str("code") != tt.privateCode || !strings.Contains(p.str("hint"), tt.hint)) {
				t.Errorf("join of a private room = %s; want code %s, a hint saying %q", p.raw, tt.privateCode, tt.hint)
			}
			if saved := readState(t, a.state)["auth"] != nil; saved != tt.savedAuthRemain {
				t.Errorf("saved sign-in kept = %v; want %v", saved, tt.savedAuthRemain)
			}
		})
	}
}

// TestHints pins the hint of each error the API gives by its code: what
// the status alone suggests is often wrong (a 403 WORKER_SESSION_REQUIRED
// is no matter of GitHub access).
func TestHints(t *testing.T) {
	t.Parallel()
	unreachable := &backend{url: "http://127.0.0.1:1"}
	env := newAgent(t, unreachable, "", map[string]string{"LETAGENTS_TOKEN": "stale"}).srv
	saved := newAgent(t, unreachable, "", nil).srv
	apiErr := func(status int, code, ignored string) *apiclient.APIError {
		return &apiclient.APIError{Status: status, Body: wire.Error{Error: "x", Code: code}, TokenIgnored: ignored}
	}
	tests := []struct {
		name    string
		srv     *Server
		err     *apiclient.APIError
		want    string // in the hint; "" for no hint
		mustNot string // not in the hint
	}{
		{"env token unknown", env, apiErr(401, "TOKEN_INVALID", "unknown"), "remove it from the MCP configuration", "cleared"},
		{"saved token unknown", saved, apiErr(401, "TOKEN_INVALID", "unknown"), "has been cleared. Call start_device_auth", "LETAGENTS_TOKEN"},
		{"token rewritten by a proxy", saved, apiErr(401, "TOKEN_INVALID", "scheme"), "proxy", "cleared"},
		{"older server's refusal", saved, apiErr(401, "TOKEN_INVALID", "refused"), "has been cleared", ""},
		{"private room, env token unknown", env, apiErr(401, "NOT_AUTHENTICATED", "unknown"), "LETAGENTS_TOKEN", "cleared"},
		{"signed out", saved, apiErr(401, "NOT_AUTHENTICATED", ""), "call start_device_auth", ""},
		{"private repository", saved, apiErr(403, "PRIVATE_REPO_NO_ACCESS", ""), "cannot see this repository", ""},
		{"worker session", saved, apiErr(403, "WORKER_SESSION_REQUIRED", ""), "register_agent_session", "GitHub"},
		{"board intent", saved, apiErr(403, "board_intent_required", ""), "approved board intent", "GitHub"},
		{"approval token", saved, apiErr(403, "board_approval_token_invalid", ""), "approved board intent", "GitHub"},
		{"admin only", saved, apiErr(403, "", ""), "", ""},
		{"rate", saved, apiErr(429, "RATE_LIMITED", ""), "wait a minute", ""},
		{"outage", saved, apiErr(503, "DATABASE_UNAVAILABLE", ""), "try again shortly", ""},
	}
	for _, tt := range tests {
		got := tt.srv.hintFor(context.Background(), tt.err)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) || (tt.mustNot != "" && strings.Contains(got, tt.mustNot)) {
			t.Errorf("%s: hint %q; want one saying %q and not %q", tt.name, got, tt.want, tt.mustNot)
		}
	}
}
