package githubtest_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/testclock"
)

// jwt signs claims with key under alg's name (the signature is always
// RS256), as a client of the fake might.
func jwt(t *testing.T, key *rsa.PrivateKey, alg string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signing := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}

// post sends body with the bearer token and answers the status and, for
// an access token request, the token.
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Token string `json:"token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans) // only a token request's answer has one
	return resp.StatusCode, ans.Token
}

// The fake takes an App JWT only as GitHub does: RS256 under the App's
// key, from the App, issued in the past, not expired, and living at most
// ten minutes; its installation tokens act only on the installation's
// repositories, and only for an hour.
func TestAppAuth(t *testing.T) {
	t.Parallel()
	gh := githubtest.New(t)
	clock := testclock.New(time.Now().Truncate(time.Second))
	key := githubtest.AppKey(t)
	gh.SetApp("4242", &key.PublicKey, clock.Now)
	gh.AddRepo("acme/widgets", false)
	gh.AddInstallation(77, "acme/widgets")
	now := clock.Now().Unix()
	tokens := gh.URL + "/app/installations/77/access_tokens"
	tests := []struct {
		name   string
		jwt    string
		status int
	}{
		{"good", jwt(t, key, "RS256", map[string]any{"iat": now - 60, "exp": now + 540, "iss": "4242"}), 201},
		{"numeric issuer", jwt(t, key, "RS256", map[string]any{"iat": now - 60, "exp": now + 540, "iss": 4242}), 201},
		{"too long", jwt(t, key, "RS256", map[string]any{"iat": now - 60, "exp": now + 600, "iss": "4242"}), 401},
		{"expired", jwt(t, key, "RS256", map[string]any{"iat": now - 600, "exp": now - 1, "iss": "4242"}), 401},
		{"issued in the future", jwt(t, key, "RS256", map[string]any{"iat": now + 60, "exp": now + 120, "iss": "4242"}), 401},
		{"another app", jwt(t, key, "RS256", map[string]any{"iat": now - 60, "exp": now + 540, "iss": "1"}), 401},
		{"alg none", jwt(t, key, "none", map[string]any{"iat": now - 60, "exp": now + 540, "iss": "4242"}), 401},
		{"garbage", "a.b.c", 401},
		{"none at all", "", 401},
	}
	for _, tt := range tests {
		if got, _ := post(t, tokens, tt.jwt, ""); got != tt.status {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.status)
		}
	}
	good := jwt(t, key, "RS256", map[string]any{"iat": now - 60, "exp": now + 540, "iss": "4242"})
	if got, _ := post(t, gh.URL+"/app/installations/78/access_tokens", good, ""); got != 404 {
		t.Errorf("unknown installation: %d, want 404", got)
	}
	_, tok := post(t, tokens, good, "")
	run := `{"name": "c", "head_sha": "abc", "status": "completed", "conclusion": "success"}`
	gh.AddRepo("acme/other", false)
	for _, c := range []struct {
		name, url, token, body string
		status                 int
	}{
		{"check run", gh.URL + "/repos/acme/widgets/check-runs", tok, run, 201},
		{"with the JWT", gh.URL + "/repos/acme/widgets/check-runs", good, run, 401},
		{"outside the installation", gh.URL + "/repos/acme/other/check-runs", tok, run, 403},
		{"no head_sha", gh.URL + "/repos/acme/widgets/check-runs", tok, `{"name": "c"}`, 422},
		{"comment", gh.URL + "/repos/acme/widgets/issues/3/comments", tok, `{"body": "hi"}`, 201},
	} {
		if got, _ := post(t, c.url, c.token, c.body); got != c.status {
			t.Errorf("%s: %d, want %d", c.name, got, c.status)
		}
	}
	clock.Advance(githubtest.InstallationTokenLifetime)
	if got, _ := post(t, gh.URL+"/repos/acme/widgets/check-runs", tok, run); got != 401 {
		t.Errorf("an hour later: %d, want 401", got)
	}
	if n := len(gh.CheckRuns("acme/widgets")); n != 1 {
		t.Errorf("%d check runs recorded, want 1", n)
	}
}
