// Command compat compares this service with the original LetAgents
// service (the anchor) it must stay compatible with: it sends the same
// requests (every route family: rooms, messages, polls, auth, agents,
// sessions, the board, streams, 404s) to both, normalises what varies by
// nature (ids, codes, tokens, timestamps), and prints per request what
// differs and per family a tally. Then it drives the original's own MCP
// client (its dist/mcp/server.js) against both servers through four
// scenarios: a two-agent chat, a board round, a run with a stale
// LETAGENTS_TOKEN, and the room's messages resource told of a new
// message.
//
//	make compat ANCHOR_DIR=/path/to/letagents   # a built original
//
// It exits 1 when a difference is not in the table of deliberate ones
// (deliberate.go's knownDifferences, each with its reason) or an MCP
// scenario passes against the anchor but fails against us; 2 when it
// cannot run.
//
// Environment (read once):
//
//	ANCHOR_DIR     the original, built (npm ci && npm run build): the
//	               command migrates a fresh database and serves it, and
//	               runs its MCP client
//	ANCHOR_URL     instead: an original already serving (ANCHOR_DB_URL its
//	               database, for seeding accounts; ANCHOR_VERSION its
//	               version); without ANCHOR_DIR the MCP scenarios are skipped
//	OURS_URL       a service of ours already serving (OURS_DB_URL its
//	               database); by default the command builds ./localdev and
//	               serves it
//	COMPAT_PG_URL  the PostgreSQL server the command makes its databases
//	               on (<prefix>_anchor, <prefix>_ours, dropped first);
//	               default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
//	COMPAT_DB_PREFIX  the prefix of those databases, default compat: two
//	               runs on one server need different ones
//	COMPAT_MCP_ONLY  set to 1: skip the HTTP requests, run only the MCP
//	               scenarios
//
// It seeds two GitHub accounts with owner and browser-session tokens in
// both databases, since nobody can sign in without a GitHub app.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/letagents/letagents-go/localdev/anchorproc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Getenv, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
	}
	os.Exit(code)
}

// validDBName: the prefix names databases and goes into their URLs.
var validDBName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// config is the environment of a run.
type config struct {
	anchorDir, anchorURL, anchorDB, anchorVersion string
	oursURL, oursDB                               string
	pgURL, dbPrefix                               string
	mcpOnly                                       bool
}

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		anchorDir: getenv("ANCHOR_DIR"), anchorURL: getenv("ANCHOR_URL"), anchorDB: getenv("ANCHOR_DB_URL"),
		anchorVersion: getenv("ANCHOR_VERSION"), oursURL: getenv("OURS_URL"), oursDB: getenv("OURS_DB_URL"),
		pgURL: getenv("COMPAT_PG_URL"), dbPrefix: getenv("COMPAT_DB_PREFIX"),
	}
	switch v := getenv("COMPAT_MCP_ONLY"); v {
	case "", "0":
	case "1":
		c.mcpOnly = true
	default:
		return c, fmt.Errorf("COMPAT_MCP_ONLY=%q: want 1 or 0", v)
	}
	if c.mcpOnly && c.anchorDir == "" {
		return c, errors.New("COMPAT_MCP_ONLY needs ANCHOR_DIR: the MCP scenarios run its dist/mcp/server.js")
	}
	if c.anchorDir == "" && c.anchorURL == "" {
		return c, errors.New("set ANCHOR_DIR to a built original (see docs/compatibility.md), or ANCHOR_URL to one serving")
	}
	if c.dbPrefix == "" {
		c.dbPrefix = "compat"
	}
	if !validDBName.MatchString(c.dbPrefix) {
		return c, fmt.Errorf("COMPAT_DB_PREFIX=%q: want lower-case letters, digits and _", c.dbPrefix)
	}
	if c.pgURL == "" {
		c.pgURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	if c.anchorDir != "" {
		v, err := anchorproc.Version(c.anchorDir)
		if err != nil {
			return c, fmt.Errorf("ANCHOR_DIR: %w", err)
		}
		c.anchorVersion = v
	}
	if c.anchorVersion == "" {
		c.anchorVersion = "unknown"
	}
	return c, nil
}

