package github_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func TestStartDevice(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"device_code":"dc1","user_code":"ABCD-1234","verification_uri":"https://github.com/login/device","expires_in":900,"interval":5}`)
	got, err := s.client().StartDevice(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := github.DeviceCode{
		DeviceCode:      "dc1",
		UserCode:        "ABCD-1234",
		VerificationURI: "https://github.com/login/device",
		ExpiresIn:       900 * time.Second,
		Interval:        5 * time.Second,
	}
	if got != want {
		t.Errorf("StartDevice = %+v, want %+v", got, want)
	}
	r := s.last(t)
	if r.method != http.MethodPost || r.path != "/login/device/code" {
		t.Errorf("request %s %s, want POST /login/device/code", r.method, r.path)
	}
	checkForm(t, r.form, map[string]string{"client_id": testID, "scope": github.DefaultScopes})
	checkHeader(t, r.header, map[string]string{
		"Accept":        "application/json",
		"Content-Type":  "application/x-www-form-urlencoded",
		"Authorization": "",
	})
}

func TestStartDeviceAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		status       int
		body         string
		wantInterval time.Duration
		wantErr      error
	}{
		{"no interval means 5 s", 200, `{"device_code":"d","user_code":"u","verification_uri":"v","expires_in":900}`, 5 * time.Second, nil},
		{"negative interval means 5 s", 200, `{"device_code":"d","user_code":"u","verification_uri":"v","expires_in":900,"interval":-3}`, 5 * time.Second, nil},
		{"custom interval", 200, `{"device_code":"d","user_code":"u","verification_uri":"v","expires_in":900,"interval":7}`, 7 * time.Second, nil},
		{"no device code", 200, `{"user_code":"u","verification_uri":"v","expires_in":900}`, 0, github.ErrUnavailable},
		{"no user code", 200, `{"device_code":"d","verification_uri":"v","expires_in":900}`, 0, github.ErrUnavailable},
		{"no expiry", 200, `{"device_code":"d","user_code":"u","verification_uri":"v"}`, 0, github.ErrUnavailable},
		{"not JSON", 200, `<html>`, 0, github.ErrUnavailable},
		{"wrong types", 200, `{"device_code":1}`, 0, github.ErrUnavailable},
		{"empty", 200, ``, 0, github.ErrUnavailable},
		{"bad client", 200, `{"error":"incorrect_client_credentials","error_description":"bad id"}`, 0, github.ErrRejected},
		{"flow disabled", 400, `{"error":"device_flow_disabled"}`, 0, github.ErrRejected},
		{"404 page", 404, `Not Found`, 0, github.ErrRejected},
		{"rate limited", 429, `{"message":"slow"}`, 0, github.ErrUnavailable},
		{"forbidden", 403, ``, 0, github.ErrUnavailable},
		{"outage", 502, `<html>bad gateway</html>`, 0, github.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newServer(t, tt.status, tt.body).client().StartDevice(context.Background())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("StartDevice error %v, want %v", err, tt.wantErr)
			}
			if got.Interval != tt.wantInterval {
				t.Errorf("Interval = %v, want %v", got.Interval, tt.wantInterval)
			}
		})
	}
}

func TestPollDevice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want github.Token
	}{
		{"no expiry", `{"access_token":"gho_x","token_type":"bearer","scope":"read:user,repo"}`,
			github.Token{AccessToken: "gho_x", Scope: "read:user,repo"}},
		{"expiring", `{"access_token":"ghu_x","expires_in":28800,"refresh_token":"r","scope":""}`,
			github.Token{AccessToken: "ghu_x", ExpiresAt: now.Add(8 * time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, http.StatusOK, tt.body)
			got, err := s.client().PollDevice(context.Background(), "dc1", now)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("PollDevice = %+v, want %+v", got, tt.want)
			}
			r := s.last(t)
			if r.method != http.MethodPost || r.path != "/login/oauth/access_token" {
				t.Errorf("request %s %s, want POST /login/oauth/access_token", r.method, r.path)
			}
			checkForm(t, r.form, map[string]string{
				"client_id":   testID,
				"device_code": "dc1",
				"grant_type":  "urn:ietf:params:oauth:grant-type:device_code",
			})
			checkHeader(t, r.header, map[string]string{"Accept": "application/json"})
		})
	}
}

// tokenErrorCases are GitHub's answers on the access-token endpoint, shared
// by the device and web flow tests.
var tokenErrorCases = []struct {
	name    string
	status  int
	body    string
	wantErr error
}{
	{"pending", 200, `{"error":"authorization_pending","error_description":"wait"}`, github.ErrAuthorizationPending},
	{"slow down", 200, `{"error":"slow_down","interval":10}`, github.ErrSlowDown},
	{"denied", 200, `{"error":"access_denied"}`, github.ErrAccessDenied},
	{"expired", 200, `{"error":"expired_token"}`, github.ErrExpiredToken},
	{"bad device code", 200, `{"error":"incorrect_device_code","error_description":"The device_code provided is not valid."}`, github.ErrRejected},
	{"bad verification code", 200, `{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}`, github.ErrRejected},
	{"unsupported grant", 200, `{"error":"unsupported_grant_type"}`, github.ErrRejected},
	{"bad credentials", 200, `{"error":"incorrect_client_credentials"}`, github.ErrRejected},
	{"redirect mismatch", 200, `{"error":"redirect_uri_mismatch"}`, github.ErrRejected},
	{"unknown error", 200, `{"error":"something_new"}`, github.ErrRejected},
	{"error with 400", 400, `{"error":"bad_verification_code"}`, github.ErrRejected},
	{"no token", 200, `{"token_type":"bearer"}`, github.ErrUnavailable},
	{"not JSON", 200, `access_token=x&scope=`, github.ErrUnavailable},
	{"plain 401", 401, `{"message":"nope"}`, github.ErrRejected},
	{"outage", 500, ``, github.ErrUnavailable},
	{"rate limited", 429, ``, github.ErrUnavailable},
}

func TestPollDeviceErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range tokenErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newServer(t, tt.status, tt.body).client().PollDevice(context.Background(), "dc", now)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("PollDevice error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestExchangeCodeErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range tokenErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newServer(t, tt.status, tt.body).client().ExchangeCode(context.Background(), "code", "http://x/cb", now)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("ExchangeCode error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestRejectedCarriesDescription(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"error":"incorrect_device_code","error_description":"The device_code provided is not valid."}`)
	_, err := s.client().PollDevice(context.Background(), "dc", now)
	for _, want := range []string{"incorrect_device_code", "The device_code provided is not valid."} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to mention %q", err, want)
		}
	}
}

