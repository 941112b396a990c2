package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/testclock"
)

const testAppID = "4242"

// newApp is an App client of a fake GitHub with the App installed as
// installation 77 on acme/widgets, both on one test clock.
func newApp(t *testing.T) (*github.App, *githubtest.Server, *testclock.Clock) {
	t.Helper()
	gh := githubtest.New(t)
	clock := testclock.New(time.Now().Truncate(time.Second))
	key := githubtest.AppKey(t)
	gh.SetApp(testAppID, &key.PublicKey, clock.Now)
	gh.AddRepo("acme/widgets", false)
	gh.AddInstallation(77, "acme/widgets")
	return github.NewApp(github.AppConfig{ID: testAppID, Key: key, Slug: "letagents-test", APIURL: gh.URL, Now: clock.Now}), gh, clock
}

// The JWT is RS256 over header and claims, issued a minute back and
// living under ten minutes, by the App's id: what the fake checks too.
func TestAppJWT(t *testing.T) {
	t.Parallel()
	app, _, clock := newApp(t)
	jwt, err := app.JWT()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("JWT has %d parts, want 3", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Iat, Exp int64
		Iss      string
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	now := clock.Now().Unix()
	if claims.Iss != testAppID || claims.Iat != now-60 || claims.Exp <= now || claims.Exp-claims.Iat > 600 {
		t.Errorf("claims = %+v at %d, want iss %s, iat 60 s back, exp ahead and within 10 min of iat", claims, now, testAppID)
	}
}

// A JWT the fake cannot verify with the App's key, or one out of its
// time, gets no token: ErrUnauthorized.
func TestAppJWTRefused(t *testing.T) {
	t.Parallel()
	// Any other key will do; a small one is quick to make.
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(gh *githubtest.Server, clock *testclock.Clock)
	}{
		{"another app's id", func(gh *githubtest.Server, clock *testclock.Clock) {
			gh.SetApp("999", &githubtest.AppKey(t).PublicKey, clock.Now)
		}},
		{"GitHub's clock ten minutes ahead", func(gh *githubtest.Server, clock *testclock.Clock) {
			gh.SetApp(testAppID, &githubtest.AppKey(t).PublicKey, func() time.Time { return clock.Now().Add(10 * time.Minute) })
		}},
		{"signed with another key", func(gh *githubtest.Server, clock *testclock.Clock) {
			gh.SetApp(testAppID, &other.PublicKey, clock.Now)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app, gh, clock := newApp(t)
			tt.setup(gh, clock)
			_, err := app.InstallationToken(context.Background(), 77)
			if !errors.Is(err, github.ErrUnauthorized) {
				t.Errorf("InstallationToken = %v, want ErrUnauthorized", err)
			}
		})
	}
}

// An installation token is fetched once and served from the cache while
// it has more than TokenRefreshMargin to live, however many ask at once;
// then it is fetched anew.
func TestInstallationTokenCache(t *testing.T) {
	t.Parallel()
	app, gh, clock := newApp(t)
	ctx := context.Background()
	const callers = 16
	got := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := app.InstallationToken(ctx, 77)
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		}()
	}
	wg.Wait()
	if n := gh.TokensMinted(77); n != 1 {
		t.Fatalf("%d concurrent callers minted %d tokens, want 1", callers, n)
	}
	for _, tok := range got[1:] {
		if tok != got[0] || !strings.HasPrefix(tok, "ghs_") {
			t.Fatalf("callers got %q and %q, want one installation token", got[0], tok)
		}
	}
	steps := []struct {
		advance time.Duration
		minted  int
		same    bool
	}{
		{githubtest.InstallationTokenLifetime - github.TokenRefreshMargin - time.Second, 1, true},
		{time.Second, 2, false}, // within the margin of its expiry: replaced
		{time.Minute, 2, true},
	}
	last := got[0]
	for i, st := range steps {
		clock.Advance(st.advance)
		tok, err := app.InstallationToken(ctx, 77)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if n := gh.TokensMinted(77); n != st.minted || (tok == last) != st.same {
			t.Errorf("step %d: minted %d (want %d), same token %v (want %v)", i, n, st.minted, tok == last, st.same)
		}
		last = tok
	}
}

// The App writes check runs, comments and closes pull requests with its
// installation's token; a repository the installation does not cover is
// refused as GitHub refuses it.
func TestAppWrites(t *testing.T) {
	t.Parallel()
	app, gh, _ := newApp(t)
	ctx := context.Background()
	run := github.CheckRun{Name: "letagents-lease", HeadSHA: "abc123", Conclusion: "failure", Title: "LetAgents lease required",
		Summary: "no lease", Text: "no lease at all", DetailsURL: "https://letagents.example/in/x"}
	if err := app.CreateCheckRun(ctx, 77, "acme/widgets", run); err != nil {
		t.Fatal(err)
	}
	if err := app.CommentOnIssue(ctx, 77, "acme/widgets", 12, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := app.ClosePullRequest(ctx, 77, "acme/widgets", 12); err != nil {
		t.Fatal(err)
	}
	want := githubtest.CheckRun{Repo: "acme/widgets", Name: run.Name, HeadSHA: run.HeadSHA, Status: "completed", Conclusion: "failure",
		DetailsURL: run.DetailsURL, Title: run.Title, Summary: run.Summary, Text: run.Text}
	if runs := gh.CheckRuns("acme/widgets"); len(runs) != 1 || runs[0] != want {
		t.Errorf("check runs = %+v, want [%+v]", runs, want)
	}
	if c := gh.Comments("acme/widgets"); len(c) != 1 || c[0].Number != 12 || c[0].Body != "hello" {
		t.Errorf("comments = %+v, want one on #12", c)
	}
	if closed := gh.ClosedPulls("acme/widgets"); len(closed) != 1 || closed[0] != 12 {
		t.Errorf("closed = %v, want [12]", closed)
	}
	if n := gh.TokensMinted(77); n != 1 {
		t.Errorf("three writes minted %d tokens, want 1", n)
	}
	gh.AddRepo("acme/other", false)
	if err := app.CreateCheckRun(ctx, 77, "acme/other", run); !errors.Is(err, github.ErrUnavailable) {
		t.Errorf("check run on a repository outside the installation = %v, want ErrUnavailable (403)", err)
	}
	if _, err := app.InstallationToken(ctx, 78); !errors.Is(err, github.ErrNotFound) {
		t.Errorf("token of an unknown installation = %v, want ErrNotFound", err)
	}
}

// The private key is read as GitHub hands it out (PKCS#1), as PKCS#8,
// and with its line breaks escaped as an environment variable may carry
// them; anything else is refused.
func TestParsePrivateKey(t *testing.T) {
	t.Parallel()
	key := githubtest.AppKey(t)
	pkcs1 := githubtest.AppKeyPEM(t)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"pkcs1", pkcs1, true},
		{"pkcs8", pkcs8, true},
		{"escaped line breaks", strings.ReplaceAll(pkcs1, "\n", `\n`), true},
		{"not PEM", "hello", false},
		{"empty", "", false},
		{"certificate-shaped garbage", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := github.ParsePrivateKey(tt.text)
			if (err == nil) != tt.ok {
				t.Fatalf("ParsePrivateKey err = %v, want ok %v", err, tt.ok)
			}
			if tt.ok && !got.Equal(key) {
				t.Error("ParsePrivateKey read another key")
			}
		})
	}
}
