package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const iterationTimeout = 30 * time.Second

// caseRun is one send→wake case under way: its rooms, its parked waiters
// and what its sends measured.
type caseRun struct {
	names  []string
	byRoom [][]int
	cr     *crowd

	all                        dist
	posts, firstRead, lastRead dist
	lastHandler, lastAnswer    dist
	reads, acquires            dist
	readsPerSend, maxInFlight  []int
	poolWaits, poolAcquires    int64
	poolWaitTime               time.Duration
	totalConnsMax              int32
}

// subsPerWaiter is how many hub subscriptions an anonymous waiter holds:
// a parked poll or an open stream subscribes to its room's channel (the
// doorbell of its one event log) and its room's access channel.
const subsPerWaiter = 2

// latencyCase parks c.W long-polls (or opens c.W event streams) spread
// evenly over c.R rooms, then
// c.iters times sends one message (rooms taken round-robin) and times every
// waiter of that room from just before the POST to its answer being read.
// Woken waiters park again only once the iteration is over, so each wake
// storm is the woken waiters' own re-reads and nothing else. Floor C, for
// c.W/c.R > 1, is released after each send (floor F for streams).
func (b *bench) latencyCase(ctx context.Context, c latCase) error {
	run := &caseRun{names: make([]string, c.R), byRoom: make([][]int, c.R)}
	cursors := make([]int64, c.R)
	for i := range c.R {
		run.names[i] = fmt.Sprintf("bench-room-%s-w%d-r%d-%d", c.kind(), c.W, c.R, i)
		room, _, err := b.svc.Store.EnsureRoom(ctx, run.names[i])
		if err != nil {
			return err
		}
		cursors[i] = room.LastSeq
	}
	headers := make([]http.Header, c.W)
	if c.agent {
		for i := range c.W {
			var err error
			if headers[i], err = b.agentHeaders(ctx, run.names[i%c.R], fmt.Sprintf("bench-waiter-%s-%d", run.names[i%c.R], i)); err != nil {
				return fmt.Errorf("register waiter %d: %w", i, err)
			}
		}
	}
	run.cr = startCrowd(ctx, c.W, func(i int) pollFunc {
		r := i % c.R
		run.byRoom[r] = append(run.byRoom[r], i)
		if c.stream {
			return streamRoom(b.client, b.srv.URL, run.names[r], cursors[r])
		}
		return pollRoom(b.client, b.srv.URL, run.names[r], cursors[r], headers[i])
	})
	defer func() {
		run.cr.stop()
		b.client.CloseIdleConnections()
		_ = waitFor(context.WithoutCancel(ctx), "waiters gone", 30*time.Second, func() (bool, string, error) {
			st := b.svc.Hub.Stats()
			return st.Subscribers == 0, fmt.Sprintf("%d subscribers", st.Subscribers), nil
		})
	}()
	subs := subsPerWaiter * c.W
	if c.agent {
		subs += c.W // its account's access channel
	}
	parked := func() (bool, string, error) {
		st := b.svc.Hub.Stats()
		acq := b.pool.Stat().AcquiredConns()
		return st.Subscribers == subs && st.Listening == st.Channels && acq == 0,
			fmt.Sprintf("%d/%d subscribers, %d/%d channels listened, %d pool conns acquired", st.Subscribers, subs, st.Listening, st.Channels, acq), nil
	}
	if err := waitFor(ctx, "all waiters parked", time.Minute, parked); err != nil {
		return err
	}
	var fan *bareFanout
	if k := c.W / c.R; k > 1 {
		fan = newBareFanout(ctx, k, c.stream)
		defer fan.close()
		if key := (fanKey{k, c.stream}); b.fanout[key] == nil {
			b.fanout[key] = dist{}
			sec, name, what := secFloorC, fmt.Sprintf("**Floor C**: %d bare parked HTTP GETs answered at once", k),
				"the handler blocks on a channel, then writes a one-message-sized body; time from close(channel) to each body read"
			if c.stream {
				sec, name, what = secFloorF, fmt.Sprintf("**Floor F**: %d bare open streams each sent one event at once", k),
					"each handler holds an open text/event-stream answer, blocks on a channel, then writes and flushes a one-message-sized event; time from close(channel) to each event's data line read"
			}
			b.add(sec, func() row {
				fc, fa := b.fanout[key], b.fa
				return row{name: name, p50: ms(fc.pct(.5)), p99: ms(fc.pct(.99)),
					r50: ratio(fc.pct(.5), fa.pct(.5)), r99: ratio(fc.pct(.99), fa.pct(.99)),
					notes: fmt.Sprintf("n=%d (%d releases, each right after a send of the W=%d R=%d case); %s: the HTTP fan-out alone, no database; ratios vs floor A", len(fc), len(fc)/k, c.W, c.R, what)}
			})
		}
	}

	if b.opt.cpuProfile != "" && !c.stream && c.R == 1 && c.W == b.largestOneRoom() {
		f, err := os.Create(b.opt.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
		stop, err := b.waitProfiles()
		if err != nil {
			return err
		}
		defer stop()
	}

	start := time.Now()
	// One unmeasured send first (to the last room) warms the path.
	for it := -1; it < c.iters; it++ {
		if err := b.wake(ctx, run, (it+c.R)%c.R, it, it >= 0); err != nil {
			return err
		}
		if err := waitFor(ctx, "all waiters parked again", time.Minute, parked); err != nil {
			return err
		}
		if fan != nil {
			fc, err := fan.once(ctx)
			if err != nil {
				return fmt.Errorf("floor C: %w", err)
			}
			if key := (fanKey{fan.k, fan.stream}); it >= 0 {
				b.fanout[key] = append(b.fanout[key], fc...)
			}
		}
	}
	b.latencyRow(c, run, time.Since(start))
	return nil
}

// wake sends one message to room r of run and times its waiters' answers,
// recording them (and what the tracer saw) when record is set, then lets
// the woken waiters park again.
func (b *bench) wake(ctx context.Context, run *caseRun, r, it int, record bool) error {
	s0 := b.pool.Stat()
	b.trace.start()
	t0 := time.Now()
	if err := send(ctx, b.client, b.srv.URL, run.names[r], fmt.Sprintf("iteration %d", it)); err != nil {
		b.trace.stop()
		return err
	}
	post := time.Since(t0)
	lat, ids, err := run.cr.collect(ctx, len(run.byRoom[r]), t0, iterationTimeout)
	qs, acq, hs := b.trace.stop()
	s1 := b.pool.Stat()
	if err != nil {
		return err
	}
	defer run.cr.release(ids)
	if !record {
		return nil
	}
	run.all = append(run.all, lat...)
	run.posts = append(run.posts, post)
	run.lastAnswer = append(run.lastAnswer, slices.Max(lat))
	run.poolAcquires += s1.AcquireCount() - s0.AcquireCount()
	run.poolWaits += s1.EmptyAcquireCount() - s0.EmptyAcquireCount()
	run.poolWaitTime += s1.EmptyAcquireWaitTime() - s0.EmptyAcquireWaitTime()
	run.totalConnsMax = max(run.totalConnsMax, s1.TotalConns())
	run.acquires = append(run.acquires, acq...)

	var rs []queryEvent
	for _, q := range qs {
		if q.kind == kindRead {
			rs = append(rs, q)
		}
	}
	run.readsPerSend = append(run.readsPerSend, len(rs))
	if len(rs) > 0 {
		fr, lr := rs[0].start, rs[0].end
		for _, q := range rs {
			run.reads = append(run.reads, q.end.Sub(q.start))
			if q.start.Before(fr) {
				fr = q.start
			}
			if q.end.After(lr) {
				lr = q.end
			}
		}
		run.firstRead = append(run.firstRead, fr.Sub(t0))
		run.lastRead = append(run.lastRead, lr.Sub(t0))
		run.maxInFlight = append(run.maxInFlight, inFlight(rs))
	}
	if len(hs) > 0 {
		run.lastHandler = append(run.lastHandler, slices.MaxFunc(hs, func(a, b time.Time) int { return a.Compare(b) }).Sub(t0))
	}
	return nil
}

func (b *bench) latencyRow(c latCase, run *caseRun, elapsed time.Duration) {
	k := c.W / c.R
	with, shared, floor := "", "", "C"
	if c.stream {
		floor = "F"
	}
	if k > 1 {
		with, shared = " with floor "+floor, " (the handler shares one among waiters woken together)"
	}
	handlers := fmt.Sprintf(", last handler returns %s", ms(run.lastHandler.pct(.5)))
	if c.stream {
		handlers = "" // a stream's handler does not return
	}
	notes := []string{
		fmt.Sprintf("n=%d (%d sends × %d waiter%s; the case took %s%s)", len(run.all), c.iters, k, plural(k), elapsed.Round(100*time.Millisecond), with),
		"target ≤2× floor p50, ≤3× floor p99",
		fmt.Sprintf("per send (p50 over sends): POST answered %s, first re-read starts %s, last re-read ends %s%s, last waiter has its answer %s",
			ms(run.posts.pct(.5)), ms(run.firstRead.pct(.5)), ms(run.lastRead.pct(.5)), handlers, ms(run.lastAnswer.pct(.5))),
		fmt.Sprintf("re-reads per send %s for %d woken waiter%s%s, each %s p50 / %s p99 on its connection, up to %d in flight",
			intRange(run.readsPerSend), k, plural(k), shared, ms(run.reads.pct(.5)), ms(run.reads.pct(.99)), slices.Max(append(run.maxInFlight, 0))),
		fmt.Sprintf("pool (MaxConns %d, ≤%d open): %d of %d acquires waited for a connection, %s waiting in all; acquire p50 %s / p99 %s",
			b.opt.maxConns, run.totalConnsMax, run.poolWaits, run.poolAcquires, ms(run.poolWaitTime), ms(run.acquires.pct(.5)), ms(run.acquires.pct(.99))),
	}
	what, name := "send→wake", fmt.Sprintf("Ours: send→wake, W=%d parked in R=%d room%s", c.W, c.R, plural(c.R))
	if c.agent {
		what, name = "agent's send→wake", fmt.Sprintf("Ours: send→wake, W=%d agents' long-polls (owner token + worker session) in R=%d room%s",
			c.W, c.R, plural(c.R))
	}
	if c.stream {
		what, name = "send→event", fmt.Sprintf("Ours: send→event, W=%d open streams in R=%d room%s", c.W, c.R, plural(c.R))
	}
	progress("%s W=%d R=%d: p50 %s p99 %s", what, c.W, c.R, ms(run.all.pct(.5)), ms(run.all.pct(.99)))
	all := run.all
	b.add(secLatency, func() row {
		fa := b.fa
		notes := notes
		if fc, ok := b.fanout[fanKey{k, c.stream}]; ok && k > 1 {
			f50, f99 := fa.pct(.5)+fc.pct(.5), fa.pct(.99)+fc.pct(.99)
			notes = append(notes, fmt.Sprintf("vs floor A+%s (commit→wake plus %d bare HTTP %s at once: %s p50, %s p99): p50 %s, p99 %s",
				floor, k, map[bool]string{false: "answers", true: "stream events"}[c.stream], ms(f50), ms(f99), ratio(all.pct(.5), f50), ratio(all.pct(.99), f99)))
		}
		return row{
			name: name,
			p50:  ms(all.pct(.5)), p99: ms(all.pct(.99)),
			r50: ratio(all.pct(.5), fa.pct(.5)), r99: ratio(all.pct(.99), fa.pct(.99)),
			notes: strings.Join(notes, "; "),
		}
	})
}

func (b *bench) largestOneRoom() int {
	w := 0
	for _, c := range b.opt.cases {
		if c.R == 1 && !c.stream {
			w = max(w, c.W)
		}
	}
	return w
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func intRange(v []int) string {
	if len(v) == 0 {
		return "0"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// inFlight is the most queries that ran at the same time.
func inFlight(qs []queryEvent) int {
	type ev struct {
		at time.Time
		d  int
	}
	evs := make([]ev, 0, 2*len(qs))
	for _, q := range qs {
		evs = append(evs, ev{q.start, 1}, ev{q.end, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // ends before starts at the same instant
	})
	n, top := 0, 0
	for _, e := range evs {
		n += e.d
		top = max(top, n)
	}
	return top
}

// fanKey names a fan-out floor: k waiters, answered (floor C) or sent a
// stream event (floor F).
type fanKey struct {
	k      int
	stream bool
}

func (c latCase) kind() string {
	switch {
	case c.stream:
		return "stream"
	case c.agent:
		return "agent-poll"
	}
	return "poll"
}

// bareFanout is floor C: k requests parked on a bare net/http handler that
// holds each until a shared release, then answers a body the size of a
// one-message poll answer. Timing each answer from the release gives what
// waking k HTTP waiters costs with no database at all. With stream, it is
// floor F: k bare event streams held open, each sent one event the size of
// a message event at each release. It runs alongside a send→wake case,
// one release after each send, so both see the same moments.
type bareFanout struct {
	k      int
	stream bool
	srv    *httptest.Server
	tr     *http.Transport
	cr     *crowd

	mu      sync.Mutex
	release chan struct{}
	held    atomic.Int64
}

const bareMessage = `{"id":"msg_1","room_id":"bench-room-w1000-r1-0","sender":"bench","text":"iteration 0","source":null,"timestamp":"2026-01-01T00:00:00.000Z","thread_parent_id":null,"reply_to":null,"thread_root_id":"msg_1","thread":null}`

func newBareFanout(ctx context.Context, k int, stream bool) *bareFanout {
	f := &bareFanout{k: k, stream: stream, release: make(chan struct{}), tr: newTransport()}
	body := []byte(`{"room_id":"bench-room-w1000-r1-0","messages":[` + bareMessage + `],"has_more":false}` + "\n")
	event := []byte("id: msg_1\ndata: " + bareMessage + "\n\n")
	wait := func(r *http.Request) bool {
		f.mu.Lock()
		rel := f.release
		f.mu.Unlock()
		f.held.Add(1)
		defer f.held.Add(-1)
		select {
		case <-rel:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !stream {
			if wait(r) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = w.Write(body)
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_, _ = w.Write([]byte(": connected\n\n"))
		_ = rc.Flush()
		for wait(r) {
			_, _ = w.Write(event)
			if rc.Flush() != nil {
				return
			}
		}
	}))
	client := &http.Client{Transport: f.tr}
	f.cr = startCrowd(ctx, k, func(int) pollFunc {
		if stream {
			return streamEvents(client, f.srv.URL+"/hold")
		}
		return pollBare(client, f.srv.URL+"/hold")
	})
	return f
}

func (f *bareFanout) parked() (bool, string, error) {
	n := f.held.Load()
	return n == int64(f.k), fmt.Sprintf("%d/%d bare requests held", n, f.k), nil
}

// once releases every parked request and times the answers.
func (f *bareFanout) once(ctx context.Context) (dist, error) {
	if err := waitFor(ctx, "bare requests parked", time.Minute, f.parked); err != nil {
		return nil, err
	}
	f.mu.Lock()
	old := f.release
	f.release = make(chan struct{})
	f.mu.Unlock()
	t0 := time.Now()
	close(old)
	lat, ids, err := f.cr.collect(ctx, f.k, t0, iterationTimeout)
	if err != nil {
		return nil, err
	}
	f.cr.release(ids)
	return lat, waitFor(ctx, "bare requests parked again", time.Minute, f.parked)
}

func (f *bareFanout) close() {
	f.cr.stop()
	f.tr.CloseIdleConnections()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// pollBare returns a pollFunc that GETs u and reads the answer.
func pollBare(client *http.Client, u string) pollFunc {
	return func(ctx context.Context) (time.Time, bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return time.Time{}, false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return time.Time{}, false, err
		}
		_, err = readAll(resp)
		return time.Now(), err == nil, err
	}
}

// waitProfiles starts recording every blocking event and every contended
// mutex, when -blockprofile or -mutexprofile asks, and returns what writes
// them and stops recording. The files are made first: the case may use
// every file descriptor the process may open.
func (b *bench) waitProfiles() (stop func(), err error) {
	type prof struct {
		name string
		f    *os.File
	}
	var profs []prof
	for _, p := range []struct{ name, path string }{{"block", b.opt.blockProf}, {"mutex", b.opt.mutexProf}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			for _, p := range profs {
				p.f.Close()
			}
			return nil, err
		}
		profs = append(profs, prof{p.name, f})
	}
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	return func() {
		for _, p := range profs {
			if err := pprof.Lookup(p.name).WriteTo(p.f, 0); err != nil {
				progress("%s profile: %v", p.name, err)
			}
			p.f.Close()
		}
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}, nil
}
