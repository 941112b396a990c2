// Command bench measures the message path of the service against floors
// measured in the same run, on the real database, and prints one Markdown
// table (progress goes to stderr):
//
//	go run ./localdev/bench           # full run, about 3 min on 2 cores
//	go run ./localdev/bench -quick    # about 2 min
//	go run ./localdev/bench -search=off   # without the search rows: 40 s, or 20 s quick
//	go run ./localdev/bench -hook=only    # the hook process rows alone
//	go run ./localdev/bench -sends=only   # sustained sends and CPU per send alone
//	go run ./localdev/bench -search=index # an insert's CPU under each way of indexing it for search
//	ANCHOR_DIR=/path/to/built/letagents go run ./localdev/bench -sends=only   # and side by side with the original
//
// Floors: A, a bare INSERT+NOTIFY on pgx waking a bare LISTEN connection
// (the least a send→wake can cost); B, a bare loopback HTTP round trip
// (what HTTP alone adds); C, k bare parked HTTP requests answered at once
// (the fan-out of a wake with no database); D, bare INSERT+NOTIFY
// statements per second; E, the memory of a bare net/http request parked on
// its context. Ours: send→wake latency with W parked long-polls over R
// rooms, sustained sends per second, and the server's memory per parked
// long-poll (measured in a child process, so the client's share is not
// counted). The local runner (./localdev, built and run as a child) is
// timed against the in-process service on the same sends: bursts of 100
// concurrent sends into 100 rooms, and one at a time. Floors are sampled alongside what they are floors for (floor A
// in blocks between the cases, floor C after every send, the throughput
// rows in alternating rounds), since anything else running on the machine
// moves all of them. The notes of each send→wake row break its time down
// (the POST, the woken waiters' re-reads, the pool, the answers).
//
// The same cases run again with event streams instead of long-polls
// (send→event: W streams open over R rooms, each send timed to its event's
// data line being read), against floor F, k bare open streams written one
// event at once; and the memory rows measure an open stream as they do a
// parked long-poll.
//
// The hook rows (hook.go) time the hook process, `letagents hook`, from
// exec to exit against the local runner and against a server that never
// answers, against floor H, the exec of a Go program that does nothing.
//
// The search rows (search.go) build a corpus of a million messages
// first, time searches over it and the search index's cost to a send.
//
// It works in a private schema bench_<random> on DB_URL (default the test
// server) and drops it at the end, also on Ctrl-C.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/service"
)

const defaultDBURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

type options struct {
	quick      bool
	cases      []latCase
	memWaiters int
	maxConns   int
	senders    int
	tpDur      time.Duration
	floorA     int
	floorB     int
	cpuProfile string
	sendProf   string // CPU profile of the agents' sends (throughput.go)
	blockProf  string // block profile of the -cpuprofile case
	mutexProf  string // mutex profile of the -cpuprofile case
	streams    bool
	search     string // on, off, only, or index: the search rows (search.go), or the index variants alone (searchindex.go)
	hook       string // on, off or only: the hook process rows (hook.go)
	sends      string // on, off or only: the send throughput rows (throughput.go)
	scale      bool
}

// latCase is one send→wake case: W waiters over R rooms, long-polls or,
// with stream, open event streams.
type latCase struct {
	W, R, iters int
	stream      bool
	// agent: each waiter long-polls as an agent does, with its owner's
	// token and its worker session's headers, so that a wake runs the
	// checks an agent's does (its credential, its session, the delivery
	// connection it holds and what it surfaced).
	agent bool
}

