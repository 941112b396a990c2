package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// deviceGrant is the grant_type of a Device Flow token request (RFC 8628).
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// defaultInterval is RFC 8628's polling interval when the server names none.
const defaultInterval = 5 * time.Second

// DeviceCode is GitHub's answer to the start of a Device Flow: the user opens
// VerificationURI and types UserCode while the agent polls with DeviceCode.
type DeviceCode struct {
	DeviceCode      string // secret the client polls with; never show it
	UserCode        string // what the user types, e.g. "WDJB-MJHT"
	VerificationURI string
	ExpiresIn       time.Duration // how long the codes stay valid
	Interval        time.Duration // minimum wait between polls; 5 s when GitHub names none
}

// Token is a user access token GitHub issued.
type Token struct {
	AccessToken string
	Scope       string    // scopes GitHub granted, as GitHub spells them
	ExpiresAt   time.Time // zero when GitHub gives no expires_in (OAuth app tokens do not expire)
}

// oauthAnswer holds every field GitHub's /login/oauth/access_token may send:
// it answers 200 with either a token or an error object.
type oauthAnswer struct {
	AccessToken string `json:"access_token"`
	Scope       string `json:"scope"`
	ExpiresIn   int64  `json:"expires_in"`

	Error       string `json:"error"`
	Description string `json:"error_description"`
	Interval    int64  `json:"interval"`
}

// StartDevice begins a Device Flow for the configured scopes.
func (c *Client) StartDevice(ctx context.Context) (DeviceCode, error) {
	const op = "start device flow"
	var ans struct {
		DeviceCode      string `json:"device_code"`
		UserCode        string `json:"user_code"`
		VerificationURI string `json:"verification_uri"`
		ExpiresIn       int64  `json:"expires_in"`
		Interval        int64  `json:"interval"`
	}
	form := url.Values{"client_id": {c.clientID}, "scope": {c.scopes}}
	if err := c.postForm(ctx, op, "/login/device/code", form, &ans); err != nil {
		return DeviceCode{}, err
	}
	if ans.DeviceCode == "" || ans.UserCode == "" || ans.VerificationURI == "" || ans.ExpiresIn <= 0 {
		return DeviceCode{}, unavailable(op, errors.New("GitHub answered an unusable device code"))
	}
	dc := DeviceCode{
		DeviceCode:      ans.DeviceCode,
		UserCode:        ans.UserCode,
		VerificationURI: ans.VerificationURI,
		ExpiresIn:       time.Duration(ans.ExpiresIn) * time.Second,
		Interval:        time.Duration(ans.Interval) * time.Second,
	}
	if dc.Interval <= 0 {
		dc.Interval = defaultInterval
	}
	return dc, nil
}

// PollDevice asks once whether the user has approved deviceCode. Until then
// it returns ErrAuthorizationPending or a *SlowDownError (ErrSlowDown); it
// ends with a Token or with ErrAccessDenied, ErrExpiredToken or ErrRejected.
// now is the time expires_in counts from.
func (c *Client) PollDevice(ctx context.Context, deviceCode string, now time.Time) (Token, error) {
	const op = "poll device flow"
	form := url.Values{
		"client_id":   {c.clientID},
		"device_code": {deviceCode},
		"grant_type":  {deviceGrant},
	}
	return c.token(ctx, op, form, now, deviceCode)
}

// AuthorizeURL is where the web flow sends the browser: GitHub asks the user
// to approve the app, then redirects to redirectURI with ?code&state. An
// empty redirectURI is left out, so GitHub uses the app's registered one.
func (c *Client) AuthorizeURL(state, redirectURI string) string {
	q := url.Values{"client_id": {c.clientID}, "scope": {c.scopes}, "state": {state}}
	if redirectURI != "" {
		q.Set("redirect_uri", redirectURI)
	}
	return c.oauthURL + "/login/oauth/authorize?" + q.Encode()
}

