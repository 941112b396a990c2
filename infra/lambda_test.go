package infra

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/lambdaapi"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testclock"
	"github.com/letagents/letagents-go/shared/testwait"
)

// fixtureRoom is the room of every functions/*/event.json. A named room:
// an id shaped like XXXX-XXXX would be an invite code, which must exist.
const fixtureRoom = "lambda-fixture"

// fixtureSession is the session token in the cookie of
// functions/auth/event.json.
const fixtureSession = "6c616d6264612d666978747572652d73657373696f6e2d746f6b656e2d303031"

// function is one group's Lambda handler, as lambdaapi.Run builds it, on a
// private schema of the test server.
type function struct {
	svc     *service.Service
	handler lambda.Handler
}

// newFunction configures group from env (on top of a DB_URL) the way
// lambdaapi.Run does, but on the test's pool; now, when given, is the
// service's clock.
func newFunction(t *testing.T, group api.Group, env map[string]string, now ...func() time.Time) function {
	t.Helper()
	db := pgtest.New(t)
	vars := map[string]string{"DB_URL": db.URL, "LOG_LEVEL": "warn"}
	maps.Copy(vars, env)
	cfg, err := config.Load(getenv(vars))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range now {
		cfg.Now = n
	}
	svc, err := service.FromPool(t.Context(), cfg, db.Pool, group)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return function{svc: svc, handler: lambda.NewHandler(lambdaapi.Handler(svc.Handler, cfg.GatewayHold))}
}

// invoke runs payload through the runtime's own decoding, the handler and
// encoding, as the Lambda runtime loop does.
func (f function) invoke(t *testing.T, payload []byte) (status int, header map[string]string, body []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := f.handler.Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	return decodeResponse(t, out)
}

// decodeResponse reads a function's answer to an HTTP API event.
func decodeResponse(t *testing.T, out []byte) (status int, header map[string]string, body []byte) {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("invoke answered %s, not an HTTP API v2 response: %v", out, err)
	}
	body = []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			t.Fatalf("response body is not base64: %v", err)
		}
	}
	return resp.StatusCode, resp.Headers, body
}

// event reads functions/<group>/event.json.
func event(t *testing.T, group api.Group) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "functions", string(group), "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("functions/%s/event.json: %v", group, err)
	}
	if ev.Version != "2.0" || ev.RouteKey == "" || ev.RequestContext.HTTP.Method == "" || ev.RawPath != ev.RequestContext.HTTP.Path ||
		ev.RequestContext.RouteKey != ev.RouteKey || !strings.HasPrefix(ev.RouteKey, ev.RequestContext.HTTP.Method+" ") {
		t.Fatalf("functions/%s/event.json is not a consistent HTTP API v2 event (version, routeKey, rawPath, requestContext)", group)
	}
	for k := range ev.Headers {
		if k != strings.ToLower(k) {
			t.Errorf("functions/%s/event.json: header %q: HTTP API sends header names lower-cased", group, k)
		}
	}
	rt, ok := api.Match(ev.RequestContext.HTTP.Method, ev.RawPath)
	if !ok || rt.Group != group {
		t.Fatalf("functions/%s/event.json: %s %s is served by group %q, want %q", group, ev.RequestContext.HTTP.Method, ev.RawPath, rt.Group, group)
	}
	if key, _, _ := rt.GatewayRoute(ev.RawPath); key != ev.RouteKey {
		t.Errorf("functions/%s/event.json: routeKey %q, but the gateway would send %q", group, ev.RouteKey, key)
	}
	return b
}

// asFunctionURL makes an event look as a Function URL sends it.
func asFunctionURL(t *testing.T, payload []byte) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	ev["requestContext"].(map[string]any)["domainName"] = "abcdefghij.lambda-url.eu-west-1.on.aws"
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withChanges returns the event with its route key and query replaced.
func withChanges(t *testing.T, payload []byte, routeKey, query string) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	ev["routeKey"] = routeKey
	ev["requestContext"].(map[string]any)["routeKey"] = routeKey
	ev["rawQueryString"] = query
	qs := map[string]any{}
	for kv := range strings.SplitSeq(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		qs[k] = v
	}
	ev["queryStringParameters"] = qs
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeJSON[T any](t *testing.T, header map[string]string, body []byte) T {
	t.Helper()
	var v T
	if ct := header["Content-Type"]; !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return v
}

