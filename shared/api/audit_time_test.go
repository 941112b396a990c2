// The access matrix's case families over time (issue 26): revocation (a
// reader who loses GitHub access loses every read, open streams and parked
// polls included) and demotion (a GitHub admin demoted to read loses the
// room's admin routes).

package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/testwait"
)

// streamEnds waits for s to end, failing if it delivers anything holding
// text first, or stays open for testwait.Bound.
func streamEnds(t *testing.T, what string, s *sseStream, text string) {
	t.Helper()
	deadline := time.After(testwait.Bound)
	for {
		select {
		case ev := <-s.blocks:
			if strings.Contains(ev.data, text) {
				t.Errorf("%s delivered %q, sent after its access ended", what, text)
				return
			}
		case <-s.ended:
			return
		case <-deadline:
			t.Errorf("%s still open %v after its access ended", what, testwait.Bound)
			return
		}
	}
}

// bearerOf is the owner token of a caller's Authorization header.
func bearerOf(c caller) string { return strings.TrimPrefix(c.header.Get("Authorization"), "Bearer ") }

// TestRevocationEndsAccess: bobby reads the private room with his token,
// his browser and his agent's worker session, with streams open and a
// long-poll parked; GitHub takes his access away. Once the access cache
// ages, every read route refuses him, his streams end without delivering
// what is sent after, his parked poll does not return it, and GET
// /projects no longer lists the room. A change the service learns itself
// (a logout, a session's disconnect) ends the streams it concerns at once.
func TestRevocationEndsAccess(t *testing.T) {
	t.Parallel()
	m := seedMatrix(t)
	e, ctx := m.e, context.Background()
	token, cookie, worker, alice := m.caller(t, "agent owner token"), m.caller(t, "reader cookie"), m.caller(t, "worker"), m.caller(t, "GitHub admin")
	messages := "/rooms/" + secretRoom + "/messages"
	send := func(text string) {
		t.Helper()
		e.callWith(ctx, t, http.MethodPost, messages, `{"sender": "alice", "text": "`+text+`"}`, alice.header).want(t, 201, "")
	}

	t.Run("known changes", func(t *testing.T) {
		// A browser that signs out, and a worker session that disconnects,
		// end their own streams at once: no cache period to wait for.
		browser := e.browserSignIn(t, "bobby")
		second := e.register(t, bearerOf(token), secretRoom, "scout", `{"actor_key": "bobby/scout", "display_name": "Second"}`)
		byBrowser := e.openStream(t, messages+"/stream", browser)
		bySession := e.openStream(t, messages+"/stream", second.headers())
		e.streamsOpen(t, 2)
		out := browser.Clone()
		out.Set("Origin", e.url)
		e.callWith(ctx, t, http.MethodPost, "/auth/logout", `{}`, out).want(t, 200, "")
		e.callWith(ctx, t, http.MethodPost, "/rooms/"+secretRoom+"/agent-sessions/"+second.id+"/disconnect", "", second.headers()).want(t, 200, "")
		const text = "after the logout and the disconnect kd02"
		send(text)
		streamEnds(t, "the stream of a browser that signed out", byBrowser, text)
		streamEnds(t, "the stream of a disconnected worker session", bySession, text)
		byBrowser.close()
		bySession.close()
	})

	t.Run("GitHub revocation", func(t *testing.T) {
		streams := map[string]*sseStream{}
		for _, c := range []caller{token, cookie, worker} {
			streams[c.name] = e.openStream(t, messages+"/stream", c.header)
		}
		e.streamsOpen(t, len(streams))
		seen := ids(e.callWith(ctx, t, http.MethodGet, messages, "", alice.header).want(t, 200, "").messages(t))
		parked := make(chan reply, 1)
		go func() {
			parked <- e.callWith(ctx, t, http.MethodGet, messages+"/poll?timeout=120000&after="+seen[len(seen)-1], "", token.header)
		}()
		testwait.Until(t, "the poll to park beside the streams", func() bool {
			st := e.svc.Hub.Stats()
			return st.Subscribers >= subsPerStream*len(streams)+2 && st.Listening == st.Channels && st.BackendPID != 0
		})

		e.gh.Grant("alice/secret", "bobby", "none")
		e.clock.Advance(pastTheTTL)
		const text = "after the revocation qq91"
		send(text)

		if r := await(t, parked); r.status != 403 || strings.Contains(r.raw, text) {
			t.Errorf("a poll parked before the revocation answered %d %s; want 403 private_repo_no_access", r.status, r.raw)
		}
		for name, s := range streams {
			streamEnds(t, "the stream of the "+name, s, text)
		}
		// Every read route, in every way bobby can call it.
		for _, p := range m.probes(t) {
			if p.spelling.name != "canonical" || p.method != http.MethodGet || !p.isRouted || p.routed.Gate() == "public" {
				continue
			}
			for _, c := range []caller{token, cookie, worker} {
				c.secret = levelOutsider
				if msg := m.verdict(c, p, m.do(c, p)); msg != "" {
					t.Errorf("%s as bobby's %s after the revocation: %s", p.route, c.name, msg)
				}
			}
		}
		if r := e.callWith(ctx, t, http.MethodGet, "/projects", "", token.header).want(t, 200, ""); strings.Contains(r.raw, secretRoom) {
			t.Errorf("GET /projects still lists %s after the revocation: %s", secretRoom, r.raw)
		}
	})
}

