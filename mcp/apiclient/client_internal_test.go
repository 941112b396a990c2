package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/wire"
)

// silent is a server that takes requests and never answers them.
func silent(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for handlers
	return srv
}

func TestPollDeadline(t *testing.T) {
	t.Parallel()
	if got := New(Config{}).pollMargin; got != 5*time.Second {
		t.Errorf("default poll margin = %v, want 5s", got)
	}
	srv := silent(t)
	c := New(Config{APIURL: srv.URL})
	c.pollMargin = 300 * time.Millisecond // stands for the 5 s

	tests := []struct {
		name     string
		ctx      time.Duration // the caller's deadline
		min, max time.Duration
	}{
		// The upper bounds only tell a deadline that fired from the
		// minute-long one of the caller: a busy machine may be slow to
		// notice either.
		{"own deadline", time.Minute, 400 * time.Millisecond, 30 * time.Second},
		{"the caller's is sooner", 100 * time.Millisecond, 100 * time.Millisecond, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// start is read before the deadline is set, so that the
			// deadline can never fall sooner than start+tt.ctx.
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), tt.ctx)
			defer cancel()
			_, err := c.Poll(ctx, "room", "", 100*time.Millisecond, 0)
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Poll of a silent server: %v, want it to wrap context.DeadlineExceeded", err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "GET /rooms/room/messages/poll: ") {
				t.Errorf("error %q, want it to name the method and path", err)
			}
			if took < tt.min || took > tt.max {
				t.Errorf("Poll gave up after %v, want %v to %v", took, tt.min, tt.max)
			}
		})
	}
}

func TestPollDeadlineLength(t *testing.T) {
	t.Parallel()
	tests := []struct {
		timeout, want time.Duration
	}{
		{0, 5 * time.Second},
		{100 * time.Millisecond, 5100 * time.Millisecond},
		{30 * time.Second, 35 * time.Second},
		{120 * time.Second, 125 * time.Second},
		{121 * time.Second, 246 * time.Second},
	}
	for _, tt := range tests {
		if got := pollDeadline(tt.timeout, pollMargin); got != tt.want {
			t.Errorf("pollDeadline(%v) = %v, want %v", tt.timeout, got, tt.want)
		}
	}
}

func TestMissingRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"our 404", &APIError{Status: 404, Body: wire.Error{Error: "Not Found"}}, true},
		{"our 405", &APIError{Status: 405, Body: wire.Error{Error: "Method Not Allowed"}}, true},
		{"express text", &APIError{Status: 404, Raw: "Cannot POST /rooms/x/join"}, true},
		{"express get", &APIError{Status: 404, Raw: "Cannot GET /rooms/x/messages\n"}, true},
		{"express page", &APIError{Status: 404, Raw: "<html><body><pre>Cannot POST /rooms/x/join</pre></body></html>"}, true},
		{"api gateway", &APIError{Status: 404, Body: wire.Error{Message: "Not Found"}}, true},
		{"wrapped", fmt.Errorf("join: %w", &APIError{Status: 404, Body: wire.Error{Error: "Not Found"}}), true},
		{"room not found", &APIError{Status: 404, Body: wire.Error{Error: "Room not found"}}, false},
		{"lower case", &APIError{Status: 404, Body: wire.Error{Error: "not found"}}, false},
		{"go's text", &APIError{Status: 404, Raw: "404 page not found"}, false},
		{"other status", &APIError{Status: 400, Body: wire.Error{Error: "Not Found"}}, false},
		{"express as 500", &APIError{Status: 500, Raw: "Cannot POST /x"}, false},
		{"network", context.DeadlineExceeded, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := missingRoute(tt.err); got != tt.want {
			t.Errorf("%s: missingRoute(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestRoomPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, want string
	}{
		{"FEH7-YWH4-ZYT3", "FEH7-YWH4-ZYT3"},
		{"github.com/o/r", "github.com/o/r"},
		{"git-room:github.com:o/r:branch:Zm9v", "git-room:github.com:o/r:branch:Zm9v"},
		{"team room", "team%20room"},
		{"a?b#c/d%e", "a%3Fb%23c/d%25e"},
		// Deeper than the gateway's routes: one segment.
		{"gitlab.com/group/sub/proj", "gitlab.com%2Fgroup%2Fsub%2Fproj"},
	}
	for _, tt := range tests {
		if got, err := roomPath(tt.id); err != nil || got != tt.want {
			t.Errorf("roomPath(%q) = %q, %v; want %q", tt.id, got, err, tt.want)
		}
	}
	if _, err := roomPath(""); err == nil {
		t.Error(`roomPath("") succeeded, want an error`)
	}
}

func TestAPIErrorString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  APIError
		want string
	}{
		{APIError{Method: "POST", Path: "/rooms/x/join", Status: 401,
			Body: wire.Error{Error: "auth_required", Message: "Sign in to join", Code: "NOT_AUTHENTICATED"}},
			"POST /rooms/x/join: 401 auth_required: Sign in to join (NOT_AUTHENTICATED)"},
		{APIError{Method: "GET", Path: "/auth/session", Status: 401, Body: wire.Error{Error: "Invalid token", Code: "TOKEN_INVALID"}},
			"GET /auth/session: 401 Invalid token (TOKEN_INVALID)"},
		{APIError{Method: "GET", Path: "/x", Status: 502, Raw: "<html><pre>Bad gateway</pre></html>"},
			"GET /x: 502 Bad gateway"},
		{APIError{Method: "GET", Path: "/x", Status: 503}, "GET /x: 503 Service Unavailable"},
		{APIError{Method: "GET", Path: "/x", Status: 404, Body: wire.Error{Message: "Not Found"}}, "GET /x: 404 Not Found"},
		{APIError{Method: "GET", Path: "/x", Status: 500, Raw: strings.Repeat("é", 150)},
			"GET /x: 500 " + strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestAnswerTooLarge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"`))
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range maxAnswer>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}`))
	}))
	t.Cleanup(srv.Close)
	_, err := New(Config{APIURL: srv.URL}).Health(t.Context())
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Health with a 17 MiB answer: %v, want an answer-too-large error", err)
	}
}

// TestSendRetries: a send is repeated, with the same client_message_id,
// exactly while its outcome is unknown, and at most four times in all.
func TestSendRetries(t *testing.T) {
	t.Parallel()
	const hang = 0 // an attempt the server never answers
	tests := []struct {
		name     string
		statuses []int // one answer per attempt; the last repeats
		wantErr  int   // the status Send fails with, 0 for success
		attempts int
	}{
		{"ok", []int{201}, 0, 1},
		{"unavailable once", []int{503, 201}, 0, 2},
		{"every gateway failure", []int{502, 504, 503, 200}, 0, 4},
		{"timed out", []int{hang, 201}, 0, 2},
		{"still unavailable", []int{503}, 503, 4},
		{"bad request", []int{400}, 400, 1},
		{"server bug", []int{500}, 500, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu  sync.Mutex
				ids []string
			)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var m wire.SendMessage
				if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
					t.Errorf("send body: %v", err)
				}
				mu.Lock()
				ids = append(ids, m.ClientMessageID)
				status := tt.statuses[min(len(ids), len(tt.statuses))-1]
				mu.Unlock()
				if status == hang {
					select {
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprint(w, `{"id": "msg_1", "error": "scripted"}`)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })
			c := New(Config{APIURL: srv.URL})
			// The hung attempt gives up after sendTimeout; the machine may be
			// slow, so it stays far above what one local request takes.
			c.sendTimeout, c.retryWait = 3*time.Second, time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()

			m, err := c.Send(ctx, "room", wire.SendMessage{Sender: "a", Text: "x"})
			switch {
			case tt.wantErr == 0 && (err != nil || m.ID != "msg_1"):
				t.Errorf("Send = %+v, %v; want msg_1", m, err)
			case tt.wantErr != 0 && !IsStatus(err, tt.wantErr):
				t.Errorf("Send error = %v, want status %d", err, tt.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ids) != tt.attempts {
				t.Errorf("%d attempts, want %d", len(ids), tt.attempts)
			}
			for _, id := range ids {
				if id == "" || id != ids[0] {
					t.Errorf("client_message_id of each attempt = %q, want one id, repeated", ids)
					break
				}
			}
		})
	}
}

// TestSendKeepsClientMessageID: a caller's own client_message_id is sent
// as given.
func TestSendKeepsClientMessageID(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m wire.SendMessage
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m.ClientMessageID
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id": "msg_1"}`)
	}))
	t.Cleanup(srv.Close)
	if _, err := New(Config{APIURL: srv.URL}).Send(t.Context(), "room", wire.SendMessage{Sender: "a", Text: "x", ClientMessageID: "mine"}); err != nil {
		t.Fatal(err)
	}
	if id := <-got; id != "mine" {
		t.Errorf("client_message_id sent = %q, want mine", id)
	}
}

func TestAPIErrorRetryAfter(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	_, err := New(Config{APIURL: srv.URL}).Messages(t.Context(), "room", Query{})
	if e, ok := errors.AsType[*APIError](err); !ok || e.RetryAfter != 3*time.Second {
		t.Errorf("error %#v, want an *APIError with RetryAfter 3s", err)
	}
}
