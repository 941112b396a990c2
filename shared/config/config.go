// Package config reads an instance's configuration from its environment:
// every function, the poll container and the local runner load it here,
// so they all read the same variables the same way, and a value that is
// unusable fails naming its variable.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/leasecheck"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/liveness"
)

// DefaultBodyTimeout is Config.BodyTimeout unless set: ample for the 10 MB
// a body may hold over a slow link, short enough that clients trickling
// bodies cannot hold the server's connections for long.
const DefaultBodyTimeout = 30 * time.Second

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
	// GitHubWebhookSecret checks the signatures of GitHub's webhook
	// deliveries to POST /webhooks/github (GITHUB_WEBHOOK_SECRET); with
	// GITHUB_SECRET_ARN it comes from that secret's "webhook_secret"
	// instead. Without it the route answers 503.
	GitHubWebhookSecret string
	// GitHubAppID, GitHubAppPrivateKey and GitHubAppSlug are the GitHub
	// App the service acts as to write the letagents-lease check
	// (GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY as PEM, GITHUB_APP_SLUG); with
	// GITHUB_SECRET_ARN the key comes from that secret's
	// "app_private_key" instead. Without an id no checks are written.
	GitHubAppID, GitHubAppPrivateKey, GitHubAppSlug string
	// LeaseMode is how the check is enforced
	// (LETAGENTS_GITHUB_ENFORCEMENT_MODE: off, checks (default), flag,
	// close).
	LeaseMode leasecheck.Mode
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
	// MCPURL is the hosted MCP endpoint's public URL where it is not on
	// the base URL's origin (LETAGENTS_MCP_URL: the poll server's domain,
	// https://<PollDomainName>/mcp): OAuth access tokens are issued for
	// it too.
	MCPURL string
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
	// MCPAuthRequired makes the hosted MCP endpoint (/mcp) answer a
	// request without a bearer token 401, which leads MCP clients to
	// sign in with OAuth before they start (LETAGENTS_MCP_AUTH=required);
	// the default, open, serves such requests anonymously, in the rooms
	// open to anyone. A bad or expired token is answered 401 either way.
	MCPAuthRequired bool
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
	// ProxyHops is how many proxies in front of the poll server append
	// the caller's address to X-Forwarded-For (LETAGENTS_PROXY_HOPS, 0 to
	// 5, default 0: callers reach it directly, and the header is not
	// trusted); the template sets 1 for its load balancer. The hosted MCP
	// endpoint counts an agent by the address that many entries from the
	// header's end.
	ProxyHops int
	// StreamHeartbeat is how often a quiet event stream sends a comment;
	// tests shorten it, 0 is letagents.StreamHeartbeat.
	StreamHeartbeat time.Duration
	// Now is the clock of the sign-in flows; tests set it, nil is time.Now.
	Now func() time.Time
	// LogOutput is where logs go; nil is stderr. Tests set it.
	LogOutput io.Writer
}

// Variables lists every environment variable Load reads; the
// template check holds template.yaml to it.
var Variables = []string{"DB_URL", "DB_SECRET_ARN", "DB_HOST", "DB_PORT", "DB_NAME", "DB_MAX_CONNS", "DB_PROXY_HOST", "LETAGENTS_POLL_MAX_MS", "LETAGENTS_GATEWAY_HOLD_MS", "PORT", "LOG_LEVEL",
	"GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "GITHUB_SECRET_ARN", "GITHUB_OAUTH_SCOPES", "GITHUB_OAUTH_URL", "GITHUB_API_URL",
	"GITHUB_WEBHOOK_SECRET", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_SLUG", "LETAGENTS_GITHUB_ENFORCEMENT_MODE", "LETAGENTS_KMS_KEY_ID", "LETAGENTS_TOKEN_KEY_FILE", "LETAGENTS_BASE_URL", "PUBLIC_API_URL", "LETAGENTS_REPO_ACCESS", "LETAGENTS_JOIN_LIMIT",
	"LETAGENTS_INVITE_ROOM_LIMIT", "LETAGENTS_SEND_LIMIT", "LETAGENTS_LIVENESS_NOTICE_AFTER_MS", "LETAGENTS_BODY_TIMEOUT_MS", "LETAGENTS_IDLE_TIMEOUT_MS",
	"LETAGENTS_STREAM_MAX", "LETAGENTS_STREAM_ROOM_MAX", "LETAGENTS_DEV_ORIGINS", "LETAGENTS_LOCAL_OWNER", "LETAGENTS_PROXY_HOPS", "LETAGENTS_MCP_AUTH",
	"LETAGENTS_MCP_URL"}

