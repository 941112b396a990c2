// Package db owns the connection to PostgreSQL: where its address comes from
// (a URL, or an AWS Secrets Manager secret), the pool every handler shares,
// the dedicated listener connection, and applying migrations.
package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config says where the database is. Exactly one of URL and SecretARN is set.
type Config struct {
	// URL is a libpq connection string (DB_URL).
	URL string
	// SecretARN names a Secrets Manager secret holding the RDS-style JSON
	// {"username","password","host","port","dbname"} (DB_SECRET_ARN). It is
	// read once at cold start: a {{resolve:secretsmanager}} reference in an
	// environment variable would leave the password readable in the
	// function's configuration.
	SecretARN string
	// Host, Port and Name are the database's address beside SecretARN
	// (DB_HOST, DB_PORT, DB_NAME), each, when set, in place of the secret's
	// field: the secret RDS manages for a master user
	// (ManageMasterUserPassword) holds only username and password. With a
	// URL they are refused, since it carries its own address.
	Host, Port, Name string
	// MaxConns caps the pool (DB_MAX_CONNS); 0 keeps the URL's or pgx's default.
	MaxConns int32
	// ProxyHost is an RDS Proxy endpoint, "host" or "host:port"
	// (DB_PROXY_HOST), that the pool connects through instead of the
	// database's own host (PoolConnString). The listener and the
	// migrations connect directly whatever it says: LISTEN and the
	// migrations' advisory lock live on one server session, which a proxy
	// sharing sessions between clients cannot carry.
	ProxyHost string
}

// SecretGetter is the part of the Secrets Manager client that Resolve uses.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ConnString returns the connection string: the URL, or one built from the
// secret (fetched with sm, which may be nil when SecretARN is empty).
func (c Config) ConnString(ctx context.Context, sm SecretGetter) (string, error) {
	switch {
	case c.URL != "" && c.SecretARN != "":
		return "", errors.New("set DB_URL or DB_SECRET_ARN, not both")
	case c.URL != "" && c.Host+c.Port+c.Name != "":
		return "", errors.New("DB_HOST, DB_PORT and DB_NAME go with DB_SECRET_ARN; DB_URL carries its own address")
	case c.URL != "":
		return c.URL, nil
	case c.SecretARN == "":
		return "", errors.New("no database configured: set DB_URL or DB_SECRET_ARN")
	case sm == nil:
		return "", errors.New("DB_SECRET_ARN is set but no Secrets Manager client was given")
	}
	secret, err := readSecret(ctx, sm, c.SecretARN)
	if err != nil {
		return "", err
	}
	return c.secretURL(secret)
}

// PoolConnString returns the pool's connection string given the direct
// one: the direct one without a ProxyHost; else the same database through
// the proxy, with pgx told to use unnamed statements
// (default_query_exec_mode=cache_describe: descriptions cached in the
// client, still one round trip a query). pgx's default names a prepared
// statement per query on each server session, which is session state a
// proxy must pin the session for or track; unnamed ones need neither.
func (c Config) PoolConnString(direct string) (string, error) {
	if c.ProxyHost == "" {
		return direct, nil
	}
	u, err := url.Parse(direct)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", errors.New("DB_PROXY_HOST needs the database address as a postgres:// URL")
	}
	host, port, err := net.SplitHostPort(c.ProxyHost)
	if err != nil {
		host, port = c.ProxyHost, u.Port()
	}
	if host == "" || strings.ContainsAny(host, "/?#@") {
		return "", fmt.Errorf("DB_PROXY_HOST=%q: want host or host:port", c.ProxyHost)
	}
	if port == "" {
		u.Host = host
	} else {
		u.Host = net.JoinHostPort(host, port)
	}
	q := u.Query()
	if !q.Has("default_query_exec_mode") {
		q.Set("default_query_exec_mode", "cache_describe")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// PasswordTTL is how long a password read from the database secret is
// used for new connections before the secret is read again. RDS rotates
// the password of a master user it manages (every 7 days unless told
// otherwise), and a long-lived process (a warm function, a poll task)
// must follow: open connections keep working, new ones with the old
// password are refused.
const PasswordTTL = time.Minute

// PasswordSource gives the password of each new connection.
type PasswordSource func(ctx context.Context) (string, error)

// SecretPassword returns the password of the secret c names, re-read from
// sm at most once per PasswordTTL by the clock now; nil when c names no
// secret. Connections opened with it (OpenWithPassword,
// DirectConnector) follow the secret's rotation within PasswordTTL.
func (c Config) SecretPassword(sm SecretGetter, now func() time.Time) PasswordSource {
	if c.SecretARN == "" || sm == nil {
		return nil
	}
	var (
		mu       sync.Mutex
		password string
		read     time.Time
	)
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if !read.IsZero() && now().Sub(read) < PasswordTTL {
			return password, nil
		}
		secret, err := readSecret(ctx, sm, c.SecretARN)
		if err == nil {
			var s rdsSecret
			if s, err = parseSecret(secret); err == nil {
				password, read = s.Password, now()
			}
		}
		if err != nil && read.IsZero() {
			return "", err
		}
		// Secrets Manager failing now: the last password read may
		// still be good (a rotation is rare), so try it.
		return password, nil
	}
}

// readSecret returns the SecretString of the secret arn.
func readSecret(ctx context.Context, sm SecretGetter, arn string) (string, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
	if err != nil {
		return "", fmt.Errorf("read database secret: %w", err)
	}
	if out.SecretString == nil {
		return "", errors.New("database secret has no SecretString")
	}
	return *out.SecretString, nil
}

