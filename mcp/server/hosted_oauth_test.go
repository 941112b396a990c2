package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/testwait"
)

// newSignInHosted serves b's API and, on the same origin as the local
// runner does, the hosted endpoint with its bearer tokens checked by b's
// auth: the endpoint's URL.
func newSignInHosted(t *testing.T, b *backend, requireAuth bool) string {
	t.Helper()
	var hosted atomic.Pointer[Hosted]
	srv := httptest.NewServer(Mount(b.svc.Handler, hosted.Load))
	t.Cleanup(srv.Close)
	h, err := NewHosted(HostedConfig{APIURL: srv.URL, Sessions: b.svc.Store, RequireAuth: requireAuth, Verify: b.svc.Auth.BearerPrincipal,
		Events: mcpserver.NewInMemoryEventStore()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	hosted.Store(h)
	return srv.URL + HostedPath
}

// TestHostedAuthChallenges: which requests /mcp answers 401, with the
// WWW-Authenticate that leads a client to its resource metadata, and the
// metadata itself.
func TestHostedAuthChallenges(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddUser("octo")
	open, required := newSignInHosted(t, b, false), newSignInHosted(t, b, true)
	owner := newAgent(t, b, "", nil)
	owner.signIn(t, b, "octo")
	token, _ := readState(t, owner.state)["auth"].(map[string]any)["token"].(string)

	for _, c := range []struct {
		name, endpoint, token string
		status                int
		invalid               bool
	}{
		{"anonymous, open", open, "", http.StatusOK, false},
		{"anonymous, sign-in required", required, "", http.StatusUnauthorized, false},
		{"unknown token, open", open, strings.Repeat("a", 64), http.StatusUnauthorized, true},
		{"unknown OAuth token", required, "lat_" + strings.Repeat("b", 64), http.StatusUnauthorized, true},
		{"junk token", open, strings.Repeat("x", 300), http.StatusUnauthorized, true},
		{"owner token, sign-in required", required, token, http.StatusOK, false},
	} {
		h := map[string]string{}
		if c.token != "" {
			h["Authorization"] = "Bearer " + c.token
		}
		resp, raw := rawMCP(t, http.MethodPost, c.endpoint, h, initializeBody)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, raw, c.status)
			continue
		}
		if c.status != http.StatusUnauthorized {
			continue
		}
		origin := strings.TrimSuffix(c.endpoint, HostedPath)
		want := `Bearer resource_metadata="` + origin + `/.well-known/oauth-protected-resource/mcp"`
		if c.invalid {
			want += `, error="invalid_token"`
		}
		if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, want) {
			t.Errorf("%s: WWW-Authenticate %q, want it to start %q", c.name, got, want)
		}
		var e struct{ Error string }
		if json.Unmarshal([]byte(raw), &e) != nil || e.Error == "" {
			t.Errorf("%s: body %s, want a JSON error", c.name, raw)
		}
	}

	origin := strings.TrimSuffix(required, HostedPath)
	for _, path := range []string{ResourceMetadataPath, ResourceMetadataPathSuffix} {
		resp, raw := rawMCP(t, http.MethodGet, origin+path, nil, "")
		var m struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(raw), &m) != nil || m.Resource != origin+HostedPath ||
			!slices.Equal(m.AuthorizationServers, []string{origin}) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, raw)
		}
		if resp, raw := rawMCP(t, http.MethodPost, origin+path, nil, "{}"); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d %s, want 405", path, resp.StatusCode, raw)
		}
	}

	// Until the local runner has built the endpoint, its paths say so
	// and the rest is served.
	starting := httptest.NewServer(Mount(b.svc.Handler, func() *Hosted { return nil }))
	t.Cleanup(starting.Close)
	for _, path := range []string{HostedPath, ResourceMetadataPathSuffix} {
		if resp, raw := rawMCP(t, http.MethodGet, starting.URL+path, nil, ""); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s while starting: %d %s, want 503", path, resp.StatusCode, raw)
		}
	}
	if resp, raw := rawMCP(t, http.MethodGet, starting.URL+"/api/health", nil, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/health while starting: %d %s", resp.StatusCode, raw)
	}
}

// TestHostedOAuthTypeScriptClient: the official MCP TypeScript SDK's
// OAuth client, refused at first, signs in by itself (resource metadata,
// authorization server metadata, dynamic registration, authorization
// code with PKCE through the fake GitHub and the consent page), then
// lists the tools and works in a private repository's room as the person
// who signed in. When its access token expires, its next call is
// refused, it refreshes, and its session goes on.
func TestHostedOAuthTypeScriptClient(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true)
	b.gh.AddRepo("acme/vault", true)
	b.gh.AddUser("octo")
	b.gh.Grant("acme/vault", "octo", "write")
	b.gh.SignIn("octo") // at GitHub, in the browser the client sends there
	endpoint := newSignInHosted(t, b, true)
	const room = "github.com/acme/vault"
	lines, stderr, stdin := runNode(t, "oauth-client.mjs", endpoint, room)

	var signedIn struct{ Access string }
	first := testwait.Recv(t, "the TypeScript client's sign-in", lines)
	if err := json.Unmarshal([]byte(first), &signedIn); err != nil || !strings.HasPrefix(signedIn.Access, "lat_") {
		t.Fatalf("the TypeScript client said %q (stderr %s)", first, stderr.String())
	}
	// Its message is octo's agent's, in octo's private room.
	var author string
	if err := b.db.Pool.QueryRow(t.Context(), `SELECT sender FROM messages WHERE text = 'hello after OAuth'`).Scan(&author); err != nil || !strings.Contains(author, "octo") {
		t.Fatalf("message sent as %q (%v), want octo's agent", author, err)
	}

	b.clock.Advance(time.Hour + time.Second)
	resp, raw := rawMCP(t, http.MethodPost, endpoint, map[string]string{"Authorization": "Bearer " + signedIn.Access}, initializeBody)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("an expired access token: %d %s (%v)", resp.StatusCode, raw, resp.Header)
	}
	if _, err := stdin.Write([]byte("go on\n")); err != nil {
		t.Fatal(err)
	}
	last, ok := <-lines
	if !ok {
		t.Fatalf("the TypeScript client ended without its report: %s", stderr.String())
	}
	var report struct {
		Session, SessionAfter, Client, Room, RoomAfter string
		Tools                                          []string
		Refreshed                                      bool
	}
	if err := json.Unmarshal([]byte(last), &report); err != nil {
		t.Fatalf("report %q: %v (stderr %s)", last, err, stderr.String())
	}
	if !strings.HasPrefix(report.Session, sessionIDPrefix) || report.SessionAfter != report.Session || !report.Refreshed ||
		report.Room != room || report.RoomAfter != room || !strings.HasPrefix(report.Client, "lac_") ||
		!slices.Contains(report.Tools, "wait_for_messages") {
		t.Errorf("report %s", last)
	}
}
