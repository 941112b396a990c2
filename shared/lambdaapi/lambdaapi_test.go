package lambdaapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/lambdaapi"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
)

// lambdaAnswerLimit is the most a function may answer; AWS documents it
// as 6 MB, so the decimal reading, the stricter, is the one held to.
const lambdaAnswerLimit = 6_000_000

type answer struct {
	status int
	header map[string]string
	body   string // decoded
	size   int    // of the whole answer as the runtime sends it
	base64 bool
}

// invoke sends an HTTP API (payload 2.0) event through h and measures the
// answer as the Lambda runtime encodes it.
func invoke(t *testing.T, h lambdaapi.HandlerFunc, method, path, query, body string) answer {
	t.Helper()
	return invokeWith(t, h, method, path, query, body, nil)
}

// invokeWith is invoke with request headers besides the content type.
func invokeWith(t *testing.T, h lambdaapi.HandlerFunc, method, path, query, body string, header map[string]string) answer {
	t.Helper()
	headers := map[string]string{"content-type": "application/json"}
	maps.Copy(headers, header)
	ev := events.APIGatewayV2HTTPRequest{RawPath: path, RawQueryString: query, Body: body, Headers: headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "abc.execute-api.eu-west-1.amazonaws.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.9"}}}
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatalf("%s %s?%s: %v", method, path, query, err)
	}
	var enc bytes.Buffer
	if err := json.NewEncoder(&enc).Encode(resp); err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Headers, body: resp.Body, size: enc.Len(), base64: resp.IsBase64Encoded}
	if a.base64 {
		raw, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			t.Fatalf("base64 answer does not decode: %v", err)
		}
		a.body = string(raw)
	}
	return a
}

// TestPagesFitALambdaAnswer reads, through the Lambda adapter, pages of
// messages whose JSON is all escapes: escaped once more in the runtime's
// answer, a full page would be about twice MaxPageBytes, over the limit.
func TestPagesFitALambdaAnswer(t *testing.T) {
	t.Parallel()
	h := openHandler(t)
	if a := invoke(t, h, http.MethodPost, "/rooms/big/join", "", ""); a.status != http.StatusOK {
		t.Fatalf("join = %d %s", a.status, a.body)
	}
	const n = 5
	text := strings.Repeat(`"\`, 450_000) // 900 KB, 1.8 MB as JSON
	body, _ := json.Marshal(map[string]string{"sender": "a", "text": text})
	for range n {
		if a := invoke(t, h, http.MethodPost, "/rooms/big/messages", "", string(body)); a.status != http.StatusCreated {
			t.Fatalf("send = %d %.200s", a.status, a.body)
		}
	}
	read := func(query string) (ids []string, hasMore bool) {
		t.Helper()
		a := invoke(t, h, http.MethodGet, "/rooms/big/messages", query, "")
		if a.status != http.StatusOK || a.size > lambdaAnswerLimit || !a.base64 {
			t.Fatalf("?%s = %d, %d bytes to the runtime, base64 %v; want 200 in base64 under %d", query, a.status, a.size, a.base64, lambdaAnswerLimit)
		}
		var p struct {
			Messages []struct{ ID, Text string }
			HasMore  bool `json:"has_more"`
		}
		if err := json.Unmarshal([]byte(a.body), &p); err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Messages {
			if m.Text != text {
				t.Fatalf("?%s: %s read back as %d bytes, want the %d sent", query, m.ID, len(m.Text), len(text))
			}
			ids = append(ids, m.ID)
		}
		return ids, p.HasMore
	}
	var seen []string
	for more, after := true, "msg_0"; more; after = seen[len(seen)-1] {
		var page []string
		page, more = read("limit=500&after=" + after)
		if len(page) == 0 || len(page) == n {
			t.Fatalf("page after %s = %v; want a page cut by size", after, page)
		}
		seen = append(seen, page...)
	}
	if fmt.Sprint(seen) != "[msg_1 msg_2 msg_3 msg_4 msg_5]" {
		t.Errorf("paged through %v, want msg_1..msg_5", seen)
	}
	if page, more := read("before=latest"); len(page) == 0 || page[len(page)-1] != "msg_5" || !more {
		t.Errorf("newest page = %v, has_more %v; want a cut page ending at msg_5, more before it", page, more)
	}
}

// TestPagesCachedUnderLambda: behind API Gateway the web function
// answers the pages' caching as the local runner does (issue 27): the
// page revalidated by its ETag (a warm visit a 304), its script under
// the versioned URL the page links (the query reaches the handler)
// immutable, under its bare path revalidated.
func TestPagesCachedUnderLambda(t *testing.T) {
	t.Parallel()
	h := openHandler(t)
	page := invoke(t, h, http.MethodGet, "/in/team", "", "")
	etag := page.header["Etag"]
	if page.status != http.StatusOK || page.header["Cache-Control"] != "no-cache" || etag == "" {
		t.Fatalf("GET /in/team = %d, headers %v; want 200, no-cache and an ETag", page.status, page.header)
	}
	if a := invokeWith(t, h, http.MethodGet, "/in/team", "", "", map[string]string{"if-none-match": etag}); a.status != http.StatusNotModified || a.body != "" {
		t.Errorf("GET /in/team with its ETag = %d with %d bytes, want 304 and no body", a.status, len(a.body))
	}
	m := regexp.MustCompile(`src="/js/room\.js\?(v=[0-9a-f]+)"`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("the room page links no versioned /js/room.js")
	}
	for _, tt := range []struct{ query, cache string }{
		{m[1], "public, max-age=31536000, immutable"},
		{"", "no-cache"},
	} {
		if a := invoke(t, h, http.MethodGet, "/js/room.js", tt.query, ""); a.status != http.StatusOK || a.header["Cache-Control"] != tt.cache {
			t.Errorf("GET /js/room.js?%s = %d, Cache-Control %q; want 200, %q", tt.query, a.status, a.header["Cache-Control"], tt.cache)
		}
	}
}

func TestShortestBody(t *testing.T) {
	t.Parallel()
	quotes := strings.Repeat(`\"`, 1000)
	tests := []struct {
		name, body string
		base64     bool
	}{
		{"plain JSON", `{"room_id":"r","messages":[],"has_more":false}`, false},
		{"empty", "", false},
		{"some quotes", `{"text":"say \"hi\" <now> & then"}`, false},
		{"all escapes", `{"text":"` + quotes + `"}`, true},
	}
	for _, tt := range tests {
		h := lambdaapi.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(tt.body))
		}), 0)
		a := invoke(t, h, http.MethodGet, "/x", "", "")
		if a.base64 != tt.base64 || a.body != tt.body {
			t.Errorf("%s: base64 %v, body %.60q; want base64 %v, the body as written", tt.name, a.base64, a.body, tt.base64)
		}
	}
	if letagents.MaxPageBytes*4/3+64<<10 > lambdaAnswerLimit {
		t.Errorf("a page of %d bytes in base64 would not fit a Lambda answer", letagents.MaxPageBytes)
	}
}

