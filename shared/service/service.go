// Package service assembles a running instance from its configuration
// (shared/config): the pool, the store, the listener hub when long-polls
// are served, the sign-in parts, and the HTTP handler of the wanted route
// groups, with the poll server's readiness routes. Every function, the
// poll container and the local runner start through it.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/seal"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// Service is one running instance.
type Service struct {
	Config  config.Config
	Logger  *slog.Logger
	Pool    *pgxpool.Pool
	Store   *store.Store
	Hub     *notify.Hub // nil unless long-polls are served
	Auth    *auth.Service
	Handler http.Handler

	ownsPool bool
	draining chan struct{}
	stop     context.CancelFunc
	hubDone  chan struct{}
}

// Open connects and builds the handler for groups (all when none). It
// refuses a database whose schema is older than this build's migrations
// (Migrate applies them, once per deploy). The hub, if any, runs until
// Close.
func Open(ctx context.Context, cfg config.Config, groups ...api.Group) (*Service, error) {
	logger := NewLogger(cfg)
	direct, password, err := connString(ctx, cfg)
	if err != nil {
		return nil, err
	}
	authSvc, err := newAuth(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	pool, err := openPool(ctx, cfg, direct, password, logger)
	if err != nil {
		return nil, err
	}
	// The listener connects to the database itself, never through the
	// pool's proxy (db.Config.ProxyHost).
	listener, err := db.DirectConnector(direct, password)
	if err != nil {
		pool.Close()
		return nil, err
	}
	// Here, not in newAuth: the local runner assembles one service per
	// function from FromPool, and says what it opened once, itself.
	if !cfg.RepoAccess {
		logger.Warn("LETAGENTS_REPO_ACCESS=open: every room, private repositories' too, is open to anyone")
	}
	s := assemble(ctx, cfg, logger, pool, listener, authSvc, groups)
	s.ownsPool = true
	return s, nil
}

// OpenPool connects to the database cfg names (reading its secret when
// DB_SECRET_ARN is set, through DB_PROXY_HOST when set) and checks its
// schema as Open does: the part of Open that a function serving no route
// (the liveness sweeper) needs. The caller closes the pool.
func OpenPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	direct, password, err := connString(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return openPool(ctx, cfg, direct, password, NewLogger(cfg))
}

// MigrateLimits bound the waits of Migrate, so that a deploy whose
// database cannot be reached, or whose migration lock another session
// holds, fails in seconds with the reason instead of waiting out its time.
// A zero field takes its default.
type MigrateLimits struct {
	// Connect bounds reading the database secret and connecting
	// (default DefaultMigrateConnect).
	Connect time.Duration
	// LockWait bounds the wait for the migration lock while another
	// session holds it (default DefaultMigrateLockWait).
	LockWait time.Duration
}

// DefaultMigrateConnect is MigrateLimits.Connect unless set: a database
// that answers at all answers in a second or two, one resuming from
// Aurora Serverless's pause in about 15 s; a silent one is a network that
// drops the packets (security groups, routes), which no wait mends.
const DefaultMigrateConnect = 30 * time.Second

// DefaultMigrateLockWait is MigrateLimits.LockWait unless set: ample for
// a concurrent deploy's migrations, which take seconds; a lock held longer
// is most likely a dead session a person must end.
const DefaultMigrateLockWait = 30 * time.Second

// Migrate applies the migrations this build carries to the database cfg
// names, connecting directly (never through DB_PROXY_HOST: the migration
// lock is session state), and returns the schema version it leaves. A
// deploy runs it once, before any function of the new build serves. Each
// error says what to look at: the configuration, the network, the session
// holding the lock (*db.LockError), or the migration that failed.
func Migrate(ctx context.Context, cfg config.Config, limits MigrateLimits) (version int, err error) {
	if limits.Connect <= 0 {
		limits.Connect = DefaultMigrateConnect
	}
	if limits.LockWait <= 0 {
		limits.LockWait = DefaultMigrateLockWait
	}
	cctx, cancel := context.WithTimeout(ctx, limits.Connect)
	defer cancel()
	// One run, minutes at most: the password read at its start serves.
	direct, _, err := connString(cctx, cfg)
	if err != nil {
		return 0, connectError(ctx, cctx, limits.Connect, "read the database's address", err)
	}
	pool, err := db.Open(cctx, direct, 1)
	if err != nil {
		return 0, connectError(ctx, cctx, limits.Connect, "connect to the database", err)
	}
	defer pool.Close()
	if _, err := db.MigrateWaiting(ctx, pool, migrations.FS, limits.LockWait); err != nil {
		return 0, err
	}
	return db.Applied(ctx, pool)
}

// connectError says what failed while connecting, and when the bound
// (not the caller) ended it, that nothing answered in time.
func connectError(ctx, cctx context.Context, bound time.Duration, what string, err error) error {
	if cctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: no answer within %v: check that the database runs and that this function's network reaches it "+
			"(subnets, routes, security groups; Secrets Manager too when DB_SECRET_ARN is set): %w", what, bound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// connString returns the database's direct connection string and, when
// it comes from a secret, where new connections get the secret's current
// password (db.Config.SecretPassword): RDS rotates a managed one.
func connString(ctx context.Context, cfg config.Config) (string, db.PasswordSource, error) {
	var sm db.SecretGetter
	if cfg.DB.SecretARN != "" {
		awsCfg, err := loadAWS(ctx)
		if err != nil {
			return "", nil, err
		}
		sm = secretsmanager.NewFromConfig(awsCfg)
	}
	direct, err := cfg.DB.ConnString(ctx, sm)
	if err != nil {
		return "", nil, err
	}
	return direct, cfg.DB.SecretPassword(sm, time.Now), nil
}

// openPool opens the pool (through the proxy, if one is configured) and
// refuses, with a log line saying why, a schema older than this build.
func openPool(ctx context.Context, cfg config.Config, direct string, password db.PasswordSource, logger *slog.Logger) (*pgxpool.Pool, error) {
	conn, err := cfg.DB.PoolConnString(direct)
	if err != nil {
		return nil, err
	}
	pool, err := db.OpenWithPassword(ctx, conn, cfg.DB.MaxConns, password)
	if err != nil {
		return nil, err
	}
	if err := db.CheckSchema(ctx, pool, migrations.FS); err != nil {
		pool.Close()
		var old *db.SchemaError
		if errors.As(err, &old) {
			logger.Error("refusing to serve: the database schema is older than this build", "schema_version", old.Applied,
				"needs_version", old.Needed, "fix", "apply the migrations (the stack's Migrate resource on deploy; by hand: DB_URL=… go run ./functions/migrate)")
		}
		return nil, err
	}
	return pool, nil
}

// NewLogger is the logger of an instance: JSON on stderr (or
// cfg.LogOutput) at LOG_LEVEL.
func NewLogger(cfg config.Config) *slog.Logger {
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	return slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: cfg.LogLevel}))
}

