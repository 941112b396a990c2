// Package githubtest is a fake GitHub for tests: one httptest server that
// speaks both the OAuth endpoints (Device Flow and web flow) and the REST API
// paths the github package uses, with GitHub's semantics and JSON shapes.
// Tests add users and repositories, then act as the user (approve a device
// code, sign in in the "browser") or as GitHub (revoke a token, fail the
// API). Every method is safe for concurrent use, including with requests in
// flight, so a separate server process can be pointed at Server.URL.
//
// Misuse (an unknown login, user code or repository) is reported with the
// test's Errorf rather than a panic, and the call does nothing.
package githubtest

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github"
)

// Credentials of the fake's only OAuth app; Config returns them.
const (
	ClientID     = "test-client-id"
	ClientSecret = "test-client-secret"
)

// Defaults of SetDeviceTiming, GitHub's own values.
const (
	DefaultDeviceInterval  = 5 * time.Second
	DefaultDeviceExpiresIn = 900 * time.Second
)

// slowDownStep is how much GitHub raises the interval on each slow_down.
const slowDownStep = 5 * time.Second

// codeLifetime is how long a web-flow code stays valid on GitHub.
const codeLifetime = 10 * time.Minute

// firstUserID is the id AddUser gives the first user.
const firstUserID = 1001

// Server is a running fake GitHub. Its zero value is not usable; call New.
type Server struct {
	// URL is the root of both the OAuth paths and the API paths, with no
	// trailing slash.
	URL string

	t   testing.TB
	srv *httptest.Server

	mu           sync.Mutex
	nextUserID   int64
	nextRepoID   int64
	users        map[string]*github.User // by lower-case login
	tokens       map[string]*token
	repos        map[string]*repo // by lower-case full name
	devices      map[string]*device
	userCodes    map[string]*device // by upper-case user code
	lastUserCode string
	signedIn     string // lower-case login, "" when signed out
	codes        map[string]*authCode
	failStatus   int
	requests     map[string]int
	interval     time.Duration
	expiresIn    time.Duration
	enforce      bool
	app          *appState // see app.go
}

type token struct {
	login   string // lower-case
	scope   string
	revoked bool
}

type repo struct {
	id       int64
	fullName string
	private  bool
	grants   map[string]string // lower-case login → "admin" | "write" | "read"
}

type deviceState int

const (
	devicePending deviceState = iota
	deviceApproved
	deviceDenied
	deviceExpired
	deviceUsed
)

type device struct {
	userCode string
	scope    string
	interval time.Duration
	expires  time.Time
	state    deviceState
	login    string // set by ApproveDevice
	slowDown bool   // set by SlowDown, cleared by the next poll
	lastPoll time.Time
}

type authCode struct {
	login       string
	redirectURI string
	scope       string
	expires     time.Time
}

// New starts a fake GitHub that is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		t:          t,
		nextUserID: firstUserID,
		nextRepoID: 5001,
		users:      map[string]*github.User{},
		tokens:     map[string]*token{},
		repos:      map[string]*repo{},
		devices:    map[string]*device{},
		userCodes:  map[string]*device{},
		codes:      map[string]*authCode{},
		requests:   map[string]int{},
		interval:   DefaultDeviceInterval,
		expiresIn:  DefaultDeviceExpiresIn,
	}
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Config is a github.Config for the fake's app, with both URLs at the fake.
func (s *Server) Config() github.Config {
	return github.Config{
		ClientID:     ClientID,
		ClientSecret: ClientSecret,
		OAuthURL:     s.URL,
		APIURL:       s.URL,
	}
}