// LocalVariables are the Variables a deployment leaves unset: their
// defaults suit AWS (PORT, the GitHub URLs, the repo access policy, the
// rate limits, the body timeout and stream caps of long-running servers,
// which Lambda functions are not), or they are the
// local stand-ins for what AWS provides (client id and secret in plain
// text, the token key file).
var LocalVariables = []string{"PORT", "GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET", "GITHUB_OAUTH_URL", "GITHUB_API_URL", "GITHUB_WEBHOOK_SECRET",
	"GITHUB_APP_PRIVATE_KEY", "LETAGENTS_TOKEN_KEY_FILE", "PUBLIC_API_URL", "LETAGENTS_REPO_ACCESS", "LETAGENTS_JOIN_LIMIT", "LETAGENTS_INVITE_ROOM_LIMIT",
	"LETAGENTS_SEND_LIMIT", "LETAGENTS_BODY_TIMEOUT_MS", "LETAGENTS_STREAM_MAX", "LETAGENTS_STREAM_ROOM_MAX", "LETAGENTS_DEV_ORIGINS",
	"LETAGENTS_MCP_AUTH"}

// Load reads the environment through getenv, naming the variable at
// fault when a value is unusable.
func Load(getenv func(string) string) (Config, error) {
	cfg := Config{
		DB: db.Config{URL: getenv("DB_URL"), SecretARN: getenv("DB_SECRET_ARN"), Host: getenv("DB_HOST"), Port: getenv("DB_PORT"),
			Name: getenv("DB_NAME"), ProxyHost: getenv("DB_PROXY_HOST")},
		PollMax:     letagents.DefaultPollMax,
		GatewayHold: 25 * time.Second,
		Addr:        ":3001",
		GitHub: github.Config{ClientID: getenv("GITHUB_CLIENT_ID"), ClientSecret: getenv("GITHUB_CLIENT_SECRET"),
			Scopes: getenv("GITHUB_OAUTH_SCOPES"), OAuthURL: getenv("GITHUB_OAUTH_URL"), APIURL: getenv("GITHUB_API_URL")},
		GitHubSecretARN:     getenv("GITHUB_SECRET_ARN"),
		GitHubWebhookSecret: getenv("GITHUB_WEBHOOK_SECRET"),
		GitHubAppID:         strings.TrimSpace(getenv("GITHUB_APP_ID")),
		GitHubAppPrivateKey: getenv("GITHUB_APP_PRIVATE_KEY"),
		GitHubAppSlug:       strings.TrimSpace(getenv("GITHUB_APP_SLUG")),
		KMSKeyID:            getenv("LETAGENTS_KMS_KEY_ID"),
		TokenKeyFile:        getenv("LETAGENTS_TOKEN_KEY_FILE"),
		BaseURL:             strings.TrimRight(getenv("LETAGENTS_BASE_URL"), "/"),
		PublicAPIURL:        getenv("PUBLIC_API_URL"),
		MCPURL:              strings.TrimRight(getenv("LETAGENTS_MCP_URL"), "/"),
		RepoAccess:          true,
		JoinLimit:           auth.DefaultJoinLimit,
		InviteRoomLimit:     auth.DefaultInviteRoomLimit,
		SendLimit:           auth.DefaultSendLimit,
		LivenessNoticeAfter: liveness.DefaultNoticeAfter,
		BodyTimeout:         DefaultBodyTimeout,
		IdleTimeout:         httpserver.DefaultIdleTimeout,
		StreamMax:           letagents.DefaultStreamMax,
		RoomStreamMax:       letagents.DefaultRoomStreamMax,
	}
	var err error
	if cfg.GitHubSecretARN != "" && (cfg.GitHub.ClientID != "" || cfg.GitHub.ClientSecret != "") {
		return cfg, errors.New("set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET, or GITHUB_SECRET_ARN, not both")
	}
	if cfg.GitHubSecretARN != "" && cfg.GitHubWebhookSecret != "" {
		return cfg, errors.New("set GITHUB_WEBHOOK_SECRET, or its webhook_secret in GITHUB_SECRET_ARN, not both")
	}
	if err := cfg.loadGitHubApp(getenv); err != nil {
		return cfg, err
	}
	if cfg.KMSKeyID != "" && cfg.TokenKeyFile != "" {
		return cfg, errors.New("set LETAGENTS_KMS_KEY_ID or LETAGENTS_TOKEN_KEY_FILE, not both")
	}
	for name, v := range map[string]string{"LETAGENTS_BASE_URL": cfg.BaseURL, "PUBLIC_API_URL": cfg.PublicAPIURL, "LETAGENTS_MCP_URL": cfg.MCPURL,
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
	switch v := getenv("LETAGENTS_MCP_AUTH"); v {
	case "", "open":
	case "required":
		cfg.MCPAuthRequired = true
	default:
		return cfg, fmt.Errorf("LETAGENTS_MCP_AUTH=%q: want open or required", v)
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
	if v := getenv("LETAGENTS_PROXY_HOPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 5 {
			return cfg, fmt.Errorf("LETAGENTS_PROXY_HOPS=%q: want a whole number from 0 to 5", v)
		}
		cfg.ProxyHops = n
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

// loadGitHubApp checks the GitHub App's variables: a numeric id, its key
// from one place (checked to be an RSA private key when given here), a
// slug as GitHub writes them, and the enforcement mode.
func (c *Config) loadGitHubApp(getenv func(string) string) error {
	var err error
	if c.LeaseMode, err = leasecheck.ParseMode(getenv("LETAGENTS_GITHUB_ENFORCEMENT_MODE")); err != nil {
		return fmt.Errorf("LETAGENTS_GITHUB_ENFORCEMENT_MODE: %w", err)
	}
	if c.GitHubAppID != "" {
		if n, err := strconv.ParseInt(c.GitHubAppID, 10, 64); err != nil || n <= 0 {
			return fmt.Errorf("GITHUB_APP_ID=%q: want the App's numeric id", c.GitHubAppID)
		}
	}
	if c.GitHubAppSlug != "" && !appSlug.MatchString(c.GitHubAppSlug) {
		return fmt.Errorf("GITHUB_APP_SLUG=%q: want the App's slug (letters, digits and dashes)", c.GitHubAppSlug)
	}
	switch {
	case c.GitHubSecretARN != "" && c.GitHubAppPrivateKey != "":
		return errors.New("set GITHUB_APP_PRIVATE_KEY, or its app_private_key in GITHUB_SECRET_ARN, not both")
	case c.GitHubAppPrivateKey != "" && c.GitHubAppID == "":
		return errors.New("GITHUB_APP_PRIVATE_KEY is set without GITHUB_APP_ID")
	case c.GitHubAppID != "" && c.GitHubAppPrivateKey == "" && c.GitHubSecretARN == "":
		return errors.New("GITHUB_APP_ID is set without GITHUB_APP_PRIVATE_KEY (or GITHUB_SECRET_ARN holding app_private_key)")
	case c.GitHubAppPrivateKey != "":
		if _, err := github.ParsePrivateKey(c.GitHubAppPrivateKey); err != nil {
			return fmt.Errorf("GITHUB_APP_PRIVATE_KEY: %w", err)
		}
	}
	return nil
}

// appSlug is the shape of a GitHub App's slug.
var appSlug = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,99}$`)

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

// CheckLocalOwner refuses the local owner where anyone can sign in or a
// room is closed: there it would let whoever reaches the server act as an
// account, and administer every room.
func (c Config) CheckLocalOwner() error {
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

// Origins are the browser origins, besides the one each request was sent
// to, taken for the service's own: CORS allows them, and their pages may
// write with the session cookie.
func (c Config) Origins() []string {
	out := slices.Clone(c.DevOrigins)
	for _, u := range []string{c.BaseURL, c.PublicAPIURL} {
		if o := api.Origin(u); o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
