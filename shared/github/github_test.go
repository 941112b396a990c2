package github_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github"
)

func TestConfigured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, secret string
		want       bool
	}{
		{"id", "secret", true},
		{"id", "", false},
		{"", "secret", false},
		{"", "", false},
	}
	for _, tt := range tests {
		c := github.New(github.Config{ClientID: tt.id, ClientSecret: tt.secret})
		if got := c.Configured(); got != tt.want {
			t.Errorf("Configured() with id %q, secret %q = %v, want %v", tt.id, tt.secret, got, tt.want)
		}
	}
}

// TestDefaults checks the default URLs and scopes without any network, by
// giving the client a transport that records what it would send.
func TestDefaults(t *testing.T) {
	t.Parallel()
	var urls []string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
		}
		urls = append(urls, r.Method+" "+r.URL.String()+" "+string(body))
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	c := github.New(github.Config{ClientID: "id", HTTPClient: &http.Client{Transport: rt}})
	ctx := context.Background()
	_, _ = c.StartDevice(ctx)
	_, _ = c.User(ctx, "tok")
	_, _ = c.Repo(ctx, "o", "r", "")
	want := []string{
		"POST https://github.com/login/device/code client_id=id&scope=read%3Auser%2Crepo",
		"GET https://api.github.com/user ",
		"GET https://api.github.com/repos/o/r ",
	}
	if len(urls) != len(want) {
		t.Fatalf("requests = %q, want %q", urls, want)
	}
	for i := range want {
		if urls[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, urls[i], want[i])
		}
	}
	if got, want := c.AuthorizeURL("st", ""), "https://github.com/login/oauth/authorize?client_id=id&scope=read%3Auser%2Crepo&state=st"; got != want {
		t.Errorf("AuthorizeURL = %q, want %q", got, want)
	}
}

