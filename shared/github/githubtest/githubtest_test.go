package githubtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/github/githubtest"
)

// newFake starts a fake GitHub and a client of its app.
func newFake(t *testing.T) (*githubtest.Server, *github.Client) {
	t.Helper()
	s := githubtest.New(t)
	return s, github.New(s.Config())
}

// startDevice begins a device flow, failing the test on error.
func startDevice(t *testing.T, c *github.Client) github.DeviceCode {
	t.Helper()
	dc, err := c.StartDevice(context.Background())
	if err != nil {
		t.Fatalf("StartDevice: %v", err)
	}
	return dc
}

// poll polls once and returns the token and error.
func poll(t *testing.T, c *github.Client, dc github.DeviceCode) (github.Token, error) {
	t.Helper()
	return c.PollDevice(context.Background(), dc.DeviceCode, time.Now())
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	s := githubtest.New(t)
	got := s.Config()
	want := github.Config{ClientID: "test-client-id", ClientSecret: "test-client-secret", OAuthURL: s.URL, APIURL: s.URL}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config() = %+v, want %+v", got, want)
	}
	if !github.New(got).Configured() {
		t.Error("a client of Config() is not Configured")
	}
}

func TestDeviceFlow(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	alice := s.AddUser("alice")
	dc := startDevice(t, c)
	if ok, _ := regexp.MatchString(`^[A-Z]{4}-[0-9]{4}$`, dc.UserCode); !ok {
		t.Errorf("UserCode = %q, want the shape ABCD-1234", dc.UserCode)
	}
	if got := s.LastUserCode(); got != dc.UserCode {
		t.Errorf("LastUserCode() = %q, want %q", got, dc.UserCode)
	}
	if dc.VerificationURI != s.URL+"/login/device" || dc.Interval != 5*time.Second || dc.ExpiresIn != 900*time.Second {
		t.Errorf("DeviceCode = %+v, want verification at %s/login/device, 5 s interval, 900 s expiry", dc, s.URL)
	}
	for i := range 3 {
		_, err := poll(t, c, dc)
		wantErr(t, fmt.Sprintf("poll %d before approval", i), err, github.ErrAuthorizationPending)
	}
	s.ApproveDevice(strings.ToLower(dc.UserCode), "ALICE") // both case-insensitive
	tok, err := poll(t, c, dc)
	if err != nil {
		t.Fatalf("poll after approval: %v", err)
	}
	if !strings.HasPrefix(tok.AccessToken, "gho_") || tok.Scope != github.DefaultScopes || !tok.ExpiresAt.IsZero() {
		t.Errorf("token = %+v, want a gho_ token with scope %q and no expiry", tok, github.DefaultScopes)
	}
	u, err := c.User(context.Background(), tok.AccessToken)
	if err != nil || u != alice {
		t.Errorf("User = %+v, %v; want %+v", u, err, alice)
	}
	_, err = poll(t, c, dc)
	wantErr(t, "poll after the token was issued", err, github.ErrExpiredToken)
}

func TestDeviceOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		act  func(s *githubtest.Server, code string)
		want []error // the answers of successive polls
	}{
		{"deny", func(s *githubtest.Server, code string) { s.DenyDevice(code) },
			[]error{github.ErrAccessDenied, github.ErrAccessDenied}},
		{"expire", func(s *githubtest.Server, code string) { s.ExpireDevice(code) },
			[]error{github.ErrExpiredToken, github.ErrExpiredToken}},
		{"slow down once", func(s *githubtest.Server, code string) { s.SlowDown(code) },
			[]error{github.ErrSlowDown, github.ErrAuthorizationPending, github.ErrAuthorizationPending}},
		{"expire after approval", func(s *githubtest.Server, code string) { s.ApproveDevice(code, "bob"); s.ExpireDevice(code) },
			[]error{github.ErrExpiredToken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c := newFake(t)
			s.AddUser("bob")
			dc := startDevice(t, c)
			tt.act(s, dc.UserCode)
			for i, want := range tt.want {
				_, err := poll(t, c, dc)
				wantErr(t, fmt.Sprintf("poll %d", i), err, want)
			}
		})
	}
}

func TestSlowDownRaisesInterval(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	dc := startDevice(t, c)
	for i, want := range []time.Duration{10 * time.Second, 15 * time.Second} {
		s.SlowDown(dc.UserCode)
		_, err := poll(t, c, dc)
		var sd *github.SlowDownError
		if !errors.As(err, &sd) || sd.Interval != want {
			t.Errorf("slow down %d: error %v, want a *SlowDownError with interval %v", i, err, want)
		}
	}
}

