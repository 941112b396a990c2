package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"

	"github.com/letagents/letagents-go/shared/service"
)

// childEnv, when set, makes this binary a server for the memory rows:
// "ours" serves the service on the schema named by childURLEnv, "floor" a
// bare handler that holds every request until released. Either prints its
// URL on stdout, serves /__bench/mem and /__bench/stats besides, and exits
// when stdin closes (the parent closed it, or died).
const (
	childEnv      = "LETAGENTS_BENCH_SERVER"
	childURLEnv   = "LETAGENTS_BENCH_DB_URL"
	childConnsEnv = "LETAGENTS_BENCH_MAXCONNS"
)

type memStats struct {
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Goroutines int    `json:"goroutines"`
}

func (m memStats) total() uint64 { return m.HeapInuse + m.StackInuse }

type childStats struct {
	Held        int64 `json:"held"`
	Subscribers int   `json:"subscribers"`
	Channels    int   `json:"channels"`
	Listening   int   `json:"listening"`
	Acquired    int32 `json:"acquired"`
	TotalConns  int32 `json:"total_conns"`
}

func childMain(mode string) int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "bench server (%s): %v\n", mode, err)
		return 1
	}
	mux := http.NewServeMux()
	var stats func() childStats
	switch mode {
	case "ours":
		cfg, err := pgxpool.ParseConfig(os.Getenv(childURLEnv))
		if err != nil {
			return fail(err)
		}
		if n, err := strconv.Atoi(os.Getenv(childConnsEnv)); err == nil && n > 0 {
			cfg.MaxConns = int32(n)
		}
		db.PoolLiveness(cfg)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return fail(err)
		}
		scfg, err := config.Load(func(k string) string {
			switch k {
			case "DB_URL":
				return os.Getenv(childURLEnv)
			case "LOG_LEVEL":
				if v := os.Getenv(k); v != "" {
					return v
				}
				return "warn"
			case "DB_SECRET_ARN", "DB_MAX_CONNS":
				return ""
			}
			return os.Getenv(k)
		})
		if err != nil {
			return fail(err)
		}
		svc, err := service.FromPool(ctx, scfg, pool)
		if err != nil {
			return fail(err)
		}
		mux.Handle("/", svc.Handler)
		stats = func() childStats {
			st, ps := svc.Hub.Stats(), pool.Stat()
			return childStats{Subscribers: st.Subscribers, Channels: st.Channels, Listening: st.Listening,
				Acquired: ps.AcquiredConns(), TotalConns: ps.TotalConns()}
		}
	case "floor":
		var (
			mu      sync.Mutex
			release = make(chan struct{})
			held    atomic.Int64
		)
		mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			rel := release
			mu.Unlock()
			held.Add(1)
			defer held.Add(-1)
			select {
			case <-rel:
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte("{}\n"))
			case <-r.Context().Done():
			}
		})
		mux.HandleFunc("POST /__bench/release", func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			close(release)
			release = make(chan struct{})
			mu.Unlock()
			_, _ = w.Write([]byte("{}\n"))
		})
		stats = func() childStats { return childStats{Held: held.Load()} }
	default:
		return fail(fmt.Errorf("unknown mode"))
	}
	mux.HandleFunc("GET /__bench/stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(stats())
	})
	mux.HandleFunc("GET /__bench/mem", func(w http.ResponseWriter, _ *http.Request) {
		// Two GCs also empty sync.Pools (their victim caches), a third
		// makes sure nothing freed by the first two is still counted.
		for range 3 {
			runtime.GC()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		_ = json.NewEncoder(w).Encode(memStats{HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Goroutines: runtime.NumGoroutine()})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("http://" + ln.Addr().String())
	// Exit without draining or closing anything: the parent has stopped
	// its requests, and the sockets close with the process.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// child is a server process started by startChild.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	once  sync.Once
}

func (b *bench) startChild(ctx context.Context, mode string) (*child, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childURLEnv+"="+b.url, fmt.Sprintf("%s=%d", childConnsEnv, b.opt.maxConns))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &child{cmd: cmd, stdin: stdin}
	b.mu.Lock()
	b.children = append(b.children, c)
	b.mu.Unlock()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-line:
		if !strings.HasPrefix(u, "http://") {
			stopChild(c)
			return nil, "", fmt.Errorf("server child (%s) did not start", mode)
		}
		return c, u, nil
	case <-time.After(30 * time.Second):
		stopChild(c)
		return nil, "", fmt.Errorf("server child (%s) silent for 30 s: %w", mode, errTimeout)
	case <-ctx.Done():
		stopChild(c)
		return nil, "", ctx.Err()
	}
}

// stopChild closes the child's stdin, which ends it, and kills it if it
// has not gone within 3 s.
func stopChild(c *child) {
	c.once.Do(func() {
		_ = c.stdin.Close()
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
	})
}

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := readAll(resp)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

type memResult struct {
	before, after           memStats
	connsBefore, connsAfter int32
	w                       int
}

func (r memResult) perWaiter() float64 {
	return (float64(r.after.total()) - float64(r.before.total())) / float64(r.w)
}