func TestSlowDownError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want time.Duration
	}{
		{`{"error":"slow_down","interval":10}`, 10 * time.Second},
		{`{"error":"slow_down"}`, 0},
		{`{"error":"slow_down","interval":-1}`, 0},
	}
	for _, tt := range tests {
		_, err := newServer(t, http.StatusOK, tt.body).client().PollDevice(context.Background(), "dc", now)
		var sd *github.SlowDownError
		if !errors.As(err, &sd) {
			t.Errorf("body %s: error %v is not a *SlowDownError", tt.body, err)
			continue
		}
		if sd.Interval != tt.want {
			t.Errorf("body %s: Interval = %v, want %v", tt.body, sd.Interval, tt.want)
		}
		if !errors.Is(err, github.ErrSlowDown) || errors.Is(err, github.ErrAuthorizationPending) {
			t.Errorf("body %s: errors.Is(ErrSlowDown) = %v, errors.Is(ErrAuthorizationPending) = %v; want true, false",
				tt.body, errors.Is(err, github.ErrSlowDown), errors.Is(err, github.ErrAuthorizationPending))
		}
	}
	if got := (&github.SlowDownError{Interval: 10 * time.Second}).Error(); !strings.Contains(got, "10s") {
		t.Errorf("Error() = %q, want it to name the interval", got)
	}
}

func TestAuthorizeURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state, redirect string
	}{
		{"abc", "https://letagents.example/auth/callback"},
		{"a b&c=d/é?#", "https://x.example/cb?next=/rooms/a%20b&y=1"},
		{"", ""},
	}
	c := github.New(github.Config{ClientID: "id&x=1", OAuthURL: "https://gh.example/"})
	for _, tt := range tests {
		got := c.AuthorizeURL(tt.state, tt.redirect)
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("AuthorizeURL = %q: %v", got, err)
		}
		if u.Scheme+"://"+u.Host+u.Path != "https://gh.example/login/oauth/authorize" {
			t.Errorf("AuthorizeURL = %q, want https://gh.example/login/oauth/authorize?…", got)
		}
		q := u.Query()
		want := url.Values{"client_id": {"id&x=1"}, "scope": {github.DefaultScopes}, "state": {tt.state}}
		if tt.redirect != "" {
			want.Set("redirect_uri", tt.redirect)
		}
		if q.Encode() != want.Encode() {
			t.Errorf("AuthorizeURL(%q, %q) query = %v, want %v", tt.state, tt.redirect, q, want)
		}
	}
}

func TestExchangeCode(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"access_token":"gho_y","token_type":"bearer","scope":"repo"}`)
	got, err := s.client().ExchangeCode(context.Background(), "code1", "https://app.example/cb", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := (github.Token{AccessToken: "gho_y", Scope: "repo"}); got != want {
		t.Errorf("ExchangeCode = %+v, want %+v", got, want)
	}
	r := s.last(t)
	if r.method != http.MethodPost || r.path != "/login/oauth/access_token" {
		t.Errorf("request %s %s, want POST /login/oauth/access_token", r.method, r.path)
	}
	checkForm(t, r.form, map[string]string{
		"client_id":     testID,
		"client_secret": testSecret,
		"code":          "code1",
		"redirect_uri":  "https://app.example/cb",
	})
	checkHeader(t, r.header, map[string]string{"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"})
	if len(r.query) != 0 {
		t.Errorf("query = %v, want none (the secret belongs in the body)", r.query)
	}
}
