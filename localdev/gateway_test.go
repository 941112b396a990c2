package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/letagents/letagents-go/shared/api"
)

// seen is what a function's handler observed of one request.
type seen struct {
	Method, Path, RawQuery, Body, RemoteAddr string
	Header                                   http.Header
	Lambda                                   bool // the request ran inside a Lambda invocation
	HasDeadline                              bool
	Event                                    bool // the adapter attached the gateway's request context
	RouteKey                                 string
}

// recordingHandler records each request into *got and answers with answer.
func recordingHandler(got *seen, answer http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, inLambda := lambdacontext.FromContext(r.Context())
		_, hasDeadline := r.Context().Deadline()
		rc, isEvent := core.GetAPIGatewayV2ContextFromContext(r.Context())
		*got = seen{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Body: string(body),
			RemoteAddr: r.RemoteAddr, Header: r.Header.Clone(), Lambda: inLambda, HasDeadline: hasDeadline,
			Event: isEvent, RouteKey: rc.RouteKey}
		answer(w, r)
	})
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// fakeGateway serves a gateway whose functions are the given handlers
// (missing groups record into a throwaway).
func fakeGateway(t *testing.T, hs map[api.Group]http.Handler) *httptest.Server {
	t.Helper()
	var sink seen
	fns := map[api.Group]http.Handler{}
	for _, g := range []api.Group{api.GroupRooms, api.GroupMessages, api.GroupWeb} {
		fns[g] = recordingHandler(&sink, ok)
		if h, ok := hs[g]; ok {
			fns[g] = h
		}
	}
	poll := hs[api.GroupPoll]
	if poll == nil {
		poll = recordingHandler(&sink, ok)
	}
	gw := newGateway(fns, poll, 25*time.Second, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv
}

func TestRoutingToFunctions(t *testing.T) {
	t.Parallel()
	var rooms, messages, web, poll seen
	srv := fakeGateway(t, map[api.Group]http.Handler{
		api.GroupRooms:    recordingHandler(&rooms, ok),
		api.GroupMessages: recordingHandler(&messages, ok),
		api.GroupWeb:      recordingHandler(&web, ok),
		api.GroupPoll:     recordingHandler(&poll, ok),
	})
	tests := []struct {
		method, path string
		got          *seen
		lambda       bool
		routeKey     string
	}{
		{"POST", "/projects", &rooms, true, "POST /projects"},
		{"POST", "/rooms/github.com/o/r/join", &rooms, true, "POST /rooms/{r1}/{r2}/{r3}/join"},
		{"POST", "/rooms/github.com/o/r/messages", &messages, true, "POST /rooms/{r1}/{r2}/{r3}/messages"},
		{"GET", "/projects/ABCD-EFGH/messages?after=3", &messages, true, "GET /projects/{r1}/messages"},
		{"GET", "/in/github.com/o/r", &web, true, "GET /in/{r1}/{r2}/{r3}"},
		{"GET", "/", &web, true, "GET /"},
		{"HEAD", "/api/health", &web, true, catchAllRoute},
		{"HEAD", "/rooms/x/messages", &web, true, catchAllRoute},
		{"GET", "/no/such/thing", &web, true, catchAllRoute},
		{"DELETE", "/rooms/x/messages", &web, true, catchAllRoute},
		{"GET", "/rooms/github.com/o/r/messages/poll?after=0", &poll, false, ""},
	}
	for _, tt := range tests {
		*tt.got = seen{}
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		resp.Body.Close()
		if tt.got.Method != tt.method {
			t.Errorf("%s %s: function saw method %q, want %q (wrong function?)", tt.method, tt.path, tt.got.Method, tt.method)
			continue
		}
		path, _, _ := strings.Cut(tt.path, "?")
		if tt.got.Path != path {
			t.Errorf("%s %s: function saw path %q, want %q", tt.method, tt.path, tt.got.Path, path)
		}
		if tt.got.Lambda != tt.lambda || tt.got.Event != tt.lambda || tt.got.HasDeadline != tt.lambda {
			t.Errorf("%s %s: lambda context %v, event %v, deadline %v; want all %v",
				tt.method, tt.path, tt.got.Lambda, tt.got.Event, tt.got.HasDeadline, tt.lambda)
		}
		if tt.got.RouteKey != tt.routeKey {
			t.Errorf("%s %s: route key %q, want %q", tt.method, tt.path, tt.got.RouteKey, tt.routeKey)
		}
	}
}

func TestEventFromRequest(t *testing.T) {
	t.Parallel()
	body := []byte{0xff, 0x00, 0x10} // not UTF-8: goes base64
	r := httptest.NewRequest("POST", "http://api.example.com:3001/rooms/github.com/o/r/messages?a=1&a=2&b=x%20y", bytes.NewReader(body))
	r.RemoteAddr = "10.1.2.3:54321"
	r.Header.Set("User-Agent", "agent/1")
	r.Header.Add("X-Multi", "one")
	r.Header.Add("X-Multi", "two")
	r.Header.Add("Cookie", "a=1; b=2")
	r.Header.Add("Cookie", "c=3")
	now := time.Date(2026, 12, 2, 13, 4, 5, 0, time.UTC)
	ev := toEvent(r, body, "req-1", now)

	checks := []struct{ name, got, want string }{
		{"version", ev.Version, "2.0"},
		{"rawPath", ev.RawPath, "/rooms/github.com/o/r/messages"},
		{"rawQueryString", ev.RawQueryString, "a=1&a=2&b=x%20y"},
		{"query a", ev.QueryStringParameters["a"], "1,2"},
		{"query b", ev.QueryStringParameters["b"], "x y"},
		{"header x-multi", ev.Headers["x-multi"], "one,two"},
		{"header host", ev.Headers["host"], "api.example.com:3001"},
		{"header x-forwarded-for", ev.Headers["x-forwarded-for"], "10.1.2.3"},
		{"header cookie", ev.Headers["cookie"], ""},
		{"cookies", strings.Join(ev.Cookies, "|"), "a=1|b=2|c=3"},
		{"stage", ev.RequestContext.Stage, "$default"},
		{"apiId", ev.RequestContext.APIID, "localdev"},
		{"requestId", ev.RequestContext.RequestID, "req-1"},
		{"domainName", ev.RequestContext.DomainName, "api.example.com:3001"},
		{"http.method", ev.RequestContext.HTTP.Method, "POST"},
		{"http.path", ev.RequestContext.HTTP.Path, "/rooms/github.com/o/r/messages"},
		{"http.protocol", ev.RequestContext.HTTP.Protocol, "HTTP/1.1"},
		{"http.sourceIp", ev.RequestContext.HTTP.SourceIP, "10.1.2.3"},
		{"http.userAgent", ev.RequestContext.HTTP.UserAgent, "agent/1"},
		{"time", ev.RequestContext.Time, "02/Dec/2026:13:04:05 +0000"},
		{"body", ev.Body, base64.StdEncoding.EncodeToString(body)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !ev.IsBase64Encoded {
		t.Errorf("isBase64Encoded = false for a body that is not UTF-8")
	}
	if ev.RequestContext.TimeEpoch != now.UnixMilli() {
		t.Errorf("timeEpoch = %d, want %d", ev.RequestContext.TimeEpoch, now.UnixMilli())
	}
	for k := range ev.Headers {
		if k != strings.ToLower(k) {
			t.Errorf("header %q is not lower-case", k)
		}
	}

	text := toEvent(httptest.NewRequest("POST", "/projects", nil), []byte(`{"x":"é"}`), "r", now)
	if text.IsBase64Encoded || text.Body != `{"x":"é"}` {
		t.Errorf("UTF-8 body: got %q (base64 %v), want it as is", text.Body, text.IsBase64Encoded)
	}
}

// TestRequestReachesHandler checks what the function's http.Request looks
// like after the whole trip: event, JSON, runtime handler, adapter.
func TestRequestReachesHandler(t *testing.T) {
	t.Parallel()
	var got seen
	srv := fakeGateway(t, map[api.Group]http.Handler{api.GroupMessages: recordingHandler(&got, ok)})
	req, _ := http.NewRequest("POST", srv.URL+"/rooms/github.com/o/r/messages?after=msg_2&limit=5", strings.NewReader(`{"text":"hi"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", "s=1; t=2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.Body != `{"text":"hi"}` || got.RawQuery != "after=msg_2&limit=5" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("function saw body %q, query %q, content type %q", got.Body, got.RawQuery, got.Header.Get("Content-Type"))
	}
	if c := strings.Join(got.Header.Values("Cookie"), "|"); c != "s=1|t=2" {
		t.Errorf("function saw cookies %q, want s=1|t=2", c)
	}
	if got.RemoteAddr != "127.0.0.1" {
		t.Errorf("function saw remote address %q, want the client IP without port", got.RemoteAddr)
	}
}

func TestResponseFromFunction(t *testing.T) {
	t.Parallel()
	binary := []byte{0x89, 'P', 'N', 'G', 0xff, 0x00}
	srv := fakeGateway(t, map[api.Group]http.Handler{api.GroupWeb: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "a", Value: "1"})
		http.SetCookie(w, &http.Cookie{Name: "b", Value: "2"})
		w.Header().Set("X-Custom", "yes")
		w.Header().Set("Content-Type", "image/png")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write(binary)
	})})
	resp, err := http.Get(srv.URL + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d, want %d", resp.StatusCode, http.StatusTeapot)
	}
	if !bytes.Equal(body, binary) {
		t.Errorf("body %x, want %x (base64 not undone?)", body, binary)
	}
	if got := strings.Join(resp.Header.Values("Set-Cookie"), "|"); got != "a=1|b=2" {
		t.Errorf("Set-Cookie %q, want a=1|b=2", got)
	}
	if resp.Header.Get("X-Custom") != "yes" || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("headers %v", resp.Header)
	}
	if resp.Header.Get("Apigw-Requestid") == "" {
		t.Errorf("no apigw-requestid header")
	}
}

// TestGatewayFailures checks the answers of the gateway itself: limits,
// function errors and timeouts.
func TestGatewayFailures(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 7<<20) // passes the gateway, too big for Lambda
	fns := map[api.Group]http.Handler{
		api.GroupRooms: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
		api.GroupMessages: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				_, _ = io.WriteString(w, big)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}),
		// Answers only when its invocation ends: the timeout must.
		api.GroupWeb: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			w.WriteHeader(http.StatusOK)
		}),
	}
	gw := newGateway(fns, http.NotFoundHandler(), 25*time.Second, slog.New(slog.DiscardHandler))
	// No case here is about the timeout, and a loaded machine under -race
	// has taken more than the functions' 30 s to copy the 7 MB answer.
	gw.timeout = 10 * time.Minute
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	// The same functions with a short timeout, so a slow one can hit it.
	hurried := newGateway(fns, http.NotFoundHandler(), 25*time.Second, slog.New(slog.DiscardHandler))
	hurried.timeout = 300 * time.Millisecond
	hurriedSrv := httptest.NewServer(hurried)
	t.Cleanup(hurriedSrv.Close)

	tests := []struct {
		name, base, method, path string
		body                     io.Reader
		status                   int
		key, msg                 string
	}{
		{"function panics", srv.URL, "POST", "/projects", nil, 502, "message", "Internal Server Error"},
		{"body over 10 MB", srv.URL, "POST", "/rooms/r/messages", bytes.NewReader(make([]byte, maxRequestBody+1)), 413, "error", ""},
		{"event over 6 MB", srv.URL, "POST", "/rooms/r/messages", strings.NewReader(big), 500, "message", "Internal Server Error"},
		{"answer over 6 MB", srv.URL, "GET", "/rooms/r/messages", nil, 502, "message", "Internal Server Error"},
		{"function times out", hurriedSrv.URL, "GET", "/api/health", nil, 503, "message", "Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(tt.method, tt.base+tt.path, tt.body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("status %d, body not JSON: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != tt.status || got[tt.key] == "" || tt.msg != "" && got[tt.key] != tt.msg {
				t.Errorf("got %d %v, want %d with %s %q", resp.StatusCode, got, tt.status, tt.key, tt.msg)
			}
		})
	}
}

func TestGatewayRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path, key string
		params            map[string]string
	}{
		{"POST", "/projects", "POST /projects", nil},
		{"GET", "/projects/join/ABCD-EFGH", "GET /projects/join/{code}", map[string]string{"code": "ABCD-EFGH"}},
		{"POST", "/projects/room/my%20room", "POST /projects/room/{r1}", map[string]string{"r1": "my room"}},
		{"POST", "/projects/room/a/b/c", "POST /projects/room/{r1}/{r2}/{r3}", map[string]string{"r1": "a", "r2": "b", "r3": "c"}},
		{"GET", "/rooms/a/b/messages", "GET /rooms/{r1}/{r2}/messages", map[string]string{"r1": "a", "r2": "b"}},
		{"GET", "/rooms/a/b/c/messages/poll", "GET /rooms/{r1}/{r2}/{r3}/messages/poll", map[string]string{"r1": "a", "r2": "b", "r3": "c"}},
		{"GET", "/rooms/a/b/c/d/messages", catchAllRoute, map[string]string{"proxy": "rooms/a/b/c/d/messages"}},
		{"GET", "/", "GET /", nil},
		{"HEAD", "/api/health", catchAllRoute, map[string]string{"proxy": "api/health"}},
		{"GET", "/favicon.ico", "GET /favicon.ico", nil},
		{"GET", "/robots.txt", catchAllRoute, map[string]string{"proxy": "robots.txt"}},
	}
	for _, tt := range tests {
		key, params := gatewayRoute(tt.method, tt.path)
		if key != tt.key || !maps.Equal(params, tt.params) {
			t.Errorf("gatewayRoute(%s %s) = %q %v, want %q %v", tt.method, tt.path, key, params, tt.key, tt.params)
		}
	}
}

// TestGatewayOwn404 covers the one path the catch-all cannot take: /
// with another method than GET. API Gateway answers that itself.
func TestGatewayOwn404(t *testing.T) {
	t.Parallel()
	srv := fakeGateway(t, nil)
	for _, method := range []string{"PUT", "POST", "HEAD"} {
		req, _ := http.NewRequest(method, srv.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || method != "HEAD" && string(b) != `{"message":"Not Found"}`+"\n" {
			t.Errorf("%s /: %d %q, want the gateway's 404 {\"message\":\"Not Found\"}", method, resp.StatusCode, b)
		}
		if resp.Header.Get("Apigw-Requestid") == "" {
			t.Errorf("%s /: no apigw-requestid header", method)
		}
	}
}

// TestConcurrentInvocationsOwnTheirAnswers runs streams of requests to one
// function side by side and checks that each client got the answer to its
// own request: the runtime's handler reuses its answer buffer on its next
// invocation, so invocations sharing one handler would hand out each
// other's answers. The first request of every stream waits for the others,
// so the streams surely overlap.
func TestConcurrentInvocationsOwnTheirAnswers(t *testing.T) {
	t.Parallel()
	const streams, each = 16, 40
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if arrived++; arrived == streams {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-r.Context().Done():
			http.Error(w, "the streams never overlapped", http.StatusGatewayTimeout)
			return
		}
		// Answers of different lengths, so an overwritten one shows.
		_, _ = w.Write(bytes.Repeat(body, 1+len(body)%7))
	})
	srv := fakeGateway(t, map[api.Group]http.Handler{api.GroupMessages: echo})

	errs := make(chan error, streams*each)
	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() {
			for i := range each {
				want := fmt.Sprintf("stream %d request %d;", s, i)
				resp, err := http.Post(srv.URL+"/rooms/r/messages", "text/plain", strings.NewReader(want))
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && (resp.StatusCode != http.StatusOK || string(got) != strings.Repeat(want, 1+len(want)%7)) {
					err = fmt.Errorf("%q got %d %.80q", want, resp.StatusCode, got)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
