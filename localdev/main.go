// Command localdev runs the whole service on one port, the way AWS serves
// it: every request is routed to the function of its group, which gets the
// API Gateway HTTP API (payload v2) event the gateway would send, through
// the same Lambda adapter and runtime handler as when deployed; long-polls
// and event streams go to the poll server, as to the poll container in AWS. With DB_URL unset it starts a private
// PostgreSQL in LETAGENTS_LOCALDEV_DIR (default .localdev).
//
//	go run ./localdev
//	export LETAGENTS_API_URL=http://127.0.0.1:3001
//
// It reads the same environment as the deployed functions (see
// config.Load: DB_URL, PORT default 3001, LETAGENTS_POLL_MAX_MS, …).
// Unlike the deployed functions, which only check the schema, it applies
// the migrations at start. Every function shares one pool, sized for
// concurrency unless DB_MAX_CONNS says (pool.go); it prints the size.
// It listens on 127.0.0.1 only. The liveness sweeper, a scheduled function
// in AWS, runs here on a ticker every minute. It stops, and stops its
// PostgreSQL, on SIGINT or SIGTERM, and when the process that started it
// exits: killing `go run` (a script's `kill $!`) leaves its child running.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/localdev/embeddedpg"
	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/mcphost"
	"github.com/letagents/letagents-go/shared/service"
)

// parentCheck is how often the runner looks whether its parent has exited.
const parentCheck = time.Second

// errOrphaned ends the run when the process that started it has exited.
var errOrphaned = errors.New("the process that started localdev has exited")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := untilOrphaned(ctx, parentCheck)
	defer cancel()
	if err := run(ctx, os.Getenv, os.Stdout, os.Stderr); err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("localdev failed", "error", err)
		os.Exit(1)
	}
}

// untilOrphaned returns a context that also ends, with errOrphaned as its
// cause, once this process's parent has exited: the process is then
// adopted by another, and its parent process id changes. Parent death
// signals (Linux only) would fire when the parent's thread that started
// us exits, not the parent; polling is portable and exact.
func untilOrphaned(ctx context.Context, every time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	parent := os.Getppid()
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if os.Getppid() != parent {
					cancel(errOrphaned)
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// run serves until ctx ends, then drains and stops everything it started.
// Once listening it prints the URL and the database in use on stdout; it
// logs, in JSON, on stderr.
func run(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	cfg.LogOutput = stderr
	dir := getenv("LETAGENTS_LOCALDEV_DIR")
	if dir == "" {
		dir = ".localdev"
	}
	signIn := localAuth(&cfg, getenv, dir)
	logger := service.NewLogger(cfg)
	defer context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), errOrphaned) {
			logger.Warn("stopping: the process that started localdev has exited")
		}
	})()

	connString, dbDesc, stopDB, err := database(ctx, cfg, dir, logger)
	if err != nil {
		return err
	}
	defer stopDB()

	size, sizing := cfg.DB.MaxConns, "DB_MAX_CONNS"
	if size == 0 {
		if size, sizing, err = poolSize(ctx, connString); err != nil {
			return err
		}
	}
	pool, err := db.Open(ctx, connString, size)
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
	// The hosted MCP endpoint reaches the API at the address the
	// listener gets, known once it listens; until then /mcp answers 503.
	var hosted atomic.Pointer[server.Hosted]
	defer func() {
		if h := hosted.Load(); h != nil {
			h.Close()
		}
	}()
	handler := server.Mount(gw, hosted.Load)
	return httpserver.Serve(ctx, loopback(cfg.Addr), handler, httpserver.Options{Drain: drain, Grace: httpserver.ShutdownGrace, BodyTimeout: cfg.BodyTimeout, IdleTimeout: cfg.IdleTimeout,
		Ready: func(a net.Addr) {
			u := httpserver.Listening(a)
			if h, err := mcphost.New(services[api.GroupPoll], u, "", ""); err != nil {
				logger.Error("hosted MCP endpoint off", "error", err)
			} else {
				hosted.Store(h)
				fmt.Fprintf(stdout, "hosted MCP: %s%s (claude mcp add --transport http letagents %s%s)\n", u, server.HostedPath, u, server.HostedPath)
			}
			fmt.Fprintf(stdout, "letagents localdev: every function on %s\n", u)
			fmt.Fprintf(stdout, "export LETAGENTS_API_URL=%s\n", u)
			fmt.Fprintf(stdout, "database: %s\n", dbDesc)
			fmt.Fprintf(stdout, "pool: %d connections (%s)\n", pool.Config().MaxConns, sizing)
			fmt.Fprintf(stdout, "sign-in: %s\n", signIn)
			if cfg.LocalOwner {
				fmt.Fprintf(stdout, "%s (login %s), who administers every room (LETAGENTS_LOCAL_OWNER=off to act anonymously)\n",
					localOwnerBanner, letagents.LocalOwnerLogin)
			}
		}})
}

// localOwnerBanner starts the line of the start banner that says the
// server acts for the local owner.
const localOwnerBanner = "sign-in is off: everyone here acts as the local owner"

// startSweeper runs the liveness sweeper every liveness.SweepInterval
// (first at once) until ctx ends or the returned func is called, which
// waits for a sweep under way to finish.
func startSweeper(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) (stop func()) {
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
// is for trying the service, often offline. Then the server acts for the
// local owner too (unless LETAGENTS_LOCAL_OWNER=off), so that agent
// sessions, the board and hooks work without an account.
func localAuth(cfg *config.Config, getenv func(string) string, dir string) string {
	if cfg.KMSKeyID == "" && cfg.TokenKeyFile == "" {
		cfg.TokenKeyFile = filepath.Join(dir, "token.key")
	}
	desc := "GitHub, tokens sealed with " + describeSealer(cfg)
	signInOff := cfg.GitHub.ClientID == "" && cfg.GitHubSecretARN == ""
	if signInOff {
		desc = "off (set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET to sign in with GitHub)"
		if getenv("LETAGENTS_REPO_ACCESS") == "" {
			cfg.RepoAccess = false
		}
	}
	if !cfg.RepoAccess {
		desc += "; every room, repo rooms too, is open to anyone who can reach this server"
	}
	if signInOff && !cfg.RepoAccess && getenv("LETAGENTS_LOCAL_OWNER") == "" {
		cfg.LocalOwner = true
	}
	return desc
}

func describeSealer(cfg *config.Config) string {
	if cfg.KMSKeyID != "" {
		return "KMS key " + cfg.KMSKeyID
	}
	return "the key file " + cfg.TokenKeyFile
}

// database returns the connection string to use, a description of it for
// the user (no password), and a function that stops what it started. With
// DB_URL unset it starts the embedded PostgreSQL in dir, logging to a file
// there.
func database(ctx context.Context, cfg config.Config, dir string, logger *slog.Logger) (connString, desc string, stop func(), err error) {
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
			logger.Error("stop the embedded database", "error", err)
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
