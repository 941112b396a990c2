// Command costmodel measures what agents really send and prices it on AWS
// (make cost; docs/cost.md):
//
//	go run ./localdev/costmodel                # 10 agents in one room, about 9 min
//	go run ./localdev/costmodel -agents 20 -room 10
//
// It starts the local runner (runnerproc, as the bench does) on its own
// PostgreSQL (localdev/embeddedpg) or DB_URL, with a fake GitHub to sign
// in with, and runs the repository's MCP server (mcp/server, in process,
// driven by an MCP client as an agent's runtime drives it) through a
// scripted hour of agent work (agent.go), compressed -speed times. It runs
// the hour twice: with the poll service (long-polls and event streams to
// the runner's poll server, as to the Fargate service behind its load
// balancer), then in the Lambda-only poll mode (LETAGENTS_POLL_URL at a
// proxy that refuses event streams with 501, as the poll function behind
// its Function URL does, so the MCP server's watcher long-polls). Every
// request is counted by route from the runner's request log, with its
// time and answer size; the database's growth, WAL and CPU time are
// sampled around each hour. It prints, as Markdown, the request mix per
// agent-hour and the monthly bill for 10, 1,000 and 100,000 agents in
// each mode, every line with its arithmetic (price.go).
//
// The compression keeps the requests per simulated hour: every timeout
// of the hour is divided by -speed (the agents' wait_for_messages
// timeout, the runner's LETAGENTS_POLL_MAX_MS, which clamps the watcher's
// 30 s long-polls to the same scaled 30 s), and so are the gaps between
// the agents' actions. What is not scaled is the time each request takes
// to serve, which is what Lambda bills.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/localdev/embeddedpg"
	"github.com/letagents/letagents-go/localdev/runnerproc"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/letagents"
)

// maxSpeed keeps the scaled timeouts at or above the one second
// wait_for_messages and LETAGENTS_POLL_MAX_MS take at least: 30 s / 30.
const maxSpeed = 30

// login is the GitHub account every agent signs in as: one person's
// agents.
const login = "owner"

// warmUp is the simulated time the first agents run, unmeasured, before
// the measured hours: the runner's functions and pools are warm then, and
// the database's tables have their first pages, which a fresh database
// would otherwise bill to the first hour as growth.
const warmUp = 6 * time.Minute

// settle bounds the wait for the runner to log the streams the agents
// closed at the end of an hour.
const settle = 30 * time.Second

type options struct {
	agents, room, speed int
	template            string
	sizes               []float64
	keepLog             string
}

func main() {
	var opt options
	var sizes string
	flag.IntVar(&opt.agents, "agents", 10, "agents, all running the scripted hour at once")
	flag.IntVar(&opt.room, "room", 10, "agents per room")
	flag.IntVar(&opt.speed, "speed", 20, fmt.Sprintf("how many times faster than real time the hour runs (1 to %d)", maxSpeed))
	flag.StringVar(&opt.template, "template", "template.yaml", "the SAM template whose function memory and poll task are priced")
	flag.StringVar(&opt.keepLog, "log", "", "also write the request logs of the run (the runner's, the stream refuser's) to this file")
	flag.StringVar(&sizes, "sizes", "10,1000,100000", "the agent counts to price")
	flag.Parse()
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || n < 1 {
			fail(2, fmt.Errorf("-sizes %q: want positive numbers", sizes))
		}
		opt.sizes = append(opt.sizes, n)
	}
	if opt.agents < 1 || opt.room < 1 || opt.speed < 1 || opt.speed > maxSpeed {
		fail(2, fmt.Errorf("want -agents ≥ 1, -room ≥ 1, 1 ≤ -speed ≤ %d", maxSpeed))
	}
	src, err := os.ReadFile(opt.template)
	if err != nil {
		fail(2, err)
	}
	z, err := readSizing(src)
	if err != nil {
		fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, opt)
	if err != nil {
		fail(1, err)
	}
	report(os.Stdout, opt, z, res)
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "costmodel:", err)
	os.Exit(code)
}

// progress tells what the run is doing, on stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "costmodel: "+format+"\n", args...)
}

// passResult is one scripted hour, measured.
type passResult struct {
	mode   string
	hours  float64 // simulated hours the pass lasted
	routes usage
	db     dbDelta
	speed  int
	agents int
}

