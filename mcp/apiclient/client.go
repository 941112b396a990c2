// Package apiclient is the MCP server's HTTP client of the LetAgents API:
// one method per route it uses, the JSON shapes of shared/wire, the owner
// token as a bearer, error answers as *APIError, and a fallback to the
// legacy /projects routes for servers that predate /rooms.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// maxAnswer bounds the body read from any answer: the server cuts a page
// of messages at 4 MiB, so 16 MiB is room to spare, and a broken proxy
// cannot make the client buffer without end.
const maxAnswer = 16 << 20

// maxErrorRaw bounds the raw body an *APIError keeps: enough for any
// error the API writes, small enough to log.
const maxErrorRaw = 64 << 10

// DefaultUserAgent is the User-Agent sent when Config.UserAgent is empty.
const DefaultUserAgent = "letagents-mcp (go)"

// Config says where the API is and who calls it.
type Config struct {
	// APIURL is the API's base URL (LETAGENTS_API_URL), such as
	// http://127.0.0.1:3001; trailing slashes are trimmed.
	APIURL string
	// PollURL is an optional base URL for long-polls and event streams
	// only (LETAGENTS_POLL_URL), for deployments that serve them from a
	// host without the API Gateway's 30 s cut; "" uses APIURL. Trailing
	// slashes are trimmed.
	PollURL string
	// Token returns the owner token to send as "Authorization: Bearer",
	// or "" for none. It is called for every request, since a sign-in can
	// change the token while the client runs. Nil sends none.
	Token func() string
	// HTTPClient sends the requests. The default has no overall timeout,
	// which would cut long-polls short; every call is bounded by its
	// context instead (and Poll by a deadline of its own).
	HTTPClient *http.Client
	// UserAgent defaults to DefaultUserAgent.
	UserAgent string
	// TokenIgnored, when set, is told whenever an answer says the server
	// did not accept the token a request sent (see APIError.TokenIgnored),
	// with that token and the reason, so the caller can stop trusting it.
	TokenIgnored func(ctx context.Context, token, reason string)
	// Vouch, when set, gives for a request's context the value of
	// wire.VouchedAddressHeader to send ("" for none): the hosted
	// endpoint's word for the address of the agent a call is for.
	Vouch func(ctx context.Context) string
}

// Client calls the LetAgents API. It is safe for concurrent use.
type Client struct {
	api, poll string
	token     func() string
	hc        *http.Client
	ua        string
	// pollMargin is added to a long-poll's timeout for its request
	// deadline; a field so that internal tests can shorten it.
	pollMargin time.Duration
	// sendTimeout bounds one attempt of a send and retryWait is the first
	// pause between attempts (see Send); fields for internal tests too.
	sendTimeout, retryWait time.Duration
	// streamOpen and streamIdle bound a stream's headers and its silences
	// (see Watch); fields for internal tests too.
	streamOpen, streamIdle time.Duration
	// session, when set, rides on every request as the session headers.
	session      wire.SessionCredentials
	tokenIgnored func(ctx context.Context, token, reason string)
	vouch        func(ctx context.Context) string
}

