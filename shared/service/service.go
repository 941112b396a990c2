// Package service assembles a running instance from its environment: the
// configuration, the pool, the store, the listener hub when long-polls are
// served, and the HTTP handler of the wanted route groups. Every function,
// the poll container and the local runner start through it, so they all
// read the same variables the same way.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/seal"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// DefaultBodyTimeout is Config.BodyTimeout unless set: ample for the 10 MB
// a body may hold over a slow link, short enough that clients trickling
// bodies cannot hold the server's connections for long.
const DefaultBodyTimeout = 30 * time.Second

// ShutdownGrace is how long a long-running server (the poll server, the
// local runner) lets in-flight requests finish once it stops; parked
// long-polls answer at once. template.yaml's StopTimeout of the poll
// container exceeds it.
const ShutdownGrace = 10 * time.Second

// DefaultIdleTimeout is Config.IdleTimeout unless set: clients that came
// and went do not pin a socket each for long.
const DefaultIdleTimeout = 2 * time.Minute

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

	// GitHub is the OAuth app and GitHub's addresses: GITHUB_CLIENT_ID,
	// GITHUB_CLIENT_SECRET, GITHUB_OAUTH_SCOPES, GITHUB_OAUTH_URL and
	// GITHUB_API_URL (the last two only to point tests at a fake GitHub).
	GitHub github.Config
	// GitHubSecretARN names a Secrets Manager secret holding
	// {"client_id", "client_secret"} instead (GITHUB_SECRET_ARN), read once
	// per cold start.
	GitHubSecretARN string
	// KMSKeyID seals stored GitHub tokens with data keys of this KMS key
	// (LETAGENTS_KMS_KEY_ID); TokenKeyFile with a local key file instead
	// (LETAGENTS_TOKEN_KEY_FILE, created when missing). Without either,
	// nobody can sign in.
	KMSKeyID     string
	TokenKeyFile string
	// BaseURL is the public URL of the service (LETAGENTS_BASE_URL): links,
	// the OAuth callback, Secure cookies and CORS. Empty derives it from
	// each request. PublicAPIURL (PUBLIC_API_URL) is one more origin of
	// the service's own, allowed by CORS and to write with the session
	// cookie.
	BaseURL      string
	PublicAPIURL string
	// DevOrigins are the pages of a development server on this machine
	// (LETAGENTS_DEV_ORIGINS, comma-separated origins such as
	// http://localhost:3000) allowed, as the service's own, credentialed
	// CORS and cookie-signed writes. Only loopback origins, and only
	// while the service itself is not public (LETAGENTS_BASE_URL unset or
	// loopback): in production a page on the user's own machine must not
	// act with their cookie.
	DevOrigins []string
	// RepoAccess makes repo rooms follow GitHub (LETAGENTS_REPO_ACCESS=github,
	// the default); "open" lets anyone into every room, for development
	// without GitHub.
	RepoAccess bool
	// LocalOwner makes the server act for one local owner: whoever no
	// credential signs in acts as that account, which administers every
	// room (LETAGENTS_LOCAL_OWNER=on; default off). Only for a server on
	// this machine with sign-in off and every room open: it is refused
	// with GitHub sign-in configured or LETAGENTS_REPO_ACCESS=github.
	// The local runner turns it on itself when sign-in is off.
	LocalOwner bool
	// JoinLimit, InviteRoomLimit and SendLimit are the room joins, invite
	// rooms created and messages sent a client address may make per
	// minute, as bursts of that many and that rate sustained
	// (LETAGENTS_JOIN_LIMIT, default 10; LETAGENTS_INVITE_ROOM_LIMIT,
	// default 30; LETAGENTS_SEND_LIMIT, default 600; each 1 to 1000000).
	JoinLimit, InviteRoomLimit, SendLimit int
	// LivenessNoticeAfter is how long a worker's message channel must be
	// unreachable before the liveness sweeper tells its room
	// (LETAGENTS_LIVENESS_NOTICE_AFTER_MS, default 300000, accepted 120000
	// to 3600000).
	LivenessNoticeAfter time.Duration
	// BodyTimeout bounds how long a request's body may take to arrive at a
	// long-running server, the poll server or the local runner
	// (LETAGENTS_BODY_TIMEOUT_MS, default 30000, accepted 1000 to 600000);
	// API Gateway buffers bodies before a function sees them.
	BodyTimeout time.Duration
	// IdleTimeout is how long a long-running server keeps an idle
	// keep-alive connection (LETAGENTS_IDLE_TIMEOUT_MS, default 120000,
	// accepted 1000 to 7200000). Behind a load balancer it must outlast the
	// balancer's own idle timeout, or the server may close a connection
	// just as the balancer sends a request on it (a 502).
	IdleTimeout time.Duration
	// StreamMax and RoomStreamMax cap the event streams a process holds
	// open, in all and per room (LETAGENTS_STREAM_MAX, default 10000;
	// LETAGENTS_STREAM_ROOM_MAX, default 1000; each 1 to 1000000).
	StreamMax, RoomStreamMax int
	// StreamHeartbeat is how often a quiet event stream sends a comment;
	// tests shorten it, 0 is letagents.StreamHeartbeat.
	StreamHeartbeat time.Duration
	// Now is the clock of the sign-in flows; tests set it, nil is time.Now.
	Now func() time.Time
	// LogOutput is where logs go; nil is stderr. Tests set it.
	LogOutput io.Writer
}

