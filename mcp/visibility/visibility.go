// Package visibility tells whether a repository is public, by asking its
// host anonymously (GitHub, GitLab, Bitbucket), and suggests the kind of
// room it fits: anyone may find a public repository's room, a private
// one's is better met by invitation. It is the check the original client
// offered as check_repo_visibility; a failure is never an error, only
// "unknown".
package visibility

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Providers, visibilities and room types of a Result.
const (
	GitHub    = "github"
	GitLab    = "gitlab"
	Bitbucket = "bitbucket"
	Unknown   = "unknown"

	Public  = "public"
	Private = "private"

	Discoverable = "discoverable"
	Invite       = "invite"
)

// Default hosts' API roots, and how long one check may take.
const (
	DefaultGitHubAPI    = "https://api.github.com"
	DefaultGitLabAPI    = "https://gitlab.com"
	DefaultBitbucketAPI = "https://api.bitbucket.org"
	DefaultTimeout      = 10 * time.Second
)

// maxBody bounds an answer read: the fields wanted come in a few KiB.
const maxBody = 1 << 20

// Result is what a check found. Its JSON keys are the original's.
type Result struct {
	// CanonicalKey is the repository, host/owner/repo.
	CanonicalKey string `json:"canonicalKey"`
	// Provider is GitHub, GitLab, Bitbucket or Unknown (another host).
	Provider string `json:"provider"`
	// Visibility is Public, Private (or absent: hosts answer a private
	// repository as a missing one) or Unknown (the host did not say).
	Visibility string `json:"visibility"`
	// RoomType is Discoverable for a public repository, else Invite.
	RoomType string `json:"roomType"`
	// Error says why the visibility is unknown.
	Error string `json:"error,omitempty"`
}

// Checker asks the hosts. The zero value asks the real ones.
type Checker struct {
	// GitHubAPI, GitLabAPI and BitbucketAPI are the hosts' API roots
	// (defaults above); tests point them elsewhere.
	GitHubAPI, GitLabAPI, BitbucketAPI string
	// HTTP sends the requests; default a client with DefaultTimeout.
	HTTP *http.Client
}

// Check finds the visibility of the repository canonicalKey names
// (host/owner/repo, as a repo room id is). Hosts other than github.com,
// gitlab.com and bitbucket.org are not asked.
func (c Checker) Check(ctx context.Context, canonicalKey string) Result {
	r := Result{CanonicalKey: canonicalKey, Provider: providerOf(canonicalKey), Visibility: Unknown, RoomType: Invite}
	host, path, _ := strings.Cut(canonicalKey, "/")
	owner, repo, ok := strings.Cut(path, "/")
	switch {
	case r.Provider == Unknown:
		r.Error = "Unknown git provider for host: " + host
		return r
	case !ok || owner == "" || repo == "":
		r.Error = "Could not extract owner/repo from: " + canonicalKey
		return r
	}
	switch r.Provider {
	case GitHub:
		r.Visibility = c.github(ctx, owner, repo)
	case GitLab:
		r.Visibility = c.gitlab(ctx, owner, repo)
	case Bitbucket:
		r.Visibility = c.bitbucket(ctx, owner, repo)
	}
	switch r.Visibility {
	case Public:
		r.RoomType = Discoverable
	case Unknown:
		r.Error = "Could not determine visibility — defaulting to invite room"
	}
	return r
}

func providerOf(canonicalKey string) string {
	host, _, _ := strings.Cut(canonicalKey, "/")
	switch strings.ToLower(host) {
	case "github.com":
		return GitHub
	case "gitlab.com":
		return GitLab
	case "bitbucket.org":
		return Bitbucket
	}
	return Unknown
}

// github: an anonymous GET of the repository answers 200 only when it is
// public; 404 for a private one.
func (c Checker) github(ctx context.Context, owner, repo string) string {
	status, _ := c.get(ctx, orDefault(c.GitHubAPI, DefaultGitHubAPI)+"/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(repo),
		map[string]string{"Accept": "application/vnd.github+json"})
	switch status {
	case http.StatusOK:
		return Public
	case http.StatusNotFound:
		return Private
	}
	return Unknown
}

// gitlab: the project says its visibility; internal counts as private,
// since outsiders cannot see it.
func (c Checker) gitlab(ctx context.Context, owner, repo string) string {
	status, body := c.get(ctx, orDefault(c.GitLabAPI, DefaultGitLabAPI)+"/api/v4/projects/"+url.PathEscape(owner+"/"+repo), nil)
	if status == http.StatusNotFound {
		return Private
	}
	var p struct {
		Visibility string `json:"visibility"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
		return Unknown
	}
	switch p.Visibility {
	case "public":
		return Public
	case "internal", "private":
		return Private
	}
	return Unknown
}

// bitbucket: the repository says whether it is private.
func (c Checker) bitbucket(ctx context.Context, owner, repo string) string {
	status, body := c.get(ctx, orDefault(c.BitbucketAPI, DefaultBitbucketAPI)+"/2.0/repositories/"+url.PathEscape(owner)+"/"+url.PathEscape(repo), nil)
	if status == http.StatusNotFound {
		return Private
	}
	var p struct {
		IsPrivate *bool `json:"is_private"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &p) != nil || p.IsPrivate == nil {
		return Unknown
	}
	if *p.IsPrivate {
		return Private
	}
	return Public
}

// get fetches u anonymously: its status and body, or 0 when there was no
// usable answer (the caller reads that as unknown).
func (c Checker) get(ctx context.Context, u string, headers map[string]string) (int, []byte) {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("User-Agent", "letagents-mcp")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, body
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return strings.TrimRight(v, "/")
}
