package lambdaapi

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/letagents/letagents-go/shared/config"

	"github.com/letagents/letagents-go/shared/service"
)

// SchemaResourceID is the physical id of the stack's Migrate resource. It
// never changes, so CloudFormation never replaces the resource (and never
// sends the Delete a replacement would).
const SchemaResourceID = "letagents-schema"

// answerReserve is the time kept, before the invocation's deadline, to
// tell CloudFormation the outcome: a function that times out answers
// nothing, and the stack waits for its resource's own timeout.
const answerReserve = 10 * time.Second

// maxReason bounds the reason sent to CloudFormation, which refuses an
// answer over 4,096 bytes (and then fails the resource with its own,
// useless reason). The full error is in the function's log.
const maxReason = 2048

// MigrateHandler is the migrate function's handler, the custom resource
// behind the stack's Migrate resource: on Create and Update (a deploy
// whose migrations changed) it runs migrate and answers the schema version
// it left, as the attribute SchemaVersion; a failure fails the deploy
// before any function of the new build serves, with a reason saying what
// to mend. Delete answers at once and touches nothing: removing the stack,
// or rolling back its creation, leaves the data be, and must not wait on
// a database that may be what failed.
func MigrateHandler(migrate func(context.Context) (int, error)) cfn.CustomResourceFunction {
	return func(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
		if ev.RequestType == cfn.RequestDelete {
			return SchemaResourceID, nil, nil
		}
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-answerReserve))
			defer cancel()
		}
		v, err := migrate(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("ran out of time: the function's timeout, less %v kept to answer, ended the run (%w). "+
					"Migrations applied before stay; the one under way was rolled back. Find in the log what held it up "+
					"(a long transaction locking a table?), then deploy again, with a longer MigrateFunction Timeout if a migration needs it",
					answerReserve, err)
			}
			return SchemaResourceID, nil, reason(fmt.Errorf("the schema migration failed: %w", err))
		}
		log.Printf("schema at migration %d", v)
		return SchemaResourceID, map[string]any{"SchemaVersion": v}, nil
	}
}

// reasonError is an error as CloudFormation shows it: at most maxReason
// bytes, pointing to the function's log, where the whole of it is.
type reasonError struct{ err error }

func reason(err error) error { return reasonError{err} }

func (r reasonError) Unwrap() error { return r.err }

func (r reasonError) Error() string {
	s := r.err.Error()
	if len(s) > maxReason {
		s = s[:maxReason]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	if lambdacontext.LogStreamName != "" {
		s += fmt.Sprintf(" [log group %s, stream %s]", lambdacontext.LogGroupName, lambdacontext.LogStreamName)
	}
	return s
}

// Migrator is the migrate function's work under Lambda: read the
// configuration through getenv and migrate the database it names within
// limits. It reads the configuration on each request, not at start, so a
// configuration error is the request's answer: a function that exits
// before it takes its request answers CloudFormation nothing, and the
// stack waits out the resource's timeout (then again for the rollback's
// Delete).
func Migrator(getenv func(string) string, limits service.MigrateLimits) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		cfg, err := config.Load(getenv)
		if err != nil {
			return 0, fmt.Errorf("the function's configuration is unusable: %w. The stack's parameters set it: correct them and deploy again", err)
		}
		return service.Migrate(ctx, cfg, limits)
	}
}

// RunMigrator is the whole of the migrate function under Lambda: it hands
// the custom resource handler, wrapped to answer CloudFormation, to the
// runtime. Nothing can fail before the runtime takes over: every failure
// is some request's FAILED answer.
func RunMigrator(ctx context.Context, getenv func(string) string) {
	handOver(getenv, cfn.LambdaWrap(MigrateHandler(Migrator(getenv, service.MigrateLimits{}))), lambda.WithContext(ctx))
}