// Variables lists every environment variable LoadConfig reads; the
// template check holds template.yaml to it.
var Variables = []string{"DB_URL", "DB_SECRET_ARN", "DB_HOST", "DB_PORT", "DB_NAME", "DB_MAX_CONNS", "DB_PROXY_HOST", "LETAGENTS_POLL_MAX_MS", "LETAGENTS_GATEWAY_HOLD_MS", "PORT", "LOG_LEVEL",
	"GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "GITHUB_SECRET_ARN", "GITHUB_OAUTH_SCOPES", "GITHUB_OAUTH_URL", "GITHUB_API_URL",
	"LETAGENTS_KMS_KEY_ID", "LETAGENTS_TOKEN_KEY_FILE", "LETAGENTS_BASE_URL", "PUBLIC_API_URL", "LETAGENTS_REPO_ACCESS", "LETAGENTS_JOIN_LIMIT",
	"LETAGENTS_INVITE_ROOM_LIMIT", "LETAGENTS_SEND_LIMIT", "LETAGENTS_LIVENESS_NOTICE_AFTER_MS", "LETAGENTS_BODY_TIMEOUT_MS", "LETAGENTS_IDLE_TIMEOUT_MS",
	"LETAGENTS_STREAM_MAX", "LETAGENTS_STREAM_ROOM_MAX", "LETAGENTS_DEV_ORIGINS", "LETAGENTS_LOCAL_OWNER"}

// LocalVariables are the Variables a deployment leaves unset: their
// defaults suit AWS (PORT, the GitHub URLs, the repo access policy, the
// rate limits, the body timeout and stream caps of long-running servers,
// which Lambda functions are not), or they are the
// local stand-ins for what AWS provides (client id and secret in plain
// text, the token key file).
var LocalVariables = []string{"PORT", "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "GITHUB_OAUTH_URL", "GITHUB_API_URL",
	"LETAGENTS_TOKEN_KEY_FILE", "PUBLIC_API_URL", "LETAGENTS_REPO_ACCESS", "LETAGENTS_JOIN_LIMIT", "LETAGENTS_INVITE_ROOM_LIMIT",
	"LETAGENTS_SEND_LIMIT", "LETAGENTS_BODY_TIMEOUT_MS", "LETAGENTS_STREAM_MAX", "LETAGENTS_STREAM_ROOM_MAX", "LETAGENTS_DEV_ORIGINS"}