// AddUser creates a GitHub account and returns it: ids count up from 1001,
// Name is "<login> Name" and AvatarURL is served by the fake. Logins are
// case-insensitive, so adding an existing one returns that user unchanged.
func (s *Server) AddUser(login string) github.User {
	s.t.Helper()
	if login == "" || strings.ContainsAny(login, "/ ") {
		s.t.Errorf("githubtest: AddUser(%q): not a GitHub login", login)
		return github.User{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(login)
	if u, ok := s.users[key]; ok {
		return *u
	}
	u := &github.User{
		ID:        s.nextUserID,
		Login:     login,
		Name:      login + " Name",
		AvatarURL: s.URL + "/avatars/" + login,
	}
	s.nextUserID++
	s.users[key] = u
	return *u
}

// Token mints a fresh access token for an existing user, as if the user had
// signed in, for tests that need a GitHub token directly.
func (s *Server) Token(login string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(login)
	if _, ok := s.users[key]; !ok {
		s.t.Errorf("githubtest: Token(%q): no such user (call AddUser first)", login)
		return ""
	}
	return s.mintLocked(key, github.DefaultScopes)
}

// RevokeToken makes GitHub forget token: later API calls with it answer 401
// {"message":"Bad credentials"}.
func (s *Server) RevokeToken(tok string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok {
		s.t.Errorf("githubtest: RevokeToken: not a token this server issued")
		return
	}
	t.revoked = true
}

// AddRepo creates the repository fullName ("owner/name"). Names match
// case-insensitively, as on GitHub; adding an existing one changes its
// spelling and visibility but keeps its grants.
func (s *Server) AddRepo(fullName string, private bool) {
	s.t.Helper()
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		s.t.Errorf("githubtest: AddRepo(%q): want \"owner/name\"", fullName)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(fullName)
	if r, ok := s.repos[key]; ok {
		r.fullName, r.private = fullName, private
		return
	}
	s.repos[key] = &repo{id: s.nextRepoID, fullName: fullName, private: private, grants: map[string]string{}}
	s.nextRepoID++
}

// Grant gives login access to the repository fullName with perm "admin",
// "write" or "read": the user then sees it even when private, and the API
// reports the matching permissions. perm "none" takes the grant away.
func (s *Server) Grant(fullName, login, perm string) {
	s.t.Helper()
	switch perm {
	case "admin", "write", "read", "none":
	default:
		s.t.Errorf("githubtest: Grant(%q, %q, %q): perm must be admin, write, read or none", fullName, login, perm)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[strings.ToLower(fullName)]
	if !ok {
		s.t.Errorf("githubtest: Grant: no repository %q (call AddRepo first)", fullName)
		return
	}
	key := strings.ToLower(login)
	if _, ok := s.users[key]; !ok {
		s.t.Errorf("githubtest: Grant: no user %q (call AddUser first)", login)
		return
	}
	if perm == "none" {
		delete(r.grants, key)
		return
	}
	r.grants[key] = perm
}

// FailAPI makes every API call (paths /user, under /repos/ and /app/) answer status
// (400–599) with a GitHub-like JSON error, until FailAPI(0). OAuth paths keep
// working.
func (s *Server) FailAPI(status int) {
	s.t.Helper()
	if status != 0 && (status < 400 || status > 599) {
		s.t.Errorf("githubtest: FailAPI(%d): want 0 or an error status 400–599", status)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failStatus = status
}

// Requests returns how many requests hit exactly the URL path, e.g.
// "/repos/o/r" or "/user", whatever their answer, so tests can check caching.
// Paths are counted as sent, not case-folded.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// SetDeviceTiming sets the interval and expires_in of device codes issued
// from now on; a value ≤ 0 restores GitHub's default (5 s, 900 s). The
// answer rounds up to whole seconds, as GitHub speaks seconds, while expiry
// and EnforceInterval use the exact durations.
func (s *Server) SetDeviceTiming(interval, expiresIn time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interval, s.expiresIn = interval, expiresIn
	if interval <= 0 {
		s.interval = DefaultDeviceInterval
	}
	if expiresIn <= 0 {
		s.expiresIn = DefaultDeviceExpiresIn
	}
}

// EnforceInterval turns on (or off) GitHub's rule that a poll sooner than
// the device code's interval after the previous one answers slow_down with
// the interval raised by 5 s. It is off by default because tests usually
// drive the poller with a fake clock.
func (s *Server) EnforceInterval(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enforce = on
}

// LastUserCode returns the user code of the most recent device code issued,
// "" when none was.
func (s *Server) LastUserCode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUserCode
}

// ApproveDevice acts as login entering userCode at the verification page:
// the next poll returns a fresh access token for login. The device code is
// then used up, and later polls answer expired_token (GitHub does not
// document this case; expired_token is what a poller must stop on anyway).
func (s *Server) ApproveDevice(userCode, login string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deviceLocked("ApproveDevice", userCode)
	if d == nil {
		return
	}
	key := strings.ToLower(login)
	if _, ok := s.users[key]; !ok {
		s.t.Errorf("githubtest: ApproveDevice: no user %q (call AddUser first)", login)
		return
	}
	if d.state != devicePending && d.state != deviceApproved {
		s.t.Errorf("githubtest: ApproveDevice(%q): the device code is no longer pending", userCode)
		return
	}
	d.state, d.login = deviceApproved, key
}

// DenyDevice acts as the user refusing userCode: polls answer access_denied.
func (s *Server) DenyDevice(userCode string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.deviceLocked("DenyDevice", userCode); d != nil && d.state != deviceUsed {
		d.state = deviceDenied
	}
}

// ExpireDevice makes userCode's device code expire now: polls answer
// expired_token.
func (s *Server) ExpireDevice(userCode string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.deviceLocked("ExpireDevice", userCode); d != nil {
		d.state = deviceExpired
	}
}

// SlowDown makes the next poll of userCode's device code answer slow_down
// with the interval raised by 5 s (GitHub's rule); later polls go on as
// before, with the new interval.
func (s *Server) SlowDown(userCode string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.deviceLocked("SlowDown", userCode); d != nil {
		d.slowDown = true
	}
}

// SignIn makes login the account signed in to GitHub in the "browser", so
// /login/oauth/authorize approves at once. SignIn("") signs out; then
// authorize redirects with error=access_denied.
func (s *Server) SignIn(login string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(login)
	if _, ok := s.users[key]; !ok && key != "" {
		s.t.Errorf("githubtest: SignIn: no user %q (call AddUser first)", login)
		return
	}
	s.signedIn = key
}

// deviceLocked finds a device code by its user code, which GitHub matches
// case-insensitively, reporting an unknown one as misuse.
func (s *Server) deviceLocked(method, userCode string) *device {
	s.t.Helper()
	d, ok := s.userCodes[strings.ToUpper(userCode)]
	if !ok {
		s.t.Errorf("githubtest: %s: no device code has user code %q", method, userCode)
		return nil
	}
	return d
}

// mintLocked issues a new access token for the user with lower-case login.
func (s *Server) mintLocked(login, scope string) string {
	for {
		tok := "gho_" + randomString(36)
		if _, dup := s.tokens[tok]; !dup {
			s.tokens[tok] = &token{login: login, scope: scope}
			return tok
		}
	}
}

// newUserCodeLocked returns an unused user code shaped like "ABCD-1234".
func (s *Server) newUserCodeLocked() string {
	const letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
	for {
		var b strings.Builder
		for range 4 {
			b.WriteByte(letters[rand.IntN(len(letters))])
		}
		fmt.Fprintf(&b, "-%04d", rand.IntN(10000))
		if _, dup := s.userCodes[b.String()]; !dup {
			return b.String()
		}
	}
}

// randomString returns n random alphanumeric characters. A fake needs
// uniqueness, not secrecy, so math/rand is enough.
func randomString(n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}
