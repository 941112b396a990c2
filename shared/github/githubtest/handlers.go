package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// deviceGrant is the grant_type of a Device Flow token request.
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

const docsURL = "https://docs.github.com/rest"

// routes is every path the fake serves, on one screen.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/device/code", s.handleDeviceCode)
	mux.HandleFunc("GET /login/device", s.handleDevicePage)
	mux.HandleFunc("GET /login/oauth/authorize", s.handleAuthorize)
	mux.HandleFunc("POST /login/oauth/access_token", s.handleAccessToken)
	mux.HandleFunc("GET /user", s.handleUser)
	mux.HandleFunc("GET /repos/{owner}/{repo}", s.handleRepo)
	mux.HandleFunc("GET /avatars/{login}", handleAvatar)
	s.appRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError("Not Found"))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.Path]++
		fail := s.failStatus
		s.mu.Unlock()
		if fail != 0 && isAPIPath(r.URL.Path) {
			writeFailure(w, fail)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func isAPIPath(p string) bool {
	return p == "/user" || strings.HasPrefix(p, "/user/") || strings.HasPrefix(p, "/repos/") || strings.HasPrefix(p, "/app/")
}

// writeFailure answers like GitHub does for status, rate limits included.
func writeFailure(w http.ResponseWriter, status int) {
	msg := http.StatusText(status)
	if status == http.StatusForbidden || status == http.StatusTooManyRequests {
		msg = "API rate limit exceeded"
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	}
	if msg == "" {
		msg = "Error"
	}
	writeJSON(w, status, apiError(msg))
}

func apiError(msg string) map[string]any {
	return map[string]any{"message": msg, "documentation_url": docsURL}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeOAuth answers an OAuth endpoint as GitHub does: 200 whether the
// answer is a result or an {"error": …} object, JSON only when the client
// asked for it and form-encoded otherwise, which catches clients that
// forget the Accept header.
func writeOAuth(w http.ResponseWriter, r *http.Request, v map[string]any) {
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		writeJSON(w, http.StatusOK, v)
		return
	}
	form := url.Values{}
	for k, x := range v {
		form.Set(k, fmt.Sprint(x))
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = w.Write([]byte(form.Encode()))
}

func oauthError(code, description string) map[string]any {
	return map[string]any{
		"error":             code,
		"error_description": description,
		"error_uri":         "https://docs.github.com/apps/troubleshooting",
	}
}

var (
	errClientCredentials = oauthError("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
	errBadCode           = oauthError("bad_verification_code", "The code passed is incorrect or expired.")
)

// seconds renders d in whole seconds, rounding up so that a short but
// non-zero duration is not announced as 0.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

func (s *Server) handleDeviceCode(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("client_id") != ClientID {
		writeOAuth(w, r, errClientCredentials)
		return
	}
	s.mu.Lock()
	code := randomString(40)
	d := &device{
		userCode: s.newUserCodeLocked(),
		scope:    r.FormValue("scope"),
		interval: s.interval,
		expires:  time.Now().Add(s.expiresIn),
	}
	s.devices[code] = d
	s.userCodes[d.userCode] = d
	s.lastUserCode = d.userCode
	expiresIn := s.expiresIn
	s.mu.Unlock()
	writeOAuth(w, r, map[string]any{
		"device_code":      code,
		"user_code":        d.userCode,
		"verification_uri": s.URL + "/login/device",
		"expires_in":       seconds(expiresIn),
		"interval":         seconds(d.interval),
	})
}

func (s *Server) handleDevicePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprint(w, "<!doctype html><title>Device activation</title><p>Enter the code displayed on your device (githubtest: call ApproveDevice).</p>\n")
}

func handleAvatar(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#888"/></svg>`)
}

// handleAuthorize is the web flow's consent page, answered at once: the
// signed-in user approves, nobody signed in counts as a refusal.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != ClientID {
		http.Error(w, "The client_id is not valid.", http.StatusBadRequest)
		return
	}
	target, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || target.Scheme == "" || target.Host == "" {
		// GitHub shows an error page rather than redirect anywhere unknown.
		http.Error(w, "The redirect_uri is not valid for this application.", http.StatusBadRequest)
		return
	}
	back := target.Query()
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	s.mu.Lock()
	if s.signedIn == "" {
		back.Set("error", "access_denied")
		back.Set("error_description", "The user has denied your application access.")
	} else {
		code := randomString(20)
		s.codes[code] = &authCode{
			login:       s.signedIn,
			redirectURI: q.Get("redirect_uri"),
			scope:       q.Get("scope"),
			expires:     time.Now().Add(codeLifetime),
		}
		back.Set("code", code)
	}
	s.mu.Unlock()
	target.RawQuery = back.Encode()
	http.Redirect(w, r, target.String(), http.StatusFound)
}

