package api

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
)

// The OAuth 2.1 authorization server of the hosted MCP endpoint (issue
// 25), as short requests of GroupAuth: metadata (RFC 8414), client
// registration (RFC 7591), the authorization endpoint, whose login step is
// the GitHub web sign-in of /auth/github/login and whose last is a consent
// page, and the token endpoint. shared/auth runs the flows.

// MCPPath is where the hosted MCP endpoint, the protected resource these
// routes issue tokens for, is served on each of the service's origins.
const MCPPath = "/mcp"

// oauthMetadata answers GET /.well-known/oauth-authorization-server.
func (s *server) oauthMetadata(w http.ResponseWriter, r *http.Request, _ call) error {
	if !s.Auth.SignInConfigured() {
		return letagents.Errorf(letagents.NotFound, "this server has no GitHub sign-in, so no OAuth authorization server")
	}
	base := s.baseURL(r)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                base,
		"authorization_endpoint":                base + "/oauth/authorize",
		"token_endpoint":                        base + "/oauth/token",
		"registration_endpoint":                 base + "/oauth/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"service_documentation":                 base + "/docs/mcp",
	})
	return nil
}

// writeOAuthError answers an OAuth error as RFC 6749 section 5.2 has it:
// 401 for a client unknown, 400 otherwise.
func writeOAuthError(w http.ResponseWriter, e *auth.OAuthError) {
	status := http.StatusBadRequest
	if e.Code == "invalid_client" {
		status = http.StatusUnauthorized
	}
	writeJSON(w, status, map[string]string{"error": e.Code, "error_description": e.Description})
}

// oauthRefusal answers an OAuth refusal (*auth.OAuthError) as such and
// returns any other error for the router to answer.
func oauthRefusal(w http.ResponseWriter, err error) error {
	var oe *auth.OAuthError
	if errors.As(err, &oe) {
		writeOAuthError(w, oe)
		return nil
	}
	return err
}

// oauthRegister registers a public client (RFC 7591).
func (s *server) oauthRegister(w http.ResponseWriter, r *http.Request, _ call) error {
	if !s.Auth.SignInConfigured() {
		return letagents.Errorf(letagents.Unavailable, "GitHub sign-in is not configured on this server")
	}
	var reg auth.ClientRegistration
	if err := decode(w, r, &reg); err != nil {
		var e *letagents.Error
		if errors.As(err, &e) && e.Kind == letagents.Invalid {
			writeOAuthError(w, &auth.OAuthError{Code: "invalid_client_metadata", Description: e.Message})
			return nil
		}
		return err
	}
	c, err := s.Auth.RegisterClient(r.Context(), clientAddress(r), reg)
	if err != nil {
		return oauthRefusal(w, err)
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(), "client_name": c.Name, "redirect_uris": c.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	})
	return nil
}

// mcpResources are the protected resources tokens are issued for: the
// MCP endpoint on the origin the request came to (the base URL's), the
// configured one (the poll server's), and on each origin configured as
// the service's own.
func (s *server) mcpResources(r *http.Request) []string {
	out := []string{s.baseURL(r) + MCPPath}
	if s.MCPURL != "" {
		out = append(out, s.MCPURL)
	}
	for _, o := range s.Origins {
		out = append(out, o+MCPPath)
	}
	return out
}

// oauthAuthorize starts an authorization: checked and recorded, then the
// browser signs in with GitHub (unless its session cookie already signs
// it in) and lands on the consent page.
func (s *server) oauthAuthorize(w http.ResponseWriter, r *http.Request, _ call) error {
	q := r.URL.Query()
	id, err := s.Auth.Authorize(r.Context(), auth.AuthorizeRequest{ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"),
		ResponseType: q.Get("response_type"), CodeChallenge: q.Get("code_challenge"), CodeChallengeMethod: q.Get("code_challenge_method"),
		State: q.Get("state"), Resource: q.Get("resource")}, s.mcpResources(r))
	var re *auth.RedirectError
	if errors.As(err, &re) {
		redirect(w, r, re.URL)
		return nil
	}
	if err != nil {
		return err
	}
	return s.toConsent(w, r, id)
}

