package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/testwait"
)

// The private repository of the revocation tests and its room.
const (
	secretRepo     = "acme/secret"
	acmeSecretRoom = "github.com/acme/secret"
	acmeSecretMsgs = "/rooms/" + acmeSecretRoom + "/messages"
	accessTTL      = 30 * time.Minute // what docs/configuration.md states GitHub's "yes" is cached for
	pastTheTTL     = accessTTL + time.Minute
)

// newSecretEnv is an auth env with the private repository acme/secret.
func newSecretEnv(t *testing.T) *env {
	t.Helper()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000000"})
	e.gh.AddRepo(secretRepo, true)
	return e
}

// reader is someone who reads a room: the headers they read with, and
// what takes their access away.
type reader struct {
	path string      // the room's messages path
	h    http.Header // their credentials
	// revoke makes the change, known to the server when it returns, and
	// returns the room's id after it.
	revoke func() string
}

// collaborator signs login in as a collaborator of acme/secret, with an
// owner token, and returns the token and the account's id.
func (e *env) collaborator(t *testing.T, login string) (string, int64) {
	t.Helper()
	e.gh.AddUser(login)
	e.gh.Grant(secretRepo, login, "write")
	tok := e.signIn(t, login)
	e.as(t, tok, http.MethodPost, "/rooms/"+acmeSecretRoom+"/join", "").want(t, 200, "")
	return tok, e.accountID(t, login)
}

