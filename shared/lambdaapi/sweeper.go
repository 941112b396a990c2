package lambdaapi

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/service"
)

// SweepHandlerFunc is the shape of the liveness function's handler: an
// EventBridge schedule invokes it, and it answers with what it did.
type SweepHandlerFunc func(context.Context, events.EventBridgeEvent) (liveness.Report, error)

// SweepHandler runs one liveness sweep per invocation, at the time now
// tells (the invocation's, not the event's scheduled time: a late
// delivery must not judge outages by a past clock). A failed sweep fails
// the invocation, so it shows in the function's error metrics; the next
// scheduled one retries.
func SweepHandler(sw *liveness.Sweeper, now func() time.Time) SweepHandlerFunc {
	return func(ctx context.Context, _ events.EventBridgeEvent) (liveness.Report, error) {
		return sw.Sweep(ctx, now())
	}
}

// MainSweeper is the whole main of the liveness function: configure from
// the environment, open the pool once per instance, and hand the sweep
// handler to the Lambda runtime.
func MainSweeper() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := RunSweeper(ctx, os.Getenv); err != nil {
		log.Fatal(err)
	}
}

// RunSweeper is MainSweeper with its inputs explicit.
func RunSweeper(ctx context.Context, getenv func(string) string) error {
	cfg, err := service.LoadConfig(getenv)
	if err != nil {
		return fmt.Errorf("start liveness function: configuration: %w", err)
	}
	pool, err := service.OpenPool(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start liveness function: %w", err)
	}
	sw := service.NewSweeper(cfg, pool, service.NewLogger(cfg))
	lambda.StartWithOptions(SweepHandler(sw, time.Now),
		lambda.WithContext(ctx),
		lambda.WithEnableSIGTERM(pool.Close))
	return nil
}
