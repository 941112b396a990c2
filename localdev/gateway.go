package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/lambdaapi"
)

// Limits of API Gateway HTTP API and of a synchronous Lambda invocation.
const (
	// maxRequestBody is API Gateway's request payload limit (hard, 10 MB).
	maxRequestBody = 10 << 20
	// maxInvokePayload and maxInvokeResponse are Lambda's synchronous
	// invocation limits on the event and on the function's answer (6 MB;
	// measured, the answer may be 100 bytes longer). A body that passes the
	// gateway can still be too big for Lambda once it is wrapped in an event.
	maxInvokePayload  = 6 << 20
	maxInvokeResponse = 6<<20 + 100
	// functionTimeout is the Timeout of every function (template.yaml
	// Globals), which is also API Gateway's integration timeout.
	functionTimeout = 30 * time.Second
)

// catchAllRoute is the route key of the template's `ANY /{proxy+}` route,
// which sends every request no other route claims to the web function.
const catchAllRoute = "ANY /{proxy+}"

// Fixed parts of the request context: a made-up account and the $default
// stage, so paths carry no stage prefix, as with the deployed HTTP API.
const (
	accountID = "123456789012"
	apiID     = "localdev"
	stage     = "$default"
)

// gateway plays API Gateway HTTP API: it routes each request to the function
// of its group, turning it into the payload v2 event the function would get
// and the function's answer back into HTTP. Long-polls and event streams
// skip the conversion, and so any buffering: in AWS the poll container is
// a plain HTTP server of its own.
type gateway struct {
	functions map[api.Group]*function
	poll      http.Handler
	timeout   time.Duration
	logger    *slog.Logger
}

// newGateway builds each function's Lambda handler through
// lambdaapi.Handler and lambda.NewHandler, the same path the deployed
// runtime takes. poll serves GroupPoll directly.
func newGateway(functions map[api.Group]http.Handler, poll http.Handler, gatewayHold time.Duration, logger *slog.Logger) *gateway {
	g := &gateway{functions: map[api.Group]*function{}, poll: poll, timeout: functionTimeout, logger: logger}
	for group, h := range functions {
		g.functions[group] = &function{start: func() lambda.Handler {
			return lambda.NewHandler(lambdaapi.Handler(h, gatewayHold))
		}}
	}
	return g
}

// function is one Lambda function: its warm instances, each serving one
// invocation at a time, as in AWS. The runtime's handler is not safe for
// concurrent invocations: the answer Invoke returns lives in a buffer the
// handler reuses for its next invocation.
type function struct {
	start func() lambda.Handler // a cold start

	mu   sync.Mutex
	idle []lambda.Handler
}

// invoke runs payload on an idle instance, or a new one when all are busy,
// and returns a copy of the answer that no later invocation can touch. An
// instance whose handler panicked is dropped, as the runtime exits then.
func (f *function) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	var h lambda.Handler
	if n := len(f.idle); n > 0 {
		h, f.idle = f.idle[n-1], f.idle[:n-1]
	} else {
		h = f.start()
	}
	f.mu.Unlock()
	out, err := invokeSafely(ctx, h, payload)
	if errors.Is(err, errPanicked) {
		return nil, err
	}
	out = bytes.Clone(out)
	f.mu.Lock()
	f.idle = append(f.idle, h)
	f.mu.Unlock()
	return out, err
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	path := r.URL.EscapedPath()
	rt, claimed := api.Match(r.Method, path)
	// API Gateway matches methods exactly: a HEAD finds no GET route and,
	// like any request no route claims, ends at ANY /{proxy+}: the web
	// function, which answers it (or a JSON 404).
	group := rt.Group
	if !claimed {
		group = api.GroupWeb
	}
	fn := string(group)
	if group == api.GroupPoll {
		g.poll.ServeHTTP(sw, r)
	} else {
		reqID := rand.Text()[:16] + "="
		sw.Header().Set("Apigw-Requestid", reqID)
		if !claimed && path == "/" {
			// /{proxy+} needs a segment: nothing claims /, the gateway answers.
			fn = "gateway"
			writeGatewayError(sw, http.StatusNotFound, "Not Found")
		} else {
			g.invoke(sw, r, group, path, reqID)
		}
	}
	g.logger.Info("request", "method", r.Method, "path", api.LogPath(path), "status", sw.status(),
		"function", fn, "duration", time.Since(start).Round(time.Microsecond), "bytes", sw.bytes)
}