func (s *Server) handleAccessToken(w http.ResponseWriter, r *http.Request) {
	switch grant := r.FormValue("grant_type"); grant {
	case deviceGrant:
		writeOAuth(w, r, s.pollDevice(r))
	case "", "authorization_code":
		writeOAuth(w, r, s.exchangeCode(r))
	default:
		writeOAuth(w, r, oauthError("unsupported_grant_type", "The grant type is not supported."))
	}
}

// pollDevice answers one device-flow poll, in GitHub's order of checks.
func (s *Server) pollDevice(r *http.Request) map[string]any {
	if r.FormValue("client_id") != ClientID {
		return errClientCredentials
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[r.FormValue("device_code")]
	if !ok {
		return oauthError("incorrect_device_code", "The device_code provided is not valid.")
	}
	now := time.Now()
	switch {
	case d.state == deviceUsed || d.state == deviceExpired || !now.Before(d.expires):
		return oauthError("expired_token", "The device_code has expired.")
	case d.state == deviceDenied:
		return oauthError("access_denied", "The authorization request was denied.")
	}
	tooSoon := s.enforce && !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval
	d.lastPoll = now
	if d.slowDown || tooSoon {
		d.slowDown = false
		d.interval += slowDownStep
		ans := oauthError("slow_down", "Too many requests have been made in the same timeframe.")
		ans["interval"] = seconds(d.interval)
		return ans
	}
	if d.state != deviceApproved {
		return oauthError("authorization_pending", "The authorization request is still pending.")
	}
	d.state = deviceUsed
	return tokenAnswer(s.mintLocked(d.login, d.scope), d.scope)
}

// exchangeCode answers the web flow's code exchange. A code is spent by
// any exchange attempt made with the right app credentials.
func (s *Server) exchangeCode(r *http.Request) map[string]any {
	if r.FormValue("client_id") != ClientID || r.FormValue("client_secret") != ClientSecret {
		return errClientCredentials
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.codes[r.FormValue("code")]
	if !ok {
		return errBadCode
	}
	delete(s.codes, r.FormValue("code"))
	if !time.Now().Before(c.expires) {
		return errBadCode
	}
	if r.FormValue("redirect_uri") != c.redirectURI {
		return oauthError("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
	}
	return tokenAnswer(s.mintLocked(c.login, c.scope), c.scope)
}

func tokenAnswer(tok, scope string) map[string]any {
	return map[string]any{"access_token": tok, "token_type": "bearer", "scope": scope}
}

// authLocked resolves the Authorization header: (nil, true) when there is
// none, (token, true) for a live token, ok false for a bad or revoked one.
func (s *Server) authLocked(r *http.Request) (t *token, ok bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, true
	}
	scheme, tok, found := strings.Cut(h, " ")
	if !found || (!strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token")) {
		return nil, false
	}
	t, found = s.tokens[strings.TrimSpace(tok)]
	if !found || t.revoked {
		return nil, false
	}
	return t, true
}

var errBadCredentials = apiError("Bad credentials")

func (s *Server) handleUser(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, ok := s.authLocked(r)
	var u map[string]any
	if ok && t != nil {
		usr := s.users[t.login]
		w.Header().Set("X-OAuth-Scopes", t.scope)
		u = map[string]any{
			"id":         usr.ID,
			"login":      usr.Login,
			"name":       usr.Name,
			"avatar_url": usr.AvatarURL,
			"html_url":   s.URL + "/" + usr.Login,
			"type":       "User",
		}
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeJSON(w, http.StatusUnauthorized, errBadCredentials)
	case t == nil:
		writeJSON(w, http.StatusUnauthorized, apiError("Requires authentication"))
	default:
		writeJSON(w, http.StatusOK, u)
	}
}

// permissions is what the REST API reports for each grant.
var permissions = map[string]map[string]bool{
	"admin": {"admin": true, "maintain": true, "push": true, "triage": true, "pull": true},
	"write": {"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
	"read":  {"admin": false, "maintain": false, "push": false, "triage": false, "pull": true},
}

func (s *Server) handleRepo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t, ok := s.authLocked(r)
	rp := s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
	var ans map[string]any
	if ok && rp != nil {
		grant := ""
		if t != nil {
			grant = rp.grants[t.login]
		}
		if !rp.private || grant != "" {
			owner, name, _ := strings.Cut(rp.fullName, "/")
			ans = map[string]any{
				"id":             rp.id,
				"name":           name,
				"full_name":      rp.fullName,
				"owner":          map[string]any{"login": owner},
				"private":        rp.private,
				"visibility":     map[bool]string{true: "private", false: "public"}[rp.private],
				"html_url":       s.URL + "/" + rp.fullName,
				"default_branch": "main",
			}
			if t != nil {
				if grant == "" {
					grant = "read" // anyone may pull a public repository
				}
				ans["permissions"] = permissions[grant]
			}
		}
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeJSON(w, http.StatusUnauthorized, errBadCredentials)
	case ans == nil:
		writeJSON(w, http.StatusNotFound, apiError("Not Found"))
	default:
		writeJSON(w, http.StatusOK, ans)
	}
}
