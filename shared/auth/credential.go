package auth

import (
	"net/http"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
)

// SessionCookie names the browser session cookie.
const SessionCookie = "letagents_session"

// maxTokenLength bounds a presented token: ours are 64 characters, and a
// longer one can only be junk, not worth hashing or looking up.
const maxTokenLength = 256

// Credential is what a request presents: a browser session cookie, an
// owner token (Authorization: Bearer), both, or neither.
type Credential struct {
	Session string
	Bearer  string
}

// Present reports whether the request carries any credential.
func (c Credential) Present() bool { return c.Session != "" || c.Bearer != "" }

// ReadCredential takes the credential from a request's headers. A
// malformed Authorization header is an Unauthorized error (code
// TOKEN_INVALID): a client that sends one believes it is signed in and
// should hear that it is not. A malformed cookie is ignored: browsers keep
// stale cookies, and the page works signed out.
func ReadCredential(r *http.Request) (Credential, error) {
	var c Credential
	if ck, err := r.Cookie(SessionCookie); err == nil && validToken(ck.Value) {
		c.Session = ck.Value
	}
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return c, nil
	}
	if len(h) > 1 {
		return c, invalidToken("send one Authorization header")
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(h[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return c, invalidToken(`Authorization must be "Bearer <token>"`)
	}
	if !validToken(token) {
		return c, invalidToken("Invalid or revoked token")
	}
	c.Bearer = token
	return c, nil
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

func invalidToken(msg string) *letagents.Error {
	return &letagents.Error{Code: letagents.Unauthorized, Message: msg, Reason: letagents.CodeTokenInvalid}
}