type message struct {
	ID     string `json:"id"`
	RoomID string `json:"room_id"`
	Sender string `json:"sender"`
	Text   string `json:"text"`
}

type page struct {
	RoomID   string    `json:"room_id"`
	Messages []message `json:"messages"`
	HasMore  bool      `json:"has_more"`
}

func ensureRoom(t *testing.T, st *store.Store) {
	t.Helper()
	if _, _, err := st.EnsureRoom(t.Context(), fixtureRoom); err != nil {
		t.Fatal(err)
	}
}

func send(t *testing.T, st *store.Store, text string) {
	t.Helper()
	if _, _, err := st.SendMessage(t.Context(), letagents.NewMessage{RoomID: fixtureRoom, Sender: "infra-test", Text: text}); err != nil {
		t.Fatal(err)
	}
}

// lambdaCase is one HTTP function's sample event (functions/<group>/
// event.json), what its database needs first, and what it must answer.
type lambdaCase struct {
	group      api.Group
	setup      func(t *testing.T, st *store.Store)
	wantStatus int
	check      func(t *testing.T, st *store.Store, header map[string]string, body []byte)
}

// lambdaCases are the HTTP functions' cases, one per function.
func lambdaCases() []lambdaCase {
	return []lambdaCase{{
		group:      api.GroupRooms,
		wantStatus: 200,
		// No setup: joining a named room creates it.
		check: func(t *testing.T, st *store.Store, header map[string]string, body []byte) {
			got := decodeJSON[struct {
				RoomID string  `json:"room_id"`
				Name   *string `json:"name"`
				Code   *string `json:"code"`
			}](t, header, body)
			if got.RoomID != fixtureRoom || got.Name == nil || *got.Name != fixtureRoom || got.Code != nil {
				t.Errorf("join answered %s, want room_id and name %q, code null", body, fixtureRoom)
			}
			if _, err := st.Room(t.Context(), fixtureRoom); err != nil {
				t.Errorf("after the join: %v", err)
			}
		},
	}, {
		group:      api.GroupMessages,
		setup:      ensureRoom,
		wantStatus: 201,
		check: func(t *testing.T, st *store.Store, header map[string]string, body []byte) {
			got := decodeJSON[message](t, header, body)
			want := message{ID: "msg_1", RoomID: fixtureRoom, Sender: "lambda-fixture-agent", Text: "hello from a Lambda event"}
			if got != want {
				t.Errorf("send answered %+v, want %+v", got, want)
			}
		},
	}, {
		group: api.GroupPoll,
		setup: func(t *testing.T, st *store.Store) {
			ensureRoom(t, st)
			send(t, st, "already there") // so the poll answers at once
		},
		wantStatus: 200,
		check: func(t *testing.T, st *store.Store, header map[string]string, body []byte) {
			got := decodeJSON[page](t, header, body)
			if got.RoomID != fixtureRoom || len(got.Messages) != 1 || got.Messages[0].ID != "msg_1" || got.Messages[0].Text != "already there" || got.HasMore {
				t.Errorf("poll answered %s, want room %q with msg_1 \"already there\" only", body, fixtureRoom)
			}
		},
	}, {
		group: api.GroupAuth,
		// The event carries the session cookie among others: the adapter
		// must hand the payload's cookies to the handler.
		setup: func(t *testing.T, st *store.Store) {
			now := time.Now()
			_, _, err := st.SignIn(t.Context(), store.SignIn{
				Account:     letagents.Account{Provider: "github", ProviderUserID: "4242", Login: "lambda-user", DisplayName: "Lambda User"},
				GitHubToken: []byte("sealed"), SessionHash: auth.HashToken(fixtureSession), SessionExpiresAt: now.Add(time.Hour), Now: now})
			if err != nil {
				t.Fatal(err)
			}
		},
		wantStatus: 200,
		check: func(t *testing.T, st *store.Store, header map[string]string, body []byte) {
			got := decodeJSON[struct {
				Authenticated bool `json:"authenticated"`
				Account       struct {
					Login string `json:"login"`
				} `json:"account"`
			}](t, header, body)
			if !got.Authenticated || got.Account.Login != "lambda-user" {
				t.Errorf("session answered %s, want authenticated as lambda-user", body)
			}
		},
	}, {
		group:      api.GroupCoordination,
		setup:      ensureRoom,
		wantStatus: 200,
		check: func(t *testing.T, st *store.Store, header map[string]string, body []byte) {
			got := decodeJSON[struct {
				RoomID       string `json:"room_id"`
				Participants []any  `json:"participants"`
			}](t, header, body)
			if got.RoomID != fixtureRoom || got.Participants == nil || len(got.Participants) != 0 {
				t.Errorf("participants answered %s, want room %q with an empty roster", body, fixtureRoom)
			}
		},
	}, {
		group:      api.GroupWeb,
		wantStatus: 200,
		check: func(t *testing.T, st *store.Store, header map[string]string, body []byte) {
			got := decodeJSON[map[string]any](t, header, body)
			version, _ := got["version"].(string)
			delete(got, "version") // the build's: any non-empty text
			want := map[string]any{"status": "ok", "service": "letagents-api"}
			if !maps.Equal(got, want) || version == "" {
				t.Errorf("health answered %s, want %v and a version", body, want)
			}
		},
	}}
}