// NewSweeper builds the liveness sweeper on pool with the configured
// notice grace.
func NewSweeper(cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) *liveness.Sweeper {
	return liveness.New(store.New(pool), cfg.LivenessNoticeAfter, logger)
}

// FromPool is Open for a pool the caller made and migrated (tests, the
// local runner); its listener connects as the pool does. Close leaves the
// pool open. Unlike Open it does not warn
// that LETAGENTS_REPO_ACCESS=open: its caller tells its user.
func FromPool(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, groups ...api.Group) (*Service, error) {
	logger := NewLogger(cfg)
	authSvc, err := newAuth(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	return assemble(ctx, cfg, logger, pool, db.Connector(pool), authSvc, groups), nil
}

// authParts are what the sign-in flows need from outside: the GitHub
// client and the sealer, built once per instance (one cold start).
type authParts struct {
	github        *github.Client
	sealer        seal.Sealer
	webhookSecret string
	app           *github.App // nil without GITHUB_APP_ID
}

// newAuth reads the GitHub app's credentials (from Secrets Manager when
// GITHUB_SECRET_ARN is set) and builds the token sealer (KMS or key file).
func newAuth(ctx context.Context, cfg config.Config, logger *slog.Logger) (authParts, error) {
	var p authParts
	if err := cfg.CheckLocalOwner(); err != nil {
		return p, err
	}
	gh := cfg.GitHub
	p.webhookSecret = cfg.GitHubWebhookSecret
	appKey := cfg.GitHubAppPrivateKey
	var awsCfg aws.Config
	if cfg.GitHubSecretARN != "" || cfg.KMSKeyID != "" {
		var err error
		if awsCfg, err = loadAWS(ctx); err != nil {
			return p, err
		}
	}
	if cfg.GitHubSecretARN != "" {
		v, err := githubSecret(ctx, secretsmanager.NewFromConfig(awsCfg), cfg.GitHubSecretARN)
		if err != nil {
			return p, err
		}
		gh.ClientID, gh.ClientSecret, p.webhookSecret, appKey = v.ClientID, v.ClientSecret, v.WebhookSecret, v.AppPrivateKey
	}
	p.github = github.New(gh)
	if cfg.GitHubAppID != "" {
		key, err := github.ParsePrivateKey(appKey)
		if err != nil {
			return p, fmt.Errorf("the GitHub App's private key (GITHUB_APP_PRIVATE_KEY, or app_private_key in GITHUB_SECRET_ARN): %w", err)
		}
		p.app = github.NewApp(github.AppConfig{ID: cfg.GitHubAppID, Key: key, Slug: cfg.GitHubAppSlug, APIURL: gh.APIURL,
			HTTPClient: gh.HTTPClient, Now: cfg.Now})
	}
	switch {
	case cfg.KMSKeyID != "":
		p.sealer = seal.NewKMS(kms.NewFromConfig(awsCfg), cfg.KMSKeyID)
	case cfg.TokenKeyFile != "":
		sl, err := seal.NewKeyFile(cfg.TokenKeyFile)
		if err != nil {
			return p, fmt.Errorf("LETAGENTS_TOKEN_KEY_FILE: %w", err)
		}
		p.sealer = sl
	}
	if p.github.Configured() && p.sealer == nil {
		logger.Warn("GitHub sign-in is configured but no token key is: set LETAGENTS_KMS_KEY_ID or LETAGENTS_TOKEN_KEY_FILE")
	}
	return p, nil
}

func loadAWS(ctx context.Context) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c, fmt.Errorf("load AWS config: %w", err)
	}
	return c, nil
}

