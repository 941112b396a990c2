package github_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/letagents/letagents-go/shared/github"
)

const (
	testID     = "the-client-id"
	testSecret = "s3cr3t-client-secret"
	testToken  = "gho_T0KENT0KENT0KEN"
)

// seen is what the fake server recorded of one request.
type seen struct {
	method  string
	path    string // decoded
	rawPath string // as sent, "" when it equals path
	query   url.Values
	header  http.Header
	form    url.Values // the decoded request body
}

// server is a plain httptest server answering every request with one canned
// answer and recording what it received.
type server struct {
	url string
	mu  sync.Mutex
	got []seen
}

// newServer starts a server answering status and body (JSON).
func newServer(t *testing.T, status int, body string) *server {
	t.Helper()
	return newServerFunc(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// newServerFunc starts a server answering with h after recording the request.
func newServerFunc(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		s.mu.Lock()
		s.got = append(s.got, seen{
			method:  r.Method,
			path:    r.URL.Path,
			rawPath: r.URL.RawPath,
			query:   r.URL.Query(),
			header:  r.Header.Clone(),
			form:    form,
		})
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// client returns a client of the test app pointed at s.
func (s *server) client() *github.Client {
	return github.New(github.Config{ClientID: testID, ClientSecret: testSecret, OAuthURL: s.url, APIURL: s.url})
}

// last returns the most recent request, failing the test when there was none.
func (s *server) last(t *testing.T) seen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		t.Fatal("the server received no request")
	}
	return s.got[len(s.got)-1]
}

// count returns how many requests the server received.
func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// checkForm fails the test unless form holds exactly want.
func checkForm(t *testing.T, form url.Values, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := form.Get(k); got != v {
			t.Errorf("form %s = %q, want %q", k, got, v)
		}
	}
	for k := range form {
		if _, ok := want[k]; !ok {
			t.Errorf("form has unexpected field %s=%q", k, form.Get(k))
		}
	}
}

// checkHeader fails the test unless h has each of want.
func checkHeader(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

// roundTripFunc lets a test see requests without any network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
