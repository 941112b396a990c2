package githubhook_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/githubhook"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	secret, body := []byte("s3cret"), []byte(`{"action":"opened"}`)
	good := githubhook.Sign(secret, body)
	tests := []struct {
		name, header string
		secret, body []byte
		want         bool
	}{
		{"good", good, secret, body, true},
		{"empty header", "", secret, body, false},
		{"no prefix", strings.TrimPrefix(good, "sha256="), secret, body, false},
		{"sha1", "sha1=" + strings.TrimPrefix(good, "sha256="), secret, body, false},
		{"short", good[:len(good)-2], secret, body, false},
		{"long", good + "00", secret, body, false},
		{"upper-case hex", "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), secret, body, true},
		{"other secret", good, []byte("other"), body, false},
		{"no secret", githubhook.Sign(nil, body), nil, body, false},
		{"body changed", good, secret, append(body, ' '), false},
	}
	for _, tt := range tests {
		if got := githubhook.Verify(tt.secret, tt.body, tt.header); got != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzVerify: no header but the body's own signature verifies, and
// nothing panics.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("k"), []byte("{}"), "sha256=00")
	f.Add([]byte("k"), []byte(""), "")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		ok := githubhook.Verify(secret, body, header)
		if len(secret) > 0 && ok != strings.EqualFold(header, githubhook.Sign(secret, body)) {
			t.Errorf("Verify(%q, %q, %q) = %v", secret, body, header, ok)
		}
	})
}

// FuzzParse: any body either parses or is an error, never a panic, and an
// event it makes names its repo room and says what happened in one line.
func FuzzParse(f *testing.F) {
	pr, _ := json.Marshal(map[string]any{"action": "opened", "repository": map[string]any{"full_name": "a/b"},
		"pull_request": map[string]any{"number": 1, "title": "t", "head": map[string]any{"ref": "x"}}})
	f.Add("pull_request", pr)
	f.Add("push", []byte(`{"ref":"refs/heads/main","after":"1","repository":{"full_name":"a/b","default_branch":"main"}}`))
	f.Add("check_run", []byte(`{"action":"completed","repository":{"full_name":"a/b"},"check_run":{"id":1}}`))
	f.Add("issue_comment", []byte(`null`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		d, err := githubhook.Parse(name, body)
		if err != nil || d.Event == nil {
			return
		}
		if d.Event.RoomID != d.RoomID || !strings.HasPrefix(d.RoomID, "github.com/") || d.Event.Line == "" || strings.ContainsAny(d.Event.Line, "\r\n") {
			t.Errorf("Parse(%q, %q) = %+v", name, body, d.Event)
		}
	})
}

// An installation's deliveries say which repositories the App covers
// now and which it no longer does.
func TestParseInstallation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, event    string
		payload        map[string]any
		action         string
		added, removed []string
	}{
		{"created", githubhook.EventInstallation, githubtest.InstallationEvent("created", 77, "acme", "acme/widgets", "acme/Gears"),
			"created", []string{"github.com/acme/widgets", "github.com/acme/gears"}, nil},
		{"deleted", githubhook.EventInstallation, githubtest.InstallationEvent("deleted", 77, "acme", "acme/widgets"), "deleted", nil, nil},
		{"suspend", githubhook.EventInstallation, githubtest.InstallationEvent("suspend", 77, "acme"), "suspend", nil, nil},
		{"added", githubhook.EventInstallationRepositories, githubtest.InstallationReposEvent("added", 77, "acme", "acme/widgets"),
			"added", []string{"github.com/acme/widgets"}, nil},
		{"removed", githubhook.EventInstallationRepositories, githubtest.InstallationReposEvent("removed", 77, "acme", "acme/widgets"),
			"removed", nil, []string{"github.com/acme/widgets"}},
	}
	rooms := func(rs []githubhook.Repository) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.RoomID)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, _ := json.Marshal(tt.payload)
			d, err := githubhook.Parse(tt.event, body)
			if err != nil {
				t.Fatal(err)
			}
			c := d.Installation
			if c == nil || c.ID != 77 || c.Action != tt.action || c.Account != "acme" || c.Selection != "selected" || d.Event != nil {
				t.Fatalf("Parse = %+v, installation %+v", d, c)
			}
			if got := rooms(c.Added); !slices.Equal(got, tt.added) {
				t.Errorf("added = %v, want %v", got, tt.added)
			}
			if got := rooms(c.Removed); !slices.Equal(got, tt.removed) {
				t.Errorf("removed = %v, want %v", got, tt.removed)
			}
		})
	}
	for _, bad := range []string{`{"action":"created"}`, `{"action":"added","installation":{"id":7},"repositories_added":[{"full_name":"nope"}]}`} {
		if _, err := githubhook.Parse(githubhook.EventInstallationRepositories, []byte(bad)); err == nil {
			t.Errorf("Parse(%s) took it", bad)
		}
	}
}
