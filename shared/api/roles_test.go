package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/rooms"
)

// TestGitHubAdminFollowsGitHub: a room admin GitHub made (at a join) is
// one for as long as GitHub says so, re-read at every look as repository
// access is (cached for the access cache period, 30 minutes); an admin
// granted in the room itself keeps the rights whatever GitHub says.
func TestGitHubAdminFollowsGitHub(t *testing.T) {
	t.Parallel()
	for _, private := range []bool{true, false} {
		name := map[bool]string{true: "private", false: "public"}[private]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000"})
			e.gh.AddRepo("acme/"+name, private)
			for _, u := range []string{"carol", "bob", "gus"} {
				e.gh.AddUser(u)
			}
			e.gh.Grant("acme/"+name, "carol", "admin")
			e.gh.Grant("acme/"+name, "gus", "admin")
			e.gh.Grant("acme/"+name, "bob", "write")
			carol, bob, gus := e.signIn(t, "carol"), e.signIn(t, "bob"), e.signIn(t, "gus")
			room := "github.com/acme/" + name
			if r := e.as(t, carol, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
				t.Fatalf("GitHub admin's join = %s, want admin", r.raw)
			}
			e.as(t, gus, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
			// gus is also made admin by the room itself (no route grants
			// that yet; the store does, as the room's grants would).
			var gusID int64
			if err := e.db.Pool.QueryRow(context.Background(), `SELECT id FROM accounts WHERE login = 'gus'`).Scan(&gusID); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.Store.AddRoomAdmin(context.Background(), room, gusID); err != nil {
				t.Fatal(err)
			}
			b := e.register(t, bob, room, "scout", `{"actor_key": "bob/scout"}`)

			role := func(token string) string {
				t.Helper()
				return e.as(t, token, http.MethodGet, "/projects/"+room+"/access", "").want(t, 200, "").str("role")
			}
			adminActs := func(token string, status int) {
				t.Helper()
				msg := ""
				if status == 403 {
					msg = "Admin privileges required"
				}
				e.as(t, token, http.MethodPatch, "/rooms/"+room, `{"display_name": "Renamed room"}`).want(t, status, msg)
				e.as(t, token, http.MethodPatch, "/rooms/"+room+"/board-settings", `{"require_worker_sessions": true}`).want(t, status, msg)
				if status == 403 {
					e.as(t, token, http.MethodPost, "/rooms/"+room+"/agent-sessions/"+b.id+"/disconnect", "").want(t, status, msg)
				}
			}

			// Demoted at GitHub: still admin while the cached answer
			// holds (the documented delay), not after.
			e.gh.Grant("acme/"+name, "carol", "read")
			e.gh.Grant("acme/"+name, "gus", "read")
			if got := role(carol); got != "admin" {
				t.Errorf("role within the cache period = %q, want admin (cached)", got)
			}
			e.clock.Advance(31 * time.Minute)
			if got := role(carol); got != "participant" {
				t.Errorf("role of a demoted GitHub admin after the cache period = %q, want participant", got)
			}
			adminActs(carol, 403)
			if n := countAdmins(t, e, room, "carol"); n != 0 {
				t.Errorf("room_admins rows of the demoted admin = %d, want 0", n)
			}
			// The room's own grant outlives GitHub's word.
			if got := role(gus); got != "admin" {
				t.Errorf("role of a room-granted admin demoted at GitHub = %q, want admin", got)
			}
			adminActs(gus, 200)
			// Nor is a room-granted admin's grant lost when GitHub's comes and goes.
			if n := countAdmins(t, e, room, "gus"); n != 1 {
				t.Errorf("room_admins rows of the room-granted admin = %d, want 1", n)
			}

			// Promoted again: admin once they join again, as the first
			// time (a look at the room records nothing).
			e.gh.Grant("acme/"+name, "carol", "admin")
			e.clock.Advance(31 * time.Minute)
			if got := role(carol); got != "participant" {
				t.Errorf("role of a re-promoted GitHub admin before a join = %q, want participant", got)
			}
			if r := e.as(t, carol, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, ""); r.str("role") != "admin" {
				t.Errorf("re-promoted GitHub admin's join = %s, want admin", r.raw)
			}
			adminActs(carol, 200)
			e.as(t, carol, http.MethodPost, "/rooms/"+room+"/agent-sessions/"+b.id+"/disconnect", "").want(t, 200, "")

			// GitHub down once the cache aged: rights GitHub gave are
			// not assumed; the room's own are kept.
			e.clock.Advance(31 * time.Minute)
			e.gh.FailAPI(503)
			if !private { // a private room is closed to all during an outage
				if got := role(carol); got == "admin" {
					t.Errorf("role of a GitHub admin GitHub cannot confirm = %q, want not admin", got)
				}
				if got := role(gus); got != "admin" {
					t.Errorf("role of a room-granted admin during an outage = %q, want admin", got)
				}
			}
			e.gh.FailAPI(0)
			if got := role(carol); got != "admin" {
				t.Errorf("role after the outage = %q, want admin", got)
			}
		})
	}
}

// countAdmins counts the room_admins rows of login in room.
func countAdmins(t *testing.T, e *env, room, login string) int {
	t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM room_admins a JOIN accounts c ON c.id = a.account_id WHERE a.room_id = $1 AND c.login = $2`,
		room, login).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListedRoomsFollowAccess: GET /projects lists only the rooms the
// caller may read now, checked as a read of each would be; a room whose
// access ended (after the access cache period) is off the list, with its
// name, and comes back when access does.
func TestListedRoomsFollowAccess(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000"})
	e.gh.AddRepo("acme/secret", true)
	e.gh.AddRepo("acme/open", false)
	e.gh.AddUser("bob")
	e.gh.Grant("acme/secret", "bob", "write")
	bob := e.signIn(t, "bob")
	branch, err := rooms.BranchRoomID("github.com/acme/secret", "feature") // answers as its repository
	if err != nil {
		t.Fatal(err)
	}
	for i, room := range []string{"github.com/acme/secret", "github.com/acme/open", "team", branch} {
		e.register(t, bob, room, fmt.Sprint("scout-", i), fmt.Sprintf(`{"actor_key": "bob/scout-%d"}`, i))
	}
	e.as(t, bob, http.MethodPatch, "/rooms/team", `{"display_name": "Team room"}`).want(t, 200, "")
	listed := func() []string {
		t.Helper()
		r := e.as(t, bob, http.MethodGet, "/projects", "").want(t, 200, "")
		var out []string
		for _, p := range r.obj["projects"].([]any) {
			out = append(out, p.(map[string]any)["id"].(string))
		}
		return out
	}
	all := []string{"github.com/acme/secret", "github.com/acme/open", "team", branch}
	if got := listed(); !slices.Equal(got, all) {
		t.Fatalf("listed = %v, want %v", got, all)
	}
	e.gh.Grant("acme/secret", "bob", "none")
	e.clock.Advance(31 * time.Minute)
	if got, want := listed(), []string{"github.com/acme/open", "team"}; !slices.Equal(got, want) {
		t.Errorf("listed after access ended = %v, want %v", got, want)
	}
	// GitHub down once the cache aged: the private room is not listed on trust.
	e.gh.Grant("acme/secret", "bob", "read")
	e.clock.Advance(31 * time.Minute)
	e.gh.FailAPI(503)
	if got := listed(); slices.Contains(got, "github.com/acme/secret") {
		t.Errorf("listed while GitHub cannot confirm access = %v, want no private room", got)
	}
	e.gh.FailAPI(0)
	if got := listed(); !slices.Equal(got, all) {
		t.Errorf("listed with access back = %v, want %v", got, all)
	}
}
