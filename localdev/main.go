// Command localdev runs the whole service on one port, the way AWS serves
// it: every request is routed to the function of its group, which gets the
// API Gateway HTTP API (payload v2) event the gateway would send, through
// the same Lambda adapter and runtime handler as when deployed; long-polls
// go to the poll server, as in AWS. With DB_URL unset it starts a private
// PostgreSQL in LETAGENTS_LOCALDEV_DIR (default .localdev).
//
//	go run ./localdev
//	export LETAGENTS_API_URL=http://127.0.0.1:3001
//
// It reads the same environment as the deployed functions (see
// service.LoadConfig: DB_URL, PORT default 3001, LETAGENTS_POLL_MAX_MS, …).
// It listens on 127.0.0.1 only. The liveness sweeper, a scheduled function
// in AWS, runs here on a ticker every minute.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/localdev/embeddedpg"
	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/service"
)

// shutdownGrace bounds how long in-flight requests may take to finish once
// the server stops (parked long-polls answer at once).
const shutdownGrace = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx ends, then drains and stops everything it started.
// Once listening it prints the URL and the database in use on stdout.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := service.LoadConfig(getenv)
	if err != nil {
		return err
	}
	dir := getenv("LETAGENTS_LOCALDEV_DIR")
	if dir == "" {
		dir = ".localdev"
	}
	signIn := localAuth(&cfg, getenv, dir)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))

	connString, dbDesc, stopDB, err := database(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer stopDB()

	pool, err := db.Open(ctx, connString, cfg.DB.MaxConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := db.Migrate(ctx, pool, migrations.FS)
	if err != nil {
		return err
	}
	logger.Debug("migrations applied", "count", applied)

	// Each deployed function has its own instance with its own pool; here
	// they all share one pool, which changes nothing they can observe.
	services := map[api.Group]*service.Service{}
	for _, g := range api.Groups() {
		svc, err := service.FromPool(ctx, cfg, pool, g)
		if err != nil {
			return err
		}
		defer svc.Close()
		services[g] = svc
	}
	functions := map[api.Group]http.Handler{}
	for g, svc := range services {
		if g != api.GroupPoll {
			functions[g] = svc.Handler
		}
	}
	gw := newGateway(functions, services[api.GroupPoll].Handler, cfg.GatewayHold, logger)

	// The liveness sweeper, which AWS runs on a schedule: here a ticker,
	// stopped (and waited for) before the pool closes.
	stopSweeper := startSweeper(ctx, cfg, pool, logger)
	defer stopSweeper()

	drain := func() {
		for _, svc := range services {
			svc.Drain()
		}
	}
	return service.Serve(ctx, loopback(cfg.Addr), gw, service.Serving{Drain: drain, Grace: shutdownGrace, BodyTimeout: cfg.BodyTimeout,
		Ready: func(a net.Addr) {
			u := service.Listening(a)
			fmt.Fprintf(stdout, "letagents localdev: every function on %s\n", u)
			fmt.Fprintf(stdout, "export LETAGENTS_API_URL=%s\n", u)
			fmt.Fprintf(stdout, "database: %s\n", dbDesc)
			fmt.Fprintf(stdout, "sign-in: %s\n", signIn)
		}})
}

// startSweeper runs the liveness sweeper every liveness.SweepInterval
// (first at once) until ctx ends or the returned func is called, which
// waits for a sweep under way to finish.
func startSweeper(ctx context.Context, cfg service.Config, pool *pgxpool.Pool, logger *slog.Logger) (stop func()) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	sw := service.NewSweeper(cfg, pool, logger)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw.Run(ctx, liveness.SweepInterval, now)
	}()
	return func() {
		cancel()
		<-done
	}
}

// localAuth gives sign-in its local defaults and describes the outcome.
// GitHub tokens are sealed with a key file in dir unless told otherwise.
// Without a GitHub OAuth app nobody can sign in, so repo rooms, which
// would need sign-in when GitHub cannot vouch for them, are opened to
// everyone (unless LETAGENTS_REPO_ACCESS says otherwise): a local server
// is for trying the service, often offline.
func localAuth(cfg *service.Config, getenv func(string) string, dir string) string {
	if cfg.KMSKeyID == "" && cfg.TokenKeyFile == "" {
		cfg.TokenKeyFile = filepath.Join(dir, "token.key")
	}
	if cfg.GitHub.ClientID != "" || cfg.GitHubSecretARN != "" {
		return "GitHub, tokens sealed with " + describeSealer(cfg)
	}
	if getenv("LETAGENTS_REPO_ACCESS") == "" {
		cfg.RepoAccess = false
		return "off (set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET to sign in with GitHub); every room, repo rooms too, is open"
	}
	return "off (set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET to sign in with GitHub)"
}

func describeSealer(cfg *service.Config) string {
	if cfg.KMSKeyID != "" {
		return "KMS key " + cfg.KMSKeyID
	}
	return "the key file " + cfg.TokenKeyFile
}

// database returns the connection string to use, a description of it for
// the user (no password), and a function that stops what it started. With
// DB_URL unset it starts the embedded PostgreSQL in dir, logging to a file
// there.
func database(ctx context.Context, cfg service.Config, dir string) (connString, desc string, stop func(), err error) {
	switch {
	case cfg.DB.SecretARN != "":
		return "", "", nil, errors.New("DB_SECRET_ARN is for deployed functions; give localdev DB_URL, or nothing for the embedded database")
	case cfg.DB.URL != "":
		return cfg.DB.URL, "DB_URL " + redactURL(cfg.DB.URL), func() {}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", nil, fmt.Errorf("LETAGENTS_LOCALDEV_DIR=%q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", "", nil, fmt.Errorf("LETAGENTS_LOCALDEV_DIR=%q: %w", dir, err)
	}
	logPath := filepath.Join(abs, "embeddedpg.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", "", nil, fmt.Errorf("open embedded database log: %w", err)
	}
	srv, err := embeddedpg.Start(ctx, embeddedpg.Options{Dir: abs, Log: logFile})
	if err != nil {
		logFile.Close()
		return "", "", nil, fmt.Errorf("start the embedded database (or set DB_URL), see %s: %w", logPath, err)
	}
	stop = func() {
		// The run's ctx is done by now: stop under a context of our own.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := srv.Stop(stopCtx); err != nil {
			fmt.Fprintf(os.Stderr, "localdev: %v\n", err)
		}
		logFile.Close()
	}
	return srv.URL(), fmt.Sprintf("embedded PostgreSQL, data in %s (%s; log %s)", abs, srv.URL(), logPath), stop, nil
}

// loopback binds an address without a host (":3001", as PORT gives) to
// 127.0.0.1: a development server with a trust-auth database behind it has
// no business on the network.
func loopback(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

var passwordKV = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// redactURL hides the password of a connection string, in URL form
// (user:password@, ?password=) or key=value form (password=...).
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return passwordKV.ReplaceAllString(s, "${1}xxxxx")
}
