package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// The OAuth 2.1 authorization server of the hosted MCP endpoint: RFC 7591
// registration of public clients, the authorization code flow with PKCE
// (S256 only) whose login step is the GitHub web sign-in and whose last
// step is a consent page, and the token endpoint with rotating refresh
// tokens. An access token signs in as the account that consented
// (ViaOAuth), for the resource it was issued for.

// Lifetimes and limits of the OAuth flows.
const (
	// OAuthRequestTTL is how long an authorization may take from
	// /oauth/authorize to the consent page's answer.
	OAuthRequestTTL = 10 * time.Minute
	// OAuthCodeTTL is how long an authorization code may wait to be
	// redeemed (once).
	OAuthCodeTTL = 10 * time.Minute
	// OAuthAccessTTL is the life of an access token.
	OAuthAccessTTL = time.Hour
	// OAuthRefreshTTL is the life of a refresh token; each refresh
	// replaces it with a new one of the same life.
	OAuthRefreshTTL = 30 * 24 * time.Hour
	// MaxRedirectURIs, MaxRedirectURILength and MaxClientNameLength bound
	// a registration; MaxOAuthStateLength a client's state.
	MaxRedirectURIs       = 10
	MaxRedirectURILength  = 2000
	MaxClientNameLength   = 200
	MaxOAuthStateLength   = 1000
	clientRegistrationsPM = 20 // per client address per minute
)

// Token prefixes tell an OAuth access token from an owner token at a
// glance (Identify looks it up in the right table) and in a leaked log.
const (
	OAuthAccessPrefix  = "lat_"
	OAuthRefreshPrefix = "lrt_"
	oauthClientPrefix  = "lac_"
)

// ViaOAuth is an OAuth access token (Authorization: Bearer, from an MCP
// client); it acts as its account's agent, as an owner token does.
const ViaOAuth Via = "oauth"

// OAuthError is an OAuth error answer (RFC 6749 section 5.2, RFC 7591
// section 3.2.2): Code is the error code, Description the text for
// people.
type OAuthError struct {
	Code        string
	Description string
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

func oauthErr(code, desc string) *OAuthError { return &OAuthError{Code: code, Description: desc} }

// RedirectError is an authorization request refused after its client and
// redirect URI were found good: the refusal goes back to the client by
// redirect (RFC 6749 section 4.1.2.1), as URL says.
type RedirectError struct {
	OAuthError
	URL string
}

// ClientRegistration is an RFC 7591 registration request, as far as this
// server reads it.
type ClientRegistration struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// RegisterClient registers a public client for the address client (rate
// limited), refusing redirect URIs other than https and loopback http.
func (s *Service) RegisterClient(ctx context.Context, client string, reg ClientRegistration) (store.OAuthClient, error) {
	switch {
	case len(reg.RedirectURIs) == 0:
		return store.OAuthClient{}, oauthErr("invalid_redirect_uri", "redirect_uris must name at least one redirect URI")
	case len(reg.RedirectURIs) > MaxRedirectURIs:
		return store.OAuthClient{}, oauthErr("invalid_redirect_uri", "at most 10 redirect_uris")
	case len(reg.ClientName) > MaxClientNameLength:
		return store.OAuthClient{}, oauthErr("invalid_client_metadata", "client_name is longer than 200 bytes")
	case reg.TokenEndpointAuthMethod != "" && reg.TokenEndpointAuthMethod != "none":
		return store.OAuthClient{}, oauthErr("invalid_client_metadata", `only public clients are registered: token_endpoint_auth_method must be "none"`)
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return store.OAuthClient{}, oauthErr("invalid_client_metadata", "grant_types may hold only authorization_code and refresh_token")
		}
	}
	for _, t := range reg.ResponseTypes {
		if t != "code" {
			return store.OAuthClient{}, oauthErr("invalid_client_metadata", `response_types may hold only "code"`)
		}
	}
	for _, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return store.OAuthClient{}, err
		}
	}
	if err := s.limit(ctx, "oauth_register", client, clientRegistrationsPM, "OAuth client registrations"); err != nil {
		return store.OAuthClient{}, err
	}
	c := store.OAuthClient{ID: oauthClientPrefix + NewToken()[:32], Name: reg.ClientName, RedirectURIs: reg.RedirectURIs, CreatedAt: s.cfg.Now()}
	return c, s.store.CreateOAuthClient(ctx, c)
}

// checkRedirectURI accepts an absolute https URI, or http to a loopback
// host (a native client's listener, RFC 8252 section 7.3), without a
// fragment.
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > MaxRedirectURILength:
		return oauthErr("invalid_redirect_uri", "a redirect URI is longer than 2000 bytes")
	case err != nil || u.Host == "" || u.Fragment != "" || u.User != nil:
		return oauthErr("invalid_redirect_uri", "a redirect URI must be an absolute URL without a fragment: "+raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	}
	return oauthErr("invalid_redirect_uri", "a redirect URI must use https, or http to a loopback address: "+raw)
}

func loopbackHost(h string) bool {
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return strings.EqualFold(h, "localhost")
}