func TestEnforceInterval(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	// An interval no busy machine outlasts between two polls in a row.
	s.SetDeviceTiming(30*time.Second, time.Minute)
	s.EnforceInterval(true)
	dc := startDevice(t, c)
	_, err := poll(t, c, dc)
	wantErr(t, "first poll", err, github.ErrAuthorizationPending)
	_, err = poll(t, c, dc)
	var sd *github.SlowDownError
	if !errors.As(err, &sd) || sd.Interval != 35*time.Second {
		t.Errorf("immediate second poll: error %v, want slow_down with interval 35s", err)
	}

	s.EnforceInterval(false)
	_, err = poll(t, c, dc)
	wantErr(t, "poll with enforcement off", err, github.ErrAuthorizationPending)
}

func TestDeviceTiming(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	s.SetDeviceTiming(2*time.Second, 30*time.Second)
	if dc := startDevice(t, c); dc.Interval != 2*time.Second || dc.ExpiresIn != 30*time.Second {
		t.Errorf("DeviceCode timing %v/%v, want 2s/30s", dc.Interval, dc.ExpiresIn)
	}
	s.SetDeviceTiming(50*time.Millisecond, time.Minute)
	if dc := startDevice(t, c); dc.Interval != time.Second {
		t.Errorf("Interval = %v, want 1s (50 ms rounded up to whole seconds)", dc.Interval)
	}
	s.SetDeviceTiming(0, 0)
	if dc := startDevice(t, c); dc.Interval != 5*time.Second || dc.ExpiresIn != 900*time.Second {
		t.Errorf("DeviceCode timing %v/%v after reset, want 5s/900s", dc.Interval, dc.ExpiresIn)
	}
	s.SetDeviceTiming(time.Second, time.Millisecond)
	dc := startDevice(t, c)
	time.Sleep(5 * time.Millisecond)
	_, err := poll(t, c, dc)
	wantErr(t, "poll after real expiry", err, github.ErrExpiredToken)
}

func TestDeviceRejections(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	bad := s.Config()
	bad.ClientID = "other"
	_, err := github.New(bad).StartDevice(context.Background())
	wantErr(t, "StartDevice with a wrong client id", err, github.ErrRejected)

	dc := startDevice(t, c)
	_, err = github.New(bad).PollDevice(context.Background(), dc.DeviceCode, time.Now())
	wantErr(t, "PollDevice with a wrong client id", err, github.ErrRejected)
	_, err = c.PollDevice(context.Background(), "no-such-code", time.Now())
	wantErr(t, "PollDevice with an unknown code", err, github.ErrRejected)
	if err == nil || !strings.Contains(err.Error(), "incorrect_device_code") {
		t.Errorf("unknown device code error %v, want it to say incorrect_device_code", err)
	}
}

// noRedirect is an HTTP client that shows redirects instead of following them.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