// rdsSecret is the RDS-style JSON of a database secret.
type rdsSecret struct {
	Username string          `json:"username"`
	Password string          `json:"password"`
	Host     string          `json:"host"`
	Port     json.RawMessage `json:"port"` // RDS writes a number, people write strings
	DBName   string          `json:"dbname"`
}

func parseSecret(secret string) (rdsSecret, error) {
	var s rdsSecret
	if err := json.Unmarshal([]byte(secret), &s); err != nil {
		return s, fmt.Errorf("database secret is not JSON: %w", err)
	}
	return s, nil
}

// secretURL turns an RDS-style secret into a connection URL, with c's
// Host, Port and Name in place of the secret's own where set.
func (c Config) secretURL(secret string) (string, error) {
	s, err := parseSecret(secret)
	if err != nil {
		return "", err
	}
	if c.Host != "" {
		s.Host = c.Host
	}
	if c.Name != "" {
		s.DBName = c.Name
	}
	if s.Username == "" || s.Host == "" {
		return "", errors.New("database secret needs username, and host (in the secret or DB_HOST)")
	}
	port := "5432"
	if c.Port != "" {
		n, err := strconv.Atoi(c.Port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("DB_PORT=%q: want a port number", c.Port)
		}
		port = c.Port
	} else if len(s.Port) > 0 {
		var n int
		if err := json.Unmarshal(s.Port, &n); err != nil {
			var str string
			if err := json.Unmarshal(s.Port, &str); err != nil {
				return "", errors.New("database secret port is neither a number nor a string")
			}
			if n, err = strconv.Atoi(str); err != nil {
				return "", fmt.Errorf("database secret port %q is not a number", str)
			}
		}
		port = strconv.Itoa(n)
	}
	if s.DBName == "" {
		s.DBName = "postgres"
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.Username, s.Password),
		Host:     net.JoinHostPort(s.Host, port),
		Path:     "/" + s.DBName,
		RawQuery: "sslmode=require",
	}
	return u.String(), nil
}

// Open builds the pool and pings it, so a wrong address fails at start and
// not on the first request.
//
// A pooled connection idle for over a second is looked at before it is
// handed out, and pinged only when its socket is closed or has something
// to say, or when it sat idle for over a minute (shouldPing). Pinging
// every use would cost a round trip per statement to catch only the
// connections a restart killed unseen; the store instead retries a read
// that meets one, and answers writes with Unavailable for the client to
// repeat.
func Open(ctx context.Context, connString string, maxConns int32) (*pgxpool.Pool, error) {
	return OpenWithPassword(ctx, connString, maxConns, nil)
}

// OpenWithPassword is Open whose new connections take their password from
// password (when not nil) instead of the connection string, so that a
// rotated secret reaches connections opened long after the start.
func OpenWithPassword(ctx context.Context, connString string, maxConns int32, password PasswordSource) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	PoolLiveness(cfg)
	if password != nil {
		cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
			pw, err := password(ctx)
			cc.Password = pw
			return err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// Connector returns a function that opens a fresh dedicated connection with
// the pool's settings. The listener needs one of its own: LISTEN state lives
// on a session, which a pool (or PgBouncer in transaction mode) would share.
//
// The server is told to drop the session about 20 s after its client goes
// silent (listenerKeepalive), so a listener lost to a partition does not
// hold a backend, and its place in the notification queue, for the
// system's TCP timeouts (hours). The client side needs no such setting:
// the hub bounds every command it sends by a deadline.
func Connector(pool *pgxpool.Pool) func(context.Context) (*pgx.Conn, error) {
	return connector(pool.Config().ConnConfig, nil)
}

// DirectConnector is Connector for a connection string instead of a pool
// (the database's own address when the pool goes through a proxy,
// Config.ProxyHost, which cannot carry LISTEN), each connection taking its
// password from password when it is not nil.
func DirectConnector(connString string, password PasswordSource) (func(context.Context) (*pgx.Conn, error), error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	return connector(cfg, password), nil
}

func connector(base *pgx.ConnConfig, password PasswordSource) func(context.Context) (*pgx.Conn, error) {
	cfg := base.Copy()
	for k, v := range listenerKeepalive {
		cfg.RuntimeParams[k] = v
	}
	return func(ctx context.Context) (*pgx.Conn, error) {
		cc := cfg.Copy()
		if password != nil {
			pw, err := password(ctx)
			if err != nil {
				return nil, err
			}
			cc.Password = pw
		}
		return pgx.ConnectConfig(ctx, cc)
	}
}

// listenerKeepalive are the server settings (PostgreSQL 12 and later) for
// a listener's session: keepalive probes after 5 s idle, every 5 s, 3 of
// them, and 20 s at most for data the client does not acknowledge.
var listenerKeepalive = map[string]string{
	"tcp_keepalives_idle":     "5",
	"tcp_keepalives_interval": "5",
	"tcp_keepalives_count":    "3",
	"tcp_user_timeout":        "20000",
}

// Schema returns the schema a pool's connections use (their search_path
// setting), "public" by default. It namespaces NOTIFY channels, which are
// database-wide, so deployments or tests sharing a database stay apart.
func Schema(pool *pgxpool.Pool) string {
	if s := pool.Config().ConnConfig.RuntimeParams["search_path"]; s != "" {
		return s
	}
	return "public"
}
