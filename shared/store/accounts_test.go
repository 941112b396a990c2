package store_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

// newStoreAndPool is newStore that also hands back the pool, for tests
// that check rows the store API does not expose.
func newStoreAndPool(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	d := pgtest.New(t)
	return store.New(d.Pool), d.Pool
}

// warmPool opens n connections at once and returns them to the pool, so
// that goroutines racing next find connections ready and truly overlap
// instead of being serialised by connection setup.
func warmPool(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	ctx := context.Background()
	conns := make([]*pgxpool.Conn, 0, n)
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("warm pool: %v", err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
}

// testHash is the 32-byte hash a secret would be stored under.
func testHash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// testNow is a clock reading the database stores without rounding.
func testNow() time.Time { return time.Now().Truncate(time.Millisecond) }

// countRows counts the rows of a query like `SELECT count(*) FROM t WHERE ...`.
func countRows(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("count rows (%s): %v", query, err)
	}
	return n
}

// githubAccount is the account GitHub user id describes, as a sign-in sees it.
func githubAccount(userID, login string) letagents.Account {
	return letagents.Account{Provider: "github", ProviderUserID: userID, Login: login, DisplayName: login + " name", AvatarURL: "https://avatars.example/" + login}
}

// signInAccount signs a GitHub user in through the device flow (minting
// an owner token) and returns the account.
func signInAccount(t *testing.T, s *store.Store, userID, login string) letagents.Account {
	t.Helper()
	a, _, err := s.SignIn(context.Background(), store.SignIn{
		Account:        githubAccount(userID, login),
		GitHubToken:    []byte("sealed " + login),
		OwnerTokenHash: testHash(rand.Text()),
		Now:            testNow(),
	})
	if err != nil {
		t.Fatalf("SignIn(%s): %v", login, err)
	}
	return a
}

// newDeviceRequest stores a pending device flow created at now.
func newDeviceRequest(t *testing.T, s *store.Store, id string, interval time.Duration, now time.Time) store.DeviceRequest {
	t.Helper()
	d := store.DeviceRequest{
		IDHash:          testHash(id),
		DeviceCode:      []byte("sealed device code " + id),
		UserCode:        "ABCD-1234",
		VerificationURI: "https://github.com/login/device",
		Interval:        interval,
		RoomID:          "github.com/o/r",
		CreatedAt:       now,
		ExpiresAt:       now.Add(15 * time.Minute),
	}
	if err := s.CreateDeviceRequest(context.Background(), d); err != nil {
		t.Fatalf("CreateDeviceRequest(%s): %v", id, err)
	}
	return d
}

