package github_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/letagents/letagents-go/shared/github"
)

func TestUser(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"id":42,"login":"octo","name":"Octo Cat","avatar_url":"https://a.example/42","type":"User"}`)
	got, err := s.client().User(context.Background(), testToken)
	if err != nil {
		t.Fatal(err)
	}
	if want := (github.User{ID: 42, Login: "octo", Name: "Octo Cat", AvatarURL: "https://a.example/42"}); got != want {
		t.Errorf("User = %+v, want %+v", got, want)
	}
	r := s.last(t)
	if r.method != http.MethodGet || r.path != "/user" {
		t.Errorf("request %s %s, want GET /user", r.method, r.path)
	}
	checkHeader(t, r.header, map[string]string{
		"Authorization":        "Bearer " + testToken,
		"Accept":               "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28",
	})
}

func TestUserAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  int
		body    string
		want    github.User
		wantErr error
	}{
		{"null name", 200, `{"id":7,"login":"x","name":null,"avatar_url":""}`, github.User{ID: 7, Login: "x"}, nil},
		{"id 0", 200, `{"id":0,"login":"x"}`, github.User{}, github.ErrUnavailable},
		{"no login", 200, `{"id":7,"login":""}`, github.User{}, github.ErrUnavailable},
		{"empty object", 200, `{}`, github.User{}, github.ErrUnavailable},
		{"not JSON", 200, `<html>`, github.User{}, github.ErrUnavailable},
		{"id is a string", 200, `{"id":"7","login":"x"}`, github.User{}, github.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newServer(t, tt.status, tt.body).client().User(context.Background(), testToken)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("User = %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestAPIStatuses checks the status mapping of both API calls.
func TestAPIStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		body    string
		wantErr error
	}{
		{401, `{"message":"Bad credentials"}`, github.ErrUnauthorized},
		{404, `{"message":"Not Found"}`, github.ErrNotFound},
		{403, `{"message":"API rate limit exceeded"}`, github.ErrUnavailable},
		{429, ``, github.ErrUnavailable},
		{500, `oops`, github.ErrUnavailable},
		{502, ``, github.ErrUnavailable},
		{503, `{"message":"down"}`, github.ErrUnavailable},
		{400, `{"message":"?"}`, github.ErrUnavailable},
		{418, ``, github.ErrUnavailable},
	}
	for _, tt := range tests {
		c := newServer(t, tt.status, tt.body).client()
		if _, err := c.User(context.Background(), testToken); !errors.Is(err, tt.wantErr) {
			t.Errorf("User on %d: error %v, want %v", tt.status, err, tt.wantErr)
		}
		if _, err := c.Repo(context.Background(), "o", "r", testToken); !errors.Is(err, tt.wantErr) {
			t.Errorf("Repo on %d: error %v, want %v", tt.status, err, tt.wantErr)
		}
		for _, other := range []error{github.ErrUnauthorized, github.ErrNotFound, github.ErrUnavailable} {
			_, err := c.User(context.Background(), testToken)
			if other != tt.wantErr && errors.Is(err, other) {
				t.Errorf("User on %d: error %v is also %v", tt.status, err, other)
			}
		}
	}
}

func TestUserBadTokens(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"id":1,"login":"u"}`)
	for _, tok := range []string{"", "a\nb", "tok\r\nX-Evil: 1", "t\x00"} {
		_, err := s.client().User(context.Background(), tok)
		if !errors.Is(err, github.ErrUnauthorized) {
			t.Errorf("User(%q): error %v, want ErrUnauthorized", tok, err)
		}
	}
	if n := s.count(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

func TestRepo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		owner    string
		repo     string
		token    string
		body     string
		wantPath string // as sent on the wire
		want     github.Repo
	}{
		{
			name: "anonymous", owner: "Octo", repo: "Hello", token: "",
			body:     `{"full_name":"octo/hello","private":false}`,
			wantPath: "/repos/Octo/Hello",
			want:     github.Repo{FullName: "octo/hello"},
		},
		{
			name: "with token", owner: "o", repo: "r", token: testToken,
			body:     `{"full_name":"o/r","private":true,"permissions":{"admin":false,"maintain":false,"push":true,"triage":true,"pull":true}}`,
			wantPath: "/repos/o/r",
			want:     github.Repo{FullName: "o/r", Private: true, Permissions: &github.Permissions{Push: true, Pull: true}},
		},
		{
			name: "token but no permissions", owner: "o", repo: "r", token: testToken,
			body:     `{"full_name":"o/r","private":false}`,
			wantPath: "/repos/o/r",
			want:     github.Repo{FullName: "o/r"},
		},
		{
			name: "escaped", owner: "a b", repo: "c/d?e#f", token: "",
			body:     `{"full_name":"x/y"}`,
			wantPath: "/repos/a%20b/c%2Fd%3Fe%23f",
			want:     github.Repo{FullName: "x/y"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, http.StatusOK, tt.body)
			got, err := s.client().Repo(context.Background(), tt.owner, tt.repo, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Repo = %+v (permissions %+v), want %+v (permissions %+v)", got, got.Permissions, tt.want, tt.want.Permissions)
			}
			r := s.last(t)
			path := r.rawPath
			if path == "" {
				path = r.path
			}
			if r.method != http.MethodGet || path != tt.wantPath {
				t.Errorf("request %s %s, want GET %s", r.method, path, tt.wantPath)
			}
			if len(r.query) != 0 {
				t.Errorf("query = %v, want none", r.query)
			}
			checkHeader(t, r.header, map[string]string{
				"Accept":               "application/vnd.github+json",
				"X-GitHub-Api-Version": "2022-11-28",
			})
			_, hasAuth := r.header["Authorization"]
			switch {
			case tt.token == "" && hasAuth:
				t.Errorf("Authorization header %q sent without a token", r.header.Get("Authorization"))
			case tt.token != "" && r.header.Get("Authorization") != "Bearer "+tt.token:
				t.Errorf("Authorization = %q, want Bearer token", r.header.Get("Authorization"))
			}
		})
	}
}