// gitHubSecret is the GitHub app's secret: its OAuth client, the
// secret of its webhook deliveries (optional: without it POST
// /webhooks/github answers 503) and the GitHub App's private key (PEM;
// optional, needed with GITHUB_APP_ID).
type gitHubSecret struct {
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	WebhookSecret string `json:"webhook_secret"`
	AppPrivateKey string `json:"app_private_key"`
}

// githubSecret reads {"client_id", "client_secret", "webhook_secret",
// "app_private_key"} from Secrets Manager.
func githubSecret(ctx context.Context, sm db.SecretGetter, arn string) (gitHubSecret, error) {
	var v gitHubSecret
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
	if err != nil {
		return v, fmt.Errorf("read GitHub app secret: %w", err)
	}
	if out.SecretString == nil || json.Unmarshal([]byte(*out.SecretString), &v) != nil || v.ClientID == "" || v.ClientSecret == "" {
		return v, errors.New(`GitHub app secret: want the JSON {"client_id": "...", "client_secret": "...", "webhook_secret": "..."} (webhook_secret optional; app_private_key too, needed with GITHUB_APP_ID)`)
	}
	return v, nil
}

// channelLinger is how long the poll process keeps listening on a room
// nobody waits in any more: an agent's poll answered comes back within
// moments, and one that finds its room's channel listened, and its cursor
// at the newest message the listener heard of there, parks without a
// LISTEN or a read. A channel nobody comes back to costs only the
// notifications it still receives until then.
const channelLinger = 30 * time.Second

