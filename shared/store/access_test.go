package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// roomAdmins lists the account ids administering a room.
func roomAdmins(t *testing.T, s *store.Store, roomID string, candidates ...letagents.Account) []int64 {
	t.Helper()
	var ids []int64
	for _, a := range candidates {
		ok, err := s.IsRoomAdmin(context.Background(), roomID, a.ID)
		if err != nil {
			t.Fatalf("IsRoomAdmin(%q, %d): %v", roomID, a.ID, err)
		}
		if ok {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

func TestCreateInviteRoomAdmin(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	bob := signInAccount(t, s, "2002", "bob")

	withCreator, err := s.CreateInviteRoom(ctx, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := roomAdmins(t, s, withCreator.ID, alice, bob); !slices.Equal(got, []int64{alice.ID}) {
		t.Errorf("admins of a room alice created = %v; want [%d]", got, alice.ID)
	}

	anonymous, err := s.CreateInviteRoom(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM room_admins WHERE room_id = $1`, anonymous.ID); n != 0 {
		t.Errorf("admins of a room created signed out = %d; want 0", n)
	}
	if withCreator.ID == anonymous.ID || !rooms.IsInviteCode(withCreator.ID) || !rooms.IsInviteCode(anonymous.ID) {
		t.Errorf("invite room ids %q and %q; want two distinct invite codes", withCreator.ID, anonymous.ID)
	}
}

func TestIsRoomAdminUnknown(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ok, err := s.IsRoomAdmin(context.Background(), "no such room", 12345)
	if err != nil || ok {
		t.Errorf("IsRoomAdmin(unknown room, unknown account) = %v, %v; want false, nil", ok, err)
	}
}

func TestRotateInviteCode(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	bob := signInAccount(t, s, "2002", "bob")
	old, err := s.CreateInviteRoom(ctx, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddRoomAdmin(ctx, old.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	root, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: old.ID, Sender: "a", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: old.ID, Sender: "b", Text: "two", ThreadParentSeq: root.Seq}); err != nil {
		t.Fatal(err)
	}

	rotated, err := s.RotateInviteCode(ctx, old.ID)
	if err != nil {
		t.Fatalf("RotateInviteCode: %v", err)
	}
	if rotated.ID == old.ID || !rooms.IsInviteCode(rotated.ID) || rotated.Kind != letagents.RoomInvite ||
		rotated.LastSeq != 2 || !rotated.CreatedAt.Equal(old.CreatedAt) {
		t.Errorf("RotateInviteCode(%q) = %+v; want a new invite code, kind invite, last_seq 2, created %v", old.ID, rotated, old.CreatedAt)
	}
	if got, err := s.Room(ctx, rotated.ID); err != nil || got != rotated {
		t.Errorf("Room(new code) = %+v, %v; want %+v", got, err, rotated)
	}

	page, err := s.Messages(ctx, rotated.ID, store.MessageQuery{Limit: 10})
	if err != nil {
		t.Fatalf("Messages(new code): %v", err)
	}
	var got []string
	for _, m := range page.Messages {
		got = append(got, fmt.Sprintf("%s %d %s %d", m.RoomID, m.Seq, m.Text, m.ThreadParentSeq))
	}
	want := []string{rotated.ID + " 1 one 0", rotated.ID + " 2 two 1"}
	if !slices.Equal(got, want) {
		t.Errorf("messages under the new code = %q; want %q", got, want)
	}
	if got := roomAdmins(t, s, rotated.ID, alice, bob); !slices.Equal(got, []int64{alice.ID, bob.ID}) {
		t.Errorf("admins under the new code = %v; want [%d %d]", got, alice.ID, bob.ID)
	}
	if got := roomAdmins(t, s, old.ID, alice, bob); len(got) != 0 {
		t.Errorf("admins under the old code = %v; want none", got)
	}
	next, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: rotated.ID, Sender: "a", Text: "three"})
	if err != nil || next.Seq != 3 {
		t.Errorf("SendMessage(new code) = seq %d, %v; want 3 (numbering continues)", next.Seq, err)
	}

	// The old code stops working at once.
	if _, err := s.Room(ctx, old.ID); codeOf(err) != letagents.NotFound {
		t.Errorf("Room(old code) error = %v; want not found", err)
	}
	if _, err := s.Messages(ctx, old.ID, store.MessageQuery{Limit: 10}); codeOf(err) != letagents.NotFound {
		t.Errorf("Messages(old code) error = %v; want not found", err)
	}
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: old.ID, Sender: "a", Text: "x"}); codeOf(err) != letagents.NotFound {
		t.Errorf("SendMessage(old code) error = %v; want not found", err)
	}
	if _, err := s.RotateInviteCode(ctx, old.ID); codeOf(err) != letagents.NotFound {
		t.Errorf("RotateInviteCode(old code) error = %v; want not found", err)
	}
}

func TestRotateInviteCodeRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	branch, err := rooms.BranchRoomID("github.com/o/r", "main")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id string
		create   bool
		want     letagents.ErrorKind
	}{
		{"named room", "a named room", true, letagents.Invalid},
		{"repo room", "github.com/o/r", true, letagents.Invalid},
		{"branch room", branch, true, letagents.Invalid},
		{"unknown room", "nowhere", false, letagents.NotFound},
		{"unknown invite code", "ABCD-EFGH-IJKL", false, letagents.NotFound},
	}
	for _, tt := range tests {
		if tt.create {
			if _, _, err := s.EnsureRoom(ctx, tt.id); err != nil {
				t.Fatalf("%s: EnsureRoom: %v", tt.name, err)
			}
		}
		if _, err := s.RotateInviteCode(ctx, tt.id); codeOf(err) != tt.want {
			t.Errorf("%s: RotateInviteCode(%q) error = %v; want %s", tt.name, tt.id, err, tt.want)
		}
		if tt.create {
			if r, err := s.Room(ctx, tt.id); err != nil || r.ID != tt.id {
				t.Errorf("%s: Room(%q) after a refused rotation = %+v, %v; want it unchanged", tt.name, tt.id, r, err)
			}
		}
	}
}

func TestClaimFirstAdmin(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "first come")
	if err != nil {
		t.Fatal(err)
	}
	const joiners = 10
	accounts := make([]letagents.Account, joiners)
	for i := range accounts {
		accounts[i] = signInAccount(t, s, fmt.Sprint(5000+i), fmt.Sprint("user", i))
	}
	got := make([]bool, joiners)
	errs := make([]error, joiners)
	release := d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room.ID)
	d.Race(t, joiners, release, func(i int) {
		got[i], errs[i] = s.ClaimFirstAdmin(ctx, room.ID, accounts[i].ID)
	})
	winner := -1
	for i := range joiners {
		if errs[i] != nil {
			t.Fatalf("joiner %d: %v", i, errs[i])
		}
		if got[i] {
			if winner >= 0 {
				t.Errorf("joiners %d and %d both became the first admin", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d racing joiners became admin; want exactly one", joiners)
	}
	if admins := roomAdmins(t, s, room.ID, accounts...); !slices.Equal(admins, []int64{accounts[winner].ID}) {
		t.Errorf("admins after the race = %v; want only the winner, [%d]", admins, accounts[winner].ID)
	}
	if ok, err := s.ClaimFirstAdmin(ctx, room.ID, accounts[winner].ID); err != nil || !ok {
		t.Errorf("ClaimFirstAdmin(winner again) = %v, %v; want true (still admin)", ok, err)
	}
	loser := (winner + 1) % joiners
	if ok, err := s.ClaimFirstAdmin(ctx, room.ID, accounts[loser].ID); err != nil || ok {
		t.Errorf("ClaimFirstAdmin(a loser again) = %v, %v; want false", ok, err)
	}
	// An admin added otherwise is an admin to ClaimFirstAdmin too.
	if err := s.AddRoomAdmin(ctx, room.ID, accounts[loser].ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimFirstAdmin(ctx, room.ID, accounts[loser].ID); err != nil || !ok {
		t.Errorf("ClaimFirstAdmin(added admin) = %v, %v; want true", ok, err)
	}
}

func TestAddRoomAdminIsIdempotent(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	room, _, err := s.EnsureRoom(ctx, "room")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.AddRoomAdmin(ctx, room.ID, alice.ID); err != nil {
			t.Fatalf("AddRoomAdmin #%d: %v", i+1, err)
		}
	}
	if n := countRows(t, pool, `SELECT count(*) FROM room_admins WHERE room_id = $1`, room.ID); n != 1 {
		t.Errorf("admin rows after adding one admin three times = %d; want 1", n)
	}
	if ok, err := s.IsRoomAdmin(ctx, room.ID, alice.ID); err != nil || !ok {
		t.Errorf("IsRoomAdmin = %v, %v; want true", ok, err)
	}
}

// SyncGitHubAdmin follows GitHub's word step by step, and never touches
// a grant of the room itself.
func TestSyncGitHubAdmin(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	carol := signInAccount(t, s, "1001", "carol")
	gus := signInAccount(t, s, "2002", "gus")
	room, _, err := s.EnsureRoom(ctx, "github.com/acme/app")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddRoomAdmin(ctx, room.ID, gus.ID); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		who               letagents.Account
		githubAdmin, join bool
		want              bool   // admin afterwards
		source            string // the row's source afterwards, "" for none
	}{
		{carol, false, true, false, ""},
		{carol, true, false, false, ""}, // a look records nothing new
		{carol, true, true, true, "github"},
		{carol, true, false, true, "github"},
		{carol, true, true, true, "github"},
		{carol, false, false, false, ""}, // demoted at GitHub
		{carol, true, false, false, ""},  // promoted again: only a join records it
		{carol, true, true, true, "github"},
		{carol, false, true, false, ""},
		{gus, true, true, true, "room"},
		{gus, false, false, true, "room"},
		{gus, false, true, true, "room"},
	}
	for i, st := range steps {
		got, err := s.SyncGitHubAdmin(ctx, room.ID, st.who.ID, st.githubAdmin, st.join)
		if err != nil || got != st.want {
			t.Fatalf("step %d: SyncGitHubAdmin(%s, %v, join %v) = %v, %v; want %v", i, st.who.Login, st.githubAdmin, st.join, got, err, st.want)
		}
		var source string
		err = pool.QueryRow(ctx, `SELECT coalesce((SELECT source FROM room_admins WHERE room_id = $1 AND account_id = $2), '')`,
			room.ID, st.who.ID).Scan(&source)
		if err != nil || source != st.source {
			t.Errorf("step %d: row source = %q, %v; want %q", i, source, err, st.source)
		}
		granted, err := s.IsRoomGrantedAdmin(ctx, room.ID, st.who.ID)
		if err != nil || granted != (st.source == "room") {
			t.Errorf("step %d: IsRoomGrantedAdmin = %v, %v; want %v", i, granted, err, st.source == "room")
		}
	}
}

func TestRepoVisibility(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := testNow()
	if public, _, found, err := s.RepoVisibility(ctx, "o/r"); err != nil || found || public {
		t.Errorf("RepoVisibility(never saved) = public %v, found %v, %v; want false, false, nil", public, found, err)
	}
	steps := []struct {
		public bool
		at     time.Time
	}{
		{true, now},
		{false, now.Add(time.Minute)},
		{true, now.Add(2 * time.Minute)},
	}
	for _, st := range steps {
		if err := s.SaveRepoVisibility(ctx, "o/r", st.public, st.at); err != nil {
			t.Fatal(err)
		}
		public, checked, found, err := s.RepoVisibility(ctx, "o/r")
		if err != nil || !found || public != st.public || !checked.Equal(st.at) {
			t.Errorf("RepoVisibility after saving (%v, %v) = %v, %v, found %v, %v; want %v, %v, found", st.public, st.at, public, checked, found, err, st.public, st.at)
		}
	}
	if _, _, found, err := s.RepoVisibility(ctx, "o/other"); err != nil || found {
		t.Errorf("RepoVisibility(another repo) = found %v, %v; want not found", found, err)
	}
}

func TestCachedRepoAccess(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	bob := signInAccount(t, s, "2002", "bob")
	now := testNow()
	if a, _, found, err := s.CachedRepoAccess(ctx, alice.ID, "o/r"); err != nil || found || a != (store.RepoAccess{}) {
		t.Errorf("CachedRepoAccess(never saved) = %+v, found %v, %v; want zero, false, nil", a, found, err)
	}
	steps := []struct {
		access store.RepoAccess
		at     time.Time
	}{
		{store.RepoAccess{Allowed: true, Admin: true}, now},
		{store.RepoAccess{Allowed: true}, now.Add(time.Minute)},
		{store.RepoAccess{}, now.Add(2 * time.Minute)},
	}
	for _, st := range steps {
		if err := s.SaveRepoAccess(ctx, alice.ID, "o/r", st.access, st.at); err != nil {
			t.Fatal(err)
		}
		a, checked, found, err := s.CachedRepoAccess(ctx, alice.ID, "o/r")
		if err != nil || !found || a != st.access || !checked.Equal(st.at) {
			t.Errorf("CachedRepoAccess after saving (%+v, %v) = %+v, %v, found %v, %v; want %+v, %v, found", st.access, st.at, a, checked, found, err, st.access, st.at)
		}
	}
	if _, _, found, err := s.CachedRepoAccess(ctx, bob.ID, "o/r"); err != nil || found {
		t.Errorf("CachedRepoAccess(another account) = found %v, %v; want not found", found, err)
	}
	if _, _, found, err := s.CachedRepoAccess(ctx, alice.ID, "o/other"); err != nil || found {
		t.Errorf("CachedRepoAccess(another repo) = found %v, %v; want not found", found, err)
	}
}

func TestUpsertAgent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	bob := signInAccount(t, s, "2002", "bob")
	now := testNow()
	agent := func(owner letagents.Account, name, display, label string) letagents.Agent {
		return letagents.Agent{OwnerAccountID: owner.ID, Name: name, CanonicalKey: owner.Login + "/" + name,
			DisplayName: display, OwnerLogin: owner.Login, OwnerLabel: label}
	}

	first, created, err := s.UpsertAgent(ctx, agent(alice, "claude-code", "Claude Code", "Alice"), now)
	if err != nil || !created {
		t.Fatalf("UpsertAgent(new) = created %v, %v; want created", created, err)
	}
	want := agent(alice, "claude-code", "Claude Code", "Alice")
	want.ID, want.CreatedAt, want.UpdatedAt = first.ID, now, now
	if first.ID <= 0 || !sameAgent(first, want) {
		t.Errorf("UpsertAgent(new) = %+v; want %+v", first, want)
	}

	later := now.Add(time.Minute)
	second, created, err := s.UpsertAgent(ctx, agent(alice, "claude-code", "Claude", "Alice L."), later)
	if err != nil || created {
		t.Fatalf("UpsertAgent(same name) = created %v, %v; want updated", created, err)
	}
	want.DisplayName, want.OwnerLabel, want.UpdatedAt = "Claude", "Alice L.", later
	if !sameAgent(second, want) {
		t.Errorf("UpsertAgent(same name) = %+v; want %+v (same id, labels and updated_at moved, created_at kept)", second, want)
	}

	for _, name := range []string{"zeta", "alpha"} {
		if _, created, err := s.UpsertAgent(ctx, agent(alice, name, name, "Alice"), now); err != nil || !created {
			t.Fatalf("UpsertAgent(%s) = created %v, %v", name, created, err)
		}
	}
	if _, _, err := s.UpsertAgent(ctx, agent(bob, "bobs-agent", "B", "Bob"), now); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		owner letagents.Account
		want  []string
	}{
		{alice, []string{"alice/alpha", "alice/claude-code", "alice/zeta"}},
		{bob, []string{"bob/bobs-agent"}},
		{letagents.Account{ID: bob.ID + 1000}, nil},
	}
	for _, tt := range tests {
		list, err := s.AgentsOf(ctx, tt.owner.ID)
		if err != nil {
			t.Fatalf("AgentsOf(%d): %v", tt.owner.ID, err)
		}
		var keys []string
		for _, a := range list {
			keys = append(keys, a.CanonicalKey)
			if a.OwnerAccountID != tt.owner.ID {
				t.Errorf("AgentsOf(%d) lists %+v, owned by %d", tt.owner.ID, a, a.OwnerAccountID)
			}
		}
		if !slices.Equal(keys, tt.want) {
			t.Errorf("AgentsOf(%d) = %q; want %q", tt.owner.ID, keys, tt.want)
		}
	}
	if list, _ := s.AgentsOf(ctx, alice.ID); len(list) > 1 && !sameAgent(list[1], want) {
		t.Errorf("AgentsOf lists %+v; want %+v", list[1], want)
	}

	// A canonical key already owned by another account.
	taken := agent(bob, "claude-code", "Claude", "Bob")
	taken.CanonicalKey = "alice/claude-code"
	if _, _, err := s.UpsertAgent(ctx, taken, later); codeOf(err) != letagents.Conflict {
		t.Errorf("UpsertAgent(key owned by another account) error = %v; want conflict", err)
	}
	if list, err := s.AgentsOf(ctx, bob.ID); err != nil || len(list) != 1 {
		t.Errorf("bob's agents after the conflict = %d, %v; want 1 (nothing written)", len(list), err)
	}
}

func sameAgent(a, b letagents.Agent) bool {
	return a.ID == b.ID && a.CanonicalKey == b.CanonicalKey && a.Name == b.Name && a.DisplayName == b.DisplayName &&
		a.OwnerAccountID == b.OwnerAccountID && a.OwnerLogin == b.OwnerLogin && a.OwnerLabel == b.OwnerLabel &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

// listen LISTENs on channel on a connection of its own, and returns a
// function that waits for one notification on it.
func listen(t *testing.T, pool *pgxpool.Pool, channel string) func() bool {
	t.Helper()
	ctx := context.Background()
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Exec(ctx, `UNLISTEN *`)
		c.Release()
	})
	if _, err := c.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return func() bool {
		ctx, cancel := context.WithTimeout(ctx, testwait.Bound)
		defer cancel()
		_, err := c.Conn().WaitForNotification(ctx)
		return err == nil
	}
}

// InvalidateRepoAccess forgets one account's cached answer, or everyone's
// and the repository's visibility, and rings the access channel of the
// account, or of the repository.
func TestInvalidateRepoAccess(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	alice, bob := signInAccount(t, s, "1001", "alice"), signInAccount(t, s, "2002", "bob")
	cache := func() {
		t.Helper()
		for _, a := range []letagents.Account{alice, bob} {
			for _, repo := range []string{"acme/secret", "acme/other"} {
				if err := s.SaveRepoAccess(ctx, a.ID, repo, store.RepoAccess{Allowed: true}, testNow()); err != nil {
					t.Fatal(err)
				}
				if err := s.SaveRepoVisibility(ctx, repo, false, testNow()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cached := func() (access, visibility int) {
		return countRows(t, pool, `SELECT count(*) FROM github_repo_access WHERE repo = 'acme/secret'`),
			countRows(t, pool, `SELECT count(*) FROM github_repo_visibility WHERE repo = 'acme/secret'`)
	}

	cache()
	rung := listen(t, pool, s.AccountAccessChannel(alice.ID))
	if err := s.InvalidateRepoAccess(ctx, "Acme/Secret", alice.ID); err != nil {
		t.Fatal(err)
	}
	if !rung() {
		t.Error("alice's access channel was not rung")
	}
	if a, v := cached(); a != 1 || v != 1 {
		t.Errorf("after forgetting alice's answer: %d answers, %d visibilities of acme/secret cached; want bob's, and the visibility", a, v)
	}

	cache()
	rung = listen(t, pool, s.RepoAccessChannel("acme/secret"))
	if err := s.InvalidateRepoAccess(ctx, "acme/secret", 0); err != nil {
		t.Fatal(err)
	}
	if !rung() {
		t.Error("the repository's access channel was not rung")
	}
	if a, v := cached(); a != 0 || v != 0 {
		t.Errorf("after forgetting the repository: %d answers, %d visibilities cached; want none", a, v)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM github_repo_access WHERE repo = 'acme/other'`); n != 2 {
		t.Errorf("answers about another repository: %d; want both kept", n)
	}
}

// A sign-out and a new sign-in ring the account's access channel.
func TestSessionChangesRingTheAccountsAccessChannel(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	rung := listen(t, pool, s.AccountAccessChannel(alice.ID))
	_, session, err := s.SignIn(ctx, store.SignIn{Account: githubAccount("1001", "alice"), GitHubToken: []byte("sealed"),
		SessionHash: testHash("browser"), SessionExpiresAt: testNow().Add(time.Hour), Now: testNow()})
	if err != nil {
		t.Fatal(err)
	}
	if !rung() {
		t.Error("a sign-in did not ring the account's access channel")
	}
	if err := s.DeleteSession(ctx, session); err != nil {
		t.Fatal(err)
	}
	if !rung() {
		t.Error("a sign-out did not ring the account's access channel")
	}
	if err := s.DeleteSession(ctx, session); err != nil {
		t.Errorf("a second sign-out: %v; want none", err)
	}
}

// TestUpsertAgentAtOnce registers one new agent from several clients at
// once, as two terminals starting together do: each gets the agent, one
// of them creates it, none is told its own key is another account's.
func TestUpsertAgentAtOnce(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	alice := signInAccount(t, s, "1001", "alice")
	const clients = 6
	warmPool(t, pool, clients)
	for i := range 20 {
		a := letagents.Agent{OwnerAccountID: alice.ID, Name: fmt.Sprintf("agent-%d", i), CanonicalKey: fmt.Sprintf("alice/agent-%d", i),
			DisplayName: "Agent", OwnerLogin: alice.Login, OwnerLabel: "Alice"}
		start := make(chan struct{})
		type result struct {
			agent   letagents.Agent
			created bool
			err     error
		}
		results := make(chan result, clients)
		for range clients {
			go func() {
				<-start
				g, created, err := s.UpsertAgent(ctx, a, testNow())
				results <- result{g, created, err}
			}()
		}
		close(start)
		var id int64
		made := 0
		for range clients {
			r := <-results
			if r.err != nil {
				t.Fatalf("%s: %v", a.CanonicalKey, r.err)
			}
			if id != 0 && r.agent.ID != id {
				t.Errorf("%s: agents %d and %d", a.CanonicalKey, id, r.agent.ID)
			}
			id = r.agent.ID
			if r.created {
				made++
			}
		}
		if made != 1 {
			t.Errorf("%s: created by %d clients, want 1", a.CanonicalKey, made)
		}
	}
}
