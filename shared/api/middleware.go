package api

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/wire"
)

// DefaultOrigins are the browser origins always allowed to call the API:
// the public site and local development servers. LETAGENTS_BASE_URL and
// PUBLIC_API_URL add theirs.
var DefaultOrigins = []string{
	"https://letagents.chat",
	"http://localhost:3000", "http://localhost:3001",
	"http://127.0.0.1:3000", "http://127.0.0.1:3001",
}

// Origin returns the origin (scheme://host[:port]) of a URL, or "" when it
// has none.
func Origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

const identityKey ctxKey = 1

// identity is who the request comes from, as the middleware found.
func identity(r *http.Request) auth.Identity {
	who, _ := r.Context().Value(identityKey).(auth.Identity)
	return who
}

// middleware answers CORS preflights, then works out who the request comes
// from (one lookup, and only when it carries a credential) for every route.
// A credential that signs nobody in leaves the caller anonymous, and the
// answer says so (wire.CredentialHeader) when it was an Authorization
// header: its sender believes it is signed in.
func (s *server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cors(w, r) {
			return
		}
		who, err := s.Auth.Identify(r.Context(), auth.ReadCredential(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if who.StaleSession {
			clearSessionCookie(w, s.secure(r))
		}
		if who.Ignored != "" {
			w.Header().Set(wire.CredentialHeader, wire.CredentialIgnored+who.Ignored)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey, who)))
	})
}

// cors sets the CORS headers of an allowed origin and answers a preflight
// (any OPTIONS request) itself; it reports whether it answered. Cookies
// ride along (credentials) only for allowed origins, which are named one
// by one, never "*".
func (s *server) cors(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	if origin := r.Header.Get("Origin"); origin != "" {
		h.Add("Vary", "Origin")
		if slices.Contains(s.Origins, strings.ToLower(origin)) {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
		}
	}
	if r.Method != http.MethodOptions {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, X-LetAgents-Agent-Session-Id, X-LetAgents-Agent-Session-Token")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// baseURL is the public URL of this service, for links in answers.
func (s *server) baseURL(r *http.Request) string {
	if s.BaseURL != "" {
		return s.BaseURL
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// secure reports whether cookies should be marked Secure: whenever the
// service is reached over https.
func (s *server) secure(r *http.Request) bool {
	return strings.HasPrefix(s.baseURL(r), "https://")
}

const clientKey ctxKey = 2

// WithClientAddress records the caller's address as the gateway in front
// saw it (API Gateway's requestContext.http.sourceIp), which the rate
// limits count by. The Lambda adapter sets it from the event itself, never
// from a header: any client can write X-Forwarded-For.
func WithClientAddress(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey, addr)
}

// clientAddress is the address rate limits count by: the gateway's view
// of the caller (WithClientAddress), else the connection's peer.
func clientAddress(r *http.Request) string {
	if addr, _ := r.Context().Value(clientKey).(string); addr != "" {
		return addr
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func setSessionCookie(w http.ResponseWriter, token string, maxAge int, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: token, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure})
}

func clearSessionCookie(w http.ResponseWriter, secure bool) {
	setSessionCookie(w, "", -1, secure)
}
