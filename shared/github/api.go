package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// User is a GitHub account.
type User struct {
	ID        int64 // stable across renames, unlike Login
	Login     string
	Name      string // "" when the user set none
	AvatarURL string
}

// Permissions are what a token's user may do in a repository.
type Permissions struct {
	Admin, Push, Pull bool
}

// Repo is what the service needs to know about a repository.
type Repo struct {
	FullName string // "owner/name" in GitHub's canonical case
	Private  bool
	// Permissions is nil when the repository was fetched without a token
	// or GitHub omitted them.
	Permissions *Permissions
}

// User returns the account token belongs to. A revoked or bad token is
// ErrUnauthorized; so is an empty or malformed one, without asking GitHub.
func (c *Client) User(ctx context.Context, token string) (User, error) {
	const op = "get user"
	if token == "" {
		return User{}, fmt.Errorf("%s: %w: no token", op, ErrUnauthorized)
	}
	var ans struct {
		ID        int64  `json:"id"`
		Login     string `json:"login"`
		Name      string `json:"name"`
		AvatarURL string `json:"avatar_url"`
	}
	if err := c.get(ctx, op, "/user", token, &ans); err != nil {
		return User{}, err
	}
	if ans.ID == 0 || ans.Login == "" {
		return User{}, unavailable(op, errors.New("GitHub answered an unusable user"))
	}
	return User{ID: ans.ID, Login: ans.Login, Name: ans.Name, AvatarURL: ans.AvatarURL}, nil
}

// Repo returns the repository owner/name as seen with token, or anonymously
// when token is "". A private repository the token may not see is
// ErrNotFound, as GitHub hides its existence; so is a name GitHub cannot
// hold (empty, "." or ".."), without asking GitHub.
func (c *Client) Repo(ctx context.Context, owner, name, token string) (Repo, error) {
	op := fmt.Sprintf("get repo %q", owner+"/"+name)
	if !validSegment(owner) || !validSegment(name) {
		return Repo{}, fmt.Errorf("%s: %w: not a repository name", op, ErrNotFound)
	}
	var ans struct {
		FullName    string `json:"full_name"`
		Private     bool   `json:"private"`
		Permissions *struct {
			Admin bool `json:"admin"`
			Push  bool `json:"push"`
			Pull  bool `json:"pull"`
		} `json:"permissions"`
	}
	path := "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
	if err := c.get(ctx, op, path, token, &ans); err != nil {
		return Repo{}, err
	}
	if ans.FullName == "" {
		return Repo{}, unavailable(op, errors.New("GitHub answered an unusable repository"))
	}
	r := Repo{FullName: ans.FullName, Private: ans.Private}
	if p := ans.Permissions; p != nil {
		r.Permissions = &Permissions{Admin: p.Admin, Push: p.Push, Pull: p.Pull}
	}
	return r, nil
}

// validSegment rejects path segments that would not name a repository but
// could, once a server cleans the path, address another API endpoint.
func validSegment(s string) bool {
	return s != "" && s != "." && s != ".."
}

// get fetches an API path and decodes the JSON answer into v.
func (c *Client) get(ctx context.Context, op, path, token string, v any) error {
	// A token with control characters can never be valid; refuse it here
	// rather than let net/http fail in a way that looks like an outage.
	if strings.ContainsFunc(token, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%s: %w: malformed token", op, ErrUnauthorized)
	}
	req, err := newRequest(ctx, op, http.MethodGet, c.apiURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	status, body, err := c.send(req, op)
	if err != nil {
		return err
	}
	switch {
	case status >= 200 && status <= 299:
	case status == http.StatusUnauthorized:
		return fmt.Errorf("%s: %w: %w", op, ErrUnauthorized, c.statusCause(status, body, []string{token}))
	case status == http.StatusNotFound:
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	default:
		// 403/429 (rate limits), 5xx, and anything GitHub is not documented
		// to send here: the caller cannot act on it but to retry later.
		return unavailable(op, c.statusCause(status, body, []string{token}))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return unavailable(op, fmt.Errorf("decode answer: %w", err))
	}
	return nil
}