// invoke runs one request through the function of group as API Gateway and
// the Lambda service would, including their limits and their answers when
// something fails.
func (g *gateway) invoke(w http.ResponseWriter, r *http.Request, group api.Group, path, reqID string) {
	fn, ok := g.functions[group]
	if !ok {
		g.logger.Error("no function for group", "group", group)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if r.ContentLength > maxRequestBody {
		writeTooLarge(w)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeTooLarge(w)
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The body took longer than the server allows (httpserver.Options.BodyTimeout).
			w.Header().Set("Connection", "close")
			writeGatewayError(w, http.StatusRequestTimeout, "Request Timeout")
			return
		}
		g.logger.Warn("read request body", "error", err)
		writeGatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}

	now := time.Now()
	ev := toEvent(r, body, reqID, now)
	ev.RouteKey, ev.PathParameters = gatewayRoute(r.Method, path)
	ev.RequestContext.RouteKey = ev.RouteKey
	payload, err := json.Marshal(ev)
	if err != nil {
		g.logger.Error("marshal event", "error", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	// API Gateway answers 500 when the Lambda service refuses the invocation.
	if len(payload) > maxInvokePayload {
		g.logger.Error("Lambda refuses the invocation: event over 6 MB", "function", group, "bytes", len(payload))
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}

	// The client leaving does not stop a Lambda invocation; the timeout does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       uuid.NewString(), // a Lambda request id is a random UUID
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:" + accountID + ":function:letagents-" + string(group),
	})
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := fn.invoke(ctx, payload)
		done <- result{out, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		// The gateway's integration timeout equals the function's, and it
		// answers first.
		g.logger.Error("function timed out", "function", group, "timeout", g.timeout)
		writeGatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	// A function error, an oversized answer or one the gateway cannot read
	// are all a 502 with the same body; the details are only in the log.
	if res.err != nil {
		g.logger.Error("function error", "function", group, "error", res.err)
		writeGatewayError(w, http.StatusBadGateway, "Internal Server Error")
		return
	}
	if len(res.out) > maxInvokeResponse {
		g.logger.Error("function answer over Lambda's 6 MB limit", "function", group, "bytes", len(res.out))
		writeGatewayError(w, http.StatusBadGateway, "Internal Server Error")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.out, &resp); err != nil || resp.StatusCode < 100 || resp.StatusCode > 599 {
		g.logger.Error("malformed function answer", "function", group, "error", err, "status", resp.StatusCode)
		writeGatewayError(w, http.StatusBadGateway, "Internal Server Error")
		return
	}
	if len(resp.MultiValueHeaders) > 0 {
		// Payload format 2.0 has no multiValueHeaders: the gateway drops
		// them, so we do too rather than hide a bug that AWS would show.
		g.logger.Warn("multiValueHeaders ignored (payload format 2.0 has none)", "function", group)
	}
	writeResponse(w, resp, g.logger)
}

// errPanicked marks the error of an invocation whose handler panicked.
var errPanicked = errors.New("handler panicked")

// invokeSafely turns a panic into an error, as the Lambda runtime reports a
// panicking handler as a function error.
func invokeSafely(ctx context.Context, fn lambda.Handler, payload []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanicked, p)
		}
	}()
	return fn.Invoke(ctx, payload)
}

// toEvent builds the payload v2 event API Gateway HTTP API sends for r,
// all but the route key and path parameters (see gatewayRoute).
func toEvent(r *http.Request, body []byte, reqID string, now time.Time) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header)+4)
	var cookies []string
	for k, vs := range r.Header {
		k = strings.ToLower(k)
		if k == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[k] = strings.Join(vs, ",")
	}
	ip := clientIP(r.RemoteAddr)
	headers["host"] = r.Host
	if xff := headers["x-forwarded-for"]; xff != "" {
		headers["x-forwarded-for"] = xff + ", " + ip
	} else {
		headers["x-forwarded-for"] = ip
	}
	headers["x-forwarded-proto"] = "http"
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(a.String()); err == nil {
			headers["x-forwarded-port"] = port
		}
	}
	headers["x-amzn-trace-id"] = fmt.Sprintf("Root=1-%08x-%s", now.Unix(), randomHex(12))

	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = make(map[string]string, len(q))
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}

	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID:    accountID,
			Stage:        stage,
			RequestID:    reqID,
			APIID:        apiID,
			DomainName:   r.Host,
			DomainPrefix: strings.SplitN(r.Host, ".", 2)[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  ip,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body = base64.StdEncoding.EncodeToString(body)
		ev.IsBase64Encoded = true
	}
	return ev
}

// writeResponse writes a function's answer as the gateway would.
func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse, logger *slog.Logger) {
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			logger.Error("malformed function answer: body is not base64", "error", err)
			writeGatewayError(w, http.StatusBadGateway, "Internal Server Error")
			return
		}
		body = b
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// gatewayRoute returns the route key and path parameters API Gateway gives
// the event of a request: the template's spelling of the matching route,
// else the catch-all's.
func gatewayRoute(method, escapedPath string) (key string, params map[string]string) {
	if rt, ok := api.Match(method, escapedPath); ok {
		if key, params, ok := rt.GatewayRoute(escapedPath); ok {
			return key, params
		}
	}
	proxy := strings.TrimPrefix(escapedPath, "/")
	if u, err := url.PathUnescape(proxy); err == nil {
		proxy = u
	}
	return catchAllRoute, map[string]string{"proxy": proxy}
}

// writeGatewayError answers as API Gateway does for its own errors.
func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// writeTooLarge answers a body over the gateway's limit in the API's own
// error shape, which is what clients of this service read.
func writeTooLarge(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"error": fmt.Sprintf("request body is larger than API Gateway's limit of %d bytes", maxRequestBody)})
}

// clientIP is the address of the client without its port.
func clientIP(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// statusWriter remembers the status and the number of body bytes
// written, for the request log (the cost model prices data out from it).
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}