// toConsent sends the browser to the consent page of request id, by way
// of the GitHub sign-in when no session cookie signs it in.
func (s *server) toConsent(w http.ResponseWriter, r *http.Request, id string) error {
	consent := "/oauth/consent?request=" + url.QueryEscape(id)
	if identity(r).Via == auth.ViaSession {
		redirect(w, r, consent)
		return nil
	}
	l, err := s.Auth.BeginLogin(r.Context(), consent, s.callbackURL(r))
	if err != nil {
		return err
	}
	setLoginCookie(w, l.BrowserNonce, int(auth.StateTTL/time.Second), s.secure(r))
	redirect(w, r, l.AuthURL)
	return nil
}

// redirect sends the browser on with a 302 that no cache keeps and whose
// target learns nothing of where it came from (request ids and consent
// nonces ride in these URLs).
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusFound)
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize {{.Client}} – LetAgents</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}button{font:inherit;padding:.4rem 1.2rem;margin-right:.5rem}</style></head>
<body><main>
<h1>Let {{.Client}} act as @{{.Login}}?</h1>
<p>An MCP client calling itself <strong>{{.Client}}</strong> asks to use LetAgents as you: to join the rooms you may join,
read and send messages and work the task board, as your agents do. It will be sent back to <code>{{.Redirect}}</code>.</p>
<p>Only allow it if you just started this from your MCP client.</p>
<form method="get" action="/oauth/decide">
<input type="hidden" name="request" value="{{.Request}}"><input type="hidden" name="consent" value="{{.Nonce}}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form></main></body></html>
`))

// oauthConsent shows the signed-in person what asks to act as them. Its
// answer is a GET (oauthDecide): a form cannot send the JSON that a write
// signed by the session cookie must be (cookieWrite); the single-use
// nonce, shown only to this signed-in browser in a page no other site
// may frame, is what makes the answer theirs.
func (s *server) oauthConsent(w http.ResponseWriter, r *http.Request, _ call) error {
	id := r.URL.Query().Get("request")
	who := identity(r)
	if who.Via != auth.ViaSession {
		// The session ended (or was never made here): sign in again.
		return s.toConsent(w, r, id)
	}
	c, err := s.Auth.ShowConsent(r.Context(), id, who)
	if err != nil {
		return err
	}
	client := c.ClientName
	if client == "" {
		client = "an unnamed client"
	}
	redirectTo := c.RedirectURI
	if u, err := url.Parse(redirectTo); err == nil {
		redirectTo = u.Scheme + "://" + u.Host + u.Path
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	return consentPage.Execute(w, map[string]string{"Client": client, "Login": who.Account.Login, "Redirect": redirectTo,
		"Request": id, "Nonce": c.Nonce})
}

// oauthDecide takes the consent page's answer and sends the browser back
// to the client with a code, or with error=access_denied.
func (s *server) oauthDecide(w http.ResponseWriter, r *http.Request, _ call) error {
	q := r.URL.Query()
	var allow bool
	switch q.Get("decision") {
	case "allow":
		allow = true
	case "deny":
	default:
		return letagents.Errorf(letagents.Invalid, `decision must be "allow" or "deny"`)
	}
	to, err := s.Auth.Decide(r.Context(), q.Get("request"), q.Get("consent"), identity(r), allow)
	if err != nil {
		return err
	}
	redirect(w, r, to)
	return nil
}

// oauthToken is the token endpoint: a form POST (RFC 6749 section 3.2)
// whose answers and refusals are RFC 6749's JSON.
func (s *server) oauthToken(w http.ResponseWriter, r *http.Request, _ call) error {
	r.Body = http.MaxBytesReader(w, r.Body, letagents.MaxBodyBytes)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		writeOAuthError(w, &auth.OAuthError{Code: "invalid_request", Description: "the body must be application/x-www-form-urlencoded"})
		return nil
	}
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, &auth.OAuthError{Code: "invalid_request", Description: "the body is not a form: " + err.Error()})
		return nil
	}
	f := r.PostForm
	t, err := s.Auth.Token(r.Context(), auth.TokenGrant{GrantType: f.Get("grant_type"), ClientID: f.Get("client_id"), Code: f.Get("code"),
		RedirectURI: f.Get("redirect_uri"), CodeVerifier: f.Get("code_verifier"), RefreshToken: f.Get("refresh_token"), Resource: f.Get("resource")})
	if err != nil {
		return oauthRefusal(w, err)
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": t.AccessToken, "token_type": "Bearer",
		"expires_in": seconds(t.ExpiresIn), "refresh_token": t.RefreshToken, "resource": t.Resource})
	return nil
}
