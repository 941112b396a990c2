package lambdaapi

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/letagents/letagents-go/shared/config"
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

// MainSweeper is the whole main of the liveness function: Main's, with
// the sweep handler in place of an API group's.
func MainSweeper() { mainOf(RunSweeper) }

// RunSweeper is MainSweeper with its inputs explicit.
func RunSweeper(ctx context.Context, getenv func(string) string) error {
	return start(ctx, getenv, "liveness", func(ctx context.Context, cfg config.Config) (any, func(), error) {
		pool, err := service.OpenPool(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		return SweepHandler(service.NewSweeper(cfg, pool, service.NewLogger(cfg)), time.Now), pool.Close, nil
	})
}