// AuthorizeRequest is the query of GET /oauth/authorize.
type AuthorizeRequest struct {
	ClientID, RedirectURI, ResponseType string
	CodeChallenge, CodeChallengeMethod  string
	State, Resource                     string
}

// Authorize checks an authorization request and records it; the browser
// then signs in and is asked to consent (ShowConsent). resources are the
// protected resources this server issues tokens for, the first the one a
// request without a resource parameter gets. Before the client and its
// redirect URI are found good, refusals are errors for the person at the
// browser; after, *RedirectError for the client.
func (s *Service) Authorize(ctx context.Context, p AuthorizeRequest, resources []string) (requestID string, err error) {
	if err := s.signInReady(); err != nil {
		return "", err
	}
	if p.ClientID == "" {
		return "", letagents.Errorf(letagents.Invalid, "client_id is required")
	}
	c, err := s.store.OAuthClient(ctx, p.ClientID)
	if letagents.IsKind(err, letagents.NotFound) {
		return "", letagents.Errorf(letagents.Invalid, "unknown client_id; register the client first (POST /oauth/register)")
	}
	if err != nil {
		return "", err
	}
	if p.RedirectURI == "" && len(c.RedirectURIs) == 1 {
		p.RedirectURI = c.RedirectURIs[0]
	}
	if !slices.Contains(c.RedirectURIs, p.RedirectURI) {
		return "", letagents.Errorf(letagents.Invalid, "redirect_uri is not one this client registered")
	}
	refuse := func(code, desc string) error {
		return &RedirectError{OAuthError: OAuthError{Code: code, Description: desc}, URL: withQuery(p.RedirectURI, url.Values{
			"error": {code}, "error_description": {desc}, "state": {p.State}})}
	}
	resource, ok := matchResource(p.Resource, resources)
	switch {
	case p.ResponseType != "code":
		return "", refuse("unsupported_response_type", `response_type must be "code"`)
	case p.CodeChallenge == "" || p.CodeChallengeMethod != "S256":
		return "", refuse("invalid_request", "PKCE is required: send code_challenge with code_challenge_method S256")
	case !pkceShape(p.CodeChallenge, 43, 43):
		return "", refuse("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)")
	case len(p.State) > MaxOAuthStateLength:
		return "", refuse("invalid_request", "state is longer than 1000 bytes")
	case !ok:
		return "", refuse("invalid_target", "resource must be this server's MCP endpoint, "+resources[0])
	}
	id := NewToken()
	return id, s.store.CreateOAuthRequest(ctx, store.OAuthRequest{IDHash: HashToken(id), ClientID: c.ID, RedirectURI: p.RedirectURI,
		CodeChallenge: p.CodeChallenge, State: p.State, Resource: resource, ExpiresAt: s.cfg.Now().Add(OAuthRequestTTL)}, s.cfg.Now())
}

// matchResource is the resource of the list that want names ("" for the
// first), compared as RFC 8707 URIs: scheme and host in any case, a
// trailing slash ignored.
func matchResource(want string, resources []string) (string, bool) {
	if want == "" {
		return resources[0], len(resources) > 0
	}
	norm := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return ""
		}
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimSuffix(u.EscapedPath(), "/") + "?" + u.RawQuery
	}
	for _, r := range resources {
		if n := norm(want); n != "" && n == norm(r) {
			return r, true
		}
	}
	return "", false
}