func (e *env) accountID(t *testing.T, login string) int64 {
	t.Helper()
	var id int64
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT id FROM accounts WHERE login = $1`, login).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// post adds a message to room as the store does for any sender, so the
// tests do not depend on who may send under which name.
func (e *env) post(t *testing.T, room, text string) string {
	t.Helper()
	m, _, err := e.svc.Store.SendMessage(context.Background(), letagents.NewMessage{RoomID: room, Sender: "owner", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return letagents.MessageID(m.Seq)
}

// logout signs a browser out, as its own page would.
func (e *env) logout(t *testing.T, h http.Header) {
	t.Helper()
	h = h.Clone()
	h.Set("Origin", e.url)
	e.callWith(context.Background(), t, http.MethodPost, "/auth/logout", "{}", h).want(t, 200, "")
}

// knownChange is a reader of room, a change to their access the server
// is told of, and what the stream's end and a new request then say: the
// reason, code, status and part of the error message.
type knownChange struct {
	name           string
	r              reader
	reason, code   string
	status         int
	freshMsg, room string
}

// removedAtGitHub is a change: GitHub takes login's access to acme/secret
// away, and the server is told through the hook a webhook calls, for
// account (0: for the whole repository, which repo spells).
func (e *env) removedAtGitHub(t *testing.T, login, repo string, account int64) func() string {
	return func() string {
		e.gh.Grant(secretRepo, login, "none")
		if err := e.svc.Store.InvalidateRepoAccess(context.Background(), repo, account); err != nil {
			t.Fatal(err)
		}
		return acmeSecretRoom
	}
}

// knownChanges are readers of each kind with a known change each.
func knownChanges(t *testing.T, e *env) []knownChange {
	t.Helper()
	type change = knownChange
	var out []change

	// An owner token, and GitHub's word that its account lost access (the
	// hook a webhook calls).
	tok, id := e.collaborator(t, "tess")
	out = append(out, change{name: "token, GitHub access removed", room: acmeSecretRoom,
		r:      reader{path: acmeSecretMsgs, h: http.Header{"Authorization": {"Bearer " + tok}}, revoke: e.removedAtGitHub(t, "tess", secretRepo, id)},
		reason: "access_lost", code: "PRIVATE_REPO_NO_ACCESS", status: 403, freshMsg: "private_repo_no_access"})

	// A browser session, and the repository's collaborators changed.
	e.collaborator(t, "cleo")
	cleo := e.browserSignIn(t, "cleo")
	out = append(out, change{name: "cookie, GitHub access removed", room: acmeSecretRoom,
		r:      reader{path: acmeSecretMsgs, h: cleo, revoke: e.removedAtGitHub(t, "cleo", "Acme/Secret", 0)},
		reason: "access_lost", code: "PRIVATE_REPO_NO_ACCESS", status: 403, freshMsg: "private_repo_no_access"})

	// A browser session that signs out: a new request is anonymous.
	e.collaborator(t, "lou")
	lou := e.browserSignIn(t, "lou")
	out = append(out, change{name: "cookie, then logout", room: acmeSecretRoom,
		r:      reader{path: acmeSecretMsgs, h: lou, revoke: func() string { e.logout(t, lou); return acmeSecretRoom }},
		reason: "signed_out", code: "NOT_AUTHENTICATED", status: 401, freshMsg: "auth_required"})

	// A worker session's headers, and the session disconnected.
	wes, _ := e.collaborator(t, "wes")
	w := e.register(t, wes, acmeSecretRoom, "watcher", `{"actor_key": "wes/watcher", "display_name": "Watcher"}`)
	out = append(out, change{name: "worker session, then disconnect", room: acmeSecretRoom,
		r: reader{path: acmeSecretMsgs, h: w.headers(), revoke: func() string {
			e.as(t, wes, http.MethodPost, "/rooms/"+acmeSecretRoom+"/agent-sessions/"+w.id+"/disconnect", "{"+w.creds()+"}").want(t, 200, "")
			return acmeSecretRoom
		}}, reason: "session_ended", code: "AGENT_SESSION_ENDED", status: 401, freshMsg: "agent session has ended"})

	// An invite room read by its code, and the code rotated.
	code := e.as(t, tok, http.MethodPost, "/projects", "").want(t, 201, "").str("code")
	if code == "" {
		t.Fatal("no invite code")
	}
	out = append(out, change{name: "invite code, then rotated", room: code,
		r: reader{path: "/rooms/" + code + "/messages", revoke: func() string {
			return e.as(t, tok, http.MethodPost, "/projects/"+code+"/code/rotate", "").want(t, 200, "").str("code")
		}}, reason: "room_gone", code: "ROOM_NOT_FOUND", status: 404, freshMsg: "Room not found"})
	return out
}

// Streams end within moments of a change the server is told of, with an
// event that says why, and deliver nothing sent after the change.
func TestStreamEndsWhenAccessIsRevoked(t *testing.T) {
	t.Parallel()
	e := newSecretEnv(t)
	var took []time.Duration
	for _, c := range knownChanges(t, e) {
		t.Run(c.name, func(t *testing.T) {
			s := e.openStream(t, c.r.path+"/stream", c.r.h)
			before := e.post(t, c.room, "before")
			if ev, _ := s.event(t); ev.id != before {
				t.Fatalf("first event %+v, want the message %s", ev, before)
			}
			start := time.Now()
			after := e.post(t, c.r.revoke(), "after the change")
			var data map[string]any
			for {
				ev, obj := s.event(t)
				if ev.id == after {
					t.Fatalf("the stream delivered %s, sent after the change", after)
				}
				if ev.name == "access_revoked" {
					data = obj
					break
				}
			}
			took = append(took, time.Since(start))
			if data["reason"] != c.reason || data["status"] != float64(c.status) || data["code"] != c.code || data["error"] == "" {
				t.Errorf("access_revoked %v, want reason %s, status %d, code %s", data, c.reason, c.status, c.code)
			}
			if err := testwait.Recv(t, "the revoked stream to end", s.ended); err != nil {
				t.Errorf("the stream ended with %v, want a clean end", err)
			}
			// Reconnecting is refused as any new request is.
			if s2, r := e.tryStream(t, c.r.path+"/stream", c.r.h); s2 != nil || r.status != c.status || !strings.Contains(r.str("error"), c.freshMsg) {
				t.Errorf("reconnect = %d %s, want %d %q", r.status, r.raw, c.status, c.freshMsg)
			}
		})
	}
	slices.Sort(took)
	if len(took) > 0 {
		t.Logf("a revoked stream ended %v after the request making a known change began (median of %d; all %v)", took[len(took)/2], len(took), took)
	}
}

// pollWith starts a long-poll with headers h in the background.
func (e *env) pollWith(t *testing.T, path string, h http.Header) <-chan reply {
	t.Helper()
	out := make(chan reply, 1)
	go func() { out <- e.callWith(context.Background(), t, http.MethodGet, path, "", h) }()
	return out
}

// A long-poll parked before the change answers what a new request gets,
// not the message sent after it.
func TestParkedPollRevoked(t *testing.T) {
	t.Parallel()
	e := newSecretEnv(t)
	for _, c := range knownChanges(t, e) {
		t.Run(c.name, func(t *testing.T) {
			last := e.post(t, c.room, "before")
			answer := e.pollWith(t, c.r.path+"/poll?after="+last+"&timeout=120000", c.r.h)
			e.parked(t, 1)
			e.post(t, c.r.revoke(), "after the change")
			r := await(t, answer)
			if r.status != c.status || r.str("code") != c.code || !strings.Contains(r.str("error"), c.freshMsg) {
				t.Errorf("parked poll answered %d %s, want %d %s %q", r.status, r.raw, c.status, c.code, c.freshMsg)
			}
			fresh := e.callWith(context.Background(), t, http.MethodGet, c.r.path+"/poll?after="+last+"&timeout=0", "", c.r.h)
			if fresh.status != r.status || fresh.str("code") != r.str("code") {
				t.Errorf("a new poll answers %d %s, the parked one %d %s: want the same", fresh.status, fresh.raw, r.status, r.raw)
			}
		})
	}
}

// GitHub takes access away and nobody tells the server: new requests are
// refused once the cached answer ages (accessTTL), and open streams and
// parked polls too, checking at the first wake after it.
func TestRevocationNobodyToldOfEndsWithinTheCachePeriod(t *testing.T) {
	t.Parallel()
	base := newSecretEnv(t)
	base.cfg.StreamHeartbeat = 20 * time.Millisecond // the wakes that find a check due
	e := base.twin(t)
	tok, _ := e.collaborator(t, "nell")
	h := http.Header{"Authorization": {"Bearer " + tok}}
	e.as(t, tok, http.MethodGet, acmeSecretMsgs, "").want(t, 200, "")

	s := e.openStream(t, acmeSecretMsgs+"/stream", h)
	last := e.post(t, acmeSecretRoom, "before")
	if ev, _ := s.event(t); ev.id != last {
		t.Fatalf("first event %+v, want %s", ev, last)
	}
	e.gh.Grant(secretRepo, "nell", "none")
	// Within the cache period GitHub's earlier "yes" stands, for new
	// requests and open streams alike.
	e.clock.Advance(accessTTL - time.Minute)
	e.as(t, tok, http.MethodGet, acmeSecretMsgs, "").want(t, 200, "")
	within := e.post(t, acmeSecretRoom, "within the cache period")
	for ev, _ := s.event(t); ev.id != within; ev, _ = s.event(t) {
		if ev.name == "access_revoked" {
			t.Fatalf("the stream ended within the cache period: %s", ev.data)
		}
	}
	poll := e.pollWith(t, acmeSecretMsgs+"/poll?after="+within+"&timeout=120000", h)
	e.parked(t, 1)

	e.clock.Advance(2 * time.Minute) // past the cache period
	aged := time.Now()
	var data map[string]any
	for data == nil {
		if ev, obj := s.event(t); ev.name == "access_revoked" {
			data = obj
		}
	}
	t.Logf("with nobody told, a revoked stream ended %v (real time, heartbeat 20 ms) after its cached access aged (%v after it was cached)", time.Since(aged), pastTheTTL)
	if data["reason"] != "access_lost" || data["code"] != "PRIVATE_REPO_NO_ACCESS" {
		t.Errorf("access_revoked %v, want access_lost PRIVATE_REPO_NO_ACCESS", data)
	}
	e.post(t, acmeSecretRoom, "after the cache period")
	if r := await(t, poll); r.status != 403 || r.str("code") != "PRIVATE_REPO_NO_ACCESS" {
		t.Errorf("parked poll answered %d %s, want 403 PRIVATE_REPO_NO_ACCESS", r.status, r.raw)
	}
}

// A check that cannot tell (GitHub does not answer) holds a stream's
// events back rather than ending it or sending them, and lets them go once
// a check can tell again.
func TestStreamHoldsEventsWhileAccessCannotBeChecked(t *testing.T) {
	t.Parallel()
	base := newSecretEnv(t)
	base.cfg.StreamHeartbeat = 20 * time.Millisecond
	e := base.twin(t)
	tok, _ := e.collaborator(t, "otto")
	s := e.openStream(t, acmeSecretMsgs+"/stream", http.Header{"Authorization": {"Bearer " + tok}})
	e.gh.FailAPI(503)
	e.clock.Advance(pastTheTTL)
	held := e.post(t, acmeSecretRoom, "while GitHub is down")
	heldUntilGitHubAnswers(t, e, s, held)
}

// heldUntilGitHubAnswers: while GitHub fails, s goes on with heartbeats
// (it is open, and checks at each) but sends neither the message held
// nor access_revoked; once GitHub answers again it sends held.
func heldUntilGitHubAnswers(t *testing.T, e *env, s *sseStream, held string) {
	t.Helper()
	for beats := 0; beats < 3; {
		ev := s.next(t)
		switch {
		case ev.comment == "heartbeat":
			beats++
		case ev.id == held || ev.name == "access_revoked":
			t.Fatalf("while access could not be checked the stream sent %+v", ev)
		}
	}
	e.gh.FailAPI(0)
	if ev, _ := s.event(t); ev.id != held {
		t.Errorf("once GitHub answered again the stream sent %+v, want the held message %s", ev, held)
	}
}

// A check that falls due while a stream reads is made before what the
// read found is sent: a message posted once access could no longer be
// checked is held, though the turn that read it found no check due when
// it began.
func TestStreamChecksAgainWhenACheckFallsDueDuringARead(t *testing.T) {
	t.Parallel()
	base := newSecretEnv(t)
	base.cfg.StreamHeartbeat = 20 * time.Millisecond
	tok, _ := base.collaborator(t, "ivy")
	held := newHeldReads()
	url, _ := base.traced(t, held)
	t.Cleanup(held.free) // before the server's, which waits for the stream
	s := openHeld(t, url, acmeSecretMsgs+"/stream", http.Header{"Authorization": {"Bearer " + tok}}, held)
	base.gh.FailAPI(503)
	base.clock.Advance(pastTheTTL)
	posted := base.post(t, acmeSecretRoom, "while the first read was held")
	held.free()
	heldUntilGitHubAnswers(t, base, s, posted)
}

// The access_revoked event carries no id, so a client's last event id
// stays that of the last message it got.
func TestAccessRevokedEventKeepsTheLastEventID(t *testing.T) {
	t.Parallel()
	e := newSecretEnv(t)
	e.collaborator(t, "rae")
	rae := e.browserSignIn(t, "rae")
	s := e.openStream(t, acmeSecretMsgs+"/stream", rae)
	e.logout(t, rae)
	for {
		ev := s.next(t)
		if ev.name != "access_revoked" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(ev.data), &obj); err != nil || ev.hasID {
			t.Errorf("access_revoked event %+v: %v; want JSON data and no id", ev, err)
		}
		t.Logf("access_revoked: %s", ev.data)
		return
	}
}