// TestDemotionEndsAdmin: carol, an admin of the repository at GitHub,
// joins the private room and so administers it; GitHub demotes her to
// read. Once the access cache ages she is a participant: every admin
// route refuses her (and changes nothing), she cannot disconnect another
// agent's session, and the room's access answer says so. alice, still an
// admin at GitHub, keeps the role.
func TestDemotionEndsAdmin(t *testing.T) {
	t.Parallel()
	m := seedMatrix(t)
	e, ctx := m.e, context.Background()
	e.gh.AddUser("carol")
	e.gh.Grant("alice/secret", "carol", "admin")
	carolToken := e.signIn(t, "carol")
	if r := e.as(t, carolToken, http.MethodPost, "/rooms/"+secretRoom+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
		t.Fatalf("carol's join = %s, want admin", r.raw)
	}
	// From here carol may read the room, and no more.
	carol := caller{name: "demoted admin", header: http.Header{"Authorization": {"Bearer " + carolToken}}, secret: levelReader, signedIn: true}

	e.gh.Grant("alice/secret", "carol", "read")
	e.clock.Advance(pastTheTTL)
	// Her first look after the cache aged drops her GitHub-derived admin
	// row; from then on nothing she tries may change the room.
	if r := e.as(t, carolToken, http.MethodGet, "/projects/"+secretRoom+"/access", "").want(t, 200, ""); r.str("role") != "participant" {
		t.Errorf("carol's access after the demotion = %s, want role participant", r.raw)
	}
	before := roomState(ctx, t, e, []string{secretRoom})
	admins := 0
	for _, p := range m.probes(t) {
		if p.spelling.name != "canonical" || !p.isRouted || p.routed.Gate() != "admin" {
			continue
		}
		admins++
		if msg := m.verdict(carol, p, m.do(carol, p)); msg != "" {
			t.Errorf("%s as carol after her demotion: %s", p.route, msg)
		}
	}
	if admins == 0 {
		t.Fatal("no admin route was tried")
	}
	disconnect := "/rooms/" + secretRoom + "/agent-sessions/" + m.secretIDs["{agent_session}"] + "/disconnect"
	if r := e.as(t, carolToken, http.MethodPost, disconnect, ""); r.status != 403 {
		t.Errorf("carol disconnecting bobby's session after her demotion: %d %s, want 403", r.status, r.raw)
	}
	if after := roomState(ctx, t, e, []string{secretRoom}); after != before {
		t.Errorf("a demoted admin changed the room:\nbefore %s\nafter  %s", before, after)
	}

	alice := m.caller(t, "GitHub admin")
	if r := e.callWith(ctx, t, http.MethodGet, "/projects/"+secretRoom+"/access", "", alice.header).want(t, 200, ""); r.str("role") != "admin" {
		t.Errorf("alice's access = %s, want role admin (GitHub still says admin)", r.raw)
	}
}