func main() {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	// The bench sends (and, side by side, joins) from one address far
	// faster than the limits let any client; its server children inherit
	// this.
	for _, k := range []string{"LETAGENTS_SEND_LIMIT", "LETAGENTS_JOIN_LIMIT"} {
		if os.Getenv(k) != "" {
			continue
		}
		if err := os.Setenv(k, "1000000"); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
	}
	var (
		opt     options
		waiters string
		iters   int
		streams bool
	)
	flag.BoolVar(&opt.quick, "quick", false, "a ~20 s run: fewer samples and iterations, 2 s throughput runs")
	flag.StringVar(&waiters, "waiters", "", "comma-separated parked-waiter counts W (default 1,100,1000); each W>1 runs with R=1 and R=min(W,100) rooms")
	flag.IntVar(&iters, "iters", 0, "send→wake iterations per case (default: by case, fewer with -quick)")
	flag.IntVar(&opt.memWaiters, "mem-waiters", 1000, "parked waiters for the memory rows")
	flag.IntVar(&opt.maxConns, "maxconns", 16, "pgxpool MaxConns of the service's pool")
	flag.IntVar(&opt.senders, "senders", 8, "concurrent senders (and rooms) for the throughput rows")
	flag.BoolVar(&streams, "streams", true, "also run every send→wake case with event streams (send→event), and measure a stream's memory")
	flag.StringVar(&opt.search, "search", "on", "the search rows, which build a corpus of a million messages first (about a minute): on, off, or only them; index: only the CPU of an insert under each way of indexing it")
	flag.StringVar(&opt.hook, "hook", "on", "the rows of the hook process (letagents hook, run against the local runner): on, off, or only them")
	flag.StringVar(&opt.sends, "sends", "on", "the rows of sustained sends and their CPU per send against floor D: on, off, or only them")
	flag.StringVar(&opt.cpuProfile, "cpuprofile", "", "write a CPU profile of the largest one-room send→wake case to this file")
	flag.StringVar(&opt.blockProf, "blockprofile", "", "with -cpuprofile: write a block profile of the same case to this file")
	flag.StringVar(&opt.mutexProf, "mutexprofile", "", "with -cpuprofile: write a mutex profile of the same case to this file")
	flag.StringVar(&opt.sendProf, "sendprofile", "", "after the throughput rows, run the agents' sends once more under a CPU profile written to this file, "+
		"and print the database's statements by time (pg_stat_statements, when the database has it loaded)")
	var (
		sc   scaleOptions
		ramp string
	)
	flag.BoolVar(&opt.scale, "scale", false, "run the scale test (make scale) instead: several poll server processes, a kill, one process ramped")
	flag.IntVar(&sc.procs, "procs", 3, "scale: poll server processes")
	flag.IntVar(&sc.waiters, "scale-waiters", 10000, "scale: parked long-polls and open streams, in all")
	flag.IntVar(&sc.rooms, "scale-rooms", 1000, "scale: rooms the waiters are spread over")
	flag.Float64Var(&sc.streamShare, "stream-share", 0.5, "scale: the share of waiters that are event streams")
	flag.Float64Var(&sc.rate, "send-rate", 0, "scale: sends per second (default waiters/60: each agent sends once a minute)")
	flag.IntVar(&sc.senders, "scale-senders", 16, "scale: concurrent senders, each owning every n-th room")
	flag.DurationVar(&sc.dur, "send-dur", 20*time.Second, "scale: how long each step sends")
	flag.StringVar(&ramp, "ramp", "2500,5000,10000,15000,18000", "scale: waiters held by one process, in steps, until p99 passes -max-p99")
	flag.DurationVar(&sc.maxP99, "max-p99", 100*time.Millisecond, "scale: the p99 send→wake the ramp stops beyond")
	flag.IntVar(&sc.dbConns, "db-conns", 4, "scale: DB_MAX_CONNS of each poll server (the server has max_connections to share)")
	flag.Float64Var(&sc.cpu, "poll-cpu", 0, "scale: run each poll server in a cgroup of its own with this CPU quota, in CPUs (0.5 is the template's poll task); 0 for none. Needs root and a cgroup cpu controller")
	flag.IntVar(&sc.gomaxprocs, "poll-gomaxprocs", 0, "scale: GOMAXPROCS of each poll server; 0 leaves it to Go's runtime (which gives a quota under 2 CPUs 2)")
	flag.Parse()
	for name, v := range map[string]string{"search": opt.search, "hook": opt.hook, "sends": opt.sends} {
		if v != "on" && v != "off" && v != "only" && (name != "search" || v != "index") {
			fmt.Fprintf(os.Stderr, "bench: -%s %q: want on, off or only\n", name, v)
			os.Exit(2)
		}
	}
	if opt.scale && opt.quick {
		setDefault := func(name, v string) {
			set := false
			flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
			if !set {
				_ = flag.Set(name, v)
			}
		}
		setDefault("scale-waiters", "1500")
		setDefault("scale-rooms", "150")
		setDefault("send-dur", "4s")
		setDefault("ramp", "1000,3000")
	}
	for _, f := range strings.Split(ramp, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -ramp %q: want positive whole numbers\n", ramp)
			os.Exit(2)
		}
		sc.ramp = append(sc.ramp, n)
	}
	if err := sc.check(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}

	opt.tpDur, opt.floorA, opt.floorB = 5*time.Second, 300, 1000
	if opt.quick {
		opt.tpDur, opt.floorA, opt.floorB = 2*time.Second, 150, 500
	}
	ws := []int{1, 100, 1000}
	if waiters != "" {
		ws = nil
		for _, f := range strings.Split(waiters, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "bench: -waiters %q: want positive whole numbers\n", waiters)
				os.Exit(2)
			}
			ws = append(ws, n)
		}
	}
	kinds := []bool{false}
	if streams {
		kinds = append(kinds, true)
	}
	opt.streams = streams
	for _, stream := range kinds {
		for _, w := range ws {
			rs := []int{1}
			if w > 1 {
				rs = append(rs, min(w, 100))
			}
			for _, r := range rs {
				opt.cases = append(opt.cases, latCase{W: w, R: r, iters: defaultIters(w, r, opt.quick, iters), stream: stream})
			}
		}
	}
	if slices.Contains(ws, 1) {
		opt.cases = append(opt.cases, latCase{W: 1, R: 1, iters: defaultIters(1, 1, opt.quick, iters), agent: true})
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	b := &bench{opt: opt, scale: sc, dbURL: os.Getenv("DB_URL")}
	if b.dbURL == "" {
		b.dbURL = defaultDBURL
	}
	go func() {
		// After Ctrl-C the run unwinds through its contexts; should anything
		// hang, clean up anyway and leave.
		<-ctx.Done()
		time.Sleep(15 * time.Second)
		fmt.Fprintln(os.Stderr, "bench: still stopping after 15 s; dropping the schema and exiting")
		b.cleanup()
		os.Exit(130)
	}()
	run := b.run
	if opt.scale {
		run = b.runScale
		b.opt.maxConns = min(b.opt.maxConns, 8) // the database's connections are shared with the servers
	}
	err := run(ctx)
	interrupted := ctx.Err() != nil
	stop()
	b.cleanup()
	switch {
	case interrupted:
		fmt.Fprintln(os.Stderr, "bench: interrupted")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// defaultIters keeps each case short while giving enough samples: a case
// wakes W/R waiters per iteration.
func defaultIters(w, r int, quick bool, override int) int {
	if override > 0 {
		return override
	}
	n := 30
	switch {
	case w/r >= 1000:
		n = 10
	case w/r <= 10:
		n = 60 // cheap iterations, and few samples each
	}
	if quick {
		n = max(3, n/4)
	}
	return n
}

type bench struct {
	opt    options
	scale  scaleOptions
	dbURL  string
	schema string
	url    string // dbURL with search_path=schema

	pool   *pgxpool.Pool
	trace  *tracer
	svc    *service.Service
	srv    *httptest.Server
	client *http.Client
	pgVer  string
	pgConf string
	load0  string

	cgroups *cpuCgroups // the poll servers' CPU quotas, with -poll-cpu

	rows   []rowAt
	fa     dist            // floor A, pooled over blocks spread through the run
	faHot  dist            // floor A back to back, no idle gap before it
	fsend  dist            // store.SendMessage → bare LISTEN wake, interleaved with floor A
	fb     dist            // floor B
	fanout map[fanKey]dist // floors C (answers) and F (stream events) by waiters woken at once

	mu           sync.Mutex
	children     []*child
	extraSchemas []string // dropped with schema at the end
	// extraDatabases are dropped at the end too: the original's, for the
	// side-by-side rows (sidebyside.go).
	extraDatabases []string
	once           sync.Once
}

type row struct{ name, p50, p99, r50, r99, notes string }

// rowAt is a row built when the table is printed (so ratios can use the
// floors pooled over the whole run), in order of its section.
type rowAt struct {
	section int
	mk      func() row
}

const (
	secFloorA = iota * 10
	secFloorB
	secSend
	secFloorC
	secFloorF
	secLatency
	secThroughput
	secRunner
	secHook
	secMemory
	secSearch
	secVs
)

func (b *bench) add(section int, mk func() row) {
	b.rows = append(b.rows, rowAt{section, mk})
}

var began = time.Now()

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: %5.1fs "+format+"\n", append([]any{time.Since(began).Seconds()}, args...)...)
}

func (b *bench) run(ctx context.Context) error {
	start := time.Now()
	b.load0 = loadAvg()
	need := 0
	for _, c := range b.opt.cases {
		need = max(need, c.W)
	}
	// Ours and floor C may hold W waiters each, a socket on either side for
	// every one of them.
	need = max(2*need, b.opt.memWaiters)
	if err := raiseFileLimit(uint64(2*need + 1024)); err != nil {
		return err
	}
	if err := b.setup(ctx); err != nil {
		return err
	}
	if b.opt.search == "index" {
		if err := b.searchIndex(ctx); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		b.print(time.Since(start))
		return nil
	}
	if b.opt.search == "only" {
		if err := b.searchBench(ctx); err != nil {
			return fmt.Errorf("search: %w", err)
		}
		b.print(time.Since(start))
		return nil
	}
	if b.opt.sends == "only" {
		if err := b.throughput(ctx); err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
		if err := b.quietSends(ctx); err != nil {
			return fmt.Errorf("quiet sends: %w", err)
		}
		if err := b.sideBySide(ctx); err != nil {
			return fmt.Errorf("side by side: %w", err)
		}
		b.print(time.Since(start))
		return nil
	}
	if b.opt.hook == "only" {
		base, _, stop, err := b.startRunner(ctx)
		if err != nil {
			return fmt.Errorf("local runner: %w", err)
		}
		defer stop()
		if err := b.hookBench(ctx, base); err != nil {
			return fmt.Errorf("hook: %w", err)
		}
		b.print(time.Since(start))
		return nil
	}

	// Floor A is sampled in blocks, one before the send→wake cases and
	// one after each, so it sees the same moments of the run (and of
	// whatever else this machine is doing) as the cases it is a floor for.
	blocks := len(b.opt.cases) + 1
	floorBlock := func() error {
		fa, fs, hot, err := b.floorA(ctx, max(10, b.opt.floorA/blocks), idleGap)
		if err != nil {
			return fmt.Errorf("floor A: %w", err)
		}
		b.fa, b.fsend, b.faHot = append(b.fa, fa...), append(b.fsend, fs...), append(b.faHot, hot...)
		return nil
	}
	if err := floorBlock(); err != nil {
		return err
	}
	progress("floor A p50 %s (first block)", ms(b.fa.pct(.5)))
	b.add(secFloorA, func() row {
		return row{name: "**Floor A**: INSERT+NOTIFY → LISTEN wake (bare pgx, sequential)",
			p50: ms(b.fa.pct(.5)), p99: ms(b.fa.pct(.99)), r50: "1×", r99: "1×",
			notes: fmt.Sprintf("n=%d in %d blocks spread through the run; one statement `WITH ins AS (INSERT …) SELECT pg_notify(…)` on a dedicated conn, time from before Exec to WaitForNotification returning on a second, LISTENing conn; each sample after %s idle, as each send of ours is (back to back, right after another sample: %s p50 / %s p99)",
				len(b.fa), blocks, idleGap, ms(b.faHot.pct(.5)), ms(b.faHot.pct(.99)))}
	})
	b.add(secSend, func() row {
		return row{name: "diag: store.SendMessage → bare LISTEN wake (no HTTP, no hub)",
			p50: ms(b.fsend.pct(.5)), p99: ms(b.fsend.pct(.99)),
			r50: ratio(b.fsend.pct(.5), b.fa.pct(.5)), r99: ratio(b.fsend.pct(.99), b.fa.pct(.99)),
			notes: fmt.Sprintf("n=%d, each sample after %s idle, alternating with floor A samples, same listener conn: what our send statement (room counter UPDATE + INSERT with FK checks + NOTIFY) costs over the bare one", len(b.fsend), idleGap)}
	})

	fb, err := b.floorB(ctx, b.opt.floorB)
	if err != nil {
		return fmt.Errorf("floor B: %w", err)
	}
	b.fb = fb
	b.add(secFloorB, func() row {
		return row{name: "**Floor B**: loopback HTTP GET → `{}` (keep-alive)",
			p50: ms(b.fb.pct(.5)), p99: ms(b.fb.pct(.99)),
			r50: ratio(b.fb.pct(.5), b.fa.pct(.5)), r99: ratio(b.fb.pct(.99), b.fa.pct(.99)),
			notes: fmt.Sprintf("n=%d, each after %s idle; what HTTP alone costs; ratios vs floor A; A+B p50 = %s", len(b.fb), idleGap, ms(b.fa.pct(.5)+b.fb.pct(.5)))}
	})

	b.fanout = map[fanKey]dist{}
	for _, c := range b.opt.cases {
		if err := b.latencyCase(ctx, c); err != nil {
			return fmt.Errorf("send→wake W=%d R=%d: %w", c.W, c.R, err)
		}
		if err := floorBlock(); err != nil {
			return err
		}
	}
	if b.opt.sends == "on" {
		if err := b.throughput(ctx); err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
		if err := b.quietSends(ctx); err != nil {
			return fmt.Errorf("quiet sends: %w", err)
		}
		if err := b.sideBySide(ctx); err != nil {
			return fmt.Errorf("side by side: %w", err)
		}
	}
	if err := b.runner(ctx); err != nil {
		return fmt.Errorf("local runner: %w", err)
	}
	// The memory rows measure servers in child processes; the in-process
	// service, idle by then, only makes rooms for them.
	if err := b.memory(ctx); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	// Last: its million messages would otherwise sit under every other row.
	if b.opt.search == "on" {
		if err := b.searchBench(ctx); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	b.print(time.Since(start))
	return nil
}

// setup creates the schema, the pool, the service and its HTTP server.
func (b *bench) setup(ctx context.Context) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "bench_" + hex.EncodeToString(rnd[:])
	u, err := url.Parse(b.dbURL)
	if err != nil {
		return fmt.Errorf("parse DB_URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	// The run's backends, whose CPU the throughput rows count (cpuMeter).
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(cctx, b.dbURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", b.dbURL, err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if err := admin.QueryRow(cctx, `SELECT version()`).Scan(&b.pgVer); err != nil {
		return fmt.Errorf("select version(): %w", err)
	}
	if err := admin.QueryRow(cctx, `SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings
		WHERE name IN ('fsync', 'synchronous_commit', 'max_connections', 'shared_buffers')`).Scan(&b.pgConf); err != nil {
		return fmt.Errorf("read settings: %w", err)
	}
	if _, err := admin.Exec(cctx, `CREATE SCHEMA `+schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	b.mu.Lock()
	b.schema, b.url = schema, u.String()
	b.mu.Unlock()
	fmt.Fprintf(os.Stderr, "bench: schema %s\n", schema)

	cfg, err := pgxpool.ParseConfig(b.url)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(b.opt.maxConns)
	db.PoolLiveness(cfg) // as the service's pools: what is measured is what ships
	b.trace = &tracer{}
	cfg.ConnConfig.Tracer = b.trace
	if b.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("open pool: %w", err)
	}
	// Open every connection now, so no case pays for connecting.
	var held []*pgxpool.Conn
	for range b.opt.maxConns {
		c, err := b.pool.Acquire(cctx)
		if err != nil {
			return fmt.Errorf("warm pool: %w", err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
	if _, err := db.Migrate(cctx, b.pool, migrations.FS); err != nil {
		return err
	}
	if _, err := b.pool.Exec(cctx, `CREATE TABLE bench_floor (id bigserial PRIMARY KEY, v bigint NOT NULL)`); err != nil {
		return fmt.Errorf("create bench_floor: %w", err)
	}

	scfg, err := config.Load(b.getenv)
	if err != nil {
		return err
	}
	if b.svc, err = service.FromPool(ctx, scfg, b.pool); err != nil {
		return err
	}
	b.srv = httptest.NewServer(traceHandler(b.trace, b.svc.Handler))
	b.client = &http.Client{Transport: newTransport()}
	return nil
}

// getenv is the service's environment: ours, with the schema's URL and
// warnings only unless LOG_LEVEL says otherwise.
func (b *bench) getenv(k string) string {
	switch k {
	case "DB_URL":
		return b.url
	case "DB_SECRET_ARN", "DB_MAX_CONNS":
		return ""
	case "LOG_LEVEL":
		if v := os.Getenv(k); v != "" {
			return v
		}
		return "warn"
	}
	return os.Getenv(k)
}

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: 8192,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
	}
}

func (b *bench) stopService() {
	if b.svc != nil {
		b.svc.Drain() // parked polls answer, so the server can close
	}
	if b.srv != nil {
		b.srv.CloseClientConnections()
		b.srv.Close()
		b.srv = nil
	}
	if b.svc != nil {
		b.svc.Close()
		b.svc = nil
	}
	if b.client != nil {
		b.client.CloseIdleConnections()
	}
}

// cleanup stops everything and drops the schema; it runs once.
func (b *bench) cleanup() {
	b.once.Do(func() {
		b.mu.Lock()
		children := b.children
		schema := b.schema
		schemas := append([]string{schema}, b.extraSchemas...)
		databases := b.extraDatabases
		b.mu.Unlock()
		for _, c := range children {
			stopChild(c)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.stopService()
			if b.pool != nil {
				b.pool.Close()
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			fmt.Fprintln(os.Stderr, "bench: service did not stop within 5 s")
		}
		if schema == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, b.dbURL)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop schema %s: %v\n", schema, err)
			return
		}
		defer admin.Close(ctx)
		for _, sc := range schemas {
			if _, err := admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+sc+` CASCADE`); err != nil {
				fmt.Fprintf(os.Stderr, "bench: drop schema %s: %v\n", sc, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: dropped schema %s\n", sc)
		}
		for _, d := range databases {
			if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{d}.Sanitize()+` WITH (FORCE)`); err != nil {
				fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", d, err)
			}
		}
	})
}

func (b *bench) print(elapsed time.Duration) {
	host, _ := os.Hostname()
	fmt.Printf("## letagents-go benchmark\n\n")
	fmt.Printf("- date: %s (run took %s)\n", time.Now().Format(time.RFC3339), elapsed.Round(time.Second))
	fmt.Printf("- Go: %s %s/%s, GOMAXPROCS=%d, NumCPU=%d, host %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), host)
	fmt.Printf("- PostgreSQL: %s (%s)\n", b.pgVer, b.pgConf)
	if l := loadAvg(); l != "" {
		fmt.Printf("- load average (1/5/15 min) at start %s, at end %s: anything else running here shares the cores with client, server and database\n", b.load0, l)
	}
	fmt.Printf("- service: in process (`service.FromPool`, all groups, hub running) on an httptest loopback server; its pgxpool MaxConns=%d (made here), the hub's LISTEN connection is separate; client and server share the process and its cores\n", b.opt.maxConns)
	mode := "full"
	if b.opt.quick {
		mode = "quick"
	}
	fmt.Printf("- mode: %s; send→wake rows send with HTTP POST /rooms/{room}/messages and time each waiter from just before the POST to its answer's body being read (send→event rows: to the event's data line being read on its open stream); woken waiters re-park only after every waiter of the send has answered; each send follows ≥%s of quiet (waiting for all waiters to be parked), and the floors A, B and the send diag are sampled after the same %s of quiet\n\n", mode, idleGap, idleGap)
	fmt.Println("| measurement | p50 | p99 | ratio p50 | ratio p99 | notes |")
	fmt.Println("|---|---|---|---|---|---|")
	slices.SortStableFunc(b.rows, func(x, y rowAt) int { return x.section - y.section })
	for _, ra := range b.rows {
		r := ra.mk()
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.name, r.p50, r.p99, r.r50, r.r99, strings.ReplaceAll(r.notes, "|", "\\|"))
	}
}

var errTimeout = errors.New("timed out")

// loadAvg is /proc/loadavg's first three fields, or "" off Linux.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
