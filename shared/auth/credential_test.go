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
		wantErr       bool // an Unauthorized *letagents.Error with Reason TOKEN_INVALID
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
		{name: "basic", authorization: []string{"Basic abc"}, wantErr: true},
		{name: "token scheme", authorization: []string{"Token abc"}, wantErr: true},
		{name: "bearer without token", authorization: []string{"Bearer"}, wantErr: true},
		{name: "bearer and a space", authorization: []string{"Bearer "}, wantErr: true},
		{name: "bearer and spaces", authorization: []string{"Bearer     "}, wantErr: true},
		{name: "token without scheme", authorization: []string{"abc"}, wantErr: true},
		{name: "empty header", authorization: []string{""}, wantErr: true},
		{name: "tab after scheme", authorization: []string{"Bearer\tabc"}, wantErr: true},
		{name: "two headers", authorization: []string{"Bearer abc", "Bearer def"}, wantErr: true},
		{name: "two identical headers", authorization: []string{"Bearer abc", "Bearer abc"}, wantErr: true},
		{name: "token of 257 bytes", authorization: []string{"Bearer " + long256 + "a"}, wantErr: true},
		{name: "token of 300 bytes", authorization: []string{"Bearer " + long300}, wantErr: true},
		{name: "token with a space", authorization: []string{"Bearer abc def"}, wantErr: true},
		{name: "token with a control character", authorization: []string{"Bearer ab\x01c"}, wantErr: true},
		{name: "token with DEL", authorization: []string{"Bearer ab\x7fc"}, wantErr: true},
		{name: "token with NUL", authorization: []string{"Bearer ab\x00c"}, wantErr: true},
		{name: "token with non-ASCII", authorization: []string{"Bearer abcé"}, wantErr: true},
		{name: "token with a tab inside", authorization: []string{"Bearer ab\tc"}, wantErr: true},

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
		{name: "malformed header and a good cookie", authorization: []string{"Basic abc"}, cookie: []string{"letagents_session=def"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := auth.ReadCredential(credentialRequest(t, tt.authorization, tt.cookie))
			if tt.wantErr {
				var e *letagents.Error
				if !errors.As(err, &e) {
					t.Fatalf("ReadCredential(Authorization %q, Cookie %q) = %+v, %v; want a *letagents.Error", tt.authorization, tt.cookie, got, err)
				}
				if e.Code != letagents.Unauthorized || e.Reason != "TOKEN_INVALID" || e.Message == "" {
					t.Errorf("ReadCredential(Authorization %q) error = {Code %q, Reason %q, Message %q}; want Code %q, Reason TOKEN_INVALID and a message",
						tt.authorization, e.Code, e.Reason, e.Message, letagents.Unauthorized)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadCredential(Authorization %q, Cookie %q) error = %v; want %+v", tt.authorization, tt.cookie, err, tt.want)
			}
			if got != tt.want {
				t.Errorf("ReadCredential(Authorization %q, Cookie %q) = %+v; want %+v", tt.authorization, tt.cookie, got, tt.want)
			}
			if wantPresent := tt.want.Session != "" || tt.want.Bearer != ""; got.Present() != wantPresent {
				t.Errorf("%+v.Present() = %v; want %v", got, got.Present(), wantPresent)
			}
		})
	}
}

func TestCredentialPresent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    auth.Credential
		want bool
	}{
		{auth.Credential{}, false},
		{auth.Credential{Session: "s"}, true},
		{auth.Credential{Bearer: "b"}, true},
		{auth.Credential{Session: "s", Bearer: "b"}, true},
	}
	for _, tt := range tests {
		if got := tt.c.Present(); got != tt.want {
			t.Errorf("%+v.Present() = %v; want %v", tt.c, got, tt.want)
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
	got, err := auth.ReadCredential(credentialRequest(t, []string{"Bearer " + tok}, []string{auth.SessionCookie + "=" + tok}))
	if want := (auth.Credential{Session: tok, Bearer: tok}); err != nil || got != want {
		t.Errorf("ReadCredential(a fresh token) = %+v, %v; want %+v, nil", got, err, want)
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