func TestSignInCreatesThenUpdatesTheAccount(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()

	first, tok1, err := s.SignIn(ctx, store.SignIn{
		Account:        githubAccount("1001", "alice"),
		GitHubToken:    []byte("sealed-1"),
		OwnerTokenHash: testHash("token-1"),
		Now:            now,
	})
	if err != nil {
		t.Fatalf("first SignIn: %v", err)
	}
	want := githubAccount("1001", "alice")
	if first.ID <= 0 || first.Provider != want.Provider || first.ProviderUserID != want.ProviderUserID || first.Login != want.Login ||
		first.DisplayName != want.DisplayName || first.AvatarURL != want.AvatarURL || !first.CreatedAt.Equal(now) || !first.UpdatedAt.Equal(now) {
		t.Errorf("first SignIn account = %+v; want %+v with an id and created/updated at %v", first, want, now)
	}
	if tok1 <= 0 {
		t.Errorf("first SignIn credential id = %d; want > 0", tok1)
	}

	later := now.Add(time.Minute)
	renamed := letagents.Account{Provider: "github", ProviderUserID: "1001", Login: "alice2", DisplayName: "Alice Two", AvatarURL: "https://avatars.example/new"}
	second, sess1, err := s.SignIn(ctx, store.SignIn{
		Account:          renamed,
		GitHubToken:      []byte("sealed-2"),
		SessionHash:      testHash("session-1"),
		SessionExpiresAt: later.Add(time.Hour),
		Now:              later,
	})
	if err != nil {
		t.Fatalf("second SignIn: %v", err)
	}
	if second.ID != first.ID || second.Login != "alice2" || second.DisplayName != "Alice Two" || second.AvatarURL != renamed.AvatarURL ||
		!second.CreatedAt.Equal(now) || !second.UpdatedAt.Equal(later) {
		t.Errorf("second SignIn account = %+v; want id %d, login alice2, display name Alice Two, created %v, updated %v", second, first.ID, now, later)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM accounts`); n != 1 {
		t.Errorf("accounts after two sign-ins of one GitHub user = %d; want 1", n)
	}

	// Credential ids grow with each sign-in, per kind of credential.
	_, tok2, err := s.SignIn(ctx, store.SignIn{Account: renamed, GitHubToken: []byte("sealed-3"), OwnerTokenHash: testHash("token-2"), Now: later})
	if err != nil {
		t.Fatalf("third SignIn: %v", err)
	}
	_, sess2, err := s.SignIn(ctx, store.SignIn{Account: renamed, GitHubToken: []byte("sealed-4"), SessionHash: testHash("session-2"), SessionExpiresAt: later.Add(time.Hour), Now: later})
	if err != nil {
		t.Fatalf("fourth SignIn: %v", err)
	}
	if tok2 <= tok1 || sess2 <= sess1 || sess1 <= 0 {
		t.Errorf("owner token ids %d then %d, session ids %d then %d; want each increasing and positive", tok1, tok2, sess1, sess2)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM owner_tokens WHERE account_id = $1`, first.ID); n != 2 {
		t.Errorf("owner tokens = %d; want 2", n)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM auth_sessions WHERE account_id = $1`, first.ID); n != 2 {
		t.Errorf("sessions = %d; want 2", n)
	}

	// The newest GitHub token replaced the older ones.
	gt, err := s.GitHubToken(ctx, first.ID)
	if err != nil || string(gt.Sealed) != "sealed-4" {
		t.Errorf("GitHubToken after four sign-ins = %q, %v; want the newest, sealed-4", gt.Sealed, err)
	}

	// A different GitHub user is a different account.
	other := signInAccount(t, s, "2002", "bob")
	if other.ID == first.ID {
		t.Errorf("a second GitHub user got account id %d, the same as the first", other.ID)
	}
}

func TestSignInClearsCachedRepoAccess(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	a := signInAccount(t, s, "1001", "alice")
	b := signInAccount(t, s, "2002", "bob")
	now := testNow()
	for _, id := range []int64{a.ID, b.ID} {
		if err := s.SaveRepoAccess(ctx, id, "o/r", store.RepoAccess{Allowed: true}, now); err != nil {
			t.Fatal(err)
		}
	}
	signInAccount(t, s, "1001", "alice")
	if _, _, found, err := s.CachedRepoAccess(ctx, a.ID, "o/r"); err != nil || found {
		t.Errorf("CachedRepoAccess after signing in again = found %v, %v; want the account's cache dropped", found, err)
	}
	if _, _, found, err := s.CachedRepoAccess(ctx, b.ID, "o/r"); err != nil || !found {
		t.Errorf("another account's CachedRepoAccess = found %v, %v; want it kept", found, err)
	}
}

func TestAccountByOwnerToken(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	a, id, err := s.SignIn(ctx, store.SignIn{Account: githubAccount("1001", "alice"), GitHubToken: []byte("x"), OwnerTokenHash: testHash("tok"), Now: testNow()})
	if err != nil {
		t.Fatal(err)
	}
	got, gotID, err := s.AccountByOwnerToken(ctx, testHash("tok"))
	if err != nil || got != a || gotID != id {
		t.Errorf("AccountByOwnerToken(known) = %+v, %d, %v; want %+v, %d", got, gotID, err, a, id)
	}
	for _, h := range [][]byte{testHash("unknown"), nil, []byte("short")} {
		if _, _, err := s.AccountByOwnerToken(ctx, h); codeOf(err) != letagents.Unauthorized {
			t.Errorf("AccountByOwnerToken(%x) error = %v; want unauthorized", h, err)
		}
	}
}

func TestAccountBySession(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()
	expires := now.Add(time.Hour)
	a, id, err := s.SignIn(ctx, store.SignIn{Account: githubAccount("1001", "alice"), GitHubToken: []byte("x"),
		SessionHash: testHash("sess"), SessionExpiresAt: expires, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{now, expires.Add(-time.Millisecond)} {
		got, gotID, err := s.AccountBySession(ctx, testHash("sess"), at)
		if err != nil || got != a || gotID != id {
			t.Errorf("AccountBySession(live, at %v) = %+v, %d, %v; want %+v, %d", at, got, gotID, err, a, id)
		}
	}
	if _, _, err := s.AccountBySession(ctx, testHash("unknown"), now); codeOf(err) != letagents.Unauthorized {
		t.Errorf("AccountBySession(unknown) error = %v; want unauthorized", err)
	}
	// A session is no owner token, nor the other way round.
	if _, _, err := s.AccountByOwnerToken(ctx, testHash("sess")); codeOf(err) != letagents.Unauthorized {
		t.Errorf("AccountByOwnerToken(a session's hash) error = %v; want unauthorized", err)
	}

	if _, _, err := s.AccountBySession(ctx, testHash("sess"), expires); codeOf(err) != letagents.Unauthorized {
		t.Errorf("AccountBySession(at expiry) error = %v; want unauthorized", err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM auth_sessions WHERE id = $1`, id); n != 0 {
		t.Errorf("expired session rows after lookup = %d; want 0 (deleted on the way)", n)
	}
	// Gone for good, even at a time it was live.
	if _, _, err := s.AccountBySession(ctx, testHash("sess"), now); codeOf(err) != letagents.Unauthorized {
		t.Errorf("AccountBySession(deleted, earlier clock) error = %v; want unauthorized", err)
	}

	_, id2, err := s.SignIn(ctx, store.SignIn{Account: githubAccount("1001", "alice"), GitHubToken: []byte("x"),
		SessionHash: testHash("sess2"), SessionExpiresAt: expires, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AccountBySession(ctx, testHash("sess2"), now); codeOf(err) != letagents.Unauthorized {
		t.Errorf("AccountBySession(signed out) error = %v; want unauthorized", err)
	}
}

func TestSignInConsumesDeviceRequest(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()
	d := newDeviceRequest(t, s, "req", 5*time.Second, now)

	a, _, err := s.SignIn(ctx, store.SignIn{Account: githubAccount("1001", "alice"), GitHubToken: []byte("first"),
		DeviceRequest: d.IDHash, OwnerTokenHash: testHash("tok-1"), Now: now})
	if err != nil {
		t.Fatalf("SignIn completing a device request: %v", err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM device_requests`); n != 0 {
		t.Errorf("device requests after the sign-in = %d; want 0 (consumed)", n)
	}
	if _, err := s.ClaimDevicePoll(ctx, d.IDHash, now.Add(time.Minute)); codeOf(err) != letagents.NotFound {
		t.Errorf("ClaimDevicePoll(consumed) error = %v; want not found", err)
	}

	// A second poll that also got GitHub's answer loses: nothing is written.
	_, _, err = s.SignIn(ctx, store.SignIn{Account: letagents.Account{Provider: "github", ProviderUserID: "1001", Login: "renamed", DisplayName: "Renamed"},
		GitHubToken: []byte("second"), DeviceRequest: d.IDHash, OwnerTokenHash: testHash("tok-2"), Now: now.Add(time.Minute)})
	if codeOf(err) != letagents.NotFound {
		t.Errorf("SignIn with a consumed device request error = %v; want not found", err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM owner_tokens`); n != 1 {
		t.Errorf("owner tokens after the losing sign-in = %d; want 1", n)
	}
	if _, _, err := s.AccountByOwnerToken(ctx, testHash("tok-2")); codeOf(err) != letagents.Unauthorized {
		t.Errorf("AccountByOwnerToken(the losing sign-in's token) error = %v; want unauthorized", err)
	}
	got, _, err := s.AccountByOwnerToken(ctx, testHash("tok-1"))
	if err != nil || got != a {
		t.Errorf("account after the losing sign-in = %+v, %v; want it unchanged, %+v", got, err, a)
	}
	if gt, err := s.GitHubToken(ctx, a.ID); err != nil || string(gt.Sealed) != "first" {
		t.Errorf("GitHub token after the losing sign-in = %q, %v; want %q", gt.Sealed, err, "first")
	}

	// A losing first-time sign-in creates no account either.
	_, _, err = s.SignIn(ctx, store.SignIn{Account: githubAccount("3003", "carol"), GitHubToken: []byte("x"),
		DeviceRequest: testHash("never created"), OwnerTokenHash: testHash("tok-3"), Now: now})
	if codeOf(err) != letagents.NotFound {
		t.Errorf("SignIn with an unknown device request error = %v; want not found", err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM accounts`); n != 1 {
		t.Errorf("accounts after a failed first sign-in = %d; want 1", n)
	}
}

func TestConcurrentSignInsConsumeADeviceRequestOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s, pool := store.New(db.Pool), db.Pool
	ctx := context.Background()
	now := testNow()
	d := newDeviceRequest(t, s, "req", 5*time.Second, now)
	release := db.HoldLock(t, `SELECT 1 FROM device_requests WHERE id_hash = $1 FOR UPDATE`, d.IDHash)
	const n = 8
	errs := make([]error, n)
	db.Race(t, n, release, func(i int) {
		_, _, errs[i] = s.SignIn(ctx, store.SignIn{Account: githubAccount("1001", "alice"), GitHubToken: []byte("x"),
			DeviceRequest: d.IDHash, OwnerTokenHash: testHash(fmt.Sprint("tok-", i)), Now: now})
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case codeOf(err) != letagents.NotFound:
			t.Errorf("sign-in %d error = %v; want nil or not found", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d racing sign-ins succeeded; want exactly 1", won, n)
	}
	if got := countRows(t, pool, `SELECT count(*) FROM owner_tokens`); got != 1 {
		t.Errorf("owner tokens after %d racing sign-ins = %d; want 1", n, got)
	}
}

func TestGitHubToken(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()
	expiry := now.Add(8 * time.Hour)
	tests := []struct {
		name    string
		userID  string
		sealed  []byte
		expires time.Time
	}{
		{"with expiry", "1001", []byte{0, 1, 2, 0xff}, expiry},
		{"without expiry", "2002", []byte("never expires"), time.Time{}},
	}
	for _, tt := range tests {
		a, _, err := s.SignIn(ctx, store.SignIn{Account: githubAccount(tt.userID, "u"+tt.userID), GitHubToken: tt.sealed,
			GitHubTokenExpiresAt: tt.expires, OwnerTokenHash: testHash(tt.name), Now: now})
		if err != nil {
			t.Fatalf("%s: SignIn: %v", tt.name, err)
		}
		got, err := s.GitHubToken(ctx, a.ID)
		if err != nil || string(got.Sealed) != string(tt.sealed) || got.GitHubUserID != tt.userID || !got.ExpiresAt.Equal(tt.expires) || got.ExpiresAt.IsZero() != tt.expires.IsZero() {
			t.Errorf("%s: GitHubToken = {%x, %q, %v}, %v; want {%x, %q, %v}", tt.name, got.Sealed, got.GitHubUserID, got.ExpiresAt, err, tt.sealed, tt.userID, tt.expires)
		}
	}

	// An account that never stored a token, and one that does not exist.
	var bare int64
	if err := pool.QueryRow(ctx, `INSERT INTO accounts (provider, provider_user_id, login, display_name, created_at, updated_at)
		VALUES ('github', '3003', 'carol', 'carol', $1, $1) RETURNING id`, now).Scan(&bare); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{bare, bare + 1000} {
		if _, err := s.GitHubToken(ctx, id); codeOf(err) != letagents.NotFound {
			t.Errorf("GitHubToken(account %d without one) error = %v; want not found", id, err)
		}
	}
}

func TestAuthStates(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()
	ttl := 15 * time.Minute
	browser := testHash("nonce of the browser that signs in")

	if err := s.CreateAuthState(ctx, "one", browser, "/in/github.com/o/r", now, now.Add(ttl)); err != nil {
		t.Fatal(err)
	}
	got, err := s.ConsumeAuthState(ctx, "one", browser, now.Add(time.Minute))
	if err != nil || got != "/in/github.com/o/r" {
		t.Errorf("ConsumeAuthState(fresh) = %q, %v; want %q", got, err, "/in/github.com/o/r")
	}
	if _, err := s.ConsumeAuthState(ctx, "one", browser, now.Add(time.Minute)); codeOf(err) != letagents.Invalid {
		t.Errorf("ConsumeAuthState(used) error = %v; want invalid", err)
	}
	if _, err := s.ConsumeAuthState(ctx, "never", browser, now); codeOf(err) != letagents.Invalid {
		t.Errorf("ConsumeAuthState(unknown) error = %v; want invalid", err)
	}

	// Another browser's callback is refused, and spends the state.
	if err := s.CreateAuthState(ctx, "bound", browser, "/", now, now.Add(ttl)); err != nil {
		t.Fatal(err)
	}
	for _, other := range [][]byte{testHash("another browser's nonce"), testHash(""), nil} {
		if err := s.CreateAuthState(ctx, "bound2", browser, "/", now, now.Add(ttl)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ConsumeAuthState(ctx, "bound2", other, now); codeOf(err) != letagents.Invalid {
			t.Errorf("ConsumeAuthState(browser hash %x) error = %v; want invalid", other, err)
		}
	}
	if _, err := s.ConsumeAuthState(ctx, "bound2", browser, now); codeOf(err) != letagents.Invalid {
		t.Errorf("ConsumeAuthState(right browser after a refusal) error = %v; want invalid (spent)", err)
	}
	if got, err := s.ConsumeAuthState(ctx, "bound", browser, now); err != nil || got != "/" {
		t.Errorf("ConsumeAuthState(right browser) = %q, %v; want %q", got, err, "/")
	}

	if err := s.CreateAuthState(ctx, "late", browser, "/", now, now.Add(ttl)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeAuthState(ctx, "late", browser, now.Add(ttl)); codeOf(err) != letagents.Invalid {
		t.Errorf("ConsumeAuthState(at expiry) error = %v; want invalid", err)
	}

	// Creating a state purges the expired ones and keeps the live ones.
	if err := s.CreateAuthState(ctx, "live", browser, "/", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAuthState(ctx, "short", browser, "/", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM auth_states`); n != 3 {
		t.Fatalf("auth states before the purge = %d; want 3 (late, live, short)", n)
	}
	if err := s.CreateAuthState(ctx, "new", browser, "/", now.Add(ttl), now.Add(2*ttl)); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := pool.Query(ctx, `SELECT state FROM auth_states ORDER BY state`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			t.Fatal(err)
		}
		left = append(left, st)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(left) != "[live new]" {
		t.Errorf("auth states after creating one at %v = %v; want [live new] (expired ones purged)", now.Add(ttl), left)
	}
	if got, err := s.ConsumeAuthState(ctx, "live", browser, now.Add(ttl)); err != nil || got != "/" {
		t.Errorf("ConsumeAuthState(live after a purge) = %q, %v; want %q", got, err, "/")
	}
}

func TestClaimDevicePoll(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()
	const interval = 5 * time.Second
	want := newDeviceRequest(t, s, "req", interval, now)

	if _, err := s.ClaimDevicePoll(ctx, testHash("unknown"), now); codeOf(err) != letagents.NotFound {
		t.Errorf("ClaimDevicePoll(unknown) error = %v; want not found", err)
	}

	got, err := s.ClaimDevicePoll(ctx, want.IDHash, now)
	if err != nil {
		t.Fatalf("first poll: %v", err)
	}
	if string(got.IDHash) != string(want.IDHash) || string(got.DeviceCode) != string(want.DeviceCode) || got.UserCode != want.UserCode ||
		got.VerificationURI != want.VerificationURI || got.Interval != want.Interval || got.RoomID != want.RoomID ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || !got.LastPollAt.Equal(now) {
		t.Errorf("first poll = %+v; want %+v with LastPollAt %v", got, want, now)
	}
	var stamped time.Time
	if err := pool.QueryRow(ctx, `SELECT last_poll_at FROM device_requests WHERE id_hash = $1`, want.IDHash).Scan(&stamped); err != nil || !stamped.Equal(now) {
		t.Errorf("last_poll_at after the first poll = %v, %v; want %v", stamped, err, now)
	}

	early := now.Add(2 * time.Second)
	_, err = s.ClaimDevicePoll(ctx, want.IDHash, early)
	var e *letagents.Error
	if !errors.As(err, &e) || e.Kind != letagents.RateLimited {
		t.Fatalf("poll after 2s error = %v; want rate limited", err)
	}
	if e.Fields["interval"] != 5 {
		t.Errorf("rate-limited poll Fields[interval] = %#v; want 5 (seconds)", e.Fields["interval"])
	}
	if e.RetryAfter != 3*time.Second {
		t.Errorf("rate-limited poll RetryAfter = %v; want 3s (the rest of the interval)", e.RetryAfter)
	}
	if err := pool.QueryRow(ctx, `SELECT last_poll_at FROM device_requests WHERE id_hash = $1`, want.IDHash).Scan(&stamped); err != nil || !stamped.Equal(now) {
		t.Errorf("last_poll_at after a refused poll = %v, %v; want it unchanged, %v", stamped, err, now)
	}

	next := now.Add(interval)
	if got, err := s.ClaimDevicePoll(ctx, want.IDHash, next); err != nil || !got.LastPollAt.Equal(next) {
		t.Errorf("poll one interval later = LastPollAt %v, %v; want %v, nil", got.LastPollAt, err, next)
	}

	if _, err := s.ClaimDevicePoll(ctx, want.IDHash, want.ExpiresAt); codeOf(err) != letagents.Gone {
		t.Errorf("poll at expiry error = %v; want gone", err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM device_requests WHERE id_hash = $1`, want.IDHash); n != 0 {
		t.Errorf("expired device request rows = %d; want 0 (deleted)", n)
	}
	if _, err := s.ClaimDevicePoll(ctx, want.IDHash, want.ExpiresAt); codeOf(err) != letagents.NotFound {
		t.Errorf("poll after expiry error = %v; want not found", err)
	}
}

func TestClaimDevicePollWithoutRoom(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := testNow()
	d := store.DeviceRequest{IDHash: testHash("req"), DeviceCode: []byte("dc"), UserCode: "WXYZ-9876",
		VerificationURI: "https://github.com/login/device", Interval: 5 * time.Second, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	if err := s.CreateDeviceRequest(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimDevicePoll(ctx, d.IDHash, now); err != nil || got.RoomID != "" {
		t.Errorf("ClaimDevicePoll(no room) = RoomID %q, %v; want empty, nil", got.RoomID, err)
	}
}

func TestSlowDownDevice(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	d := newDeviceRequest(t, s, "req", 5*time.Second, testNow())
	tests := []struct {
		raiseTo time.Duration
		want    int // seconds
	}{
		{10 * time.Second, 10},
		{3 * time.Second, 10},
		{10 * time.Second, 10},
		{15 * time.Second, 15},
		{time.Second, 15},
	}
	for _, tt := range tests {
		if err := s.SlowDownDevice(ctx, d.IDHash, tt.raiseTo); err != nil {
			t.Fatalf("SlowDownDevice(%v): %v", tt.raiseTo, err)
		}
		var got int
		if err := pool.QueryRow(ctx, `SELECT interval_seconds FROM device_requests WHERE id_hash = $1`, d.IDHash).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("interval after SlowDownDevice(%v) = %ds; want %ds", tt.raiseTo, got, tt.want)
		}
	}
	if err := s.SlowDownDevice(ctx, testHash("unknown"), time.Minute); err != nil {
		t.Errorf("SlowDownDevice(unknown) = %v; want nil", err)
	}
}

func TestDeleteDeviceRequest(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := testNow()
	d := newDeviceRequest(t, s, "req", 5*time.Second, now)
	keep := newDeviceRequest(t, s, "other", 5*time.Second, now)
	if err := s.DeleteDeviceRequest(ctx, d.IDHash); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimDevicePoll(ctx, d.IDHash, now); codeOf(err) != letagents.NotFound {
		t.Errorf("ClaimDevicePoll(deleted) error = %v; want not found", err)
	}
	if _, err := s.ClaimDevicePoll(ctx, keep.IDHash, now); err != nil {
		t.Errorf("ClaimDevicePoll(another request) = %v; want it untouched", err)
	}
	if err := s.DeleteDeviceRequest(ctx, d.IDHash); err != nil {
		t.Errorf("DeleteDeviceRequest(already deleted) = %v; want nil", err)
	}
}

func TestCreateDeviceRequestPurgesLongExpired(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	now := testNow()
	old := newDeviceRequest(t, s, "old", 5*time.Second, now)                      // expires at now+15m
	recent := newDeviceRequest(t, s, "recent", 5*time.Second, now.Add(time.Hour)) // expires at now+1h15m
	newDeviceRequest(t, s, "new", 5*time.Second, now.Add(15*time.Minute+time.Hour+time.Second))
	for _, tt := range []struct {
		name string
		d    store.DeviceRequest
		want int
	}{{"ended over an hour ago", old, 0}, {"ended less than an hour ago", recent, 1}} {
		if n := countRows(t, pool, `SELECT count(*) FROM device_requests WHERE id_hash = $1`, tt.d.IDHash); n != tt.want {
			t.Errorf("device request that %s: %d rows; want %d", tt.name, n, tt.want)
		}
	}
}

func TestConcurrentDevicePollsClaimOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := store.New(db.Pool)
	ctx := context.Background()
	now := testNow()
	d := newDeviceRequest(t, s, "req", 5*time.Second, now)
	release := db.HoldLock(t, `SELECT 1 FROM device_requests WHERE id_hash = $1 FOR UPDATE`, d.IDHash)
	const pollers = 10
	errs := make([]error, pollers)
	db.Race(t, pollers, release, func(i int) {
		_, errs[i] = s.ClaimDevicePoll(ctx, d.IDHash, now)
	})
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case codeOf(err) != letagents.RateLimited:
			t.Errorf("poller %d error = %v; want nil or rate limited", i, err)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d simultaneous polls were allowed; want exactly 1", ok, pollers)
	}
}
