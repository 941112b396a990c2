// Package github is the small GitHub client LetAgents needs: signing users in
// (Device Flow for agents, the OAuth web flow for browsers), reading the
// signed-in user and checking whether an account may see a repository. It
// owns the mapping of GitHub's answers onto a handful of sentinel errors and
// depends on nothing but the standard library. Base URLs are configurable so
// tests can point the client at githubtest.
package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultOAuthURL = "https://github.com"
	DefaultAPIURL   = "https://api.github.com"
	DefaultScopes   = "read:user,repo"
	DefaultTimeout  = 10 * time.Second
)

// MaxBodyBytes bounds every response body the client reads: a larger answer
// is an ErrUnavailable-class error, so a broken or hostile server cannot make
// the service buffer without limit.
const MaxBodyBytes = 1 << 20

// apiVersion pins the REST API version so GitHub cannot change field shapes
// under us.
const apiVersion = "2022-11-28"

// Errors the client returns, wrapped with what was attempted; test them with
// errors.Is.
var (
	// ErrNotFound: GitHub answered 404 (also what it answers for a private
	// repository the token may not see).
	ErrNotFound = errors.New("github: not found")
	// ErrUnauthorized: GitHub answered 401, the token is bad or revoked.
	ErrUnauthorized = errors.New("github: unauthorized")
	// ErrUnavailable: GitHub could not give a usable answer (network error,
	// timeout, cancellation, 5xx, 403/429 rate limiting, an unparseable or
	// oversized body). The cause is wrapped too, so errors.Is also finds
	// e.g. context.Canceled.
	ErrUnavailable = errors.New("github: unavailable")

	// ErrAuthorizationPending: the user has not yet entered the device code.
	ErrAuthorizationPending = errors.New("github: authorization pending")
	// ErrSlowDown: the device poll came too fast; the error is a
	// *SlowDownError carrying the new interval.
	ErrSlowDown = errors.New("github: slow down")
	// ErrAccessDenied: the user refused the authorization.
	ErrAccessDenied = errors.New("github: access denied")
	// ErrExpiredToken: the device code expired (or was already used).
	ErrExpiredToken = errors.New("github: device code expired")
	// ErrRejected: GitHub refused the OAuth request itself (unknown device
	// code, bad or reused authorization code, wrong client credentials,
	// redirect_uri mismatch…); the error carries GitHub's description.
	ErrRejected = errors.New("github: request rejected")
)

// SlowDownError is PollDevice's answer to GitHub's slow_down: the client must
// wait Interval between polls from now on. errors.Is(err, ErrSlowDown) holds.
type SlowDownError struct {
	// Interval is GitHub's new polling interval; 0 when GitHub named none,
	// in which case RFC 8628 says to add 5 seconds to the current one.
	Interval time.Duration
}

// Error implements error.
func (e *SlowDownError) Error() string {
	if e.Interval <= 0 {
		return ErrSlowDown.Error()
	}
	return fmt.Sprintf("%v: poll every %v", ErrSlowDown, e.Interval)
}

// Is makes errors.Is(err, ErrSlowDown) hold.
func (e *SlowDownError) Is(target error) bool { return target == ErrSlowDown }

// Config says which GitHub OAuth app the client speaks for and where GitHub is.
type Config struct {
	// ClientID and ClientSecret identify the OAuth app. The device flow
	// needs only the id; the web flow needs both.
	ClientID     string
	ClientSecret string
	// OAuthURL is where /login/... lives; default DefaultOAuthURL.
	OAuthURL string
	// APIURL is the REST API root; default DefaultAPIURL.
	APIURL string
	// Scopes asked for at sign-in; default DefaultScopes.
	Scopes string
	// HTTPClient sends every request; default a client with DefaultTimeout.
	HTTPClient *http.Client
}

// Client talks to GitHub on behalf of one OAuth app. It is safe for
// concurrent use.
type Client struct {
	clientID     string
	clientSecret string
	oauthURL     string
	apiURL       string
	scopes       string
	hc           *http.Client
}

// New returns a client for cfg, filling in the defaults documented on Config.
// Trailing slashes of the URLs are ignored.
func New(cfg Config) *Client {
	c := &Client{
		clientID:     cfg.ClientID,
		clientSecret: cfg.ClientSecret,
		oauthURL:     strings.TrimRight(cfg.OAuthURL, "/"),
		apiURL:       strings.TrimRight(cfg.APIURL, "/"),
		scopes:       cfg.Scopes,
		hc:           cfg.HTTPClient,
	}
	if c.oauthURL == "" {
		c.oauthURL = DefaultOAuthURL
	}
	if c.apiURL == "" {
		c.apiURL = DefaultAPIURL
	}
	if c.scopes == "" {
		c.scopes = DefaultScopes
	}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: DefaultTimeout}
	}
	return c
}

// Configured reports whether both ClientID and ClientSecret are set, that is
// whether GitHub sign-in can work at all.
func (c *Client) Configured() bool {
	return c.clientID != "" && c.clientSecret != ""
}

// send performs req and returns the status and at most MaxBodyBytes of body.
// Transport failures and oversized bodies are ErrUnavailable.
func (c *Client) send(req *http.Request, op string) (int, []byte, error) {
	req.Header.Set("User-Agent", "letagents-go")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, unavailable(op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return 0, nil, unavailable(op, fmt.Errorf("read answer: %w", err))
	}
	if len(body) > MaxBodyBytes {
		return 0, nil, unavailable(op, fmt.Errorf("answer larger than %d bytes", MaxBodyBytes))
	}
	return resp.StatusCode, body, nil
}

// newRequest builds a request; a failure means a malformed base URL, which
// the caller sees as GitHub being unreachable.
func newRequest(ctx context.Context, op, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, unavailable(op, fmt.Errorf("build request: %w", err))
	}
	return req, nil
}

func unavailable(op string, cause error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, cause)
}

// rateLimited reports the statuses that mean "try again later".
func rateLimited(status int) bool {
	return status == http.StatusForbidden || status == http.StatusTooManyRequests || status >= 500
}

// describe renders text GitHub sent for an error message: shortened, on one
// line, and with the app secret and any token blanked, since a misbehaving
// server could echo what we sent and errors end up in logs.
func (c *Client) describe(s string, secrets ...string) string {
	for _, sec := range append(secrets, c.clientSecret) {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	const max = 200
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
