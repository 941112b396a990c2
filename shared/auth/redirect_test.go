package auth_test

import (
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/auth"
)

func TestSafeRedirect(t *testing.T) {
	t.Parallel()
	at2048 := "/" + strings.Repeat("a", 2047)
	tests := []struct {
		name, in, want string
	}{
		// Paths on this site are kept as they are.
		{"root", "/", "/"},
		{"room with query and fragment", "/in/github.com/o/r?x=1#f", "/in/github.com/o/r?x=1#f"},
		{"query only", "/?next=//evil.example", "/?next=//evil.example"},
		{"colon in a later segment", "/x:y", "/x:y"},
		{"dot segments", "/a/../b", "/a/../b"},
		{"exactly 2048 bytes", at2048, at2048},
		// Percent-encoded slashes stay in the path: a browser does not
		// decode them into an authority, so the target is on this site.
		{"percent-encoded slashes", "/%2F%2Fevil", "/%2F%2Fevil"},
		{"percent-encoded backslash", "/%5Cevil.example", "/%5Cevil.example"},

		// Anything else goes home.
		{"empty", "", "/"},
		{"relative path", "in/x", "/"},
		{"dot relative", "./x", "/"},
		{"scheme-relative", "//evil.example", "/"},
		{"scheme-relative with path", "//evil.example/x", "/"},
		{"backslash host", "/\\evil.example", "/"},
		{"backslash host, both", "\\\\evil.example", "/"},
		{"absolute URL", "https://evil.example/x", "/"},
		{"absolute URL without slashes", "https:evil.example", "/"},
		{"header injection", "/x\r\nSet-Cookie: a", "/"},
		{"newline", "/x\ny", "/"},
		{"tab that browsers strip into //", "/\t/evil.example", "/"},
		{"NUL", "/x\x00y", "/"},
		{"DEL", "/x\x7fy", "/"},
		{"backslash in path", "/x\\y", "/"},
		{"longer than 2048 bytes", at2048 + "a", "/"},
		{"very long", "/" + strings.Repeat("a", 10000), "/"},
		{"javascript URL", "javascript:alert(1)", "/"},
		{"data URL", "data:text/html,hi", "/"},
		{"user info", "https://user@evil.example", "/"},
		{"space first", " /x", "/"},
	}
	for _, tt := range tests {
		if got := auth.SafeRedirect(tt.in); got != tt.want {
			t.Errorf("%s: SafeRedirect(%q) = %q; want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestSafeRedirectIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"/", "/a?b=c", "//evil.example", "", "/\\x"} {
		once := auth.SafeRedirect(in)
		if twice := auth.SafeRedirect(once); twice != once {
			t.Errorf("SafeRedirect(SafeRedirect(%q)) = %q; want %q", in, twice, once)
		}
	}
}
