package lambdaapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/lambdaapi"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
	"github.com/letagents/letagents-go/shared/testwait"
)

// cfnAnswer is what the custom resource tells CloudFormation.
type cfnAnswer struct {
	Status             string         `json:"Status"`
	Reason             string         `json:"Reason"`
	PhysicalResourceID string         `json:"PhysicalResourceId"`
	Data               map[string]any `json:"Data"`
}

// answerURL plays CloudFormation's pre-signed response URL.
func answerURL(t *testing.T) (string, <-chan cfnAnswer) {
	t.Helper()
	got := make(chan cfnAnswer, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a cfnAnswer
		if r.Method != http.MethodPut || json.NewDecoder(r.Body).Decode(&a) != nil {
			a.Status = "malformed " + r.Method
		}
		got <- a
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// The migrate function through cfn.LambdaWrap, as deployed, on a real
// schema: Create and Update migrate and answer the version; Delete answers
// at once and touches nothing; every failure, whatever its cause, answers
// FAILED with a reason naming what to mend.
func TestMigrateHandler(t *testing.T) {
	t.Parallel()
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	refused := closedPort(t)
	silent := silentServer(t)
	short := service.MigrateLimits{Connect: 500 * time.Millisecond, LockWait: 300 * time.Millisecond}
	tests := []struct {
		name    string
		request cfn.RequestType
		// env is the function's environment; DB_URL is the test's schema
		// unless set.
		env map[string]string
		// setup prepares the schema; it may return the lock holder's pid.
		setup      func(t *testing.T, d *pgtest.DB) int
		limits     service.MigrateLimits
		invocation time.Duration // the invocation's time; a minute unless set
		wantStatus string
		wantReason []string // each in the reason; "%d" is the setup's pid
	}{
		{name: "create migrates", request: cfn.RequestCreate, wantStatus: "SUCCESS"},
		{name: "update migrates", request: cfn.RequestUpdate, wantStatus: "SUCCESS"},
		{name: "delete answers at once, touching nothing", request: cfn.RequestDelete,
			env: map[string]string{"DB_URL": "postgres://postgres@" + silent + "/x", "LETAGENTS_BASE_URL": "example.com"}, wantStatus: "SUCCESS"},
		{name: "a bad configuration", request: cfn.RequestCreate, env: map[string]string{"LETAGENTS_BASE_URL": "example.com"},
			wantStatus: "FAILED", wantReason: []string{"configuration is unusable", `LETAGENTS_BASE_URL="example.com"`, "stack's parameters"}},
		{name: "no database configured", request: cfn.RequestUpdate, env: map[string]string{"DB_URL": ""},
			wantStatus: "FAILED", wantReason: []string{"DB_URL or DB_SECRET_ARN"}},
		{name: "the database refuses connections", request: cfn.RequestCreate, env: map[string]string{"DB_URL": "postgres://postgres@" + refused + "/x?sslmode=disable"},
			wantStatus: "FAILED", wantReason: []string{"connect to the database", refused}},
		{name: "the database never answers", request: cfn.RequestCreate, env: map[string]string{"DB_URL": "postgres://postgres@" + silent + "/x?sslmode=disable"},
			limits: short, wantStatus: "FAILED", wantReason: []string{"connect to the database: no answer within 500ms", "security groups"}},
		{name: "another session holds the migration lock", request: cfn.RequestCreate, setup: holdMigrateLock, limits: short,
			wantStatus: "FAILED", wantReason: []string{"held the migration lock for over 300ms", "pg_terminate_backend(%d)"}},
		{name: "a migration fails", request: cfn.RequestCreate, setup: func(t *testing.T, d *pgtest.DB) int {
			if _, err := d.Pool.Exec(context.Background(), `CREATE TABLE rooms (id int)`); err != nil {
				t.Fatal(err)
			}
			return 0
		}, wantStatus: "FAILED", wantReason: []string{"0001_init.sql", `relation "rooms" already exists`}},
		{name: "time runs out", request: cfn.RequestCreate, setup: holdMigrateLock, limits: service.MigrateLimits{LockWait: time.Hour},
			invocation: 11 * time.Second, wantStatus: "FAILED", wantReason: []string{"ran out of time", "MigrateFunction Timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			pid := 0
			if tt.setup != nil {
				pid = tt.setup(t, d)
			}
			env := map[string]string{"DB_URL": d.URL}
			maps.Copy(env, tt.env)
			url, answers := answerURL(t)
			ev := cfn.Event{RequestType: tt.request, RequestID: "req-1", ResponseURL: url, LogicalResourceID: "Migrate",
				StackID: "arn:aws:cloudformation:eu-west-1:123456789012:stack/letagents/x", ResourceType: "Custom::Migrate",
				PhysicalResourceID: lambdaapi.SchemaResourceID}
			invocation := cmp.Or(tt.invocation, time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), invocation)
			defer cancel()
			handler := cfn.LambdaWrap(lambdaapi.MigrateHandler(lambdaapi.Migrator(func(k string) string { return env[k] }, tt.limits)))
			if _, err := handler(ctx, ev); err != nil {
				t.Fatalf("sending the answer: %v", err)
			}
			a := testwait.Recv(t, "the answer to CloudFormation", answers)
			if a.Status != tt.wantStatus || a.PhysicalResourceID != lambdaapi.SchemaResourceID {
				t.Errorf("answered %+v, want %s with id %s", a, tt.wantStatus, lambdaapi.SchemaResourceID)
			}
			for _, want := range tt.wantReason {
				if want = strings.ReplaceAll(want, "%d", strconv.Itoa(pid)); !strings.Contains(a.Reason, want) {
					t.Errorf("reason %q does not say %q", a.Reason, want)
				}
			}
			checkErr := db.CheckSchema(context.Background(), d.Pool, migrations.FS)
			if migrated := tt.wantStatus == "SUCCESS" && tt.request != cfn.RequestDelete; migrated {
				if checkErr != nil || a.Data["SchemaVersion"] != float64(latest) {
					t.Errorf("after the answer %+v: schema check %v, want the schema at %d", a, checkErr, latest)
				}
			} else if checkErr == nil {
				t.Error("the schema was migrated, want it untouched")
			}
		})
	}
}

// holdMigrateLock takes d's migration lock until the test ends and
// returns the holder's pid.
func holdMigrateLock(t *testing.T, d *pgtest.DB) int {
	pid, _ := d.HoldMigrateLock(t)
	return pid
}

// closedPort returns an address where nothing listens: connections to it
// are refused at once.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentServer returns the address of a server that takes connections and
// never says a word: a database behind a network that drops its answers.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// The migrations must end early enough to answer: a function that runs
// out its time tells CloudFormation nothing.
func TestMigrateHandlerKeepsTimeToAnswer(t *testing.T) {
	t.Parallel()
	invocation := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), invocation)
	defer cancel()
	var got time.Time
	h := lambdaapi.MigrateHandler(func(ctx context.Context) (int, error) {
		got, _ = ctx.Deadline()
		return 1, nil
	})
	if _, _, err := h(ctx, cfn.Event{RequestType: cfn.RequestCreate}); err != nil {
		t.Fatal(err)
	}
	if want := invocation.Add(-10 * time.Second); !got.Equal(want) {
		t.Errorf("migrate's deadline = %v, want the invocation's less 10 s, %v", got, want)
	}
}

// CloudFormation refuses an answer over 4,096 bytes: a long error (a
// migration's, with its detail) is cut to fit, whole characters only.
func TestMigrateHandlerBoundsTheReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 5000)
	h := lambdaapi.MigrateHandler(func(context.Context) (int, error) { return 0, errors.New(long) })
	_, _, err := h(context.Background(), cfn.Event{RequestType: cfn.RequestCreate})
	if err == nil {
		t.Fatal("a failed migration answered no error")
	}
	reason := err.Error()
	if len(reason) > 2100 || !utf8.ValidString(reason) || !strings.HasSuffix(reason, "é…") || !strings.HasPrefix(reason, "the schema migration failed: é") {
		t.Errorf("reason of %d bytes (valid UTF-8: %v) ending %q; want at most about 2 KB, cut at a character, marked", len(reason), utf8.ValidString(reason), reason[max(0, len(reason)-8):])
	}
}
