package apiclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

const deviceInterval = 5 * time.Second // the fake GitHub's default

func TestDeviceFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	e.gh.AddUser("ann")
	ctx := testContext(t)
	// The token changes while the client runs, as after a sign-in.
	var token atomic.Pointer[string]
	c := apiclient.New(apiclient.Config{APIURL: e.api.URL, Token: func() string {
		if p := token.Load(); p != nil {
			return *p
		}
		return ""
	}})

	s, err := c.Session(ctx)
	if err != nil || s.Authenticated {
		t.Fatalf("Session before sign-in = %+v, %v; want not authenticated", s, err)
	}
	start, err := c.StartDevice(ctx, "github.com/o/r")
	if err != nil {
		t.Fatal(err)
	}
	if start.RequestID == "" || start.UserCode == "" || start.VerificationURI == "" || start.Interval != 5 || start.ExpiresIn != 900 {
		t.Fatalf("StartDevice = %+v", start)
	}

	r, err := c.PollDevice(ctx, start.RequestID)
	if want := (apiclient.DeviceResult{Status: letagents.DevicePending, Interval: 5, ExpiresIn: 900}); err != nil || r != want {
		t.Fatalf("first PollDevice = %+v, %v; want %+v", r, err, want)
	}
	_, err = c.PollDevice(ctx, start.RequestID)
	if e := apiError(t, err); e.Status != http.StatusTooManyRequests || e.Body.Interval != 5 {
		t.Fatalf("PollDevice too soon = %v (interval %d), want 429 with interval 5", err, e.Body.Interval)
	}

	e.gh.ApproveDevice(start.UserCode, "ann")
	e.clock.Advance(deviceInterval)
	r, err = c.PollDevice(ctx, start.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != letagents.DeviceAuthorized || r.Authorized == nil || r.Authorized.LetAgentsToken == "" || r.Authorized.Account.Login != "ann" {
		t.Fatalf("PollDevice after approval = %+v (%+v), want authorized as ann", r, r.Authorized)
	}
	tok := r.Authorized.LetAgentsToken
	e.clock.Advance(deviceInterval)
	if _, err := c.PollDevice(ctx, start.RequestID); !apiclient.IsStatus(err, http.StatusNotFound) {
		t.Errorf("PollDevice of a finished flow: %v, want a 404", err)
	}
	for _, s := range e.api.requests() {
		if s.Header.Get("Authorization") != "" {
			t.Fatalf("%s %s sent Authorization before there was a token", s.Method, s.Path)
		}
	}

	token.Store(&tok)
	s, err = c.Session(ctx)
	if err != nil || !s.Authenticated || s.Account == nil || s.Account.Login != "ann" {
		t.Fatalf("Session with the token = %+v, %v; want ann", s, err)
	}
	if got := e.api.last(t, "/auth/session").Header.Get("Authorization"); got != "Bearer "+tok {
		t.Errorf("Session sent Authorization %q, want the bearer token", got)
	}
	agent, err := c.RegisterAgent(ctx, wire.RegisterAgent{Name: "builder", DisplayName: "The Builder"})
	if err != nil {
		t.Fatal(err)
	}
	if agent.CanonicalKey != "ann/builder" || agent.DisplayName != "The Builder" || agent.OwnerLogin != "ann" {
		t.Errorf("RegisterAgent = %+v, want ann/builder", agent)
	}
	mine, err := c.MyAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mine.Account.Login != "ann" || len(mine.Agents) != 1 || mine.Agents[0].ID != agent.ID {
		t.Errorf("MyAgents = %+v, want ann's one agent %s", mine, agent.ID)
	}

	// Signed out again, the directory refuses.
	token.Store(nil)
	_, err = c.MyAgents(ctx)
	if e := apiError(t, err); e.Status != http.StatusUnauthorized || apiclient.Code(err) != "NOT_AUTHENTICATED" {
		t.Errorf("MyAgents without a token = %v, want 401 NOT_AUTHENTICATED", err)
	}
}

func TestDeviceOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	c := e.client("")
	ctx := testContext(t)
	tests := []struct {
		name string
		act  func(code string)
		wait time.Duration // of the server's clock before the poll
		want string
	}{
		{"denied", e.gh.DenyDevice, deviceInterval, letagents.DeviceDenied},
		{"expired at GitHub", e.gh.ExpireDevice, deviceInterval, letagents.DeviceExpired},
		{"expired here", func(string) {}, 901 * time.Second, letagents.DeviceExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, err := c.StartDevice(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			tt.act(start.UserCode)
			e.clock.Advance(tt.wait)
			r, err := c.PollDevice(ctx, start.RequestID)
			if want := (apiclient.DeviceResult{Status: tt.want}); err != nil || r != want {
				t.Errorf("PollDevice = %+v, %v; want %+v, nil", r, err, want)
			}
		})
	}

	_, err := c.PollDevice(ctx, strings.Repeat("0", 64))
	if e := apiError(t, err); e.Status != http.StatusNotFound {
		t.Errorf("PollDevice of an unknown flow = %v, want a 404", err)
	}
	if _, err := c.PollDevice(ctx, ""); err == nil {
		t.Error("PollDevice(\"\") succeeded, want an error")
	}
}

// TestBadToken pins what a client with an outdated token gets: served as
// anonymous, as by the original, wherever anonymous callers are; 401
// TOKEN_INVALID only where an account is needed; and told each time.
func TestBadToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	const secret = "c0ffee-this-is-not-a-real-owner-token"
	var mu sync.Mutex
	var told []string
	c := apiclient.New(apiclient.Config{APIURL: e.api.URL, PollURL: e.poll.URL, Token: func() string { return secret },
		TokenIgnored: func(_ context.Context, token, reason string) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, token+" "+reason)
		}})
	ctx := testContext(t)
	tests := []struct {
		name     string
		call     func() error
		wantCode string // "" for success
	}{
		{"Session", func() error { _, err := c.Session(ctx); return err }, ""},
		{"Join", func() error { _, err := c.Join(ctx, "someroom"); return err }, ""},
		{"Send", func() error {
			_, err := c.Send(ctx, "someroom", wire.SendMessage{Sender: "ann", Text: secret})
			return err
		}, ""},
		{"Poll", func() error { _, err := c.Poll(ctx, "someroom", "", 0, 0); return err }, ""},
		{"MyAgents", func() error { _, err := c.MyAgents(ctx); return err }, "TOKEN_INVALID"},
	}
	for _, tt := range tests {
		mu.Lock()
		told = nil
		mu.Unlock()
		err := tt.call()
		switch {
		case tt.wantCode == "" && err != nil:
			t.Errorf("%s with a bad token = %v; want served as anonymous", tt.name, err)
		case tt.wantCode != "":
			e := apiError(t, err)
			if e.Status != http.StatusUnauthorized || apiclient.Code(err) != tt.wantCode || e.TokenIgnored != "unknown" {
				t.Errorf("%s with a bad token = %v (code %q, TokenIgnored %q); want 401 %s, TokenIgnored unknown", tt.name, err, apiclient.Code(err), e.TokenIgnored, tt.wantCode)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(e.Raw, secret) {
				t.Errorf("%s: the error shows the token: %q (raw %q)", tt.name, err, e.Raw)
			}
		}
		mu.Lock()
		if len(told) != 1 || told[0] != secret+" unknown" {
			t.Errorf("%s: TokenIgnored heard %q; want once, the token and reason unknown", tt.name, told)
		}
		mu.Unlock()
	}
}

