package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
)

// SessionCookie names the browser session cookie.
const SessionCookie = "letagents_session"

// maxTokenLength bounds a presented token: ours are 64 characters, and a
// longer one can only be junk, not worth hashing or looking up.
const maxTokenLength = 256

// Why an Authorization header was ignored (Credential.Ignored,
// Identity.Ignored); the API names the reason in its answer.
const (
	// IgnoredScheme: the header is not a single "Bearer <token>" (a
	// proxy's "Basic …", say).
	IgnoredScheme = "scheme"
	// IgnoredUnknown: a bearer token this server does not know. Revoked
	// tokens are deleted, so a revoked one is unknown too.
	IgnoredUnknown = "unknown"
)

// Credential is what a request presents: a browser session cookie, an
// owner token (Authorization: Bearer), both, or neither.
type Credential struct {
	Session string
	Bearer  string
	// Ignored is why the request's Authorization header did not become
	// Bearer (IgnoredScheme, IgnoredUnknown), "" when it did or there was
	// none.
	Ignored string
}

// ReadCredential takes the credential from a request's headers. Nothing
// it finds is an error: like the original service, the API serves a
// request whose credential it cannot use as an anonymous one, and says
// why (Ignored) so that routes needing an account can refuse it plainly.
// A malformed cookie is dropped silently: browsers keep stale cookies.
func ReadCredential(r *http.Request) Credential {
	var c Credential
	if ck, err := r.Cookie(SessionCookie); err == nil && validToken(ck.Value) {
		c.Session = ck.Value
	}
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return c
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(h[0]), " ")
	token = strings.TrimSpace(token)
	switch {
	case len(h) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") || token == "":
		c.Ignored = IgnoredScheme
	case !validToken(token):
		// Not the shape of any token we mint.
		c.Ignored = IgnoredUnknown
	default:
		c.Bearer = token
	}
	return c
}

// BearerPrincipal is who a bearer token alone (the hosted MCP
// endpoint's credential) signs in as, ok false when it signs nobody in:
// a name that lasts as long as the credential, an OAuth grant's across
// its refreshes, so that an MCP session bound to it goes on. The local
// owner never stands in for a bad token.
func (s *Service) BearerPrincipal(ctx context.Context, token string) (principal string, ok bool, err error) {
	if !validToken(token) {
		return "", false, nil
	}
	who, err := s.identify(ctx, Credential{Bearer: token})
	if err != nil || !who.SignedIn() {
		return "", false, err
	}
	return fmt.Sprintf("%s:%d", who.Via, who.CredentialID), true, nil
}

// validToken accepts what could be a token: printable ASCII without
// spaces, of bounded length.
func validToken(s string) bool {
	if s == "" || len(s) > maxTokenLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// NotSignedIn is the refusal of an action only an account may take, to an
// anonymous caller: TOKEN_INVALID when the caller presented a token the
// server ignored (the token is at fault, and an agent should hear so),
// else NOT_AUTHENTICATED with msg.
func (i Identity) NotSignedIn(msg string) error {
	switch i.Ignored {
	case IgnoredScheme:
		return invalidToken(`Authorization must be "Bearer <token>"`)
	case IgnoredUnknown:
		return invalidToken("Invalid or revoked token")
	}
	return &letagents.Error{Kind: letagents.Unauthorized, Message: msg, Code: letagents.CodeNotAuthenticated}
}

func invalidToken(msg string) *letagents.Error {
	return &letagents.Error{Kind: letagents.Unauthorized, Message: msg, Code: letagents.CodeTokenInvalid}
}