// TestLambdaPath invokes each function's real handler with its sample event.
func TestLambdaPath(t *testing.T) {
	t.Parallel()
	tests := lambdaCases()
	for _, tt := range tests {
		t.Run(string(tt.group), func(t *testing.T) {
			t.Parallel()
			payload := event(t, tt.group)
			f := newFunction(t, tt.group, nil)
			if tt.setup != nil {
				tt.setup(t, f.svc.Store)
			}
			status, header, body := f.invoke(t, payload)
			if status != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", status, body, tt.wantStatus)
			}
			tt.check(t, f.svc.Store, header, body)
		})
	}

	// A poll through an API Gateway route is held at most the gateway hold;
	// one through the Function URL (a lambda-url domain) up to its timeout.
	// The timeout is far past the hold, so that neither a slow answer of
	// the gateway route nor a slow send to the Function URL's poll is
	// mistaken for the other on a loaded machine.
	const hold, timeout = time.Second, 60 * time.Second
	holdEnv := map[string]string{"LETAGENTS_GATEWAY_HOLD_MS": "1000"}
	query := "after=msg_0&timeout=60000"
	t.Run("poll/gateway-route-holds-at-most-the-gateway-hold", func(t *testing.T) {
		t.Parallel()
		base := event(t, api.GroupPoll)
		var ev events.APIGatewayV2HTTPRequest
		_ = json.Unmarshal(base, &ev)
		f := newFunction(t, api.GroupPoll, holdEnv)
		ensureRoom(t, f.svc.Store)
		start := time.Now()
		status, header, body := f.invoke(t, withChanges(t, base, ev.RouteKey, query))
		elapsed := time.Since(start)
		if got := decodeJSON[page](t, header, body); status != 200 || len(got.Messages) != 0 {
			t.Errorf("status %d, body %s; want 200 with no messages", status, body)
		}
		if elapsed >= timeout/2 || elapsed < hold/2 {
			t.Errorf("answered after %v; want about the gateway hold %v, well under the timeout %v", elapsed.Round(time.Millisecond), hold, timeout)
		}
	})
	t.Run("poll/function-url-holds-past-the-gateway-hold", func(t *testing.T) {
		t.Parallel()
		f := newFunction(t, api.GroupPoll, holdEnv)
		ensureRoom(t, f.svc.Store)
		payload := asFunctionURL(t, withChanges(t, event(t, api.GroupPoll), "$default", query))
		type result struct {
			status int
			header map[string]string
			body   []byte
		}
		done := make(chan result, 1)
		go func() {
			// invoke's t.Fatal must not run off the test goroutine.
			out, err := f.handler.Invoke(t.Context(), payload)
			var resp events.APIGatewayV2HTTPResponse
			if err == nil {
				err = json.Unmarshal(out, &resp)
			}
			if err != nil {
				resp = events.APIGatewayV2HTTPResponse{StatusCode: -1, Body: err.Error()}
			}
			done <- result{resp.StatusCode, resp.Headers, []byte(resp.Body)}
		}()
		// Send once the gateway hold is well past: only a poll still parked
		// gets the message.
		select {
		case r := <-done:
			t.Fatalf("answered before 2×the gateway hold (status %d, %s): a Function URL poll was clamped like a gateway one", r.status, r.body)
		case <-time.After(2 * hold):
		}
		send(t, f.svc.Store, "sent after the gateway hold")
		r := <-done
		got := decodeJSON[page](t, r.header, r.body)
		if r.status != 200 || len(got.Messages) != 1 || got.Messages[0].Text != "sent after the gateway hold" {
			t.Errorf("status %d, body %s; want 200 with the message sent after the gateway hold", r.status, r.body)
		}
	})
}

