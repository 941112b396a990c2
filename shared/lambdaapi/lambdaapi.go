// Package lambdaapi runs an HTTP handler as an AWS Lambda function behind
// API Gateway HTTP API (payload v2) or a Function URL, and the liveness
// sweeper as a scheduled one (sweeper.go). It is the one place outside
// functions/ that knows about Lambda.
package lambdaapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/service"
)

// HandlerFunc is the shape of a Lambda handler for HTTP events.
type HandlerFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Handler adapts h. The caller's address is the gateway's own view of it
// (requestContext.http.sourceIp), never a header a client sent. Requests
// that came through API Gateway may be held open at most gatewayHold,
// since the gateway cuts every request at 30 s; those through a Function
// URL (its domain says so: an HTTP API's own $default route sends the same
// route key) only by the function's timeout.
func Handler(h http.Handler, gatewayHold time.Duration) HandlerFunc {
	// The context variant: the plain Proxy passes the gateway context in
	// request headers, which a client could forge.
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx = api.WithClientAddress(ctx, ev.RequestContext.HTTP.SourceIP)
		if gatewayHold > 0 && !strings.Contains(ev.RequestContext.DomainName, ".lambda-url.") {
			ctx = api.WithHoldLimit(ctx, gatewayHold)
		}
		resp, err := adapter.ProxyWithContext(ctx, ev)
		return shortest(resp), err
	}
}

// shortest sends a body as base64 when that is shorter than the body as
// the runtime escapes it in its JSON answer. A page full of quotes or
// backslashes nearly doubles there; base64 adds a third, whatever the
// body holds, which keeps every page (letagents.MaxPageBytes) within the
// 6 MB a function may answer. Both gateways and function URLs decode it.
func shortest(resp events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	if resp.IsBase64Encoded || escapedLen(resp.Body) <= base64.StdEncoding.EncodedLen(len(resp.Body)) {
		return resp
	}
	resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(resp.Body)), true
	return resp
}

// escapedLen is the length of s inside a JSON string the way the runtime
// writes its answer (lambda.WithSetEscapeHTML left false: <, > and & as
// themselves).
func escapedLen(s string) int {
	var n byteCount
	enc := json.NewEncoder(&n)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes; byteCount never fails
	return int(n) - len("\"\"\n")
}

type byteCount int

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

// Detected reports whether the process runs inside the Lambda runtime.
func Detected(getenv func(string) string) bool { return getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// Main is the whole main of a function serving group: configure from the
// environment, open the pool once per instance (outside the handler), and
// hand over to the Lambda runtime. A configuration or a database it cannot
// use ends the process at start with one log line saying which: Lambda
// reports the failed start to the caller (API Gateway answers 502), and
// the line is in the function's log.
func Main(group api.Group) {
	mainOf(func(ctx context.Context, getenv func(string) string) error { return Run(ctx, getenv, group) })
}

// Run is Main with its inputs explicit.
func Run(ctx context.Context, getenv func(string) string, group api.Group) error {
	return start(ctx, getenv, string(group), func(ctx context.Context, cfg config.Config) (any, func(), error) {
		svc, err := service.Open(ctx, cfg, group)
		if err != nil {
			return nil, nil, err
		}
		return Handler(svc.Handler, cfg.GatewayHold), svc.Close, nil
	})
}

// mainOf is every function's main: run under a context that SIGTERM (the
// runtime shutting the instance down) or an interrupt cancels, the
// process's environment as its input, and its error as the last log line.
func mainOf(run func(ctx context.Context, getenv func(string) string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		log.Fatal(err)
	}
}

// start configures the function named name from getenv, lets open build
// its handler once per instance, and hands that to the Lambda runtime,
// which calls closeFn when it shuts the instance down. Errors name the
// function and what failed.
func start(ctx context.Context, getenv func(string) string, name string,
	open func(context.Context, config.Config) (handler any, closeFn func(), err error)) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("start %s function: configuration: %w", name, err)
	}
	handler, closeFn, err := open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start %s function: %w", name, err)
	}
	handOver(getenv, handler, lambda.WithContext(ctx), lambda.WithEnableSIGTERM(closeFn))
	return nil
}

// handOver gives handler to the Lambda runtime, on one processor
// (oneProcessor).
func handOver(getenv func(string) string, handler any, opts ...lambda.Option) {
	oneProcessor(getenv)
	lambda.StartWithOptions(handler, opts...)
}

// oneProcessor runs Go's scheduler on one processor (GOMAXPROCS 1) unless
// the function's environment sets GOMAXPROCS. A Lambda instance runs one
// invocation at a time, which waits on the database most of the time;
// with a second processor idle, each of those waits and wake-ups woke a
// spare thread that spun, found nothing and slept again. The messages
// function's real bootstrap under the emulator, one send at a time, took
// 9–32% less CPU an invocation on one processor in each of eleven rounds
// (docs/benchmark.md): CPU is what a 256 MB function has least of.
func oneProcessor(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
