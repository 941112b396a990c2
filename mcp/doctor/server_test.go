package doctor_test

import (
	"cmp"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/doctor"
	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/service/servicetest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// backend is the real service on a private schema, over real HTTP.
type backend struct {
	url   string
	store *store.Store
}

// newBackend starts the service; signIn turns GitHub sign-in on (a fake
// GitHub), else access is open, as on the local runner.
func newBackend(t *testing.T, signIn bool) backend {
	t.Helper()
	vars := map[string]string{"LETAGENTS_REPO_ACCESS": "open", "LETAGENTS_JOIN_LIMIT": "100000"}
	if signIn {
		delete(vars, "LETAGENTS_REPO_ACCESS")
	}
	url, _, d := servicetest.Serve(t, vars, func(cfg *config.Config) {
		if signIn {
			cfg.GitHub = githubtest.New(t).Config()
			cfg.TokenKeyFile = filepath.Join(t.TempDir(), "token.key")
		}
	})
	return backend{url: url, store: store.New(d.Pool)}
}

// noProgram is a LookPath that finds nothing: no runtime is installed.
func noProgram(string) (string, error) { return "", exec.ErrNotFound }

// baseConfig checks dir against api with nothing else on the machine: an
// empty state file, no runtime.
func baseConfig(t *testing.T, dir, api string) doctor.Config {
	t.Helper()
	home := t.TempDir()
	return doctor.Config{Dir: dir, Version: "test", APIURL: api, DefaultAPIURL: "http://127.0.0.1:1",
		StatePath: filepath.Join(t.TempDir(), "mcp-state.json"), Homes: hook.Homes{Home: home, Codex: filepath.Join(home, ".codex"), Gemini: home},
		ClaudeState: filepath.Join(home, ".claude.json"), GeminiTrustedFolders: filepath.Join(home, ".gemini", "trustedFolders.json"), CodexBin: "codex", LookPath: noProgram,
		Timeout: testwait.Bound}
}

// pin makes dir's room room, as a .letagents.json does.
func pin(t *testing.T, dir, room string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".letagents.json"), []byte(`{"room": "`+room+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// save writes the sign-in and a session of w into the state file, as the
// MCP server does.
func save(t *testing.T, path, ownerToken string, w storetest.Worker, apiURL string) {
	t.Helper()
	id := letagents.WireID(letagents.AgentSessionPrefix, w.ID)
	err := state.Open(path).Update(context.Background(), func(st *state.State) error {
		if ownerToken != "" {
			st.Auth = &state.Auth{Token: ownerToken, StoredAt: letagents.FormatTime(time.Now()), Source: state.AuthSourceDeviceFlow}
		}
		if st.AgentSessions == nil {
			st.AgentSessions = map[string]state.AgentSession{}
		}
		st.AgentSessions[id] = state.AgentSession{SessionID: id, SessionToken: w.Token, RoomID: w.RoomID, ActorLabel: w.ActorLabel,
			RuntimeKey: "claude:" + w.DisplayName, CreatedAt: letagents.FormatTime(w.CreatedAt), APIURL: apiURL}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// want is what a check should say.
type want struct {
	status doctor.Status
	says   string // a piece of the message
	fix    string // a piece of the fix ("" for none asked)
}

// checkReport compares the named checks of r with wants, and holds every
// report to its promise: each failing check says its fix.
func checkReport(t *testing.T, r doctor.Report, wants map[string]want) {
	t.Helper()
	got := map[string]doctor.Check{}
	for _, c := range r.Checks {
		got[c.Name] = c
		if c.Status == doctor.Fail && c.Fix == "" {
			t.Errorf("%s fails without a fix: %s", c.Name, c.Message)
		}
	}
	failed := false
	for name, w := range wants {
		c, ok := got[name]
		switch {
		case !ok:
			t.Errorf("no %s check in %+v", name, r.Checks)
		case c.Status != w.status || !strings.Contains(c.Message, w.says) || !strings.Contains(c.Fix, w.fix):
			t.Errorf("%s = %s %q (fix %q), want %s saying %q (fix with %q)", name, c.Status, c.Message, c.Fix, w.status, w.says, w.fix)
		}
		failed = failed || w.status == doctor.Fail
	}
	if r.OK == failed {
		t.Errorf("report OK = %v with a failing check wanted: %v", r.OK, failed)
	}
}

func TestServerChecks(t *testing.T) {
	t.Parallel()
	open := newBackend(t, false)
	signInOn := newBackend(t, true)
	const room = "doctor-room"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string, cfg *doctor.Config)
		wants map[string]want
		from  string // the report's api_url_from, "" for LETAGENTS_API_URL
	}{
		{"server down", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			cfg.APIURL = "http://127.0.0.1:1"
		}, map[string]want{
			"server":   {doctor.Fail, "does not answer", "LETAGENTS_API_URL"},
			"sign-in":  {doctor.Skip, "server does not answer", ""},
			"room":     {doctor.Skip, room, ""},
			"sessions": {doctor.Warn, "no agent session saved", "register_agent_session"},
		}, ""},
		{"open server, nothing saved", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, "doctor-fresh") // a room no other case makes
		}, map[string]want{
			"server":   {doctor.OK, "version ", ""},
			"sign-in":  {doctor.OK, "sign-in is off", ""},
			"room":     {doctor.Warn, "not created yet", ""},
			"sessions": {doctor.Warn, "no agent session saved for doctor-fresh", "register_agent_session"},
		}, ""},
		{"signed in, session valid", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			w := storetest.Register(t, open.store, room, "Builder", letagents.SessionWorker, time.Now())
			save(t, cfg.StatePath, w.OwnerToken, w, "")
		}, map[string]want{
			"sign-in":  {doctor.OK, "signed in as builder-owner (the saved sign-in)", ""},
			"room":     {doctor.OK, room + " (from ", ""},
			"sessions": {doctor.OK, "valid: ", ""},
		}, ""},
		{"session ended", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			w := storetest.Register(t, open.store, room, "Ender", letagents.SessionWorker, time.Now())
			creds := wire.SessionCredentials{AgentSessionID: letagents.WireID(letagents.AgentSessionPrefix, w.ID), AgentSessionToken: w.Token}
			c := apiclient.New(apiclient.Config{APIURL: open.url, Token: func() string { return w.OwnerToken }})
			if _, err := c.DisconnectSession(context.Background(), room, creds); err != nil {
				t.Fatal(err)
			}
			save(t, cfg.StatePath, w.OwnerToken, w, "")
		}, map[string]want{
			"sessions": {doctor.Fail, "has ended", "register_agent_session"},
		}, ""},
		{"LETAGENTS_TOKEN unknown", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			cfg.Token = "not-a-token-the-server-issued"
		}, map[string]want{
			"sign-in": {doctor.Fail, "LETAGENTS_TOKEN is not accepted", "replace LETAGENTS_TOKEN"},
		}, ""},
		{"saved sign-in unknown", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			err := state.Open(cfg.StatePath).Update(context.Background(), func(st *state.State) error {
				st.Auth = &state.Auth{Token: "revoked-long-ago", Source: state.AuthSourceDeviceFlow}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}, map[string]want{
			"sign-in": {doctor.Fail, "the saved sign-in in ", "start_device_auth"},
		}, ""},
		{"unknown invite code", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, "ZZZZ-ZZZZ-ZZZZ")
		}, map[string]want{
			"room": {doctor.Fail, "no room has this invite code", ".letagents.json"},
		}, ""},
		{"unusable .letagents.json", func(t *testing.T, dir string, cfg *doctor.Config) {
			if err := os.WriteFile(filepath.Join(dir, ".letagents.json"), []byte(`{"room": 7}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, map[string]want{
			"room": {doctor.Fail, "is not usable", "fix "},
		}, ""},
		{"no room", func(t *testing.T, dir string, cfg *doctor.Config) {}, map[string]want{
			"room":     {doctor.Warn, "not in a git repository", "git remote add origin"},
			"sessions": {doctor.Skip, "no room", ""},
		}, ""},
		{"API from the saved session", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			w := storetest.Register(t, open.store, room, "Saver", letagents.SessionWorker, time.Now())
			save(t, cfg.StatePath, w.OwnerToken, w, open.url)
			cfg.APIURL = ""
		}, map[string]want{
			"server":   {doctor.OK, open.url, ""},
			"sessions": {doctor.OK, "valid: ", ""},
		}, "saved session"},
		{"sign-in on, none saved", func(t *testing.T, dir string, cfg *doctor.Config) {
			pin(t, dir, room)
			cfg.APIURL = signInOn.url
		}, map[string]want{
			"sign-in": {doctor.Warn, "not signed in", "start_device_auth"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := baseConfig(t, dir, open.url)
			tt.setup(t, dir, &cfg)
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
			defer cancel()
			r := doctor.Diagnose(ctx, cfg)
			checkReport(t, r, tt.wants)
			if want := cmp.Or(tt.from, "LETAGENTS_API_URL"); r.APIFrom != want {
				t.Errorf("api_url_from = %q, want %q", r.APIFrom, want)
			}
		})
	}
}

// The session check reads with the session's credentials; it must not
// mark the room's messages as delivered to the session, which would keep
// them from its agent.
func TestSessionCheckDeliversNothing(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false)
	const room = "doctor-unread"
	dir := t.TempDir()
	pin(t, dir, room)
	cfg := baseConfig(t, dir, b.url)
	w := storetest.Register(t, b.store, room, "Reader", letagents.SessionWorker, time.Now())
	save(t, cfg.StatePath, w.OwnerToken, w, "")
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	anon := apiclient.New(apiclient.Config{APIURL: b.url})
	if _, err := anon.Send(ctx, room, wire.SendMessage{Sender: "alice", Text: "@Reader are you there?"}); err != nil {
		t.Fatal(err)
	}
	checkReport(t, doctor.Diagnose(ctx, cfg), map[string]want{"sessions": {doctor.OK, "valid: ", ""}})
	creds := wire.SessionCredentials{AgentSessionID: letagents.WireID(letagents.AgentSessionPrefix, w.ID), AgentSessionToken: w.Token}
	c := apiclient.New(apiclient.Config{APIURL: b.url, Token: func() string { return w.OwnerToken }}).As(creds)
	u, err := c.TakeUnread(ctx, room, wire.TakeUnread{})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Messages) != 1 || u.Messages[0].Text != "@Reader are you there?" {
		t.Errorf("unread after the doctor = %+v, want the one message still unread", u.Messages)
	}
}

// A server that signs in a caller who sent no credential acts for
// everyone as its local owner (sign-in off): the doctor says so. The
// answer is a stand-in's, of the shape /auth/session has.
func TestSignInLocalOwner(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/health":
			_, _ = w.Write([]byte(`{"status": "ok", "service": "letagents-api", "version": "v1"}`))
		case "/auth/session":
			_, _ = w.Write([]byte(`{"authenticated": true, "account": {"id": "acct_1", "login": "local"}, "sign_in_configured": false}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	checkReport(t, doctor.Diagnose(ctx, baseConfig(t, dir, srv.URL)), map[string]want{
		"server":  {doctor.OK, "version v1", ""},
		"sign-in": {doctor.OK, "sign-in is off: the server acts for every agent here as its local owner, local", ""},
	})
}
