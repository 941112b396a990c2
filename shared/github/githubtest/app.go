package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fake's GitHub App side: one App (SetApp) whose JWTs it checks
// against the App's public key, its installations and the repositories
// each covers, installation tokens, and what the App wrote with them:
// check runs, comments and closed pull requests.

// InstallationTokenLifetime is how long an installation token lives, as
// on GitHub.
const InstallationTokenLifetime = time.Hour

// maxJWTLifetime is GitHub's bound on an App JWT's exp − iat.
const maxJWTLifetime = 10 * time.Minute

// CheckRun is a check run the App wrote.
type CheckRun struct {
	Repo, Name, HeadSHA, Status, Conclusion string
	DetailsURL, Title, Summary, Text        string
}

// IssueComment is a comment the App wrote on an issue or pull request.
type IssueComment struct {
	Repo   string
	Number int64
	Body   string
}

// appKey is the one App key of a test binary: making an RSA key takes
// long enough on a busy machine that every test making its own would
// slow the suite.
var appKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// AppKey is a private key for a test's GitHub App, shared by the tests
// of a binary.
func AppKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := appKey()
	if err != nil {
		t.Fatalf("githubtest: generate the App key: %v", err)
	}
	return k
}

// AppKeyPEM is AppKey as GitHub hands it out: PKCS#1 PEM.
func AppKeyPEM(t testing.TB) string {
	t.Helper()
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(AppKey(t))}))
}

type appState struct {
	id       string
	key      *rsa.PublicKey
	now      func() time.Time
	installs map[int64]map[string]bool // installation → lower-case full names
	tokens   map[string]appToken
	minted   map[int64]int
	runs     []CheckRun
	comments []IssueComment
	closed   map[string][]int64 // lower-case full name → PR numbers
}

type appToken struct {
	installation int64
	expires      time.Time
}

// appLocked is the App's state, made on first use; s.mu is held.
func (s *Server) appLocked() *appState {
	if s.app == nil {
		s.app = &appState{now: time.Now, installs: map[int64]map[string]bool{}, tokens: map[string]appToken{},
			minted: map[int64]int{}, closed: map[string][]int64{}}
	}
	return s.app
}

// SetApp registers the GitHub App id, whose JWTs must verify with key;
// now is the fake's clock for those JWTs and for token expiry (nil is
// time.Now), so a test on a test clock can move GitHub's time with its own.
func (s *Server) SetApp(id string, key *rsa.PublicKey, now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.appLocked()
	a.id, a.key = id, key
	if now != nil {
		a.now = now
	}
}

// AddInstallation installs the App as installation id on the
// repositories repos ("owner/name"), added to those it had.
func (s *Server) AddInstallation(id int64, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.appLocked()
	if a.installs[id] == nil {
		a.installs[id] = map[string]bool{}
	}
	for _, r := range repos {
		a.installs[id][strings.ToLower(r)] = true
	}
}

// TokensMinted is how many tokens installation id was given.
func (s *Server) TokensMinted(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appLocked().minted[id]
}

// CheckRuns are the check runs the App wrote on repo, oldest first.
func (s *Server) CheckRuns(repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofRepo(s.appLocked().runs, repo, func(r CheckRun) string { return r.Repo })
}

// Comments are the comments the App wrote on repo's issues and pull
// requests, oldest first.
func (s *Server) Comments(repo string) []IssueComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofRepo(s.appLocked().comments, repo, func(c IssueComment) string { return c.Repo })
}

// ofRepo are the writes of all that were on repo (any case), in order.
func ofRepo[T any](all []T, repo string, repoOf func(T) string) []T {
	var out []T
	for _, w := range all {
		if strings.EqualFold(repoOf(w), repo) {
			out = append(out, w)
		}
	}
	return out
}

// ClosedPulls are the numbers of the pull requests of repo the App
// closed, in order.
func (s *Server) ClosedPulls(repo string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.appLocked().closed[strings.ToLower(repo)]...)
}

func (s *Server) appRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", s.handleAccessTokens)
	mux.HandleFunc("POST /repos/{owner}/{repo}/check-runs", s.handleCheckRun)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", s.handleIssueComment)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{number}", s.handlePullUpdate)
}