// TestStreamsAreRefusedUnderLambda: a function answers only once its
// answer is whole, so an event stream asked of it, through the gateway or
// its Function URL, is a clear refusal at once, never a request held open
// until the function times out.
func TestStreamsAreRefusedUnderLambda(t *testing.T) {
	t.Parallel()
	h := openHandler(t)
	if a := invoke(t, h, http.MethodPost, "/rooms/streamed/join", "", ""); a.status != http.StatusOK {
		t.Fatalf("join = %d %s", a.status, a.body)
	}
	for _, domain := range []string{"abc.execute-api.eu-west-1.amazonaws.com", "xyz.lambda-url.eu-west-1.on.aws"} {
		for _, path := range []string{"/rooms/streamed/messages/stream", "/projects/streamed/messages/stream"} {
			ev := events.APIGatewayV2HTTPRequest{RawPath: path, Headers: map[string]string{"accept": "text/event-stream"},
				RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: domain,
					HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: path, SourceIP: "203.0.113.9"}}}
			resp, err := h(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Error, Code string }
			_ = json.Unmarshal([]byte(resp.Body), &body)
			if resp.StatusCode != http.StatusNotImplemented || body.Code != letagents.CodeStreamUnavailable || !strings.Contains(body.Error, "LETAGENTS_POLL_URL") {
				t.Errorf("%s%s = %d %s, want 501 %s naming LETAGENTS_POLL_URL", domain, path, resp.StatusCode, resp.Body, letagents.CodeStreamUnavailable)
			}
		}
	}
}

// openHandler is the Lambda handler of the whole API on a private schema,
// with repo rooms open to anyone.
func openHandler(t *testing.T) lambdaapi.HandlerFunc {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return map[string]string{"LETAGENTS_REPO_ACCESS": "open"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.LogLevel = slog.LevelError
	svc, err := service.FromPool(context.Background(), cfg, pgtest.New(t).Pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return lambdaapi.Handler(svc.Handler, 0)
}

// The API functions and the sweeper read their configuration at start:
// one they cannot use stops them there, with an error naming the function
// and the variable (Main logs it as the process's last line).
func TestStartRefusesABadConfiguration(t *testing.T) {
	t.Parallel()
	bad := func(k string) string {
		return map[string]string{"DB_URL": "postgres://postgres@127.0.0.1:1/x", "LETAGENTS_BASE_URL": "example.com"}[k]
	}
	tests := []struct {
		name  string
		start func() error
		want  string
	}{
		{"rooms", func() error { return lambdaapi.Run(context.Background(), bad, api.GroupRooms) }, "start rooms function: configuration: "},
		{"poll", func() error { return lambdaapi.Run(context.Background(), bad, api.GroupPoll) }, "start poll function: configuration: "},
		{"liveness", func() error { return lambdaapi.RunSweeper(context.Background(), bad) }, "start liveness function: configuration: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.start()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), `LETAGENTS_BASE_URL="example.com"`) {
				t.Errorf("start = %v, want %q naming LETAGENTS_BASE_URL", err, tt.want)
			}
		})
	}
}
