package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// scaleOptions size the scale run (make scale): several poll server
// processes (./functions/poll, built once) on one database, holding W
// parked long-polls and open streams over R rooms.
type scaleOptions struct {
	procs, waiters, rooms, senders int
	streamShare                    float64
	rate                           float64 // sends per second; 0 is waiters/60 (each agent 1 a minute)
	dur                            time.Duration
	ramp                           []int
	maxP99                         time.Duration
	dbConns                        int
	cpu                            float64 // each poll server's CPU quota, in CPUs; 0 is none
	gomaxprocs                     int     // each poll server's GOMAXPROCS; 0 is the runtime's default
}

// check refuses options a run cannot honour, naming the flag: a
// negative quota, GOMAXPROCS or rate was once taken as none, and a run
// then measured something other than what was asked.
func (o scaleOptions) check() error {
	switch {
	case o.procs < 2:
		return errors.New("-procs: want 2 or more (one is killed, the others take its clients)")
	case o.rooms < 1:
		return errors.New("-scale-rooms: want 1 or more")
	case o.waiters < o.rooms:
		return errors.New("-scale-waiters: want at least -scale-rooms, a waiter in every room")
	case o.streamShare < 0 || o.streamShare > 1:
		return errors.New("-stream-share: want 0 to 1")
	case o.senders < 1:
		return errors.New("-scale-senders: want 1 or more")
	case o.rate < 0:
		return errors.New("-send-rate: want 0 (one a minute for each waiter) or more")
	case o.dur <= 0:
		return errors.New("-send-dur: want a positive duration")
	case o.maxP99 <= 0:
		return errors.New("-max-p99: want a positive duration")
	case o.dbConns < 1:
		return errors.New("-db-conns: want 1 or more")
	case o.cpu < 0:
		return errors.New("-poll-cpu: want 0 (no quota) or more")
	case o.gomaxprocs < 0:
		return errors.New("-poll-gomaxprocs: want 0 (the runtime's default) or more")
	}
	return nil
}

// pollProc is one poll server process.
type pollProc struct {
	name   string
	url    string
	cgroup string // its cgroup's directory, with -poll-cpu
	cmd    *exec.Cmd
	dead   atomic.Bool
	done   chan struct{}
}

// scaleWaiter is one client: a long-poll loop or an event stream on a room,
// following its cursor and moving to another process when its own fails.
type scaleWaiter struct {
	room   int
	stream bool
	proc   atomic.Int32 // index of the process it is on
	parked atomic.Bool  // poll: request written; stream: 200 read
	cursor int64        // only its goroutine touches it
	got    atomic.Int64
	gaps   atomic.Int64 // a message id other than cursor+1
	moves  atomic.Int64
	// leaving is set while it must move off process 0, about to be
	// killed; movedParked is when it was first parked elsewhere then
	// (unix ns).
	leaving     atomic.Bool
	movedParked atomic.Int64
	// client is its own, as each agent's process has its own: with one
	// transport for all 10,000, the 3,334 dials of a kill's moved clients
	// queued on that transport's one lock (net/http's connsPerHostMu),
	// 1 s a dial in a run's execution trace, a queue no deployment's
	// clients share.
	client *http.Client
}

// park marks w parked (a poll's request written, a stream's 200 read).
func (w *scaleWaiter) park() {
	w.parked.Store(true)
	if w.leaving.Load() && w.proc.Load() != 0 && w.leaving.CompareAndSwap(true, false) {
		w.movedParked.Store(time.Now().UnixNano())
	}
}

// scaleRun is one arrangement of processes and waiters.
type scaleRun struct {
	b       *bench
	procs   []*pollProc
	rooms   []string
	waiters []*scaleWaiter
	rr      atomic.Uint64

	mu     sync.Mutex
	sentAt [][]time.Time // by room, by seq-1
	lat    dist
	record atomic.Bool
}

func (s *scaleRun) roomName(i int) string { return s.rooms[i] }

