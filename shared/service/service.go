// Package service assembles a running instance from its environment: the
// configuration, the pool, the store, the listener hub when long-polls are
// served, and the HTTP handler of the wanted route groups. Every function,
// the poll container and the local runner start through it, so they all
// read the same variables the same way.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/store"
)

// Config is everything an instance reads from its environment.
type Config struct {
	DB db.Config
	// PollMax clamps a long-poll's ?timeout (LETAGENTS_POLL_MAX_MS, default
	// 180000, accepted 1000 to 86400000).
	PollMax time.Duration
	// GatewayHold caps a long-poll that arrived through API Gateway, which
	// ends every request at 30 s (LETAGENTS_GATEWAY_HOLD_MS, default 25000).
	GatewayHold time.Duration
	// Addr is where a long-running server listens (PORT, default 3001).
	Addr string
	// LogLevel is debug, info, warn or error (LOG_LEVEL, default info).
	LogLevel slog.Level
}

// Variables lists every environment variable LoadConfig reads; the
// template check holds template.yaml to it.
var Variables = []string{"DB_URL", "DB_SECRET_ARN", "DB_MAX_CONNS", "LETAGENTS_POLL_MAX_MS", "LETAGENTS_GATEWAY_HOLD_MS", "PORT", "LOG_LEVEL"}

// LoadConfig reads the environment through getenv, naming the variable at
// fault when a value is unusable.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{
		DB:          db.Config{URL: getenv("DB_URL"), SecretARN: getenv("DB_SECRET_ARN")},
		PollMax:     letagents.DefaultPollMax,
		GatewayHold: 25 * time.Second,
		Addr:        ":3001",
	}
	if v := getenv("DB_MAX_CONNS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("DB_MAX_CONNS=%q: want a whole number of at least 1", v)
		}
		cfg.DB.MaxConns = int32(n)
	}
	var err error
	if cfg.PollMax, err = millis(getenv, "LETAGENTS_POLL_MAX_MS", cfg.PollMax, letagents.MinPollMax, letagents.MaxPollMax); err != nil {
		return cfg, err
	}
	if cfg.GatewayHold, err = millis(getenv, "LETAGENTS_GATEWAY_HOLD_MS", cfg.GatewayHold, time.Second, 29*time.Second); err != nil {
		return cfg, err
	}
	if v := getenv("PORT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			return cfg, fmt.Errorf("PORT=%q: want a port number", v)
		}
		cfg.Addr = ":" + v
	}
	if v := getenv("LOG_LEVEL"); v != "" {
		if err := cfg.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return cfg, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v)
		}
	}
	return cfg, nil
}

func millis(getenv func(string) string, name string, def, lo, hi time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	d := time.Duration(n) * time.Millisecond
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("%s=%q: want milliseconds from %d to %d", name, v, lo.Milliseconds(), hi.Milliseconds())
	}
	return d, nil
}

// Service is one running instance.
type Service struct {
	Config  Config
	Logger  *slog.Logger
	Pool    *pgxpool.Pool
	Store   *store.Store
	Hub     *notify.Hub // nil unless long-polls are served
	Handler http.Handler

	ownsPool bool
	draining chan struct{}
	stop     context.CancelFunc
	hubDone  chan struct{}
}

// Open connects, migrates and builds the handler for groups (all when none).
// The hub, if any, runs until Close.
func Open(ctx context.Context, cfg Config, groups ...api.Group) (*Service, error) {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	var sm db.SecretGetter
	if cfg.DB.SecretARN != "" {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load AWS config: %w", err)
		}
		sm = secretsmanager.NewFromConfig(awsCfg)
	}
	conn, err := cfg.DB.ConnString(ctx, sm)
	if err != nil {
		return nil, err
	}
	pool, err := db.Open(ctx, conn, cfg.DB.MaxConns)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx, pool, migrations.FS); err != nil {
		pool.Close()
		return nil, err
	}
	s := assemble(ctx, cfg, logger, pool, groups)
	s.ownsPool = true
	return s, nil
}

// FromPool is Open for a pool the caller made and migrated (tests, the
// local runner); Close leaves the pool open.
func FromPool(ctx context.Context, cfg Config, pool *pgxpool.Pool, groups ...api.Group) *Service {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	return assemble(ctx, cfg, logger, pool, groups)
}

func assemble(ctx context.Context, cfg Config, logger *slog.Logger, pool *pgxpool.Pool, groups []api.Group) *Service {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Service{Config: cfg, Logger: logger, Pool: pool, Store: store.New(pool),
		draining: make(chan struct{}), stop: stop, hubDone: make(chan struct{})}
	if len(groups) == 0 || slices.Contains(groups, api.GroupPoll) {
		s.Hub = notify.New(db.Connector(pool), notify.Options{Logger: logger})
		go func() {
			defer close(s.hubDone)
			_ = s.Hub.Run(runCtx)
		}()
	} else {
		close(s.hubDone)
	}
	s.Handler = api.New(api.Deps{Store: s.Store, Hub: s.Hub, Logger: logger, PollMax: cfg.PollMax, Draining: s.draining}, groups...)
	return s
}

// Drain makes parked long-polls answer now; new ones answer at once too.
func (s *Service) Drain() {
	select {
	case <-s.draining:
	default:
		close(s.draining)
	}
}

// Close stops the hub and closes the pool if Open made it.
func (s *Service) Close() {
	s.Drain()
	s.stop()
	<-s.hubDone
	if s.ownsPool {
		s.Pool.Close()
	}
}

// Serve runs h on addr until ctx ends, then drains: parked long-polls are
// answered at once and in-flight requests get up to grace to finish.
func Serve(ctx context.Context, addr string, h http.Handler, drain func(), grace time.Duration, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	// No write timeout: a long-poll holds its answer by design. Idle
	// keep-alive connections are dropped after a while, or a crowd of
	// agents that came and went would pin a socket each.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	drain()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// Listening formats a listener address as a URL a client on this machine can use.
func Listening(a net.Addr) string {
	host, port, _ := net.SplitHostPort(a.String())
	if host == "" || host == "::" || host == "0.0.0.0" || strings.HasPrefix(host, "[") {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