// TestTokenIgnoredSignals covers the answers that do or do not say the
// token was not accepted, from servers old and new.
func TestTokenIgnoredSignals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		token  string
		header string // X-LetAgents-Credential
		status int
		body   string
		want   string
	}{
		{"accepted", "tok", "", 200, `{}`, ""},
		{"ignored, served", "tok", "ignored; reason=unknown", 200, `{}`, "unknown"},
		{"ignored for its scheme", "tok", "ignored; reason=scheme", 200, `{}`, "scheme"},
		{"ignored, refused", "tok", "ignored; reason=unknown", 401, `{"error": "Invalid or revoked token", "code": "TOKEN_INVALID"}`, "unknown"},
		{"older server's refusal", "tok", "", 401, `{"error": "Invalid or revoked token", "code": "TOKEN_INVALID"}`, "refused"},
		{"sign-in needed, no token sent", "", "", 401, `{"error": "Authentication required", "code": "NOT_AUTHENTICATED"}`, ""},
		{"a header for no token", "", "ignored; reason=scheme", 200, `{}`, ""},
		{"another verdict", "tok", "accepted", 200, `{}`, ""},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tt.header != "" {
				w.Header().Set(wire.CredentialHeader, tt.header)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tt.status)
			_, _ = w.Write([]byte(tt.body))
		}))
		var heard string
		c := apiclient.New(apiclient.Config{APIURL: srv.URL, Token: func() string { return tt.token },
			TokenIgnored: func(_ context.Context, _, reason string) { heard = reason }})
		_, err := c.Session(testContext(t))
		srv.Close()
		if heard != tt.want {
			t.Errorf("%s: TokenIgnored heard %q; want %q", tt.name, heard, tt.want)
		}
		if e, ok := errors.AsType[*apiclient.APIError](err); ok && e.TokenIgnored != tt.want {
			t.Errorf("%s: APIError.TokenIgnored = %q; want %q", tt.name, e.TokenIgnored, tt.want)
		}
	}
}

// TestTokenNotInErrors covers the answers that could echo what was sent:
// a network failure, and a server that repeats the request back.
func TestTokenNotInErrors(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-owner-token"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("upstream saw " + r.Header.Get("Authorization")))
	}))
	t.Cleanup(echo.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	for _, base := range []string{echo.URL, gone.URL} {
		c := apiclient.New(apiclient.Config{APIURL: base, Token: func() string { return secret }})
		_, err := c.Session(testContext(t))
		if err == nil {
			t.Fatalf("Session at %s succeeded, want an error", base)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Session at %s: the error shows the token: %q", base, err)
		}
		if e, ok := errors.AsType[*apiclient.APIError](err); ok && strings.Contains(e.Raw, secret) {
			t.Errorf("Session at %s: Raw shows the token: %q", base, e.Raw)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tests := []struct {
		name  string
		token func() string
	}{
		{"no Token func", nil},
		{"empty token", func() string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := apiclient.New(apiclient.Config{APIURL: e.api.URL, PollURL: e.poll.URL, Token: tt.token})
			ctx := testContext(t)
			room := "headers-" + strings.ReplaceAll(tt.name, " ", "-")
			join(t, c, room)
			send(t, c, room, "hello")
			if _, err := c.Poll(ctx, room, "", 0, 0); err != nil {
				t.Fatal(err)
			}
			for _, s := range append(e.api.requests(), e.poll.requests()...) {
				if !strings.Contains(s.Path, room) {
					continue
				}
				if v, ok := s.Header["Authorization"]; ok {
					t.Errorf("%s %s sent Authorization %q, want none", s.Method, s.Path, v)
				}
				if got := s.Header.Get("Accept"); got != "application/json" {
					t.Errorf("%s %s sent Accept %q, want application/json", s.Method, s.Path, got)
				}
				if got := s.Header.Get("User-Agent"); got != apiclient.DefaultUserAgent {
					t.Errorf("%s %s sent User-Agent %q, want %q", s.Method, s.Path, got, apiclient.DefaultUserAgent)
				}
			}
		})
	}
}
