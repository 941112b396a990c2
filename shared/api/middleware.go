package api

import (
	"context"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

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

// caller is who a request comes from, as the middleware found, or the
// owner token it left for a send's statement to look up (store.Send), so
// that an agent's send is one round trip.
type caller struct {
	who    auth.Identity
	bearer string      // the owner token not looked up yet; "" once who is known
	header http.Header // the answer's, for what the lookup finds (settle)
}

// withIdentity is ctx for a request from who.
func withIdentity(ctx context.Context, who auth.Identity) context.Context {
	return context.WithValue(ctx, identityKey, &caller{who: who})
}

// identity is who the request comes from, as the middleware found.
func identity(r *http.Request) auth.Identity {
	who, _ := callerOf(r)
	return who
}

// callerOf is identity, and the owner token still to look up when the
// middleware left it to the send's statement ("" when it did not).
func callerOf(r *http.Request) (auth.Identity, string) {
	c, _ := r.Context().Value(identityKey).(*caller)
	if c == nil {
		return auth.Identity{}, ""
	}
	return c.who, c.bearer
}

// settle records who the request comes from, once its owner token is
// looked up, and says in the answer when the token signed nobody in.
func settle(r *http.Request, who auth.Identity) {
	c, _ := r.Context().Value(identityKey).(*caller)
	if c == nil {
		return
	}
	c.who, c.bearer = who, ""
	if who.Ignored != "" {
		c.header.Set(wire.CredentialHeader, wire.CredentialIgnored+who.Ignored)
	}
}

// resolve looks up the owner token the middleware left to a send's
// statement, for what needs the caller before or without it: a gate that
// asks GitHub, a refusal, the answer's header.
func (s *server) resolve(r *http.Request) error {
	if _, bearer := callerOf(r); bearer == "" {
		return nil
	}
	who, err := s.identify(r.Context(), r)
	if err != nil {
		return err
	}
	settle(r, who)
	return nil
}

// middleware answers CORS preflights, then works out who the request comes
// from (one lookup, and only when it carries a credential) for every route.
// A credential that signs nobody in leaves the caller anonymous, and the
// answer says so (wire.CredentialHeader) when it was an Authorization
// header: its sender believes it is signed in. An owner token alone on a
// send is left to the send's statement (sendsInOne).
func (s *server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cors(w, r) {
			return
		}
		if v := r.Header.Get(wire.VouchedAddressHeader); v != "" {
			if addr, ok := s.Auth.VouchedAddress(r.Context(), v); ok {
				r = r.WithContext(WithClientAddress(r.Context(), addr))
			}
		}
		c := &caller{header: w.Header()}
		r = r.WithContext(context.WithValue(r.Context(), identityKey, c))
		if cred := auth.ReadCredential(r); cred.Session == "" && cred.Bearer != "" && sendsInOne(r) {
			c.bearer = cred.Bearer
			next.ServeHTTP(w, r)
			return
		}
		who, err := s.identify(r.Context(), r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if who.StaleSession {
			clearSessionCookie(w, s.secure(r))
		}
		settle(r, who)
		if err := s.cookieWrite(r, who); err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sendsInOne reports whether r is a send (a route of the sender gate),
// whose statement can look up its owner token itself.
func sendsInOne(r *http.Request) bool {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") {
		return false
	}
	path := r.URL.EscapedPath()
	for _, rt := range sendRoutes {
		if _, ok := rt.match(path); ok {
			return true
		}
	}
	return false
}

// sendRoutes are the routes of the sender gate, which sendsInOne matches
// alone: matching the whole table cost a send as much again as routing it.
var sendRoutes = slices.DeleteFunc(slices.Clone(table), func(rt Route) bool { return rt.gate != sender || rt.Method != http.MethodPost })

// identify works out who r comes from (auth.Service.Identify). The local
// owner needs no credential, so a page of another site that makes the
// person's browser send a request here would act as them. A request is
// the local owner's only when sent to this machine by name (a loopback
// Host, or the configured base URL's: a DNS-rebound name is neither) and
// not by a browser from anywhere but this service's own pages (agents send
// neither Origin nor Sec-Fetch-Site); any other stays anonymous, as it was
// before the local owner.
func (s *server) identify(ctx context.Context, r *http.Request) (auth.Identity, error) {
	who, err := s.Auth.Identify(ctx, auth.ReadCredential(r))
	if err != nil || who.Via != auth.ViaLocal {
		return who, err
	}
	site := r.Header.Get("Sec-Fetch-Site")
	browserElsewhere := r.Header.Get("Origin") != "" || (site != "" && site != "same-origin" && site != "none")
	if s.localHost(r.Host) && (!browserElsewhere || s.ownPage(r)) {
		return who, nil
	}
	return auth.Identity{Ignored: who.Ignored}, nil
}

// localHost reports whether a request's Host names this machine: a
// loopback name or address, or the host of the configured base URL.
func (s *server) localHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	if u, err := url.Parse(s.BaseURL); err == nil && s.BaseURL != "" && strings.EqualFold(u.Hostname(), host) {
		return true
	}
	return strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")
}

// cookieWrite refuses a write that only the browser session cookie signs
// in unless it is JSON sent by a page of this service's own origin (or of
// an origin configured as its own: s.Origins). The cookie is SameSite=Lax,
// which keeps it from other sites' writes but not from a page of the same
// site (another port of localhost, a sibling subdomain), and a plain HTML
// form or a no-cors fetch can send a text/plain body the decoder would
// read as JSON; a form cannot send application/json, nor choose its
// Origin. A request that also carries an Authorization or worker-session
// header is not checked: no page can add those to another origin's
// request without a CORS preflight, which only s.Origins pass.
func (s *server) cookieWrite(r *http.Request, who auth.Identity) error {
	switch {
	case who.Via != auth.ViaSession, r.Method == http.MethodGet, r.Method == http.MethodHead, r.Method == http.MethodOptions,
		r.Header.Get("Authorization") != "", r.Header.Get(wire.SessionIDHeader) != "", r.Header.Get(wire.SessionTokenHeader) != "":
		return nil
	case !s.ownPage(r):
		return letagents.CrossSiteRefused()
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return letagents.JSONRequired()
	}
	return nil
}

// ownPage reports whether a browser request comes from a page of this
// service: its Origin is the origin the request was sent to (with
// Sec-Fetch-Site, when sent, agreeing) or one of s.Origins; without an
// Origin, Sec-Fetch-Site must say same-origin. A request that says
// neither is not taken for the service's own.
func (s *server) ownPage(r *http.Request) bool {
	fetchSite := r.Header.Get("Sec-Fetch-Site")
	origin := strings.ToLower(r.Header.Get("Origin"))
	switch {
	case origin == "":
		return fetchSite == "same-origin"
	case slices.Contains(s.Origins, origin):
		return true
	}
	return origin == strings.ToLower(requestOrigin(r)) && (fetchSite == "" || fetchSite == "same-origin")
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
	return requestOrigin(r)
}

// requestOrigin is the origin a request was sent to, as its browser
// names it in Origin when the page is of the same origin.
func requestOrigin(r *http.Request) string {
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

// clientAddress is the address rate limits count by: the address the
// hosted MCP endpoint vouches for (wire.VouchedAddressHeader), else the
// gateway's view of the caller (WithClientAddress), else the connection's
// peer.
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