// buildPoll builds the poll server once.
func buildPoll(ctx context.Context) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "letagents-scale-")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "poll")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/letagents/letagents-go/functions/poll").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build ./functions/poll: %w\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// freePort asks the kernel for a loopback port nobody holds.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// startPoll starts the poll binary on a free port, its connections named
// name in pg_stat_activity, and waits for its /ready.
func (b *bench) startPoll(ctx context.Context, bin, name string) (*pollProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(b.url)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	cmd := exec.Command(bin)
	var cgroup string
	if b.cgroups != nil {
		if cgroup, err = b.cgroups.leaf(name); err != nil {
			return nil, err
		}
		// The server starts in its cgroup, as in a container, so that
		// Go's runtime sets its GOMAXPROCS from the quota.
		cmd = exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2"`, "sh", cgroup, bin)
	}
	cmd.Env = append(os.Environ(), "PORT="+port, "DB_URL="+u.String(), "DB_SECRET_ARN=", "AWS_LAMBDA_RUNTIME_API=",
		fmt.Sprintf("DB_MAX_CONNS=%d", b.scale.dbConns), "LOG_LEVEL=warn",
		"LETAGENTS_STREAM_MAX=1000000", "LETAGENTS_STREAM_ROOM_MAX=1000000")
	if n := b.scale.gomaxprocs; n > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOMAXPROCS=%d", n))
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &pollProc{name: name, url: "http://127.0.0.1:" + port, cgroup: cgroup, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	ctl := &http.Client{Timeout: 2 * time.Second}
	err = waitFor(ctx, name+" ready", time.Minute, func() (bool, string, error) {
		select {
		case <-p.done:
			return false, "", fmt.Errorf("%s exited", name)
		default:
		}
		resp, err := ctl.Get(p.url + "/ready")
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// stop ends the process with SIGTERM (its waiters are answered), SIGKILL
// after 10 s.
func (p *pollProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// throttling starts counting how the run's servers were held to their
// CPU quotas (-poll-cpu); what it returns says how much since, as a note's
// last clause ("" without quotas).
func (s *scaleRun) throttling() func() string {
	if s.procs[0].cgroup == "" {
		return func() string { return "" }
	}
	read := func() (t throttling, err error) {
		for _, p := range s.procs {
			pt, err := readThrottling(p.cgroup)
			if err != nil {
				return t, err
			}
			t = t.add(pt)
		}
		return t, nil
	}
	before, err := read()
	return func() string {
		after, err2 := read()
		if err != nil || err2 != nil {
			return "; quotas: " + errors.Join(err, err2).Error()
		}
		return "; the servers under their quotas: " + after.sub(before).String()
	}
}

// rss is the process's resident memory in bytes (Linux), 0 elsewhere.
func (p *pollProc) rss() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kbs, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kbs * 1024
		}
	}
	return 0
}

// pick is the process a waiter on p should use: p while it lives, else
// the next live one, round-robin.
// dial is the clients' dialer. As a load balancer would, it sends nobody
// to a process known dead: net/http retries a parked GET whose connection
// broke on a new connection to the same address, and on loopback about
// one such SYN in ten lands on a pair of ports the dead server left in
// TIME_WAIT, whose answer (an ACK, not a refusal) makes the dial wait out
// the 1 s SYN retransmission: 300 of 3,334 moved clients in a run
// (TcpExtTCPSynRetrans; kfree_skb TCP_INVALID_ACK_SEQUENCE), each then a
// second late to park again.
func (s *scaleRun) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	for _, p := range s.procs {
		if p.dead.Load() && strings.TrimPrefix(p.url, "http://") == addr {
			return nil, fmt.Errorf("dial %s: %s is dead", addr, p.name)
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func (s *scaleRun) pick(p int) int {
	if !s.procs[p].dead.Load() {
		return p
	}
	for {
		i := int(s.rr.Add(1) % uint64(len(s.procs)))
		if !s.procs[i].dead.Load() {
			return i
		}
	}
}

// received records message seq on w, and its send→wake time.
func (s *scaleRun) received(w *scaleWaiter, seq int64, at time.Time) {
	if seq != w.cursor+1 {
		w.gaps.Add(1)
	}
	w.cursor = max(w.cursor, seq)
	w.got.Add(1)
	if !s.record.Load() {
		return
	}
	s.mu.Lock()
	if sent := s.sentAt[w.room]; int(seq) <= len(sent) && !sent[seq-1].IsZero() {
		s.lat = append(s.lat, at.Sub(sent[seq-1]))
	}
	s.mu.Unlock()
}

// run keeps w parked until ctx ends, moving to another process on failure.
func (s *scaleRun) run(ctx context.Context, w *scaleWaiter) {
	for ctx.Err() == nil {
		p := s.pick(int(w.proc.Load()))
		w.proc.Store(int32(p))
		var err error
		if w.stream {
			err = s.streamOnce(ctx, w, s.procs[p].url)
		} else {
			err = s.pollOnce(ctx, w, s.procs[p].url)
		}
		w.parked.Store(false)
		if err != nil && ctx.Err() == nil {
			if !s.procs[p].dead.Load() {
				// A live server failed the request: leave it a moment (a
				// slow machine), and try again there.
				_ = sleepCtx(ctx, 100*time.Millisecond)
			} else {
				w.moves.Add(1)
			}
		}
	}
}

func (s *scaleRun) pollOnce(ctx context.Context, w *scaleWaiter, base string) error {
	u := fmt.Sprintf("%s/rooms/%s/messages/poll?after=%s&timeout=60000", base, url.PathEscape(s.roomName(w.room)), letagents.MessageID(w.cursor))
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { w.park() }})
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	body, err := readAll(resp)
	at := time.Now()
	if err != nil {
		return err
	}
	var page struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return err
	}
	for _, m := range page.Messages {
		seq, err := letagents.ParseMessageID(m.ID)
		if err != nil {
			return err
		}
		s.received(w, seq, at)
	}
	return nil
}

// streamOnce opens a stream after the cursor and reads message events
// (those with an id and data) until it ends.
func (s *scaleRun) streamOnce(ctx context.Context, w *scaleWaiter, base string) error {
	u := fmt.Sprintf("%s/rooms/%s/messages/stream?after=%s", base, url.PathEscape(s.roomName(w.room)), letagents.MessageID(w.cursor))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("stream: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	w.park()
	br := bufio.NewReader(resp.Body)
	var id string
	data := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if id != "" && data {
				seq, err := letagents.ParseMessageID(id)
				if err != nil {
					return err
				}
				s.received(w, seq, time.Now())
			}
			id, data = "", false
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data = true
		}
	}
}

