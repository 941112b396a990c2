// Command migrate applies the migrations this build carries, once per
// deploy. Under Lambda it is the custom resource behind template.yaml's
// Migrate resource, which CloudFormation invokes before any function of
// the new build is updated. Anywhere else it migrates the database
// DB_URL (or DB_SECRET_ARN) names once and exits: what `sam local`, or a
// database restored by hand, needs before the functions will serve.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/lambdaapi"
	"github.com/letagents/letagents-go/shared/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	if lambdaapi.Detected(getenv) {
		lambdaapi.RunMigrator(ctx, getenv)
		return nil
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	v, err := service.Migrate(ctx, cfg, service.MigrateLimits{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema at migration %d\n", v)
	return nil
}