func assemble(ctx context.Context, cfg config.Config, logger *slog.Logger, pool *pgxpool.Pool, listener notify.Connector, parts authParts, groups []api.Group) *Service {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Service{Config: cfg, Logger: logger, Pool: pool, Store: store.New(pool),
		draining: make(chan struct{}), stop: stop, hubDone: make(chan struct{})}
	s.Auth = auth.New(s.Store, auth.Config{GitHub: parts.github, Sealer: parts.sealer, RepoAccess: cfg.RepoAccess, LocalOwner: cfg.LocalOwner,
		JoinLimit: cfg.JoinLimit, InviteRoomLimit: cfg.InviteRoomLimit, SendLimit: cfg.SendLimit, Now: cfg.Now, Logger: logger})
	if len(groups) == 0 || slices.Contains(groups, api.GroupPoll) {
		s.Hub = notify.New(listener, notify.Options{Logger: logger, Linger: channelLinger})
		s.Store.WaitersFrom(s.Hub.Waited)
		go func() {
			defer close(s.hubDone)
			_ = s.Hub.Run(runCtx)
		}()
	} else {
		close(s.hubDone)
	}
	s.Handler = api.New(api.Deps{Store: s.Store, Hub: s.Hub, Auth: s.Auth, Logger: logger, BaseURL: cfg.BaseURL,
		MCPURL: cfg.MCPURL, Origins: cfg.Origins(), PollMax: cfg.PollMax, Draining: s.draining, Now: cfg.Now,
		StreamMax: cfg.StreamMax, RoomStreamMax: cfg.RoomStreamMax, StreamHeartbeat: cfg.StreamHeartbeat,
		GitHubWebhookSecret: []byte(parts.webhookSecret), GitHubApp: parts.app, LeaseMode: cfg.LeaseMode}, groups...)
	return s
}

// Drain makes parked long-polls answer now, and ends event streams; new
// polls answer at once too, and new streams are refused.
func (s *Service) Drain() {
	select {
	case <-s.draining:
	default:
		close(s.draining)
	}
}

// ReadyPath is the poll server's readiness route (WithReadiness): 503
// while the instance cannot hold long-polls (Ready). It is for operators
// and tests; a load balancer asking it would take every task out of
// service at once while the database fails over, and ECS would replace
// them all for it. It is no API route: the HTTP API never sees it.
const ReadyPath = "/ready"

// LivePath is the poll server's liveness route (WithReadiness), which the
// load balancer's health check asks: 200 whenever the process answers
// HTTP, whatever the database's state. During a database outage the tasks
// stay in service and answer requests that need the database 503
// DATABASE_UNAVAILABLE with Retry-After, which clients repeat; the
// listener reconnects by itself once the database is back. It is no API
// route either.
const LivePath = "/live"

// errListenerDown and errDraining are why an instance is not ready.
var (
	errListenerDown = errors.New("the listener is not connected to the database")
	errDraining     = errors.New("draining: the server is stopping")
)

// Ready returns nil when the instance can hold long-polls: it is not
// draining, and its listener (if it has one) is connected. A waiter
// parked while the listener is down would only be woken by its timeout.
func (s *Service) Ready() error {
	select {
	case <-s.draining:
		return errDraining
	default:
	}
	if s.Hub != nil && s.Hub.Stats().BackendPID == 0 {
		return errListenerDown
	}
	return nil
}

// WithReadiness answers GET LivePath with 200, GET ReadyPath with Ready's
// verdict, 200 or 503 saying why, and passes every other request to h.
func (s *Service) WithReadiness(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != ReadyPath && r.URL.Path != LivePath) || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == LivePath {
			_ = json.NewEncoder(w).Encode(wire.Health{Status: "live", Service: "letagents-poll"})
			return
		}
		if err := s.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(wire.Error{Error: err.Error(), Code: letagents.CodeNotReady})
			return
		}
		_ = json.NewEncoder(w).Encode(wire.Health{Status: "ready", Service: "letagents-poll"})
	})
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