func (s *scaleRun) parkedCount() (n int) {
	for _, w := range s.waiters {
		if w.parked.Load() {
			n++
		}
	}
	return n
}

// waitParked waits until every waiter has its request on a live process.
func (s *scaleRun) waitParked(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, "all parked", timeout, func() (bool, string, error) {
		n := s.parkedCount()
		for _, w := range s.waiters {
			if s.procs[w.proc.Load()].dead.Load() {
				return false, fmt.Sprintf("%d/%d parked, some on the dead process", n, len(s.waiters)), nil
			}
		}
		return n == len(s.waiters), fmt.Sprintf("%d/%d parked", n, len(s.waiters)), nil
	})
}

// send sends messages into the rooms for dur at rate per second from the
// senders, each owning every senders-th room, so a room's sends are one
// at a time and each one's seq is known before it is sent.
//
// The sends arrive as independent agents' do, at random (arrivals): with
// a ticker each, started together, the senders sent in lockstep (at the
// defaults 16 messages at one instant, then none for 96 ms), and the
// tail measured that burst rather than the rate.
func (s *scaleRun) send(ctx context.Context, dur time.Duration, rate float64, senders int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	senders = min(senders, len(s.rooms))
	every := time.Duration(float64(time.Second) * float64(senders) / rate)
	var (
		wg    sync.WaitGroup
		sent  atomic.Int64
		first error
		once  sync.Once
	)
	start := time.Now()
	for k := range senders {
		wg.Go(func() {
			next := arrivals(start, every, rand.ExpFloat64)
			t := time.NewTimer(time.Until(next()))
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				t.Reset(time.Until(next()))
				r := k + senders*rand.IntN((len(s.rooms)-k+senders-1)/senders)
				s.mu.Lock()
				s.sentAt[r] = append(s.sentAt[r], time.Now())
				seq := int64(len(s.sentAt[r]))
				s.mu.Unlock()
				m, _, err := s.b.svc.Store.SendMessage(context.WithoutCancel(ctx), letagents.NewMessage{RoomID: s.rooms[r], Sender: "scale", Text: "scale"})
				if err == nil && m.Seq != seq {
					err = fmt.Errorf("room %s: sent seq %d, expected %d (is anything else sending there?)", s.rooms[r], m.Seq, seq)
				}
				if err != nil {
					once.Do(func() { first = err })
					cancel()
					return
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	return int(sent.Load()), first
}

// arrivals returns the times of a Poisson process of mean gap every from
// start, one a call, drawn with exp (rand.ExpFloat64: exponential, mean
// 1). Each time follows the one before it, not the send before it, so a
// slow send delays the next but not the rate; one already due is sent at
// once.
func arrivals(start time.Time, every time.Duration, exp func() float64) func() time.Time {
	at := start
	return func() time.Time {
		at = at.Add(time.Duration(exp() * float64(every)))
		return at
	}
}

// waitDelivered waits until every waiter has every message sent to its
// room, and reports waiters with a gap or a message short.
func (s *scaleRun) waitDelivered(ctx context.Context, timeout time.Duration) (lost, gaps int, err error) {
	s.mu.Lock()
	want := make([]int64, len(s.rooms))
	for r := range want {
		want[r] = int64(len(s.sentAt[r]))
	}
	s.mu.Unlock()
	short := func() int {
		n := 0
		for _, w := range s.waiters {
			if w.got.Load() < want[w.room] {
				n++
			}
		}
		return n
	}
	err = waitFor(ctx, "every message delivered", timeout, func() (bool, string, error) {
		n := short()
		return n == 0, fmt.Sprintf("%d waiters short", n), nil
	})
	for _, w := range s.waiters {
		if w.gaps.Load() > 0 {
			gaps++
		}
	}
	if errors.Is(err, errTimeout) {
		return short(), gaps, nil
	}
	return 0, gaps, err
}

// setupScale starts n processes and w waiters over r rooms (streams a
// share of them), spread over the processes round-robin; mem is each
// process's resident memory before, with the polls parked, and with the
// streams open too.
func (b *bench) setupScale(ctx context.Context, bin string, n, w, r int) (*scaleRun, [][3]float64, func(), error) {
	s := &scaleRun{b: b, sentAt: make([][]time.Time, r)}
	var wg sync.WaitGroup
	wctx, cancel := context.WithCancel(ctx)
	cleanup := func() {
		cancel()
		for _, p := range s.procs {
			if !p.dead.Load() {
				p.stop()
			}
		}
		wg.Wait()
		for _, sw := range s.waiters {
			sw.client.CloseIdleConnections()
		}
	}
	prefix := fmt.Sprintf("scale-%d-", time.Now().UnixNano())
	for i := range r {
		s.rooms = append(s.rooms, prefix+strconv.Itoa(i))
		if _, _, err := b.svc.Store.EnsureRoom(ctx, s.rooms[i]); err != nil {
			return nil, nil, cleanup, err
		}
	}
	for i := range n {
		p, err := b.startPoll(ctx, bin, fmt.Sprintf("scale-poll-%d", i))
		if err != nil {
			return nil, nil, cleanup, err
		}
		s.procs = append(s.procs, p)
	}
	mem := make([][3]float64, n)
	snap := func(k int) {
		for i, p := range s.procs {
			mem[i][k] = p.rss()
		}
	}
	snap(0)
	streams := int(float64(w) * b.scale.streamShare)
	start := func(from, to int, stream bool) error {
		for i := from; i < to; i++ {
			tr := newTransport()
			tr.DialContext = s.dial
			sw := &scaleWaiter{room: i % r, stream: stream, client: &http.Client{Transport: tr}}
			sw.proc.Store(int32(i % n))
			s.waiters = append(s.waiters, sw)
			wg.Go(func() { s.run(wctx, sw) })
		}
		return s.waitParked(ctx, 5*time.Minute)
	}
	if err := start(0, w-streams, false); err != nil {
		return nil, nil, cleanup, err
	}
	snap(1)
	if err := start(w-streams, w, true); err != nil {
		return nil, nil, cleanup, err
	}
	// A stream counts as parked on its 200, which comes before its first
	// read: the sends start once the processes are done with those reads,
	// not with them queued ahead of the first wakes.
	if err := s.waitQuiet(ctx, 5*time.Minute); err != nil {
		return nil, nil, cleanup, err
	}
	snap(2)
	return s, mem, cleanup, nil
}

// dbSample is what pg_stat_activity says of the poll processes'
// connections, and the NOTIFY queue's use.
type dbSample struct {
	conns, busy map[string]int
	queue       float64
}

func (b *bench) sampleDB(ctx context.Context) (dbSample, error) {
	d := dbSample{conns: map[string]int{}, busy: map[string]int{}}
	rows, err := b.pool.Query(ctx, `SELECT application_name, count(*), count(*) FILTER (WHERE state <> 'idle')
		FROM pg_stat_activity WHERE application_name LIKE 'scale-poll-%' GROUP BY 1`)
	if err != nil {
		return d, err
	}
	for rows.Next() {
		var name string
		var c, busy int
		if err := rows.Scan(&name, &c, &busy); err != nil {
			return d, err
		}
		d.conns[name], d.busy[name] = c, busy
	}
	if err := rows.Err(); err != nil {
		return d, err
	}
	err = b.pool.QueryRow(ctx, `SELECT pg_notification_queue_usage()`).Scan(&d.queue)
	return d, err
}

// waitQuiet waits until the poll processes are done with what parking
// gave them: no connection of theirs running a statement, and each
// spending under a tenth of a core (as waitFor takes it: in three looks
// in a row, each over 100 ms).
func (s *scaleRun) waitQuiet(ctx context.Context, timeout time.Duration) error {
	const look = 100 * time.Millisecond
	return waitFor(ctx, "the poll processes quiet", timeout, func() (bool, string, error) {
		d, err := s.b.sampleDB(ctx)
		if err != nil {
			return false, "", err
		}
		busy := 0
		for _, n := range d.busy {
			busy += n
		}
		before := make([]time.Duration, len(s.procs))
		for i, p := range s.procs {
			if before[i], err = procCPU(p.cmd.Process.Pid); err != nil {
				return false, "", err
			}
		}
		if err := sleepCtx(ctx, look); err != nil {
			return false, "", err
		}
		var most time.Duration
		for i, p := range s.procs {
			now, err := procCPU(p.cmd.Process.Pid)
			if err != nil {
				return false, "", err
			}
			most = max(most, now-before[i])
		}
		return busy == 0 && most < look/10, fmt.Sprintf("%d connections busy, a process spent %s of CPU in %s", busy, most, look), nil
	})
}

// sampleWhile samples the database every 250 ms until stop is closed,
// keeping the most seen of each figure.
func (b *bench) sampleWhile(ctx context.Context, stop <-chan struct{}) <-chan dbSample {
	out := make(chan dbSample, 1)
	go func() {
		most := dbSample{conns: map[string]int{}, busy: map[string]int{}}
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if d, err := b.sampleDB(ctx); err == nil {
				for k, v := range d.conns {
					most.conns[k] = max(most.conns[k], v)
				}
				for k, v := range d.busy {
					most.busy[k] = max(most.busy[k], v)
				}
				most.queue = max(most.queue, d.queue)
			}
			select {
			case <-stop:
				out <- most
				return
			case <-ctx.Done():
				out <- most
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// measureSends sends for dur and returns the send→wake times, the sends
// and the database's most.
func (s *scaleRun) measureSends(ctx context.Context, dur time.Duration, rate float64, senders int) (dist, int, dbSample, error) {
	s.mu.Lock()
	s.lat = s.lat[:0]
	s.mu.Unlock()
	s.record.Store(true)
	stop := make(chan struct{})
	most := s.b.sampleWhile(ctx, stop)
	n, err := s.send(ctx, dur, rate, senders)
	if err == nil {
		var lost int
		lost, _, err = s.waitDelivered(ctx, time.Minute)
		if err == nil && lost > 0 {
			err = fmt.Errorf("%d waiters did not get every message within a minute", lost)
		}
	}
	close(stop)
	d := <-most
	s.record.Store(false)
	s.mu.Lock()
	lat := append(dist(nil), s.lat...)
	s.mu.Unlock()
	return lat, n, d, err
}

func (o scaleOptions) sendRate(w int) float64 {
	if o.rate > 0 {
		return o.rate
	}
	return max(1, float64(w)/60)
}

// runScale is make scale: floors A and B, then the processes together,
// the kill of one, and one process alone, ramped.
func (b *bench) runScale(ctx context.Context) error {
	start := time.Now()
	b.load0 = loadAvg()
	o := b.scale
	most := max(o.waiters, slicesMax(o.ramp))
	if err := raiseFileLimit(uint64(most + 2048)); err != nil {
		return err
	}
	if err := b.setup(ctx); err != nil {
		return err
	}
	bin, rm, err := buildPoll(ctx)
	if err != nil {
		return err
	}
	defer rm()
	if o.cpu > 0 {
		if b.cgroups, err = newCPUCgroups(cgroupRoots, fmt.Sprintf("letagents-scale-%d", os.Getpid()), o.cpu); err != nil {
			return err
		}
		defer b.cgroups.remove() // after every server has stopped
	}
	floors := func() error {
		fa, _, _, err := b.floorA(ctx, max(20, b.opt.floorA/4), idleGap)
		b.fa = append(b.fa, fa...)
		return err
	}
	if err := floors(); err != nil {
		return fmt.Errorf("floor A: %w", err)
	}
	if b.fb, err = b.floorB(ctx, b.opt.floorB/2); err != nil {
		return fmt.Errorf("floor B: %w", err)
	}
	progress("floors: A p50 %s, B p50 %s", ms(b.fa.pct(.5)), ms(b.fb.pct(.5)))

	var rows [][]string
	add := func(cells ...string) { rows = append(rows, cells) }
	latRow := func(name string, d dist, notes string) {
		add(name, ms(d.pct(.5)), ms(d.pct(.99)), ratio(d.pct(.5), b.fa.pct(.5)), ratio(d.pct(.99), b.fa.pct(.99)), notes)
	}

	// Several processes together.
	s, mem, cleanup, err := b.setupScale(ctx, bin, o.procs, o.waiters, o.rooms)
	if err != nil {
		cleanup()
		return fmt.Errorf("%d processes: %w", o.procs, err)
	}
	streams := int(float64(o.waiters) * o.streamShare)
	polls := o.waiters - streams
	progress("%d processes: %d polls and %d streams parked over %d rooms", o.procs, polls, streams, o.rooms)
	rate := o.sendRate(o.waiters)
	th := s.throttling()
	lat, sent, db, err := s.measureSends(ctx, o.dur, rate, o.senders)
	if err != nil {
		cleanup()
		return fmt.Errorf("%d processes, sends: %w", o.procs, err)
	}
	progress("%d processes: %d sends, send→wake p50 %s p99 %s", o.procs, sent, ms(lat.pct(.5)), ms(lat.pct(.99)))
	latRow(fmt.Sprintf("%d processes: send→wake, %d polls + %d streams over %d rooms", o.procs, polls, streams, o.rooms), lat,
		fmt.Sprintf("%d sends in %s (%.0f/s target, %d senders, store.SendMessage in the bench process) → %d wakes timed to the answer's body / the event's data line; ratios vs floor A%s", sent, o.dur, rate, o.senders, len(lat), th()))
	for i, p := range s.procs {
		var np, ns int
		for _, w := range s.waiters {
			if int(w.proc.Load()) == i {
				if w.stream {
					ns++
				} else {
					np++
				}
			}
		}
		add(p.name+": memory", kb((mem[i][1]-mem[i][0])/float64(max(np, 1)))+" / poll", kb((mem[i][2]-mem[i][1])/float64(max(ns, 1)))+" / stream", "—", "—",
			fmt.Sprintf("RSS %.1f → %.1f MB (%d polls) → %.1f MB (+%d streams), not GCed first; DB conns at most %d (%d busy) during the sends",
				mem[i][0]/(1<<20), mem[i][1]/(1<<20), np, mem[i][2]/(1<<20), ns, db.conns[p.name], db.busy[p.name]))
	}
	add("pg_notification_queue_usage()", fmt.Sprintf("%.6f", db.queue), "—", "—", "—", "the most seen, sampled every 250 ms during the sends")

	// Kill one: its clients move round-robin to the others, the sends go on.
	victim := s.procs[0] // scaleWaiter.leaving says it is process 0
	var moving []*scaleWaiter
	for _, w := range s.waiters {
		if w.proc.Load() == 0 {
			moving = append(moving, w)
			w.leaving.Store(true)
		}
	}
	on := len(moving)
	th = s.throttling()
	s.record.Store(true)
	s.mu.Lock()
	s.lat = s.lat[:0]
	s.mu.Unlock()
	sendDone := make(chan error, 1)
	var killSent int
	go func() {
		var err error
		killSent, err = s.send(ctx, o.dur, rate, o.senders)
		sendDone <- err
	}()
	if err := sleepCtx(ctx, o.dur/4); err != nil {
		cleanup()
		return err
	}
	t0 := time.Now()
	victim.dead.Store(true)
	_ = victim.cmd.Process.Kill()
	<-victim.done
	// Its clients' own re-park, not a moment when all 10,000 are parked
	// at once: with the sends going on, some poll elsewhere is always
	// between an answer and its next request.
	var last int64
	err = waitFor(ctx, "the dead process's clients parked again", 5*time.Minute, func() (bool, string, error) {
		n := 0
		for _, w := range moving {
			if at := w.movedParked.Load(); at != 0 {
				n++
				last = max(last, at)
			}
		}
		return n == on, fmt.Sprintf("%d/%d parked again", n, on), nil
	})
	reparked := time.Unix(0, last).Sub(t0)
	var pollsBack, streamsBack dist
	for _, w := range moving {
		if d := time.Unix(0, w.movedParked.Load()).Sub(t0); w.stream {
			streamsBack = append(streamsBack, d)
		} else {
			pollsBack = append(pollsBack, d)
		}
	}
	if err == nil {
		err = <-sendDone
	}
	var lost, gaps int
	if err == nil {
		lost, gaps, err = s.waitDelivered(ctx, 2*time.Minute)
	}
	s.record.Store(false)
	if err != nil {
		cleanup()
		return fmt.Errorf("kill: %w", err)
	}
	var moves int64
	for _, w := range s.waiters {
		moves += w.moves.Load()
	}
	s.mu.Lock()
	klat := append(dist(nil), s.lat...)
	s.mu.Unlock()
	progress("kill: %d clients moved, each parked again within %s (p50 polls %s, streams %s), %d waiters short, %d with a gap",
		on, reparked, ms(pollsBack.pct(.5)), ms(streamsBack.pct(.5)), lost, gaps)
	add(fmt.Sprintf("SIGKILL %s: time until its %d clients are all parked again", victim.name, on), ms(reparked), "—", "—", "—",
		fmt.Sprintf("its %d clients reconnected round-robin to the others (%d moves) and resumed from their cursors, each timed to its first park on another (p50 polls %s, streams %s); %d sends went on through it; waiters missing a message: %d, with a gap or repeat: %d (every waiter checked by id against every send to its room); parked = request written (polls) or stream's 200 read%s", on, moves, ms(pollsBack.pct(.5)), ms(streamsBack.pct(.5)), killSent, lost, gaps, th()))
	latRow("… send→wake across the kill", klat, "every wake of the sends around the kill, including the messages the moved clients picked up on resuming")
	cleanup()

	// One process alone, ramped until p99 passes maxP99.
	best := 0
	for _, n := range o.ramp {
		r := max(1, n/max(1, o.waiters/o.rooms))
		s, mem, cleanup, err := b.setupScale(ctx, bin, 1, n, r)
		if err != nil {
			cleanup()
			add(fmt.Sprintf("1 process, %d waiters", n), "—", "—", "—", "—", "failed to park: "+err.Error())
			break
		}
		rate := o.sendRate(n)
		th := s.throttling()
		lat, sent, db, err := s.measureSends(ctx, o.dur, rate, o.senders)
		cleanup()
		if err != nil {
			add(fmt.Sprintf("1 process, %d waiters", n), "—", "—", "—", "—", "failed: "+err.Error())
			break
		}
		st := int(float64(n) * o.streamShare)
		progress("1 process, %d waiters: p99 %s", n, ms(lat.pct(.99)))
		latRow(fmt.Sprintf("1 process: send→wake, %d polls + %d streams over %d rooms", n-st, st, r), lat,
			fmt.Sprintf("%d sends (%.0f/s); RSS %.0f MB with all parked; DB conns at most %d; queue usage at most %.6f%s", sent, rate, mem[0][2]/(1<<20), db.conns["scale-poll-0"], db.queue, th()))
		if lat.pct(.99) > o.maxP99 {
			break
		}
		best = n
	}
	note := fmt.Sprintf("steps %v; 0 = none", o.ramp)
	if len(o.ramp) > 0 && best == o.ramp[len(o.ramp)-1] {
		note += "; p99 stayed under at the last step, so the most is at least this (raise -ramp, within the open files limit: client and server each hold one socket per waiter)"
	}
	add("1 process: most waiters with p99 send→wake < "+ms(o.maxP99), strconv.Itoa(best), "—", "—", "—", note)
	if err := floors(); err != nil {
		return fmt.Errorf("floor A: %w", err)
	}
	b.printScale(time.Since(start), rows)
	return nil
}

// pollLimits says how the poll servers were held, as a clause of the
// report's header ("" as they ship, without a quota or GOMAXPROCS).
func (b *bench) pollLimits() string {
	var out string
	if c := b.cgroups; c != nil {
		v := "v1"
		if c.v2 {
			v = "v2"
		}
		out += fmt.Sprintf(", each in a cgroup (%s) of its own with a CPU quota of %g CPU", v, b.scale.cpu)
	}
	if n := b.scale.gomaxprocs; n > 0 {
		out += fmt.Sprintf(", GOMAXPROCS=%d", n)
	}
	return out
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func (b *bench) printScale(elapsed time.Duration, rows [][]string) {
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	o := b.scale
	fmt.Printf("## letagents-go scale run\n\n")
	fmt.Printf("- date: %s (run took %s); %d cores (GOMAXPROCS %d) shared by client, servers and database; open files limit %d (hard %d)\n",
		time.Now().Format(time.RFC3339), elapsed.Round(time.Second), runtime.NumCPU(), runtime.GOMAXPROCS(0), lim.Cur, lim.Max)
	fmt.Printf("- PostgreSQL: %s (%s)\n", b.pgVer, b.pgConf)
	fmt.Printf("- load average (1/5/15 min) at start %s, at end %s\n", b.load0, loadAvg())
	fmt.Printf("- %d poll server processes (./functions/poll, DB_MAX_CONNS=%d each%s); %d waiters (%.0f%% streams) over %d rooms; sends %s at each step\n",
		o.procs, o.dbConns, b.pollLimits(), o.waiters, 100*o.streamShare, o.rooms, fmt.Sprintf("for %s", o.dur))
	fmt.Printf("- floor A (INSERT+NOTIFY → LISTEN wake, bare pgx) p50 %s / p99 %s, n=%d; floor B (loopback HTTP round trip) p50 %s / p99 %s\n\n",
		ms(b.fa.pct(.5)), ms(b.fa.pct(.99)), len(b.fa), ms(b.fb.pct(.5)), ms(b.fb.pct(.99)))
	fmt.Println("| measurement | p50 | p99 | ratio p50 | ratio p99 | notes |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s |\n", strings.ReplaceAll(strings.Join(r, " | "), "\n", " "))
	}
}