// run starts everything, runs the hour in each poll mode, and stops.
func run(ctx context.Context, opt options) ([]passResult, error) {
	tmp, err := os.MkdirTemp("", "letagents-costmodel-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	dbURL := os.Getenv("DB_URL")
	if dbURL == "" {
		pgLog, err := os.Create(filepath.Join(tmp, "postgres.log"))
		if err != nil {
			return nil, err
		}
		defer pgLog.Close()
		pg, err := embeddedpg.Start(ctx, embeddedpg.Options{Dir: filepath.Join(tmp, "pg"), Log: pgLog})
		if err != nil {
			return nil, fmt.Errorf("start the embedded database (or set DB_URL): %w", err)
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = pg.Stop(stopCtx)
		}()
		dbURL = pg.URL()
	} else {
		progress("DB_URL is set: the database's WAL and CPU figures include whatever else that server does")
	}

	gt := &githubT{}
	gh := githubtest.New(gt)
	defer gt.cleanup()
	gh.AddUser(login)
	gh.SetDeviceTiming(time.Second, 0)

	log := &lockedBuffer{}
	pollMax := letagents.DefaultPollTimeout / time.Duration(opt.speed)
	runner, err := runnerproc.Start(ctx, []string{"DB_URL=" + dbURL, "LOG_LEVEL=info", "DB_MAX_CONNS=",
		"LETAGENTS_POLL_MAX_MS=" + strconv.FormatInt(pollMax.Milliseconds(), 10),
		"GITHUB_CLIENT_ID=" + githubtest.ClientID, "GITHUB_CLIENT_SECRET=" + githubtest.ClientSecret,
		"GITHUB_OAUTH_URL=" + gh.URL, "GITHUB_API_URL=" + gh.URL,
		"LETAGENTS_SEND_LIMIT=1000000", "LETAGENTS_JOIN_LIMIT=1000000"}, log)
	if err != nil {
		return nil, err
	}
	defer runner.Stop()
	progress("runner on %s (%s)", runner.URL, runner.Pool)

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))

	refused := &lockedBuffer{}
	proxy, err := startStreamRefuser(runner.URL, refused)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	tokens, err := signIn(ctx, opt.agents, agentEnv{apiURL: runner.URL, dir: filepath.Join(tmp, "sign-in"), log: os.Stderr}, gh)
	if err != nil {
		return nil, fmt.Errorf("sign-in: %w", err)
	}
	warm := opt
	warm.agents = min(opt.agents, opt.room)
	if _, err := runPass(ctx, warm, "warm-up", warmUp, agentEnv{apiURL: runner.URL, dir: filepath.Join(tmp, "warm-up"), log: os.Stderr, tokens: tokens},
		logs{log, refused}, conn); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	var out []passResult
	for _, p := range []struct{ mode, pollURL string }{{modeFargate, ""}, {modeLambda, "http://" + proxy.Addr().String()}} {
		r, err := runPass(ctx, opt, p.mode, time.Hour, agentEnv{apiURL: runner.URL, pollURL: p.pollURL, dir: filepath.Join(tmp, p.mode), log: os.Stderr,
			tokens: tokens}, logs{log, refused}, conn)
		if err != nil {
			return nil, fmt.Errorf("%s pass: %w", p.mode, err)
		}
		out = append(out, r)
	}
	if err := gt.err(); err != nil {
		return nil, err
	}
	if opt.keepLog != "" {
		if err := os.WriteFile(opt.keepLog, []byte(logs{log, refused}.from([2]int{})), 0o644); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runPass signs the agents in, runs their hour and measures it.
func runPass(ctx context.Context, opt options, mode string, length time.Duration, env agentEnv, log logs, conn *pgx.Conn) (passResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agents := make([]*agent, opt.agents)
	defer func() {
		for _, a := range agents {
			if a != nil {
				a.close()
			}
		}
	}()
	progress("%s: starting %d agents", mode, opt.agents)
	err := each(ctx, opt.agents, func(ctx context.Context, i int) error {
		a, err := startAgent(ctx, agentName(i), env)
		agents[i] = a
		return err
	})
	if err != nil {
		return passResult{}, err
	}

	from := log.mark()
	before, err := sampleDB(ctx, conn)
	if err != nil {
		return passResult{}, err
	}
	clk := clock{start: time.Now(), speed: opt.speed}
	progress("%s: %v of simulated time begins (%v on the wall clock)", mode, length, length/time.Duration(opt.speed))
	err = each(ctx, opt.agents, func(ctx context.Context, i int) error {
		room := fmt.Sprintf("costmodel-%s-%d", mode, i/opt.room)
		return agents[i].hour(ctx, clk, length, room, float64(i%opt.room)/float64(opt.room))
	})
	if err != nil {
		return passResult{}, err
	}
	hours := clk.now().Hours()
	for i, a := range agents {
		a.close()
		agents[i] = nil
	}
	// A stream is logged once it ends: wait for the runner to log those
	// the agents just closed.
	if env.pollURL == "" {
		deadline := time.Now().Add(settle)
		for streams(log.from(from)) < opt.agents && time.Now().Before(deadline) {
			if err := pause(ctx, 100*time.Millisecond); err != nil {
				return passResult{}, err
			}
		}
	}
	after, err := sampleDB(ctx, conn)
	if err != nil {
		return passResult{}, err
	}
	routes, err := parseLog(strings.NewReader(log.from(from)))
	if err != nil {
		return passResult{}, err
	}
	progress("%s: %.2f simulated hours, %d requests", mode, hours, routes.total())
	return passResult{mode: mode, hours: hours, routes: routes, db: after.sub(before), speed: opt.speed, agents: opt.agents}, nil
}

// agentName is the name of the i-th agent (from 0).
func agentName(i int) string { return fmt.Sprintf("agent-%d", i+1) }

// signIn signs n agents in, once for the whole run (a machine signs in
// once, not every hour), and returns their owner tokens by name.
func signIn(ctx context.Context, n int, env agentEnv, gh *githubtest.Server) (map[string]string, error) {
	progress("signing in %d agents (the service lets an address start 10 sign-ins a minute)", n)
	tokens := make([]string, n)
	err := each(ctx, n, func(ctx context.Context, i int) error {
		a, err := startAgent(ctx, agentName(i), env)
		if err != nil {
			return err
		}
		defer a.close()
		tokens[i], err = a.signIn(ctx, gh, login, env.stateFile(agentName(i)))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, t := range tokens {
		out[agentName(i)] = t
	}
	return out, nil
}

// streams counts the event streams logged in a piece of the log.
func streams(log string) int {
	u, err := parseLog(strings.NewReader(log))
	if err != nil {
		return 0
	}
	n := 0
	for _, r := range u {
		if r.isStream() {
			n += r.Count
		}
	}
	return n
}

// each runs fn for 0..n-1 at once and returns the first error, which
// cancels the others.
func each(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := fn(ctx, i); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// startStreamRefuser serves, on a free loopback port, what the poll
// function's Function URL serves: every long-poll, passed to the runner,
// and a 501 STREAM_UNAVAILABLE for every event stream, logged as the
// runner logs its requests.
func startStreamRefuser(runnerURL string, log io.Writer) (net.Listener, error) {
	target, err := url.Parse(runnerURL)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	logger := slog.New(slog.NewJSONHandler(log, nil))
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/messages/stream") {
				rp.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			body := `{"error":"This endpoint cannot stream: it answers through Lambda.","code":"STREAM_UNAVAILABLE"}`
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotImplemented)
			n, _ := io.WriteString(w, body)
			logger.Info("request", "method", r.Method, "path", api.LogPath(r.URL.EscapedPath()), "status", http.StatusNotImplemented,
				"function", "poll", "duration", time.Since(start), "bytes", n)
		}))
	}()
	return ln, nil
}

// githubT is the testing.TB the fake GitHub reports misuse through: it
// calls Helper, Errorf and Cleanup only, and here misuse fails the run.
type githubT struct {
	testing.TB // nil: no other method is called
	mu         sync.Mutex
	errs       []string
	cleanups   []func()
}

func (t *githubT) Helper() {}

func (t *githubT) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *githubT) Cleanup(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, fn)
}

func (t *githubT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func (t *githubT) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.errs) == 0 {
		return nil
	}
	return fmt.Errorf("fake GitHub: %s", strings.Join(t.errs, "; "))
}

// logs are the request logs: the runner's and the stream refuser's, kept
// apart so that their lines never interleave.
type logs [2]*lockedBuffer

// mark is where both logs are now.
func (l logs) mark() [2]int { return [2]int{l[0].Len(), l[1].Len()} }

// from is what both logged since mark m.
func (l logs) from(m [2]int) string { return l[0].From(m[0]) + l[1].From(m[1]) }

// lockedBuffer is a log written by one goroutine (exec's copying of the
// runner's stderr, or the stream refuser's handlers) while read.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

// Len is how much has been written.
func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.b)
}

// From is what was written from offset on.
func (l *lockedBuffer) From(offset int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b[offset:])
}
