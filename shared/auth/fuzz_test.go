package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
)

// FuzzReadCredential feeds ReadCredential arbitrary raw Authorization and
// Cookie header values. It must never panic; a failure is always an
// Unauthorized *letagents.Error; whatever it accepts is a plausible token.
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
		c, err := auth.ReadCredential(r)
		if err != nil {
			var e *letagents.Error
			if !errors.As(err, &e) || e.Code != letagents.Unauthorized {
				t.Fatalf("ReadCredential(Authorization %q, Cookie %q) error = %#v; want an Unauthorized *letagents.Error", authorization, cookie, err)
			}
			return
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