func TestRepoUnusable(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, `{"full_name":""}`, `[]`, `nope`} {
		_, err := newServer(t, http.StatusOK, body).client().Repo(context.Background(), "o", "r", "")
		if !errors.Is(err, github.ErrUnavailable) {
			t.Errorf("Repo answered %s: error %v, want ErrUnavailable", body, err)
		}
	}
}

// TestRepoImpossibleNames checks that names no repository can have are not
// found without asking GitHub, so "." and ".." cannot reach other endpoints.
func TestRepoImpossibleNames(t *testing.T) {
	t.Parallel()
	s := newServer(t, http.StatusOK, `{"full_name":"o/r"}`)
	tests := []struct{ owner, name string }{
		{"", "r"}, {"o", ""}, {"", ""}, {"..", "user"}, {"o", ".."}, {".", "r"}, {"o", "."},
	}
	for _, tt := range tests {
		_, err := s.client().Repo(context.Background(), tt.owner, tt.name, testToken)
		if !errors.Is(err, github.ErrNotFound) {
			t.Errorf("Repo(%q, %q): error %v, want ErrNotFound", tt.owner, tt.name, err)
		}
	}
	if n := s.count(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

// TestLongMessagesShortened checks that GitHub's text is quoted in errors on
// one line and bounded, whatever GitHub sends.
func TestLongMessagesShortened(t *testing.T) {
	t.Parallel()
	msg := strings.Repeat("é", 5000) + "\n\tend"
	_, err := newServer(t, http.StatusInternalServerError, `{"message":"`+msg+`"}`).client().User(context.Background(), testToken)
	if !errors.Is(err, github.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	if got := err.Error(); len(got) > 400 || strings.ContainsAny(got, "\n\t") || !utf8.ValidString(got) {
		t.Errorf("error is %d bytes, valid UTF-8 %v: %q; want a short single valid line", len(got), utf8.ValidString(got), got)
	}
}