// run compares and reports; its int is the exit status.
func run(ctx context.Context, getenv func(string) string, out io.Writer) (int, error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return 2, err
	}
	work, err := os.MkdirTemp("", "letagents-compat-")
	if err != nil {
		return 2, fmt.Errorf("work directory: %w", err)
	}
	// Logs of the servers stay for a look after a failed run.
	fmt.Fprintf(out, "work directory (server logs): %s\n", work)

	accounts := seedAccounts()
	anchorVars, oursVars := seedVars(accounts), seedVars(accounts)
	anchorURL, stopAnchor, err := serveAnchor(ctx, cfg, work, accounts, anchorVars)
	if err != nil {
		return 2, err
	}
	defer stopAnchor()
	oursURL, stopOurs, err := serveOurs(ctx, cfg, work, accounts, oursVars)
	if err != nil {
		return 2, err
	}
	defer stopOurs()

	failed := false
	if cfg.mcpOnly {
		fmt.Fprintln(out, "\n## HTTP: skipped (COMPAT_MCP_ONLY=1)")
	} else {
		fmt.Fprintf(out, "\n## HTTP: anchor %s (%s) vs ours (%s)\n\n", cfg.anchorVersion, anchorURL, oursURL)
		cmp := &comparison{
			anchor: newTarget("anchor", anchorURL, anchorVars), ours: newTarget("ours", oursURL, oursVars),
			version: cfg.anchorVersion, table: knownDifferences,
		}
		results := cmp.run(ctx, suite())
		printDetails(out, results)
		fmt.Fprintln(out)
		counts := tally(results)
		printTally(out, counts)
		failed = counts[len(counts)-1].Differs > 0
	}

	if cfg.anchorDir == "" {
		fmt.Fprintln(out, "\n## MCP client: skipped (needs ANCHOR_DIR for dist/mcp/server.js)")
	} else {
		fmt.Fprintf(out, "\n## MCP client: %s's dist/mcp/server.js\n\n", cfg.anchorVersion)
		tokens := [2]string{accounts[0].OwnerToken, accounts[1].OwnerToken}
		outcomes := runScenarios(ctx, cfg.anchorDir, work,
			mcpTarget{name: "anchor", url: anchorURL, tokens: tokens}, mcpTarget{name: "ours", url: oursURL, tokens: tokens})
		printScenarios(out, outcomes)
		for _, o := range outcomes {
			failed = failed || !o.passes()
		}
	}
	if failed {
		return 1, errors.New("differences not known to be deliberate (see above)")
	}
	return 0, nil
}

// serveAnchor starts the original (or takes its URL) and seeds its
// database.
func serveAnchor(ctx context.Context, cfg config, work string, accounts []account, vs vars) (string, func(), error) {
	if cfg.anchorURL != "" {
		if cfg.anchorDB != "" {
			if err := seedAnchor(ctx, cfg.anchorDB, accounts, vs); err != nil {
				return "", nil, err
			}
		}
		return cfg.anchorURL, func() {}, nil
	}
	dbURL, err := freshDatabase(ctx, cfg.pgURL, cfg.dbPrefix+"_anchor")
	if err != nil {
		return "", nil, err
	}
	p, err := anchorproc.Start(ctx, cfg.anchorDir, dbURL, work)
	if err != nil {
		return "", nil, err
	}
	if err := seedAnchor(ctx, dbURL, accounts, vs); err != nil {
		p.Stop()
		return "", nil, err
	}
	return p.URL, p.Stop, nil
}

// serveOurs starts ./localdev (or takes its URL) and seeds its database,
// once it has applied its migrations.
func serveOurs(ctx context.Context, cfg config, work string, accounts []account, vs vars) (string, func(), error) {
	if cfg.oursURL != "" {
		if cfg.oursDB != "" {
			if err := seedOurs(ctx, cfg.oursDB, accounts, vs); err != nil {
				return "", nil, err
			}
		}
		return cfg.oursURL, func() {}, nil
	}
	dbURL, err := freshDatabase(ctx, cfg.pgURL, cfg.dbPrefix+"_ours")
	if err != nil {
		return "", nil, err
	}
	u, stop, err := startOurs(ctx, dbURL, work)
	if err != nil {
		return "", nil, err
	}
	if err := seedOurs(ctx, dbURL, accounts, vs); err != nil {
		stop()
		return "", nil, err
	}
	return u, stop, nil
}