// As returns a client whose every request carries an agent session's
// credentials (in the X-LetAgents-Agent-Session-* headers): the server
// then signs the writes from the session and counts the long-polls as its
// delivery connection.
func (c *Client) As(creds wire.SessionCredentials) *Client {
	cp := *c
	cp.session = creds
	return &cp
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	c := &Client{
		api:          strings.TrimRight(cfg.APIURL, "/"),
		poll:         strings.TrimRight(cfg.PollURL, "/"),
		token:        cfg.Token,
		vouch:        cfg.Vouch,
		hc:           cfg.HTTPClient,
		ua:           cfg.UserAgent,
		pollMargin:   pollMargin,
		sendTimeout:  sendTimeout,
		retryWait:    retryWait,
		streamOpen:   streamOpen,
		streamIdle:   streamIdle,
		tokenIgnored: cfg.TokenIgnored,
	}
	if c.poll == "" {
		c.poll = c.api
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.ua == "" {
		c.ua = DefaultUserAgent
	}
	return c
}

// APIError is a non-2xx answer of the API.
type APIError struct {
	Status int
	// Body is the decoded wire.Error answer; zero when the body is not
	// JSON (a proxy's page, an old server's text).
	Body wire.Error
	// Raw is the body as received, cut at 64 KiB.
	Raw string
	// Method and Path are the request's, the path escaped as sent and
	// without its query.
	Method, Path string
	// RetryAfter is the answer's Retry-After (in seconds), 0 for none.
	RetryAfter time.Duration
	// TokenIgnored is why the server did not accept the token sent, ""
	// when it did or none was sent: the reason of the answer's
	// wire.CredentialHeader ("unknown", "scheme"), else "refused" for a
	// bare 401 TOKEN_INVALID (servers that predate the header). The
	// server then served the request as anonymous.
	TokenIgnored string
}

// Error reads "POST /rooms/x/join: 401 auth_required: <message> (CODE)",
// leaving out what the answer did not say. It never holds the token: the
// client scrubs it from Raw, and the request's headers are not part of it.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.Path, e.Status)
	text := e.Body.Error
	if e.Body == (wire.Error{}) {
		text = clip(routeText(e.Raw), 200)
	}
	if text == "" {
		text = http.StatusText(e.Status)
	}
	if text != "" {
		b.WriteString(" " + text)
	}
	if e.Body.Message != "" && e.Body.Message != text {
		b.WriteString(": " + e.Body.Message)
	}
	if e.Body.Code != "" {
		b.WriteString(" (" + e.Body.Code + ")")
	}
	return b.String()
}

// clip cuts s to at most n bytes, on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// IsStatus reports whether err is (or wraps) an *APIError with status.
func IsStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// Code returns the machine-readable code (wire.Error.Code, such as
// "TOKEN_INVALID") of an *APIError in err's chain, or "".
func Code(err error) string {
	var e *APIError
	if errors.As(err, &e) {
		return e.Body.Code
	}
	return ""
}

// request is one call of the API.
type request struct {
	method string
	base   string // the API's or the poll base URL
	path   string // escaped, starting with '/'
	query  url.Values
	body   any // JSON-encoded when non-nil
	// deadline, when positive, bounds this request on top of its context.
	deadline time.Duration
}