// TestJoinLimitCountsTheGatewaysSourceIP pins whom the join limit counts
// behind API Gateway: the caller the gateway saw (requestContext.http.
// sourceIp), whatever X-Forwarded-For a client wrote. The limit is 1 a
// minute and the clock stands still, so only the address decides.
func TestJoinLimitCountsTheGatewaysSourceIP(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	f := newFunction(t, api.GroupRooms, map[string]string{"LETAGENTS_JOIN_LIMIT": "1"}, clock.Now)
	fixture := event(t, api.GroupRooms)
	steps := []struct {
		sourceIP, forwardedFor string
		want                   int
	}{
		{"192.0.2.1", "", 200},
		{"192.0.2.1", "198.51.100.1", 429},             // a header does not make another caller
		{"192.0.2.1", "198.51.100.2, 192.0.2.99", 429}, // nor a chain of them
		{"192.0.2.2", "192.0.2.1", 200},                // another source is, whatever it claims
		{"192.0.2.2", "", 429},
	}
	for i, st := range steps {
		var ev map[string]any
		if err := json.Unmarshal(fixture, &ev); err != nil {
			t.Fatal(err)
		}
		ev["requestContext"].(map[string]any)["http"].(map[string]any)["sourceIp"] = st.sourceIP
		headers := ev["headers"].(map[string]any)
		delete(headers, "x-forwarded-for")
		if st.forwardedFor != "" {
			headers["x-forwarded-for"] = st.forwardedFor
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if status, _, body := f.invoke(t, payload); status != st.want {
			t.Errorf("join %d from %s (X-Forwarded-For %q) = %d %s; want %d", i+1, st.sourceIP, st.forwardedFor, status, body, st.want)
		}
	}
}

// TestLivenessFunctionPath invokes the liveness function's handler, as
// lambdaapi.RunSweeper builds it, with its sample scheduled event.
func TestLivenessFunctionPath(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "functions", "liveness", "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("functions/liveness/event.json: %v", err)
	}
	if ev.Source != "aws.events" || ev.DetailType != "Scheduled Event" || len(ev.Resources) != 1 || ev.Time.IsZero() {
		t.Errorf("functions/liveness/event.json is not an EventBridge scheduled event (source, detail-type, resources, time): %+v", ev)
	}

	db := pgtest.New(t)
	cfg, err := config.Load(getenv(map[string]string{"DB_URL": db.URL, "LOG_LEVEL": "warn"}))
	if err != nil {
		t.Fatal(err)
	}
	handler := lambda.NewHandler(lambdaapi.SweepHandler(service.NewSweeper(cfg, db.Pool, service.NewLogger(cfg)), time.Now))

	ctx := t.Context()
	st := store.New(db.Pool)
	quietWorker(t, st)

	invoke := func() liveness.Report {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		out, err := handler.Invoke(ctx, b)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		var r liveness.Report
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("invoke answered %s, not a sweep report: %v", out, err)
		}
		return r
	}
	if r := invoke(); r != firstSweep {
		t.Errorf("first sweep = %+v, want %+v: 1 checked, 1 offline notice, its words merged", r, firstSweep)
	}
	if r := invoke(); r != (liveness.Report{Checked: 1}) {
		t.Errorf("second sweep = %+v, want 1 checked and nothing posted", r)
	}
	page, err := st.Messages(ctx, fixtureRoom, store.MessageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 1 || page.Messages[0].Source != letagents.SourceSystem ||
		!strings.HasPrefix(page.Messages[0].Text, "[status] Quiet's message channel has been unreachable for 10m") {
		t.Errorf("room has %+v, want one offline notice for Quiet", page.Messages)
	}
}