// authorize visits the authorize URL as a browser would and returns the
// status and the query of the redirect.
func authorize(t *testing.T, u string) (int, url.Values) {
	t.Helper()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, nil
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("Location %q: %v", resp.Header.Get("Location"), err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != "https://app.example/cb" {
		t.Errorf("redirect to %s, want https://app.example/cb", got)
	}
	if loc.Query().Get("keep") != "1" {
		t.Errorf("redirect query %v lost the redirect_uri's own parameters", loc.Query())
	}
	return resp.StatusCode, loc.Query()
}

const callback = "https://app.example/cb?keep=1"

func TestWebFlow(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	carol := s.AddUser("carol")
	s.SignIn("Carol")
	status, q := authorize(t, c.AuthorizeURL("st&=1", callback))
	if status != http.StatusFound || q.Get("state") != "st&=1" || q.Get("code") == "" {
		t.Fatalf("authorize: %d %v, want 302 with a code and state st&=1", status, q)
	}
	code := q.Get("code")
	tok, err := c.ExchangeCode(context.Background(), code, callback, time.Now())
	if err != nil {
		t.Fatalf("ExchangeCode: %v", err)
	}
	if u, err := c.User(context.Background(), tok.AccessToken); err != nil || u != carol {
		t.Errorf("User = %+v, %v; want %+v", u, err, carol)
	}
	_, err = c.ExchangeCode(context.Background(), code, callback, time.Now())
	wantErr(t, "reusing the code", err, github.ErrRejected)
	if err == nil || !strings.Contains(err.Error(), "bad_verification_code") {
		t.Errorf("reused code error %v, want it to say bad_verification_code", err)
	}
}

func TestWebFlowRejections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		secret   string
		code     func(real string) string
		redirect string
		wantCode string
	}{
		{"wrong secret", "nope", func(r string) string { return r }, callback, "incorrect_client_credentials"},
		{"unknown code", githubtest.ClientSecret, func(string) string { return "made-up" }, callback, "bad_verification_code"},
		{"redirect mismatch", githubtest.ClientSecret, func(r string) string { return r }, "https://evil.example/cb", "redirect_uri_mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c := newFake(t)
			s.AddUser("dan")
			s.SignIn("dan")
			_, q := authorize(t, c.AuthorizeURL("s", callback))
			cfg := s.Config()
			cfg.ClientSecret = tt.secret
			_, err := github.New(cfg).ExchangeCode(context.Background(), tt.code(q.Get("code")), tt.redirect, time.Now())
			wantErr(t, "ExchangeCode", err, github.ErrRejected)
			if err == nil || !strings.Contains(err.Error(), tt.wantCode) {
				t.Errorf("error %v, want it to say %s", err, tt.wantCode)
			}
			if err != nil && strings.Contains(err.Error(), githubtest.ClientSecret) {
				t.Errorf("error %v quotes the client secret", err)
			}
		})
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	status, q := authorize(t, c.AuthorizeURL("xyz", callback))
	if status != http.StatusFound || q.Get("error") != "access_denied" || q.Get("state") != "xyz" || q.Has("code") {
		t.Errorf("authorize signed out: %d %v, want 302 with error=access_denied, state=xyz and no code", status, q)
	}

	bad := s.Config()
	bad.ClientID = "other"
	if status, _ := authorize(t, github.New(bad).AuthorizeURL("s", callback)); status != http.StatusBadRequest {
		t.Errorf("authorize with a wrong client id: status %d, want 400", status)
	}
	if status, _ := authorize(t, c.AuthorizeURL("s", "")); status != http.StatusBadRequest {
		t.Errorf("authorize without redirect_uri: status %d, want 400", status)
	}

	s.AddUser("erin")
	s.SignIn("erin")
	s.SignIn("")
	if _, q := authorize(t, c.AuthorizeURL("s", callback)); q.Get("error") != "access_denied" {
		t.Errorf("authorize after SignIn(\"\"): %v, want error=access_denied", q)
	}
}

func TestRepos(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	s.AddUser("owner")
	s.AddUser("reader")
	s.AddUser("writer")
	s.AddUser("stranger")
	s.AddRepo("Acme/Public", false)
	s.AddRepo("Acme/Secret", true)
	s.Grant("acme/secret", "Owner", "admin")
	s.Grant("ACME/SECRET", "writer", "write")
	s.Grant("Acme/Secret", "reader", "read")
	s.Grant("Acme/Public", "writer", "write")

	admin := &github.Permissions{Admin: true, Push: true, Pull: true}
	write := &github.Permissions{Push: true, Pull: true}
	read := &github.Permissions{Pull: true}
	tests := []struct {
		owner, name, login string // login "" means no token
		want               github.Repo
		wantErr            error
	}{
		{"acme", "public", "", github.Repo{FullName: "Acme/Public"}, nil},
		{"ACME", "PUBLIC", "stranger", github.Repo{FullName: "Acme/Public", Permissions: read}, nil},
		{"Acme", "Public", "writer", github.Repo{FullName: "Acme/Public", Permissions: write}, nil},
		{"acme", "secret", "", github.Repo{}, github.ErrNotFound},
		{"acme", "secret", "stranger", github.Repo{}, github.ErrNotFound},
		{"acme", "secret", "owner", github.Repo{FullName: "Acme/Secret", Private: true, Permissions: admin}, nil},
		{"Acme", "Secret", "writer", github.Repo{FullName: "Acme/Secret", Private: true, Permissions: write}, nil},
		{"acme", "SECRET", "reader", github.Repo{FullName: "Acme/Secret", Private: true, Permissions: read}, nil},
		{"acme", "missing", "owner", github.Repo{}, github.ErrNotFound},
		{"acme", "public/extra", "", github.Repo{}, github.ErrNotFound},
	}
	for _, tt := range tests {
		tok := ""
		if tt.login != "" {
			tok = s.Token(tt.login)
		}
		got, err := c.Repo(context.Background(), tt.owner, tt.name, tok)
		if !errors.Is(err, tt.wantErr) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Repo(%s/%s) as %q = %+v (permissions %+v), %v; want %+v (permissions %+v), %v",
				tt.owner, tt.name, tt.login, got, got.Permissions, err, tt.want, tt.want.Permissions, tt.wantErr)
		}
	}

	// Taking a grant away and changing visibility apply at once.
	tok := s.Token("reader")
	s.Grant("acme/secret", "reader", "none")
	_, err := c.Repo(context.Background(), "acme", "secret", tok)
	wantErr(t, "Repo after the grant was removed", err, github.ErrNotFound)
	s.AddRepo("acme/secret", false)
	got, err := c.Repo(context.Background(), "acme", "secret", tok)
	if err != nil || got.FullName != "acme/secret" || got.Private {
		t.Errorf("Repo after it went public = %+v, %v; want public acme/secret", got, err)
	}
}

