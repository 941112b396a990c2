package auth_test

import (
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/auth"
)

// FuzzReadCredential feeds ReadCredential arbitrary raw Authorization and
// Cookie header values. It must never panic; an Authorization header is
// either taken as a plausible token or ignored with a reason.
func FuzzReadCredential(f *testing.F) {
	seeds := []struct{ authorization, cookie string }{
		{"", ""},
		{"Bearer abc", ""},
		{"bearer abc", ""},
		{"Bearer   abc  ", ""},
		{"Basic abc", ""},
		{"Bearer", ""},
		{"Bearer ", ""},
		{"Token abc", ""},
		{"Bearer " + strings.Repeat("a", 300), ""},
		{"Bearer " + strings.Repeat("a", 256), ""},
		{"Bearer abc def", ""},
		{"Bearer ab\x01c", ""},
		{"Bearer abcé", ""},
		{"Bearer\tabc", ""},
		{"Bearer " + token64, "letagents_session=" + token64},
		{"", "letagents_session=abc"},
		{"", "letagents_session=a b"},
		{"", `letagents_session="abc"`},
		{"", `letagents_session=a"b`},
		{"", "theme=dark; letagents_session=abc; x=y"},
		{"", "letagents_session=" + strings.Repeat("a", 300)},
		{"Bearer abc", "letagents_session=\x00"},
	}
	for _, s := range seeds {
		f.Add(s.authorization, s.cookie)
	}
	f.Fuzz(func(t *testing.T, authorization, cookie string) {
		r := credentialRequest(t, []string{authorization}, []string{cookie})
		c := auth.ReadCredential(r)
		if (c.Bearer == "") == (c.Ignored == "") {
			t.Errorf("ReadCredential(Authorization %q) = %+v; want a Bearer or an Ignored reason, not both or neither", authorization, c)
		}
		if c.Ignored != "" && c.Ignored != auth.IgnoredScheme && c.Ignored != auth.IgnoredUnknown {
			t.Errorf("ReadCredential(Authorization %q).Ignored = %q; want %q or %q", authorization, c.Ignored, auth.IgnoredScheme, auth.IgnoredUnknown)
		}
		for field, v := range map[string]string{"Bearer": c.Bearer, "Session": c.Session} {
			if v != "" && !plausibleToken(v) {
				t.Errorf("ReadCredential(Authorization %q, Cookie %q).%s = %q; want empty or 1..256 bytes of printable ASCII without spaces", authorization, cookie, field, v)
			}
		}
		if c.Bearer != "" && !strings.Contains(authorization, c.Bearer) {
			t.Errorf("ReadCredential(Authorization %q).Bearer = %q, which the header does not contain", authorization, c.Bearer)
		}
	})
}

func plausibleToken(s string) bool {
	if len(s) < 1 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