// LoadConfig reads the environment through getenv, naming the variable at
// fault when a value is unusable.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{
		DB: db.Config{URL: getenv("DB_URL"), SecretARN: getenv("DB_SECRET_ARN"), Host: getenv("DB_HOST"), Port: getenv("DB_PORT"),
			Name: getenv("DB_NAME"), ProxyHost: getenv("DB_PROXY_HOST")},
		PollMax:     letagents.DefaultPollMax,
		GatewayHold: 25 * time.Second,
		Addr:        ":3001",
		GitHub: github.Config{ClientID: getenv("GITHUB_CLIENT_ID"), ClientSecret: getenv("GITHUB_CLIENT_SECRET"),
			Scopes: getenv("GITHUB_OAUTH_SCOPES"), OAuthURL: getenv("GITHUB_OAUTH_URL"), APIURL: getenv("GITHUB_API_URL")},
		GitHubSecretARN:     getenv("GITHUB_SECRET_ARN"),
		KMSKeyID:            getenv("LETAGENTS_KMS_KEY_ID"),
		TokenKeyFile:        getenv("LETAGENTS_TOKEN_KEY_FILE"),
		BaseURL:             strings.TrimRight(getenv("LETAGENTS_BASE_URL"), "/"),
		PublicAPIURL:        getenv("PUBLIC_API_URL"),
		RepoAccess:          true,
		JoinLimit:           auth.DefaultJoinLimit,
		InviteRoomLimit:     auth.DefaultInviteRoomLimit,
		SendLimit:           auth.DefaultSendLimit,
		LivenessNoticeAfter: liveness.DefaultNoticeAfter,
		BodyTimeout:         DefaultBodyTimeout,
		IdleTimeout:         DefaultIdleTimeout,
		StreamMax:           letagents.DefaultStreamMax,
		RoomStreamMax:       letagents.DefaultRoomStreamMax,
	}
	var err error
	if cfg.GitHubSecretARN != "" && (cfg.GitHub.ClientID != "" || cfg.GitHub.ClientSecret != "") {
		return cfg, errors.New("set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET, or GITHUB_SECRET_ARN, not both")
	}
	if cfg.KMSKeyID != "" && cfg.TokenKeyFile != "" {
		return cfg, errors.New("set LETAGENTS_KMS_KEY_ID or LETAGENTS_TOKEN_KEY_FILE, not both")
	}
	for name, v := range map[string]string{"LETAGENTS_BASE_URL": cfg.BaseURL, "PUBLIC_API_URL": cfg.PublicAPIURL,
		"GITHUB_OAUTH_URL": cfg.GitHub.OAuthURL, "GITHUB_API_URL": cfg.GitHub.APIURL} {
		if v != "" && api.Origin(v) == "" {
			return cfg, fmt.Errorf("%s=%q: want an absolute http(s) URL", name, v)
		}
	}
	if cfg.DevOrigins, err = devOrigins(getenv("LETAGENTS_DEV_ORIGINS"), cfg.BaseURL); err != nil {
		return cfg, err
	}
	switch v := getenv("LETAGENTS_REPO_ACCESS"); v {
	case "", "github":
	case "open":
		cfg.RepoAccess = false
	default:
		return cfg, fmt.Errorf("LETAGENTS_REPO_ACCESS=%q: want github or open", v)
	}
	switch v := getenv("LETAGENTS_LOCAL_OWNER"); v {
	case "", "off":
	case "on":
		cfg.LocalOwner = true
	default:
		return cfg, fmt.Errorf("LETAGENTS_LOCAL_OWNER=%q: want on or off", v)
	}
	for name, limit := range map[string]*int{"LETAGENTS_JOIN_LIMIT": &cfg.JoinLimit,
		"LETAGENTS_INVITE_ROOM_LIMIT": &cfg.InviteRoomLimit, "LETAGENTS_SEND_LIMIT": &cfg.SendLimit,
		"LETAGENTS_STREAM_MAX": &cfg.StreamMax, "LETAGENTS_STREAM_ROOM_MAX": &cfg.RoomStreamMax} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1_000_000 {
				return cfg, fmt.Errorf("%s=%q: want a whole number from 1 to 1000000", name, v)
			}
			*limit = n
		}
	}
	if v := getenv("DB_MAX_CONNS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("DB_MAX_CONNS=%q: want a whole number of at least 1", v)
		}
		cfg.DB.MaxConns = int32(n)
	}
	if cfg.PollMax, err = millis(getenv, "LETAGENTS_POLL_MAX_MS", cfg.PollMax, letagents.MinPollMax, letagents.MaxPollMax); err != nil {
		return cfg, err
	}
	if cfg.GatewayHold, err = millis(getenv, "LETAGENTS_GATEWAY_HOLD_MS", cfg.GatewayHold, time.Second, 29*time.Second); err != nil {
		return cfg, err
	}
	if cfg.LivenessNoticeAfter, err = millis(getenv, "LETAGENTS_LIVENESS_NOTICE_AFTER_MS", cfg.LivenessNoticeAfter,
		liveness.MinNoticeAfter, liveness.MaxNoticeAfter); err != nil {
		return cfg, err
	}
	if cfg.BodyTimeout, err = millis(getenv, "LETAGENTS_BODY_TIMEOUT_MS", cfg.BodyTimeout, time.Second, 10*time.Minute); err != nil {
		return cfg, err
	}
	if cfg.IdleTimeout, err = millis(getenv, "LETAGENTS_IDLE_TIMEOUT_MS", cfg.IdleTimeout, time.Second, 2*time.Hour); err != nil {
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

// devOrigins reads LETAGENTS_DEV_ORIGINS (see Config.DevOrigins).
func devOrigins(v, baseURL string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if baseURL != "" && !loopback(baseURL) {
		return nil, fmt.Errorf("LETAGENTS_DEV_ORIGINS is for development: it is refused while LETAGENTS_BASE_URL=%q is not on this machine", baseURL)
	}
	var out []string
	for raw := range strings.SplitSeq(v, ",") {
		raw = strings.TrimSpace(raw)
		o := api.Origin(raw)
		if o == "" || strings.TrimRight(raw, "/") != o || !loopback(o) {
			return nil, fmt.Errorf("LETAGENTS_DEV_ORIGINS: %q is not an origin on this machine (http://localhost:3000, http://127.0.0.1:5173, ...)", raw)
		}
		out = append(out, o)
	}
	return out, nil
}

// loopback reports whether a URL's host is this machine.
func loopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
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
func Open(ctx context.Context, cfg Config, groups ...api.Group) (*Service, error) {
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
func OpenPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
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
func Migrate(ctx context.Context, cfg Config, limits MigrateLimits) (version int, err error) {
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
func connString(ctx context.Context, cfg Config) (string, db.PasswordSource, error) {
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
func openPool(ctx context.Context, cfg Config, direct string, password db.PasswordSource, logger *slog.Logger) (*pgxpool.Pool, error) {
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
func NewLogger(cfg Config) *slog.Logger {
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	return slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: cfg.LogLevel}))
}

// NewSweeper builds the liveness sweeper on pool with the configured
// notice grace.
func NewSweeper(cfg Config, pool *pgxpool.Pool, logger *slog.Logger) *liveness.Sweeper {
	return liveness.New(store.New(pool), cfg.LivenessNoticeAfter, logger)
}

// FromPool is Open for a pool the caller made and migrated (tests, the
// local runner); its listener connects as the pool does. Close leaves the
// pool open. Unlike Open it does not warn
// that LETAGENTS_REPO_ACCESS=open: its caller tells its user.
func FromPool(ctx context.Context, cfg Config, pool *pgxpool.Pool, groups ...api.Group) (*Service, error) {
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
	github *github.Client
	sealer seal.Sealer
}

// newAuth reads the GitHub app's credentials (from Secrets Manager when
// GITHUB_SECRET_ARN is set) and builds the token sealer (KMS or key file).
func newAuth(ctx context.Context, cfg Config, logger *slog.Logger) (authParts, error) {
	var p authParts
	if err := cfg.checkLocalOwner(); err != nil {
		return p, err
	}
	gh := cfg.GitHub
	var awsCfg aws.Config
	if cfg.GitHubSecretARN != "" || cfg.KMSKeyID != "" {
		var err error
		if awsCfg, err = loadAWS(ctx); err != nil {
			return p, err
		}
	}
	if cfg.GitHubSecretARN != "" {
		id, secret, err := githubSecret(ctx, secretsmanager.NewFromConfig(awsCfg), cfg.GitHubSecretARN)
		if err != nil {
			return p, err
		}
		gh.ClientID, gh.ClientSecret = id, secret
	}
	p.github = github.New(gh)
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

// checkLocalOwner refuses the local owner where anyone can sign in or a
// room is closed: there it would let whoever reaches the server act as an
// account, and administer every room.
func (c Config) checkLocalOwner() error {
	switch {
	case !c.LocalOwner:
		return nil
	case c.GitHub.ClientID != "" || c.GitHub.ClientSecret != "" || c.GitHubSecretARN != "":
		return errors.New("LETAGENTS_LOCAL_OWNER=on is for a server with sign-in off: unset GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET and GITHUB_SECRET_ARN, or turn it off")
	case c.RepoAccess:
		return errors.New("LETAGENTS_LOCAL_OWNER=on needs every room open (LETAGENTS_REPO_ACCESS=open), or turn it off")
	}
	return nil
}

func loadAWS(ctx context.Context) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c, fmt.Errorf("load AWS config: %w", err)
	}
	return c, nil
}

// githubSecret reads {"client_id", "client_secret"} from Secrets Manager.
func githubSecret(ctx context.Context, sm db.SecretGetter, arn string) (id, secret string, err error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
	if err != nil {
		return "", "", fmt.Errorf("read GitHub app secret: %w", err)
	}
	var v struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if out.SecretString == nil || json.Unmarshal([]byte(*out.SecretString), &v) != nil || v.ClientID == "" || v.ClientSecret == "" {
		return "", "", errors.New(`GitHub app secret: want the JSON {"client_id": "...", "client_secret": "..."}`)
	}
	return v.ClientID, v.ClientSecret, nil
}

// origins are the browser origins, besides the one each request was sent
// to, taken for the service's own: CORS allows them, and their pages may
// write with the session cookie.
func (c Config) origins() []string {
	out := slices.Clone(c.DevOrigins)
	for _, u := range []string{c.BaseURL, c.PublicAPIURL} {
		if o := api.Origin(u); o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func assemble(ctx context.Context, cfg Config, logger *slog.Logger, pool *pgxpool.Pool, listener notify.Connector, parts authParts, groups []api.Group) *Service {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Service{Config: cfg, Logger: logger, Pool: pool, Store: store.New(pool),
		draining: make(chan struct{}), stop: stop, hubDone: make(chan struct{})}
	s.Auth = auth.New(s.Store, auth.Config{GitHub: parts.github, Sealer: parts.sealer, RepoAccess: cfg.RepoAccess, LocalOwner: cfg.LocalOwner,
		JoinLimit: cfg.JoinLimit, InviteRoomLimit: cfg.InviteRoomLimit, SendLimit: cfg.SendLimit, Now: cfg.Now, Logger: logger})
	if len(groups) == 0 || slices.Contains(groups, api.GroupPoll) {
		s.Hub = notify.New(listener, notify.Options{Logger: logger})
		go func() {
			defer close(s.hubDone)
			_ = s.Hub.Run(runCtx)
		}()
	} else {
		close(s.hubDone)
	}
	s.Handler = api.New(api.Deps{Store: s.Store, Hub: s.Hub, Auth: s.Auth, Logger: logger, BaseURL: cfg.BaseURL,
		Origins: cfg.origins(), PollMax: cfg.PollMax, Draining: s.draining, Now: cfg.Now,
		StreamMax: cfg.StreamMax, RoomStreamMax: cfg.RoomStreamMax, StreamHeartbeat: cfg.StreamHeartbeat}, groups...)
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

// Serving says how Serve runs a long-running server.
type Serving struct {
	// Drain makes parked long-polls answer at once; Serve calls it when
	// its ctx ends.
	Drain func()
	// Grace bounds how long in-flight requests may take to finish after.
	Grace time.Duration
	// BodyTimeout bounds how long a request's body may take to arrive
	// (Config.BodyTimeout); 0 leaves it unbounded.
	BodyTimeout time.Duration
	// IdleTimeout is how long an idle keep-alive connection is kept
	// (Config.IdleTimeout); 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Ready, when set, gets the address Serve listens on, once it does.
	Ready func(net.Addr)
}

// headerTimeout bounds how long a request's headers may take to arrive.
const headerTimeout = 10 * time.Second

// Serve runs h on addr until ctx ends, then drains: parked long-polls are
// answered at once and in-flight requests get up to opt.Grace to finish.
func Serve(ctx context.Context, addr string, h http.Handler, opt Serving) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	// No write timeout, nor a ReadTimeout: a long-poll holds its answer
	// by design, and the server reads the connection while it waits, to
	// notice the client leaving; a deadline on that read would end the
	// poll. Headers and bodies are bounded instead. Idle keep-alive
	// connections are dropped after a while, or a crowd of agents that
	// came and went would pin a socket each.
	idle := opt.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	srv := &http.Server{Handler: limitBodyTime(h, opt.BodyTimeout), ReadHeaderTimeout: headerTimeout, IdleTimeout: idle}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if opt.Ready != nil {
		opt.Ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	opt.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opt.Grace)
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

// limitBodyTime gives a request with a body until d after its headers to
// send it: a read past that fails with os.ErrDeadlineExceeded, and so does
// the server's own draining of a body the handler left unread, which then
// closes the connection. A request without a body (a long-poll) gets no
// deadline; nor does one whose body has been read to its end, since the
// server clears the deadline then to watch for the client leaving
// (TestServeCutsSlowBodies holds it to that).
func limitBodyTime(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}