func TestRevokeToken(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	s.AddUser("fay")
	s.AddRepo("o/pub", false)
	tok, other := s.Token("fay"), s.Token("fay")
	if tok == other {
		t.Fatalf("Token returned %q twice, want fresh tokens", tok)
	}
	s.RevokeToken(tok)
	_, err := c.User(context.Background(), tok)
	wantErr(t, "User with a revoked token", err, github.ErrUnauthorized)
	_, err = c.Repo(context.Background(), "o", "pub", tok)
	wantErr(t, "Repo (public) with a revoked token", err, github.ErrUnauthorized)
	if _, err := c.User(context.Background(), other); err != nil {
		t.Errorf("User with the other token: %v", err)
	}
	_, err = c.User(context.Background(), "gho_never-issued")
	wantErr(t, "User with an unknown token", err, github.ErrUnauthorized)
}

func TestFailAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		want   error
	}{
		{503, github.ErrUnavailable},
		{500, github.ErrUnavailable},
		{403, github.ErrUnavailable},
		{429, github.ErrUnavailable},
		{401, github.ErrUnauthorized},
		{404, github.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			s, c := newFake(t)
			s.AddUser("gus")
			s.AddRepo("o/r", false)
			tok := s.Token("gus")
			s.FailAPI(tt.status)
			_, err := c.User(context.Background(), tok)
			wantErr(t, "User", err, tt.want)
			_, err = c.Repo(context.Background(), "o", "r", "")
			wantErr(t, "Repo", err, tt.want)
			// The OAuth side keeps working.
			if _, err := c.StartDevice(context.Background()); err != nil {
				t.Errorf("StartDevice during FailAPI: %v", err)
			}
			s.FailAPI(0)
			if _, err := c.User(context.Background(), tok); err != nil {
				t.Errorf("User after FailAPI(0): %v", err)
			}
		})
	}
}

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	s := githubtest.New(t)
	s.FailAPI(http.StatusForbidden)
	resp, err := http.Get(s.URL + "/user")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-RateLimit-Remaining") != "0" || !strings.Contains(string(body), "rate limit") {
		t.Errorf("rate-limited answer: %d, remaining %q, body %s; want 403, 0 and a rate-limit message",
			resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"), body)
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	s.AddUser("hal")
	s.AddRepo("o/r", false)
	tok := s.Token("hal")
	for range 3 {
		_, _ = c.Repo(context.Background(), "o", "r", tok)
	}
	_, _ = c.Repo(context.Background(), "O", "R", "")
	_, _ = c.User(context.Background(), tok)
	s.FailAPI(500)
	_, _ = c.User(context.Background(), tok) // failed requests count too
	_, _ = c.StartDevice(context.Background())
	tests := []struct {
		path string
		want int
	}{
		{"/repos/o/r", 3},
		{"/repos/O/R", 1},
		{"/user", 2},
		{"/login/device/code", 1},
		{"/login/oauth/access_token", 0},
	}
	for _, tt := range tests {
		if got := s.Requests(tt.path); got != tt.want {
			t.Errorf("Requests(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestAddUser(t *testing.T) {
	t.Parallel()
	s := githubtest.New(t)
	a, b := s.AddUser("ann"), s.AddUser("ben")
	if a.ID != 1001 || b.ID != 1002 {
		t.Errorf("ids %d, %d; want 1001, 1002", a.ID, b.ID)
	}
	if want := (github.User{ID: 1001, Login: "ann", Name: "ann Name", AvatarURL: s.URL + "/avatars/ann"}); a != want {
		t.Errorf("AddUser = %+v, want %+v", a, want)
	}
	if again := s.AddUser("ANN"); again != a {
		t.Errorf("AddUser again = %+v, want the existing %+v", again, a)
	}
	resp, err := http.Get(a.AvatarURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
		t.Errorf("avatar: %d %s, want 200 and an image", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestWireShapes checks answers a client other than github.Client could
// see: form encoding without Accept: application/json, JSON 404s, methods.
func TestWireShapes(t *testing.T) {
	t.Parallel()
	s := githubtest.New(t)
	form := url.Values{"client_id": {githubtest.ClientID}, "scope": {"repo"}}
	resp, err := http.PostForm(s.URL+"/login/device/code", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	q, err := url.ParseQuery(string(body))
	if err != nil || q.Get("device_code") == "" || q.Get("interval") != "5" {
		t.Errorf("device code without Accept json: %s, want form-encoded with device_code and interval=5", body)
	}

	tests := []struct {
		method, path, body string
		wantStatus         int
		wantBody           string
	}{
		{"GET", "/repos/o/r/collaborators", "", 404, `"message":"Not Found"`},
		{"GET", "/user", "", 401, `"message":"Requires authentication"`},
		{"POST", "/login/oauth/access_token", "grant_type=password", 200, `"error":"unsupported_grant_type"`},
		{"GET", "/login/device", "", 200, "code"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, s.URL+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
			t.Errorf("%s %s: %d %s, want %d with %s", tt.method, tt.path, resp.StatusCode, body, tt.wantStatus, tt.wantBody)
		}
	}
}

// recorder is a testing.TB that keeps Errorf calls instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestMisuseReported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call func(s *githubtest.Server)
	}{
		{"Token of unknown user", func(s *githubtest.Server) { s.Token("nobody") }},
		{"RevokeToken of unknown token", func(s *githubtest.Server) { s.RevokeToken("x") }},
		{"AddUser empty", func(s *githubtest.Server) { s.AddUser("") }},
		{"AddRepo without owner", func(s *githubtest.Server) { s.AddRepo("norepo", false) }},
		{"AddRepo with extra slash", func(s *githubtest.Server) { s.AddRepo("a/b/c", false) }},
		{"Grant unknown repo", func(s *githubtest.Server) { s.Grant("x/y", "u", "read") }},
		{"Grant unknown user", func(s *githubtest.Server) { s.Grant("o/r", "nobody", "read") }},
		{"Grant bad perm", func(s *githubtest.Server) { s.Grant("o/r", "u", "owner") }},
		{"FailAPI 200", func(s *githubtest.Server) { s.FailAPI(200) }},
		{"FailAPI 1000", func(s *githubtest.Server) { s.FailAPI(1000) }},
		{"ApproveDevice unknown code", func(s *githubtest.Server) { s.ApproveDevice("NOPE-0000", "u") }},
		{"ApproveDevice unknown user", func(s *githubtest.Server) { s.ApproveDevice(s.LastUserCode(), "nobody") }},
		{"ApproveDevice denied", func(s *githubtest.Server) { s.DenyDevice(s.LastUserCode()); s.ApproveDevice(s.LastUserCode(), "u") }},
		{"DenyDevice unknown", func(s *githubtest.Server) { s.DenyDevice("") }},
		{"ExpireDevice unknown", func(s *githubtest.Server) { s.ExpireDevice("x") }},
		{"SlowDown unknown", func(s *githubtest.Server) { s.SlowDown("x") }},
		{"SignIn unknown", func(s *githubtest.Server) { s.SignIn("nobody") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			s := githubtest.New(rec)
			s.AddUser("u")
			s.AddRepo("o/r", false)
			if _, err := github.New(s.Config()).StartDevice(context.Background()); err != nil {
				t.Fatal(err)
			}
			tt.call(s)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.errs) != 1 {
				t.Errorf("reported %q, want exactly one error", rec.errs)
			}
		})
	}
}

// TestConcurrentUse drives every part of the fake at once; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s, c := newFake(t)
	s.AddRepo("o/r", true)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ctx := context.Background()
			login := fmt.Sprintf("user%d", i)
			s.AddUser(login)
			s.Grant("o/r", login, "read")
			dc, err := c.StartDevice(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			s.SlowDown(dc.UserCode)
			_, _ = c.PollDevice(ctx, dc.DeviceCode, time.Now())
			s.ApproveDevice(dc.UserCode, login)
			tok, err := c.PollDevice(ctx, dc.DeviceCode, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			if r, err := c.Repo(ctx, "o", "r", tok.AccessToken); err != nil || r.Permissions == nil || !r.Permissions.Pull {
				t.Errorf("Repo as %s = %+v, %v; want pull access", login, r, err)
			}
			_ = s.Requests("/repos/o/r")
			_ = s.LastUserCode()
			s.RevokeToken(tok.AccessToken)
		})
	}
	wg.Wait()
	if got := s.Requests("/repos/o/r"); got != 8 {
		t.Errorf("Requests(/repos/o/r) = %d, want 8", got)
	}
}
