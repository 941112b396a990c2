package githubhook_test

import (
	"encoding/json"
	"strings"
	"testing"

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
