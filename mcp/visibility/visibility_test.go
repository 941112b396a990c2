package visibility_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/letagents/letagents-go/mcp/visibility"
	"github.com/letagents/letagents-go/shared/github/githubtest"
)

// answer is what a fake host says to one path.
type answer struct {
	status int
	body   string
}

// newHosts is a fake GitLab and Bitbucket: each path answers its answer,
// every other path 404.
func newHosts(t *testing.T, answers map[string]answer) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCheck(t *testing.T) {
	t.Parallel()
	gh := githubtest.New(t)
	gh.AddRepo("acme/open", false)
	gh.AddRepo("acme/secret", true)
	other := newHosts(t, map[string]answer{
		"/api/v4/projects/team%2Fapp":         {200, `{"visibility": "public"}`},
		"/api/v4/projects/team%2Fsub%2Finner": {200, `{"visibility": "internal"}`},
		"/api/v4/projects/team%2Fodd":         {200, `{"visibility": "secretive"}`},
		"/api/v4/projects/team%2Fdown":        {503, `oops`},
		"/2.0/repositories/team/app":          {200, `{"is_private": false}`},
		"/2.0/repositories/team/closed":       {200, `{"is_private": true}`},
		"/2.0/repositories/team/vague":        {200, `{}`},
	})
	c := visibility.Checker{GitHubAPI: gh.Config().APIURL, GitLabAPI: other.URL + "/", BitbucketAPI: other.URL}
	tests := []struct {
		key                     string
		provider, vis, roomType string
		wantError               bool
	}{
		{"github.com/acme/open", "github", "public", "discoverable", false},
		{"github.com/acme/secret", "github", "private", "invite", false},
		{"github.com/acme/missing", "github", "private", "invite", false},
		{"gitlab.com/team/app", "gitlab", "public", "discoverable", false},
		{"gitlab.com/team/sub/inner", "gitlab", "private", "invite", false},
		{"gitlab.com/team/gone", "gitlab", "private", "invite", false},
		{"gitlab.com/team/odd", "gitlab", "unknown", "invite", true},
		{"gitlab.com/team/down", "gitlab", "unknown", "invite", true},
		{"bitbucket.org/team/app", "bitbucket", "public", "discoverable", false},
		{"bitbucket.org/team/closed", "bitbucket", "private", "invite", false},
		{"bitbucket.org/team/vague", "bitbucket", "unknown", "invite", true},
		{"git.example.com/team/app", "unknown", "unknown", "invite", true},
		{"github.com/acme", "github", "unknown", "invite", true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()
			got := c.Check(context.Background(), tt.key)
			if got.CanonicalKey != tt.key || got.Provider != tt.provider || got.Visibility != tt.vis || got.RoomType != tt.roomType ||
				(got.Error != "") != tt.wantError {
				t.Errorf("Check(%q) = %+v; want provider %s, visibility %s, room type %s, error %v",
					tt.key, got, tt.provider, tt.vis, tt.roomType, tt.wantError)
			}
		})
	}
}

// A host that cannot answer (rate limited, or gone) leaves the
// visibility unknown, never an error of the caller's.
func TestCheckHostUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int // the fake GitHub's answer to every API call; 0: no server at all
	}{
		{"rate limited", http.StatusForbidden},
		{"server error", http.StatusBadGateway},
		{"unreachable", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gh := githubtest.New(t)
			gh.AddRepo("acme/open", false)
			api := gh.Config().APIURL
			if tt.status != 0 {
				gh.FailAPI(tt.status)
			} else {
				closed := httptest.NewServer(http.NotFoundHandler())
				api = closed.URL
				closed.Close()
			}
			got := visibility.Checker{GitHubAPI: api}.Check(context.Background(), "github.com/acme/open")
			if got.Visibility != visibility.Unknown || got.RoomType != visibility.Invite || got.Error == "" {
				t.Errorf("Check = %+v; want unknown, invite, with an error", got)
			}
		})
	}
}
