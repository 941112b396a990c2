package lambdaapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
// schema: Create and Update migrate and answer the version; Delete leaves
// the database alone; a failure fails the resource with its reason.
func TestMigrateHandler(t *testing.T) {
	t.Parallel()
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("connection refused")
	tests := []struct {
		name       string
		request    cfn.RequestType
		migrate    func(cfg service.Config) func(context.Context) (int, error)
		wantStatus string
		wantCalled bool
		wantReason string
	}{
		{"create migrates", cfn.RequestCreate, realMigrate, "SUCCESS", true, ""},
		{"update migrates", cfn.RequestUpdate, realMigrate, "SUCCESS", true, ""},
		{"delete leaves the database alone", cfn.RequestDelete, failing(broken), "SUCCESS", false, ""},
		{"a failure fails the deploy", cfn.RequestCreate, failing(broken), "FAILED", true, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			cfg, err := service.LoadConfig(func(k string) string { return map[string]string{"DB_URL": d.URL}[k] })
			if err != nil {
				t.Fatal(err)
			}
			var called atomic.Bool
			inner := tt.migrate(cfg)
			migrate := func(ctx context.Context) (int, error) {
				called.Store(true)
				return inner(ctx)
			}
			url, answers := answerURL(t)
			ev := cfn.Event{RequestType: tt.request, RequestID: "req-1", ResponseURL: url, LogicalResourceID: "Migrate",
				StackID: "arn:aws:cloudformation:eu-west-1:123456789012:stack/letagents/x", ResourceType: "Custom::Migrate",
				PhysicalResourceID: lambdaapi.SchemaResourceID}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := cfn.LambdaWrap(lambdaapi.MigrateHandler(migrate))(ctx, ev); err != nil {
				t.Fatalf("sending the answer: %v", err)
			}
			a := testwait.Recv(t, "the answer to CloudFormation", answers)
			if a.Status != tt.wantStatus || a.PhysicalResourceID != lambdaapi.SchemaResourceID || !strings.Contains(a.Reason, tt.wantReason) {
				t.Errorf("answered %+v, want %s with id %s and a reason containing %q", a, tt.wantStatus, lambdaapi.SchemaResourceID, tt.wantReason)
			}
			if called.Load() != tt.wantCalled {
				t.Errorf("migrate called = %v, want %v", called.Load(), tt.wantCalled)
			}
			checkErr := db.CheckSchema(context.Background(), d.Pool, migrations.FS)
			if migrated := tt.wantStatus == "SUCCESS" && tt.wantCalled; migrated {
				if checkErr != nil || a.Data["SchemaVersion"] != float64(latest) {
					t.Errorf("after the answer %+v: schema check %v, want the schema at %d", a, checkErr, latest)
				}
			} else if checkErr == nil {
				t.Error("the schema was migrated, want it untouched")
			}
		})
	}
}

func realMigrate(cfg service.Config) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) { return service.Migrate(ctx, cfg) }
}

func failing(err error) func(service.Config) func(context.Context) (int, error) {
	return func(service.Config) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { return 0, err }
	}
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