// do sends r and decodes a 2xx answer into out (nil: ignore it). Any
// other status is an *APIError; a failure to reach the server is wrapped
// with the method and path.
func (c *Client) do(ctx context.Context, r request, out any) error {
	if r.deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.deadline)
		defer cancel()
	}
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(b)
	}
	req, token, err := c.newRequest(ctx, r, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")

	resp, err := c.hc.Do(req)
	if err != nil {
		return sendError(r, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", r.method, r.path, err)
	}
	if len(raw) > maxAnswer {
		return fmt.Errorf("%s %s: answer is larger than %d bytes", r.method, r.path, maxAnswer)
	}
	if err := c.check(ctx, r, resp, raw, token); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// newRequest builds r's request with the headers every request carries
// (User-Agent, the owner token, the vouched address, the session's
// credentials) and returns
// it with the token it sent ("" for none).
func (c *Client) newRequest(ctx context.Context, r request, body io.Reader) (*http.Request, string, error) {
	target := r.base + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("User-Agent", c.ua)
	token := ""
	if c.token != nil {
		token = c.token()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if c.vouch != nil {
		if v := c.vouch(ctx); v != "" {
			req.Header.Set(wire.VouchedAddressHeader, v)
		}
	}
	if c.session.AgentSessionID != "" {
		req.Header.Set(wire.SessionIDHeader, c.session.AgentSessionID)
		req.Header.Set(wire.SessionTokenHeader, c.session.AgentSessionToken)
	}
	return req, token, nil
}

// sendError is the error of a request that got no answer, wrapped with
// its method and path.
func sendError(r request, err error) error {
	// The *url.Error repeats the method and the whole URL; say them once.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s %s: %w", r.method, r.path, err)
}

// check turns a non-2xx answer (status and headers from resp, body raw)
// into an *APIError, and tells Config.TokenIgnored when the answer says
// the server did not accept token.
func (c *Client) check(ctx context.Context, r request, resp *http.Response, raw []byte, token string) error {
	ignored := tokenIgnored(token, resp)
	var apiErr *APIError
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr = &APIError{Status: resp.StatusCode, Method: r.method, Path: r.path}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			apiErr.RetryAfter = time.Duration(secs) * time.Second
		}
		if json.Unmarshal(raw, &apiErr.Body) != nil {
			apiErr.Body = wire.Error{}
		}
		if ignored == "" && token != "" && apiErr.Status == http.StatusUnauthorized && apiErr.Body.Code == letagents.CodeTokenInvalid {
			ignored = "refused"
		}
		apiErr.TokenIgnored = ignored
		apiErr.Raw = string(raw[:min(len(raw), maxErrorRaw)])
		for _, secret := range []string{token, c.session.AgentSessionToken} {
			if secret != "" {
				apiErr.Raw = strings.ReplaceAll(apiErr.Raw, secret, "[token]")
			}
		}
	}
	if ignored != "" && c.tokenIgnored != nil {
		c.tokenIgnored(ctx, token, ignored)
	}
	if apiErr != nil {
		return apiErr
	}
	return nil
}

// tokenIgnored is the reason resp gives for not accepting token
// (wire.CredentialHeader), or "" when it accepted it or none was sent.
func tokenIgnored(token string, resp *http.Response) string {
	reason, ok := strings.CutPrefix(resp.Header.Get(wire.CredentialHeader), wire.CredentialIgnored)
	if token == "" || !ok {
		return ""
	}
	return reason
}

// Retries of a request whose outcome is unknown (see retry).
const (
	maxAttempts  = 4
	retryWait    = 250 * time.Millisecond // doubled after each attempt
	maxRetryWait = 5 * time.Second        // also caps the server's Retry-After
)

// retry runs attempt, a request that is safe to repeat, again while its
// outcome is unknown (unknownOutcome), at most maxAttempts times in all,
// pausing between attempts: retryWait, doubled each time, or the
// server's Retry-After when longer, both capped at maxRetryWait. It gives
// up with the last error when ctx ends.
func (c *Client) retry(ctx context.Context, attempt func() error) error {
	wait := c.retryWait
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || n == maxAttempts || ctx.Err() != nil || !unknownOutcome(err) {
			return err
		}
		pause := wait
		if e, ok := errors.AsType[*APIError](err); ok {
			pause = max(pause, e.RetryAfter)
		}
		t := time.NewTimer(min(pause, maxRetryWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// unknownOutcome reports whether a failed request may or may not have
// been served, and may succeed if sent again: it timed out, its
// connection dropped, or a gateway or an unavailable server answered 502,
// 503 or 504 in its place.
func unknownOutcome(err error) bool {
	if e, ok := errors.AsType[*APIError](err); ok {
		switch e.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	_, netErr := errors.AsType[net.Error](err)
	return netErr || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// orLegacy does r and, only when the server lacks r's route, legacy.
func (c *Client) orLegacy(ctx context.Context, r, legacy request, out any) error {
	err := c.do(ctx, r, out)
	if missingRoute(err) {
		return c.do(ctx, legacy, out)
	}
	return err
}

// missingRoute reports whether err says the server has no such route (an
// older server), as opposed to a route that answered 404 about what it
// was asked for ({"error": "Room not found"}). It is the one test every
// legacy fallback uses. Our router says "Not Found" or "Method Not
// Allowed"; the original Express server says "Cannot POST /…"; API
// Gateway, for a route it does not have, {"message": "Not Found"}.
func missingRoute(err error) bool {
	var e *APIError
	if !errors.As(err, &e) || (e.Status != http.StatusNotFound && e.Status != http.StatusMethodNotAllowed) {
		return false
	}
	text := e.Body.Error
	if text == "" {
		text = e.Body.Message
	}
	if text == "" {
		text = routeText(e.Raw)
	}
	return text == "Not Found" || text == "Method Not Allowed" ||
		strings.HasPrefix(text, "Cannot POST") || strings.HasPrefix(text, "Cannot GET")
}

// routeText is the message of a non-JSON error body: the text itself, or
// what Express's HTML error page holds in its <pre>.
func routeText(raw string) string {
	if _, rest, ok := strings.Cut(raw, "<pre>"); ok {
		if text, _, ok := strings.Cut(rest, "</pre>"); ok {
			return strings.TrimSpace(text)
		}
	}
	return strings.TrimSpace(raw)
}

// roomPath escapes a room id for a path as rooms.PathOf does:
// github.com/o/r stays three segments, as the routes expect, and a deeper
// id goes as one segment, which the gateway routes.
func roomPath(roomID string) (string, error) {
	if strings.TrimSpace(roomID) == "" {
		return "", errors.New("apiclient: empty room id")
	}
	return rooms.PathOf(roomID), nil
}
