package hook

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/testwait"
)

// TestPost: the hook's own HTTP/1.1 exchange against net/http's server,
// plain and over TLS, with each way a body can be sized.
func TestPost(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100<<10) // past net/http's buffer: sent chunked
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Test") != "yes" {
			http.Error(w, "bad request shape", http.StatusTeapot)
			return
		}
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("Content-Length", "") // sized by net/http
			w.Write(body)
		case "/big":
			w.Write([]byte(big))
		case "/fail":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": "no", "code": "AGENT_SESSION_ENDED"}`))
		}
	})
	plain, secure := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	t.Cleanup(plain.Close)
	t.Cleanup(secure.Close)
	roots := secure.Client().Transport.(*http.Transport).TLSClientConfig
	tests := []struct {
		name, url  string
		tls        *tls.Config
		wantStatus int
		wantBody   string
	}{
		{"sized", plain.URL + "/echo?x=1", nil, 200, `{"a":1}`},
		{"chunked", plain.URL + "/big", nil, 200, big},
		{"an error answer", plain.URL + "/fail", nil, 401, `{"error": "no", "code": "AGENT_SESSION_ENDED"}`},
		{"over TLS", secure.URL + "/echo", roots, 200, `{"a":1}`},
		{"over TLS, chunked", secure.URL + "/big", roots, 200, big},
	}
	for _, tt := range tests {
		status, body, err := post(context.Background(), tt.url, [][2]string{{"X-Test", "yes"}}, []byte(`{"a":1}`), tt.tls)
		if err != nil || status != tt.wantStatus || string(body) != tt.wantBody {
			t.Errorf("%s: post = %d, %.60q, %v; want %d, %.60q", tt.name, status, body, err, tt.wantStatus, tt.wantBody)
		}
	}
	if _, _, err := post(context.Background(), secure.URL+"/echo", nil, nil, nil); err == nil {
		t.Error("post to a server whose certificate is not trusted succeeded")
	}
	if _, _, err := post(context.Background(), "ftp://example.com/x", nil, nil, nil); err == nil {
		t.Error("post to an ftp URL succeeded")
	}
}

// TestPostEndsWithItsContext: a server that never answers holds post
// only until its context ends.
func TestPostEndsWithItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() {
		close(release)
		hang.Close()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := post(ctx, hang.URL, nil, []byte(`{}`), nil)
		done <- err
	}()
	cancel()
	if err := testwait.Recv(t, "post to give up", done); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("post = %v; want the context's error", err)
	}
}
