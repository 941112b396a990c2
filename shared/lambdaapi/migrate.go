package lambdaapi

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"

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

// MigrateHandler is the migrate function's handler, the custom resource
// behind the stack's Migrate resource: on Create and Update (a deploy
// whose migrations changed) it runs migrate and answers the schema version
// it left, as the attribute SchemaVersion; a failure fails the deploy
// before any function of the new build serves. Delete touches nothing:
// removing the stack, or rolling back its creation, leaves the data be.
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
			return SchemaResourceID, nil, fmt.Errorf("migrations failed, the schema is unchanged from the last one applied: %w", err)
		}
		return SchemaResourceID, map[string]any{"SchemaVersion": v}, nil
	}
}

// MainMigrator is the whole main of the migrate function under Lambda:
// configure from the environment and hand the custom resource handler,
// wrapped to answer CloudFormation, to the runtime. Nothing connects at
// start: a database that cannot be reached must fail the deploy with a
// reason, not leave CloudFormation waiting on a function that never
// started.
func MainMigrator() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := RunMigrator(ctx, os.Getenv); err != nil {
		log.Fatal(err)
	}
}

// RunMigrator is MainMigrator with its inputs explicit.
func RunMigrator(ctx context.Context, getenv func(string) string) error {
	cfg, err := service.LoadConfig(getenv)
	if err != nil {
		return err
	}
	migrate := func(ctx context.Context) (int, error) { return service.Migrate(ctx, cfg) }
	lambda.StartWithOptions(cfn.LambdaWrap(MigrateHandler(migrate)), lambda.WithContext(ctx))
	return nil
}