// quietWorker registers, in fixtureRoom, a worker whose last poll ended
// ten minutes ago: past the grace, so a sweep posts an offline notice
// (firstSweep).
func quietWorker(t *testing.T, st *store.Store) {
	t.Helper()
	ago := time.Now().Add(-10 * time.Minute)
	w := storetest.Register(t, st, fixtureRoom, "Quiet", letagents.SessionWorker, ago)
	storetest.Poll(t, st, w.RoomID, w.ID, ago, ago)
}

// firstSweep is what the first sweep after quietWorker reports: the
// offline notice, and the page of the search index's pending list its
// words went to, merged by the same sweep.
var firstSweep = liveness.Report{Checked: 1, Offline: 1, SearchMerged: 1}

// responseURL plays the pre-signed URL a custom resource answers
// CloudFormation at; it takes the answers as CloudFormation does (a PUT
// of JSON) and passes them on.
func responseURL(t *testing.T) (string, <-chan map[string]any) {
	t.Helper()
	answers := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		a := map[string]any{}
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || r.Method != http.MethodPut {
			a = map[string]any{"Status": fmt.Sprintf("not a CloudFormation answer: %s, %v", r.Method, err)}
		}
		answers <- a
	}))
	t.Cleanup(srv.Close)
	return srv.URL, answers
}

// migrateEvent is functions/migrate/event.json as a request of type
// request, to be answered at url.
func migrateEvent(t *testing.T, request cfn.RequestType, url string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "functions", migrateDir, "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("functions/migrate/event.json: %v", err)
	}
	ev["ResponseURL"] = url
	ev["RequestType"] = request
	if request != cfn.RequestCreate {
		ev["PhysicalResourceId"] = lambdaapi.SchemaResourceID
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// TestMigrateFunctionPath invokes the migrate function's handler, as
// lambdaapi.RunMigrator builds it, with its sample CloudFormation request,
// on a schema that has never been migrated: it migrates and tells
// CloudFormation so, at the request's pre-signed URL.
func TestMigrateFunctionPath(t *testing.T) {
	t.Parallel()
	url, answers := responseURL(t)
	payload := migrateEvent(t, cfn.RequestCreate, url)

	d := pgtest.NewEmpty(t)
	env := getenv(map[string]string{"DB_URL": d.URL, "LOG_LEVEL": "warn"})
	handler := lambda.NewHandler(cfn.LambdaWrap(lambdaapi.MigrateHandler(lambdaapi.Migrator(env, service.MigrateLimits{}))))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := handler.Invoke(ctx, payload); err != nil {
		t.Fatalf("invoke: %v", err)
	}
	a := testwait.Recv(t, "the answer to CloudFormation", answers)
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if a["Status"] != "SUCCESS" || a["LogicalResourceId"] != "Migrate" || dig(a, "Data", "SchemaVersion") != float64(latest) {
		t.Errorf("answered %v, want SUCCESS for Migrate with SchemaVersion %d", a, latest)
	}
	if err := db.CheckSchema(ctx, d.Pool, migrations.FS); err != nil {
		t.Errorf("after the deploy's migration: %v", err)
	}
}