func TestTrailingSlashesIgnored(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"id":1,"login":"u"}`)
	c := github.New(github.Config{ClientID: testID, OAuthURL: s.url + "/", APIURL: s.url + "//", Scopes: "a b"})
	if _, err := c.User(context.Background(), testToken); err != nil {
		t.Fatal(err)
	}
	if got := s.last(t).path; got != "/user" {
		t.Errorf("User path = %q, want /user", got)
	}
	_, _ = c.StartDevice(context.Background())
	if got := s.last(t); got.path != "/login/device/code" || got.form.Get("scope") != "a b" {
		t.Errorf("StartDevice path %q scope %q, want /login/device/code and \"a b\"", got.path, got.form.Get("scope"))
	}
	if got, want := c.AuthorizeURL("x", ""), s.url+"/login/oauth/authorize?"; !strings.HasPrefix(got, want) {
		t.Errorf("AuthorizeURL = %q, want prefix %q", got, want)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	user := `{"id":1,"login":"u"}`
	tests := []struct {
		name    string
		size    int
		wantErr error
	}{
		{"at limit", github.MaxBodyBytes, nil},
		{"one byte over", github.MaxBodyBytes + 1, github.ErrUnavailable},
		{"far over", 4 * github.MaxBodyBytes, github.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := user + strings.Repeat(" ", tt.size-len(user)) // valid JSON of exactly tt.size bytes
			c := newServer(t, http.StatusOK, body).client()
			_, err := c.User(context.Background(), testToken)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("User with a %d-byte answer: error %v, want %v", tt.size, err, tt.wantErr)
			}
			_, err = c.StartDevice(context.Background())
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("StartDevice with a %d-byte answer: error %v, want %v", tt.size, err, tt.wantErr)
			}
		})
	}
}

// TestTransportFailures checks that every way of not getting an answer is
// ErrUnavailable and keeps its cause visible.
func TestTransportFailures(t *testing.T) {
	t.Parallel()
	block := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	tests := []struct {
		name      string
		cfg       func(url string) github.Config
		ctx       func() (context.Context, context.CancelFunc)
		wantCause error
	}{
		{
			name: "context canceled",
			cfg:  func(u string) github.Config { return github.Config{OAuthURL: u, APIURL: u} },
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(20*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantCause: context.Canceled,
		},
		{
			name: "context deadline",
			cfg:  func(u string) github.Config { return github.Config{OAuthURL: u, APIURL: u} },
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 20*time.Millisecond)
			},
			wantCause: context.DeadlineExceeded,
		},
		{
			name: "client timeout",
			cfg: func(u string) github.Config {
				return github.Config{OAuthURL: u, APIURL: u, HTTPClient: &http.Client{Timeout: 20 * time.Millisecond}}
			},
			ctx: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		},
		{
			name: "connection refused",
			cfg: func(string) github.Config {
				return github.Config{OAuthURL: deadURL, APIURL: deadURL}
			},
			ctx: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		},
		{
			name: "malformed base URL",
			cfg: func(string) github.Config {
				return github.Config{OAuthURL: "http://[::1", APIURL: "http://[::1"}
			},
			ctx: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		},
	}
	calls := map[string]func(context.Context, *github.Client) error{
		"StartDevice": func(ctx context.Context, c *github.Client) error { _, err := c.StartDevice(ctx); return err },
		"PollDevice": func(ctx context.Context, c *github.Client) error {
			_, err := c.PollDevice(ctx, "dc", time.Now())
			return err
		},
		"ExchangeCode": func(ctx context.Context, c *github.Client) error {
			_, err := c.ExchangeCode(ctx, "code", "http://x/cb", time.Now())
			return err
		},
		"User": func(ctx context.Context, c *github.Client) error { _, err := c.User(ctx, testToken); return err },
		"Repo": func(ctx context.Context, c *github.Client) error { _, err := c.Repo(ctx, "o", "r", ""); return err },
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServerFunc(t, block)
			for name, call := range calls {
				ctx, cancel := tt.ctx()
				c := github.New(tt.cfg(s.url))
				err := call(ctx, c)
				cancel()
				if !errors.Is(err, github.ErrUnavailable) {
					t.Errorf("%s: error %v, want ErrUnavailable", name, err)
				}
				if tt.wantCause != nil && !errors.Is(err, tt.wantCause) {
					t.Errorf("%s: error %v, want it to wrap %v", name, err, tt.wantCause)
				}
			}
		})
	}
}

// TestSecretsNeverInErrors points the client at servers that fail in every
// way while echoing what they were sent, and checks that no error message
// quotes the client secret, a token or a code.
func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	const deviceCode, code = "dc-SECRET-device-code", "SECRET-web-code"
	secrets := []string{testSecret, testToken, deviceCode, code}
	echo := func(w http.ResponseWriter, r *http.Request, status int, field string) {
		body, _ := io.ReadAll(r.Body)
		echoed := string(body) + " " + r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":"weird_`+jsonEscape(echoed)+`","`+field+`":"`+jsonEscape(echoed)+`"}`)
	}
	tests := []struct {
		status int
		field  string
	}{
		{http.StatusOK, "error_description"},
		{http.StatusBadRequest, "message"},
		{http.StatusUnauthorized, "message"},
		{http.StatusForbidden, "message"},
		{http.StatusInternalServerError, "message"},
	}
	for _, tt := range tests {
		s := newServerFunc(t, func(w http.ResponseWriter, r *http.Request) { echo(w, r, tt.status, tt.field) })
		c := s.client()
		ctx := context.Background()
		var errs []error
		_, err := c.StartDevice(ctx)
		errs = append(errs, err)
		_, err = c.PollDevice(ctx, deviceCode, time.Now())
		errs = append(errs, err)
		_, err = c.ExchangeCode(ctx, code, "http://x/cb", time.Now())
		errs = append(errs, err)
		_, err = c.User(ctx, testToken)
		errs = append(errs, err)
		_, err = c.Repo(ctx, "o", "r", testToken)
		errs = append(errs, err)
		_, err = c.User(ctx, testToken+"\n")
		errs = append(errs, err)
		for i, err := range errs {
			if err == nil {
				t.Errorf("status %d, call %d: no error", tt.status, i)
				continue
			}
			for _, sec := range secrets {
				if strings.Contains(err.Error(), sec) {
					t.Errorf("status %d, call %d: error %q contains the secret %q", tt.status, i, err, sec)
				}
			}
		}
	}
}

func jsonEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return r.Replace(s)
}