// verifyJWTLocked checks an App JWT as GitHub does: RS256 under the
// App's key, issued by the App, within its ten minutes.
func (a *appState) verifyJWTLocked(jwt string) error {
	if a.key == nil {
		return errors.New("no GitHub App is registered")
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("A JSON web token could not be decoded")
	}
	enc := base64.RawURLEncoding
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iat, Exp int64
		Iss      json.RawMessage
	}
	h, err1 := enc.DecodeString(parts[0])
	c, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil || json.Unmarshal(h, &header) != nil || json.Unmarshal(c, &claims) != nil {
		return errors.New("A JSON web token could not be decoded")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if header.Alg != "RS256" || rsa.VerifyPKCS1v15(a.key, crypto.SHA256, sum[:], sig) != nil {
		return errors.New("A JSON web token could not be decoded")
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	now := a.now().Unix()
	switch {
	case iss != a.id:
		return errors.New("'Issuer' claim ('iss') must be an Integer")
	case claims.Exp-claims.Iat > int64(maxJWTLifetime/time.Second):
		return errors.New("'Expiration time' claim ('exp') is too far in the future")
	case claims.Iat > now:
		return errors.New("'Issued at' claim ('iat') must be an Integer representing a time in the past")
	case claims.Exp <= now:
		return errors.New("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	}
	return nil
}

func bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

func (s *Server) handleAccessTokens(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.appLocked()
	if jwtErr := a.verifyJWTLocked(bearer(r)); jwtErr != nil {
		writeJSON(w, http.StatusUnauthorized, apiError(jwtErr.Error()))
		return
	}
	if _, ok := a.installs[id]; err != nil || !ok {
		writeJSON(w, http.StatusNotFound, apiError("Not Found"))
		return
	}
	tok := "ghs_" + randomString(36)
	expires := a.now().Add(InstallationTokenLifetime).UTC().Truncate(time.Second)
	a.tokens[tok] = appToken{installation: id, expires: expires}
	a.minted[id]++
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": expires.Format(time.RFC3339),
		"permissions":          map[string]string{"checks": "write", "pull_requests": "write", "issues": "write", "metadata": "read"},
		"repository_selection": "selected"})
}

// installationLocked checks an installation token for the repository of
// the path, answering as GitHub does when it may not act there.
func (s *Server) installationLocked(w http.ResponseWriter, r *http.Request) (string, bool) {
	a := s.appLocked()
	t, ok := a.tokens[bearer(r)]
	if !ok || !a.now().Before(t.expires) {
		writeJSON(w, http.StatusUnauthorized, apiError("Bad credentials"))
		return "", false
	}
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	if !a.installs[t.installation][strings.ToLower(repo)] {
		writeJSON(w, http.StatusForbidden, apiError("Resource not accessible by integration"))
		return "", false
	}
	return repo, true
}

func (s *Server) handleCheckRun(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name       string            `json:"name"`
		HeadSHA    string            `json:"head_sha"`
		Status     string            `json:"status"`
		Conclusion string            `json:"conclusion"`
		DetailsURL string            `json:"details_url"`
		Output     map[string]string `json:"output"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" || in.HeadSHA == "" {
		writeJSON(w, http.StatusUnprocessableEntity, apiError("Invalid request."))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.installationLocked(w, r)
	if !ok {
		return
	}
	a := s.appLocked()
	a.runs = append(a.runs, CheckRun{Repo: repo, Name: in.Name, HeadSHA: in.HeadSHA, Status: in.Status, Conclusion: in.Conclusion,
		DetailsURL: in.DetailsURL, Title: in.Output["title"], Summary: in.Output["summary"], Text: in.Output["text"]})
	writeJSON(w, http.StatusCreated, map[string]any{"id": len(a.runs), "name": in.Name, "head_sha": in.HeadSHA,
		"status": in.Status, "conclusion": in.Conclusion})
}

func (s *Server) handleIssueComment(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("number"), 10, 64)
	var in struct {
		Body string `json:"body"`
	}
	if err != nil || json.NewDecoder(r.Body).Decode(&in) != nil || in.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, apiError("Invalid request."))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.installationLocked(w, r)
	if !ok {
		return
	}
	a := s.appLocked()
	a.comments = append(a.comments, IssueComment{Repo: repo, Number: n, Body: in.Body})
	writeJSON(w, http.StatusCreated, map[string]any{"id": len(a.comments), "body": in.Body})
}

func (s *Server) handlePullUpdate(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("number"), 10, 64)
	var in struct {
		State string `json:"state"`
	}
	if err != nil || json.NewDecoder(r.Body).Decode(&in) != nil || (in.State != "open" && in.State != "closed") {
		writeJSON(w, http.StatusUnprocessableEntity, apiError("Invalid request."))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.installationLocked(w, r)
	if !ok {
		return
	}
	if in.State == "closed" {
		key := strings.ToLower(repo)
		s.app.closed[key] = append(s.app.closed[key], n)
	}
	writeJSON(w, http.StatusOK, map[string]any{"number": n, "state": in.State})
}