// ExchangeCode trades the web flow's single-use code for a token.
// redirectURI must be the one given to AuthorizeURL. A bad, expired or reused
// code (bad_verification_code), wrong credentials or a redirect mismatch
// wrap ErrRejected. now is the time expires_in counts from.
func (c *Client) ExchangeCode(ctx context.Context, code, redirectURI string, now time.Time) (Token, error) {
	const op = "exchange code"
	form := url.Values{
		"client_id":     {c.clientID},
		"client_secret": {c.clientSecret},
		"code":          {code},
	}
	if redirectURI != "" {
		form.Set("redirect_uri", redirectURI)
	}
	return c.token(ctx, op, form, now, code)
}

// token posts form to the access-token endpoint and interprets the answer.
func (c *Client) token(ctx context.Context, op string, form url.Values, now time.Time, secret string) (Token, error) {
	var ans oauthAnswer
	if err := c.postForm(ctx, op, "/login/oauth/access_token", form, &ans, secret); err != nil {
		return Token{}, err
	}
	if ans.AccessToken == "" {
		return Token{}, unavailable(op, errors.New("GitHub answered no access token"))
	}
	t := Token{AccessToken: ans.AccessToken, Scope: ans.Scope}
	if ans.ExpiresIn > 0 {
		t.ExpiresAt = now.Add(time.Duration(ans.ExpiresIn) * time.Second)
	}
	return t, nil
}

// postForm sends form to an OAuth endpoint and decodes the JSON answer into
// v. An {"error": …} object is mapped whatever the status; other non-2xx
// answers are ErrUnavailable when GitHub asks us to come back later and
// ErrRejected otherwise (on these endpoints a 4xx means GitHub refused the
// app's request, not that a user resource is missing). secrets are blanked
// from any GitHub text quoted in errors.
func (c *Client) postForm(ctx context.Context, op, path string, form url.Values, v any, secrets ...string) error {
	req, err := newRequest(ctx, op, http.MethodPost, c.oauthURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Without it GitHub answers form-encoded.
	req.Header.Set("Accept", "application/json")
	status, body, err := c.send(req, op)
	if err != nil {
		return err
	}
	var oe oauthAnswer
	if json.Unmarshal(body, &oe) == nil && oe.Error != "" {
		return c.oauthError(op, oe, secrets)
	}
	switch {
	case status >= 200 && status <= 299:
	case rateLimited(status):
		return unavailable(op, c.statusCause(status, body, secrets))
	default:
		return fmt.Errorf("%s: %w: %w", op, ErrRejected, c.statusCause(status, body, secrets))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return unavailable(op, fmt.Errorf("decode answer: %w", err))
	}
	return nil
}

// oauthError maps GitHub's OAuth error codes onto the package's errors.
func (c *Client) oauthError(op string, oe oauthAnswer, secrets []string) error {
	switch oe.Error {
	case "authorization_pending":
		return fmt.Errorf("%s: %w", op, ErrAuthorizationPending)
	case "slow_down":
		return fmt.Errorf("%s: %w", op, &SlowDownError{Interval: max(0, time.Duration(oe.Interval)*time.Second)})
	case "access_denied":
		return fmt.Errorf("%s: %w", op, ErrAccessDenied)
	case "expired_token":
		return fmt.Errorf("%s: %w", op, ErrExpiredToken)
	}
	msg := c.describe(oe.Error, secrets...)
	if d := c.describe(oe.Description, secrets...); d != "" {
		msg += ": " + d
	}
	return fmt.Errorf("%s: %w: %s", op, ErrRejected, msg)
}

// statusCause describes a non-2xx answer, quoting GitHub's "message" when it
// sent one.
func (c *Client) statusCause(status int, body []byte, secrets []string) error {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &m) == nil && m.Message != "" {
		return fmt.Errorf("status %d: %s", status, c.describe(m.Message, secrets...))
	}
	return fmt.Errorf("status %d", status)
}