// pkceShape reports whether s is a PKCE verifier or challenge of length
// min to max in the unreserved characters RFC 7636 allows.
func pkceShape(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

func withQuery(raw string, v url.Values) string {
	u, _ := url.Parse(raw) // registered, so parsed before
	q := u.Query()
	for k, vs := range v {
		if vs[0] != "" {
			q[k] = vs
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Consent is what the consent page shows the signed-in person, and the
// nonce its answer must bring.
type Consent struct {
	ClientName  string
	RedirectURI string
	Resource    string
	Nonce       string
}

// ShowConsent binds an authorization request to the signed-in account
// about to be asked, with a fresh nonce for the answer.
func (s *Service) ShowConsent(ctx context.Context, requestID string, who Identity) (Consent, error) {
	if who.Via != ViaSession {
		return Consent{}, who.NotSignedIn("Sign in with GitHub to authorize an MCP client")
	}
	nonce := NewToken()
	r, err := s.store.ShowOAuthRequest(ctx, HashToken(requestID), who.Account.ID, HashToken(nonce), s.cfg.Now())
	if err != nil {
		return Consent{}, err
	}
	c, err := s.store.OAuthClient(ctx, r.ClientID)
	if err != nil {
		return Consent{}, err
	}
	return Consent{ClientName: c.Name, RedirectURI: r.RedirectURI, Resource: r.Resource, Nonce: nonce}, nil
}

// Decide ends an authorization request with the consent page's answer and
// returns where the browser goes: the client's redirect URI with a code
// (allowed) or error=access_denied, and the client's state.
func (s *Service) Decide(ctx context.Context, requestID, nonce string, who Identity, allow bool) (string, error) {
	if who.Via != ViaSession {
		return "", who.NotSignedIn("Sign in with GitHub to authorize an MCP client")
	}
	now := s.cfg.Now()
	var code string
	var stored *store.OAuthCode
	if allow {
		code = NewToken()
		stored = &store.OAuthCode{CodeHash: HashToken(code), ExpiresAt: now.Add(OAuthCodeTTL)}
	}
	r, err := s.store.DecideOAuthRequest(ctx, HashToken(requestID), HashToken(nonce), who.Account.ID, stored, now)
	if err != nil {
		return "", err
	}
	if !allow {
		return withQuery(r.RedirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the person signed in declined"}, "state": {r.State}}), nil
	}
	return withQuery(r.RedirectURI, url.Values{"code": {code}, "state": {r.State}}), nil
}

// TokenGrant is the form of a POST to the token endpoint.
type TokenGrant struct {
	GrantType, ClientID             string
	Code, RedirectURI, CodeVerifier string
	RefreshToken, Resource          string
}

// Tokens is a token endpoint answer.
type Tokens struct {
	AccessToken  string
	RefreshToken string
	ExpiresIn    time.Duration
	Resource     string
}

// Token runs the token endpoint: authorization_code (with the PKCE
// verifier) or refresh_token (rotated). Refusals are *OAuthError.
func (s *Service) Token(ctx context.Context, g TokenGrant) (Tokens, error) {
	if g.ClientID == "" {
		return Tokens{}, oauthErr("invalid_client", "client_id is required (public clients send it in the form)")
	}
	if _, err := s.store.OAuthClient(ctx, g.ClientID); letagents.IsKind(err, letagents.NotFound) {
		return Tokens{}, oauthErr("invalid_client", "unknown client_id")
	} else if err != nil {
		return Tokens{}, err
	}
	now := s.cfg.Now()
	access, refresh := OAuthAccessPrefix+NewToken(), OAuthRefreshPrefix+NewToken()
	issue := store.OAuthIssue{AccessHash: HashToken(access), AccessExpiresAt: now.Add(OAuthAccessTTL),
		RefreshHash: HashToken(refresh), RefreshExpiresAt: now.Add(OAuthRefreshTTL), Now: now}
	var resource string
	switch g.GrantType {
	case "authorization_code":
		if g.Code == "" || g.CodeVerifier == "" {
			return Tokens{}, oauthErr("invalid_request", "code and code_verifier are required")
		}
		c, err := s.store.TakeOAuthCode(ctx, HashToken(g.Code), now)
		if letagents.IsKind(err, letagents.NotFound) {
			return Tokens{}, oauthErr("invalid_grant", "the authorization code is invalid, expired or already used")
		}
		if err != nil {
			return Tokens{}, err
		}
		switch {
		case c.ClientID != g.ClientID:
			return Tokens{}, oauthErr("invalid_grant", "the authorization code was issued to another client")
		case g.RedirectURI != "" && g.RedirectURI != c.RedirectURI:
			return Tokens{}, oauthErr("invalid_grant", "redirect_uri differs from the authorization request's")
		case !pkceShape(g.CodeVerifier, 43, 128) || !challengeMatches(g.CodeVerifier, c.CodeChallenge):
			return Tokens{}, oauthErr("invalid_grant", "code_verifier does not match the code_challenge")
		case g.Resource != "" && !sameResource(g.Resource, c.Resource):
			return Tokens{}, oauthErr("invalid_target", "resource differs from the one authorized, "+c.Resource)
		}
		if err := s.store.CreateOAuthGrant(ctx, c.ClientID, c.AccountID, c.Resource, issue); err != nil {
			return Tokens{}, err
		}
		resource = c.Resource
	case "refresh_token":
		if g.RefreshToken == "" {
			return Tokens{}, oauthErr("invalid_request", "refresh_token is required")
		}
		r, err := s.store.RefreshOAuthGrant(ctx, g.ClientID, HashToken(g.RefreshToken), g.Resource, issue)
		switch {
		case errors.Is(err, store.ErrRefreshReplayed):
			s.cfg.Logger.Warn("OAuth refresh token replayed: grant revoked", "client_id", g.ClientID)
			return Tokens{}, oauthErr("invalid_grant", "the refresh token was already used; every token of this grant is revoked, sign in again")
		case letagents.IsKind(err, letagents.NotFound):
			return Tokens{}, oauthErr("invalid_grant", "the refresh token is invalid, expired, another client's or for another resource")
		case err != nil:
			return Tokens{}, err
		}
		resource = r
	case "":
		return Tokens{}, oauthErr("invalid_request", "grant_type is required")
	default:
		return Tokens{}, oauthErr("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
	return Tokens{AccessToken: access, RefreshToken: refresh, ExpiresIn: OAuthAccessTTL, Resource: resource}, nil
}

func sameResource(a, b string) bool {
	_, ok := matchResource(a, []string{b})
	return ok
}

// challengeMatches checks a PKCE S256 verifier against its challenge.
func challengeMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}