// memoryRun measures a child server's heap+stack before and after w
// requests are parked on it (with stream, w event streams open), after a
// warm-up that parks and wakes a fifth as many (so the pool, buffers and
// code paths are warm in both snapshots).
func (b *bench) memoryRun(ctx context.Context, mode string, w int, stream bool) (memResult, error) {
	res := memResult{w: w}
	c, base, err := b.startChild(ctx, mode)
	if err != nil {
		return res, err
	}
	defer stopChild(c)
	ctlTr, tr := newTransport(), newTransport()
	defer ctlTr.CloseIdleConnections()
	defer tr.CloseIdleConnections()
	ctl := &http.Client{Transport: ctlTr, Timeout: 30 * time.Second}
	client := &http.Client{Transport: tr}

	room := "bench-room-mem"
	if stream {
		room = "bench-room-mem-stream"
	}
	var cursor int64
	if mode == "ours" {
		r, _, err := b.svc.Store.EnsureRoom(ctx, room)
		if err != nil {
			return res, err
		}
		cursor = r.LastSeq
	}
	mk := func(int) pollFunc {
		switch {
		case mode == "ours" && stream:
			return streamRoom(client, base, room, cursor)
		case mode == "ours":
			return pollRoom(client, base, room, cursor, nil)
		}
		return pollBare(client, base+"/hold")
	}
	parked := func(n int) func() (bool, string, error) {
		return func() (bool, string, error) {
			var st childStats
			if err := getJSON(ctx, ctl, base+"/__bench/stats", &st); err != nil {
				return false, "", err
			}
			if mode == "ours" {
				subs := subsPerWaiter * n
				return st.Subscribers == subs && st.Listening == st.Channels && st.Acquired == 0,
					fmt.Sprintf("%d/%d subscribers", st.Subscribers, subs), nil
			}
			return st.Held == int64(n), fmt.Sprintf("%d/%d held", st.Held, n), nil
		}
	}
	conns := func() int32 {
		var st childStats
		_ = getJSON(ctx, ctl, base+"/__bench/stats", &st)
		return st.TotalConns
	}

	// Warm-up: park, wake, leave.
	warm := max(1, w/5)
	cr := startCrowd(ctx, warm, mk)
	if err := waitFor(ctx, "warm-up parked", time.Minute, parked(warm)); err != nil {
		cr.stop()
		return res, err
	}
	t0 := time.Now()
	if mode == "ours" {
		err = send(ctx, ctl, base, room, "warm-up")
		cursor++
	} else {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/__bench/release", nil)
		var resp *http.Response
		if resp, err = ctl.Do(req); err == nil {
			_, err = readAll(resp)
		}
	}
	if err == nil {
		_, _, err = cr.collect(ctx, warm, t0, iterationTimeout)
	}
	cr.stop()
	tr.CloseIdleConnections()
	if err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	if err := waitFor(ctx, "warm-up gone", time.Minute, parked(0)); err != nil {
		return res, err
	}

	res.connsBefore = conns()
	if err := getJSON(ctx, ctl, base+"/__bench/mem", &res.before); err != nil {
		return res, err
	}
	cr = startCrowd(ctx, w, mk)
	defer cr.stop()
	if err := waitFor(ctx, "all parked", time.Minute, parked(w)); err != nil {
		return res, err
	}
	if err := getJSON(ctx, ctl, base+"/__bench/mem", &res.after); err != nil {
		return res, err
	}
	res.connsAfter = conns()
	return res, nil
}

func (b *bench) memory(ctx context.Context) error {
	w := b.opt.memWaiters
	floor, err := b.memoryRun(ctx, "floor", w, false)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	progress("memory: floor %s, ours pending", kb(floor.perWaiter()))
	b.add(secMemory, func() row {
		return row{name: "**Floor E**: server memory per parked bare net/http request",
			p50: kb(floor.perWaiter()), p99: "—", r50: "1×", r99: "—",
			notes: fmt.Sprintf("p50 column is (after − before) / W, heap in use + stacks, in a child server process; W=%d requests held on `<-r.Context().Done()`; %s",
				w, memNotes(floor))}
	})

	ours, err := b.memoryRun(ctx, "ours", w, false)
	if err != nil {
		return fmt.Errorf("ours: %w", err)
	}
	progress("memory: ours %s", kb(ours.perWaiter()))
	b.add(secMemory, func() row {
		return row{name: "Ours: server memory per parked long-poll",
			p50: kb(ours.perWaiter()), p99: "—", r50: ratioF(ours.perWaiter(), floor.perWaiter()), r99: "—",
			notes: fmt.Sprintf("target ≤ 35 KB; p50 column is (after − before) / W, ratio = ours / floor E; the service (`service.FromPool`, pool MaxConns %d) alone in a child server process, W=%d long-polls parked in one room (timeout 60000); %s; pool conns %d before, %d after",
				b.opt.maxConns, w, memNotes(ours), ours.connsBefore, ours.connsAfter)}
	})
	if !b.opt.streams {
		return nil
	}
	streams, err := b.memoryRun(ctx, "ours", w, true)
	if err != nil {
		return fmt.Errorf("ours, streams: %w", err)
	}
	progress("memory: ours, streams %s", kb(streams.perWaiter()))
	b.add(secMemory, func() row {
		return row{name: "Ours: server memory per open event stream",
			p50: kb(streams.perWaiter()), p99: "—", r50: ratioF(streams.perWaiter(), floor.perWaiter()), r99: "—",
			notes: fmt.Sprintf("target ≤ 35 KB, like a parked long-poll; as the row above, with W=%d event streams open in one room, each subscribed to its room's log and its access channel; %s; pool conns %d before, %d after",
				w, memNotes(streams), streams.connsBefore, streams.connsAfter)}
	})
	return nil
}

func kb(bytes float64) string { return fmt.Sprintf("%.1f KB", bytes/1024) }

func memNotes(r memResult) string {
	return fmt.Sprintf("heap %.1f→%.1f MB, stacks %.1f→%.1f MB, goroutines %d→%d (%.1f per waiter)",
		float64(r.before.HeapInuse)/(1<<20), float64(r.after.HeapInuse)/(1<<20),
		float64(r.before.StackInuse)/(1<<20), float64(r.after.StackInuse)/(1<<20),
		r.before.Goroutines, r.after.Goroutines, float64(r.after.Goroutines-r.before.Goroutines)/float64(r.w))
}
