package github

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The app JWT's window, as GitHub asks: issued a minute in the past
// against clock drift, and living at most ten minutes (nine here, to
// stay inside GitHub's bound however its clock runs).
const (
	jwtBackdate = 60 * time.Second
	jwtLifetime = 9 * time.Minute
)

// TokenRefreshMargin is how long before its expiry a cached installation
// token is replaced: a call that starts with it must not see it expire
// on the way.
const TokenRefreshMargin = 5 * time.Minute

// AppConfig says which GitHub App the client acts as and where GitHub is.
type AppConfig struct {
	// ID is the App's id (GITHUB_APP_ID), the JWT's issuer.
	ID string
	// Key signs the App's JWTs (GITHUB_APP_PRIVATE_KEY).
	Key *rsa.PrivateKey
	// Slug names the App in its URLs (GITHUB_APP_SLUG).
	Slug string
	// APIURL is the REST API root; default DefaultAPIURL.
	APIURL string
	// HTTPClient sends every request; default a client with DefaultTimeout.
	HTTPClient *http.Client
	// Now is the clock of the JWTs and the token cache; nil is time.Now.
	Now func() time.Time
}

// App acts as a GitHub App: it signs the App's JWTs, trades them for
// installation tokens, which it keeps until shortly before they expire,
// and with those writes check runs and pull request comments. Safe for
// concurrent use: callers needing the same installation's token while it
// is being fetched wait for that one fetch.
type App struct {
	id, slug string
	key      *rsa.PrivateKey
	c        *Client
	now      func() time.Time

	mu     sync.Mutex
	tokens map[int64]*installationToken
}

// installationToken is one installation's cached token; its mutex is
// held while the token is fetched, so concurrent callers share a fetch.
type installationToken struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

// NewApp returns the App client of cfg.
func NewApp(cfg AppConfig) *App {
	a := &App{id: cfg.ID, slug: cfg.Slug, key: cfg.Key, c: New(Config{APIURL: cfg.APIURL, HTTPClient: cfg.HTTPClient}),
		now: cfg.Now, tokens: map[int64]*installationToken{}}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// Slug is the App's slug (GITHUB_APP_SLUG).
func (a *App) Slug() string { return a.slug }

// ParsePrivateKey reads the App's private key as GitHub hands it out
// (PEM, PKCS#1 "RSA PRIVATE KEY") or converted to PKCS#8 ("PRIVATE KEY").
// Line breaks written as \n, as an environment variable often carries
// them, are taken for line breaks.
func ParsePrivateKey(text string) (*rsa.PrivateKey, error) {
	text = strings.ReplaceAll(strings.TrimSpace(text), `\n`, "\n")
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return nil, errors.New("not a PEM private key")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("the private key is not an RSA key")
	}
	return rk, nil
}

// JWT is a fresh RS256 JWT of the App, which GitHub takes for the App
// itself (never for an installation) for ten minutes at most.
func (a *App) JWT() (string, error) {
	now := a.now()
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iat": now.Add(-jwtBackdate).Unix(), "exp": now.Add(jwtLifetime).Unix(), "iss": a.id})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, a.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign the app JWT: %w", err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// InstallationToken is a token acting as installation id, from the cache
// while it has more than TokenRefreshMargin to live, else fetched anew.
func (a *App) InstallationToken(ctx context.Context, id int64) (string, error) {
	a.mu.Lock()
	t := a.tokens[id]
	if t == nil {
		t = &installationToken{}
		a.tokens[id] = t
	}
	a.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && a.now().Add(TokenRefreshMargin).Before(t.expires) {
		return t.token, nil
	}
	jwt, err := a.JWT()
	if err != nil {
		return "", err
	}
	var ans struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	op := fmt.Sprintf("get a token of installation %d", id)
	if err := a.call(ctx, op, http.MethodPost, "/app/installations/"+strconv.FormatInt(id, 10)+"/access_tokens", jwt, nil, &ans); err != nil {
		return "", err
	}
	if ans.Token == "" || ans.ExpiresAt.IsZero() {
		return "", unavailable(op, errors.New("GitHub answered no token"))
	}
	t.token, t.expires = ans.Token, ans.ExpiresAt
	return t.token, nil
}

// CheckRun is a completed check run to write on a commit.
type CheckRun struct {
	Name, HeadSHA string
	Conclusion    string // success, failure, neutral...
	DetailsURL    string // "" for none
	Title         string
	Summary, Text string
}

// CreateCheckRun writes a completed check run on a commit of repo
// ("owner/name") as installation inst.
func (a *App) CreateCheckRun(ctx context.Context, inst int64, repo string, run CheckRun) error {
	body := map[string]any{"name": run.Name, "head_sha": run.HeadSHA, "status": "completed", "conclusion": run.Conclusion,
		"output": map[string]string{"title": run.Title, "summary": run.Summary, "text": run.Text}}
	if run.DetailsURL != "" {
		body["details_url"] = run.DetailsURL
	}
	return a.asInstallation(ctx, inst, fmt.Sprintf("create check run %q on %s", run.Name, repo), http.MethodPost,
		repoPath(repo)+"/check-runs", body)
}

// CommentOnIssue comments on an issue or pull request of repo as
// installation inst.
func (a *App) CommentOnIssue(ctx context.Context, inst int64, repo string, number int64, text string) error {
	return a.asInstallation(ctx, inst, fmt.Sprintf("comment on %s#%d", repo, number), http.MethodPost,
		fmt.Sprintf("%s/issues/%d/comments", repoPath(repo), number), map[string]string{"body": text})
}

// ClosePullRequest closes a pull request of repo as installation inst.
func (a *App) ClosePullRequest(ctx context.Context, inst int64, repo string, number int64) error {
	return a.asInstallation(ctx, inst, fmt.Sprintf("close %s#%d", repo, number), http.MethodPatch,
		fmt.Sprintf("%s/pulls/%d", repoPath(repo), number), map[string]string{"state": "closed"})
}

func repoPath(repo string) string {
	owner, name, _ := strings.Cut(repo, "/")
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
}

func (a *App) asInstallation(ctx context.Context, inst int64, op, method, path string, body any) error {
	tok, err := a.InstallationToken(ctx, inst)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return a.call(ctx, op, method, path, tok, body, nil)
}

// call sends body as JSON to an API path with the bearer token and
// decodes the answer into v (nil: the answer is not read).
func (a *App) call(ctx context.Context, op, method, path, token string, body, v any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("%s: encode: %w", op, err)
		}
	}
	req, err := newRequest(ctx, op, method, a.c.apiURL+path, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("Authorization", "Bearer "+token)
	status, ans, err := a.c.send(req, op)
	if err != nil {
		return err
	}
	switch {
	case status >= 200 && status <= 299:
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%s: %w: %w", op, ErrUnauthorized, a.c.statusCause(status, ans, []string{token}))
	case status == http.StatusNotFound:
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	default:
		return unavailable(op, a.c.statusCause(status, ans, []string{token}))
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(ans, v); err != nil {
		return unavailable(op, fmt.Errorf("decode answer: %w", err))
	}
	return nil
}
