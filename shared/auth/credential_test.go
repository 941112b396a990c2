package auth_test

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
)

// token64 has the shape of a token we mint.
const token64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// credentialRequest builds a GET request carrying exactly the given raw
// Authorization and Cookie header values (nil for no header at all), set
// directly so that nothing on the way normalises or drops them.
func credentialRequest(t testing.TB, authorization, cookie []string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if authorization != nil {
		r.Header["Authorization"] = authorization
	}
	if cookie != nil {
		r.Header["Cookie"] = cookie
	}
	return r
}

func TestReadCredential(t *testing.T) {
	t.Parallel()
	long256 := strings.Repeat("a", 256)
	long300 := strings.Repeat("a", 300)
	tests := []struct {
		name          string
		authorization []string // nil: no header
		cookie        []string // nil: no header
		want          auth.Credential
	}{
		{name: "nothing", want: auth.Credential{}},
		{name: "bearer", authorization: []string{"Bearer abc"}, want: auth.Credential{Bearer: "abc"}},
		{name: "bearer, our token shape", authorization: []string{"Bearer " + token64}, want: auth.Credential{Bearer: token64}},
		{name: "scheme in lower case", authorization: []string{"bearer abc"}, want: auth.Credential{Bearer: "abc"}},
		{name: "scheme in upper case", authorization: []string{"BEARER abc"}, want: auth.Credential{Bearer: "abc"}},
		{name: "extra spaces", authorization: []string{"Bearer   abc  "}, want: auth.Credential{Bearer: "abc"}},
		{name: "leading spaces", authorization: []string{"  Bearer abc"}, want: auth.Credential{Bearer: "abc"}},
		{name: "token of 256 bytes", authorization: []string{"Bearer " + long256}, want: auth.Credential{Bearer: long256}},
		{name: "token of printable punctuation", authorization: []string{"Bearer a.b-c_d~e!f"}, want: auth.Credential{Bearer: "a.b-c_d~e!f"}},
		{name: "basic", authorization: []string{"Basic abc"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "token scheme", authorization: []string{"Token abc"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "bearer without token", authorization: []string{"Bearer"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "bearer and a space", authorization: []string{"Bearer "}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "bearer and spaces", authorization: []string{"Bearer     "}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "token without scheme", authorization: []string{"abc"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "empty header", authorization: []string{""}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "tab after scheme", authorization: []string{"Bearer\tabc"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "two headers", authorization: []string{"Bearer abc", "Bearer def"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "two identical headers", authorization: []string{"Bearer abc", "Bearer abc"}, want: auth.Credential{Ignored: auth.IgnoredScheme}},
		{name: "token of 257 bytes", authorization: []string{"Bearer " + long256 + "a"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token of 300 bytes", authorization: []string{"Bearer " + long300}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token with a space", authorization: []string{"Bearer abc def"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token with a control character", authorization: []string{"Bearer ab\x01c"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token with DEL", authorization: []string{"Bearer ab\x7fc"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token with NUL", authorization: []string{"Bearer ab\x00c"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token with non-ASCII", authorization: []string{"Bearer abcé"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},
		{name: "token with a tab inside", authorization: []string{"Bearer ab\tc"}, want: auth.Credential{Ignored: auth.IgnoredUnknown}},

		{name: "session cookie", cookie: []string{"letagents_session=" + token64}, want: auth.Credential{Session: token64}},
		{name: "session among other cookies", cookie: []string{"theme=dark; letagents_session=abc; x=y"}, want: auth.Credential{Session: "abc"}},
		{name: "session in a second Cookie header", cookie: []string{"theme=dark", "letagents_session=abc"}, want: auth.Credential{Session: "abc"}},
		{name: "other cookies only", cookie: []string{"theme=dark; x=y"}, want: auth.Credential{}},
		{name: "empty session cookie", cookie: []string{"letagents_session="}, want: auth.Credential{}},
		{name: "session cookie with a space", cookie: []string{"letagents_session=a b"}, want: auth.Credential{}},
		{name: "session cookie with a quote", cookie: []string{`letagents_session=a"b`}, want: auth.Credential{}},
		{name: "session cookie with a backslash", cookie: []string{`letagents_session=a\b`}, want: auth.Credential{}},
		{name: "session cookie with non-ASCII", cookie: []string{"letagents_session=abcé"}, want: auth.Credential{}},
		{name: "session cookie of 300 bytes", cookie: []string{"letagents_session=" + long300}, want: auth.Credential{}},
		{name: "session cookie of 256 bytes", cookie: []string{"letagents_session=" + long256}, want: auth.Credential{Session: long256}},
		{name: "cookie name in another case", cookie: []string{"LETAGENTS_SESSION=abc"}, want: auth.Credential{}},

		{name: "both", authorization: []string{"Bearer abc"}, cookie: []string{"letagents_session=def"}, want: auth.Credential{Session: "def", Bearer: "abc"}},
		{name: "bearer and a malformed cookie", authorization: []string{"Bearer abc"}, cookie: []string{"letagents_session=a b"}, want: auth.Credential{Bearer: "abc"}},
		{name: "malformed header and a good cookie", authorization: []string{"Basic abc"}, cookie: []string{"letagents_session=def"}, want: auth.Credential{Session: "def", Ignored: auth.IgnoredScheme}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := auth.ReadCredential(credentialRequest(t, tt.authorization, tt.cookie))
			if got != tt.want {
				t.Errorf("ReadCredential(Authorization %q, Cookie %q) = %+v; want %+v", tt.authorization, tt.cookie, got, tt.want)
			}
		})
	}
}

// TestNotSignedIn pins the refusal of an action that needs an account: a
// caller whose token was ignored hears that the token is at fault.
func TestNotSignedIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ignored, wantReason, wantMessage string
	}{
		{"", "NOT_AUTHENTICATED", "Authentication required"},
		{auth.IgnoredUnknown, "TOKEN_INVALID", "Invalid or revoked token"},
		{auth.IgnoredScheme, "TOKEN_INVALID", `Authorization must be "Bearer <token>"`},
	}
	for _, tt := range tests {
		err := auth.Identity{Ignored: tt.ignored}.NotSignedIn("Authentication required")
		var e *letagents.Error
		if !errors.As(err, &e) || e.Kind != letagents.Unauthorized || e.Code != tt.wantReason || e.Message != tt.wantMessage {
			t.Errorf("Identity{Ignored: %q}.NotSignedIn = %#v; want Unauthorized %s %q", tt.ignored, err, tt.wantReason, tt.wantMessage)
		}
	}
}

func TestNewToken(t *testing.T) {
	t.Parallel()
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	const n = 1000
	seen := make(map[string]bool, n)
	for range n {
		tok := auth.NewToken()
		if !hex64.MatchString(tok) {
			t.Fatalf("NewToken() = %q; want 64 lower-case hex characters", tok)
		}
		if seen[tok] {
			t.Fatalf("NewToken() returned %q twice in %d calls", tok, n)
		}
		seen[tok] = true
	}
}

func TestNewTokenIsReadable(t *testing.T) {
	t.Parallel()
	// A minted token must pass ReadCredential's checks, both ways it can
	// be presented.
	tok := auth.NewToken()
	got := auth.ReadCredential(credentialRequest(t, []string{"Bearer " + tok}, []string{auth.SessionCookie + "=" + tok}))
	if want := (auth.Credential{Session: tok, Bearer: tok}); got != want {
		t.Errorf("ReadCredential(a fresh token) = %+v; want %+v", got, want)
	}
}

func TestHashToken(t *testing.T) {
	t.Parallel()
	tests := []string{"", "abc", token64, strings.Repeat("x", 300)}
	for _, tok := range tests {
		got := auth.HashToken(tok)
		want := sha256.Sum256([]byte(tok))
		if len(got) != 32 || string(got) != string(want[:]) {
			t.Errorf("HashToken(%q) = %x (%d bytes); want %x (32 bytes)", tok, got, len(got), want)
		}
	}
	if a, b := auth.HashToken("a"), auth.HashToken("b"); string(a) == string(b) {
		t.Errorf("HashToken(%q) = HashToken(%q) = %x", "a", "b", a)
	}
}
