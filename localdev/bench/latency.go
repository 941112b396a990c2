package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

const iterationTimeout = 30 * time.Second

// latencyCase parks c.W long-polls spread evenly over c.R rooms, then
// c.iters times sends one message (rooms taken round-robin) and times every
// waiter of that room from just before the POST to its answer being read.
// Woken waiters park again only once the iteration is over, so each wake
// storm is the woken waiters' own re-reads and nothing else.
func (b *bench) latencyCase(ctx context.Context, c latCase, proto bool) error {
	pollBase := b.srv.URL
	if proto {
		pollBase = b.coSrv.URL
	}
	names := make([]string, c.R)
	cursors := make([]int64, c.R)
	for i := range c.R {
		names[i] = fmt.Sprintf("bench-room-w%d-r%d-%d", c.W, c.R, i)
		if proto {
			names[i] = fmt.Sprintf("bench-room-proto-w%d-r%d-%d", c.W, c.R, i)
		}
		room, _, err := b.svc.Store.EnsureRoom(ctx, names[i])
		if err != nil {
			return err
		}
		cursors[i] = room.LastSeq
	}
	byRoom := make([][]int, c.R)
	cr := startCrowd(ctx, c.W, func(i int) pollFunc {
		r := i % c.R
		byRoom[r] = append(byRoom[r], i)
		return pollRoom(b.client, pollBase, names[r], cursors[r])
	})
	defer func() {
		cr.stop()
		b.client.CloseIdleConnections()
		_ = waitFor(context.WithoutCancel(ctx), "waiters gone", 30*time.Second, func() (bool, string, error) {
			st := b.svc.Hub.Stats()
			return st.Subscribers == 0, fmt.Sprintf("%d subscribers", st.Subscribers), nil
		})
	}()
	parked := func() (bool, string, error) {
		st := b.svc.Hub.Stats()
		acq := b.pool.Stat().AcquiredConns()
		return st.Subscribers == c.W && st.Listening == st.Channels && acq == 0,
			fmt.Sprintf("%d/%d subscribers, %d/%d channels listened, %d pool conns acquired", st.Subscribers, c.W, st.Listening, st.Channels, acq), nil
	}
	if err := waitFor(ctx, "all waiters parked", time.Minute, parked); err != nil {
		return err
	}
	var fan *bareFanout
	if k := c.W / c.R; k > 1 && !proto {
		fan = newBareFanout(ctx, k)
		defer fan.close()
		if _, seen := b.fanout[k]; !seen {
			b.fanout[k] = nil
			b.add(secFloorC, func() row {
				fc, fa := b.fanout[k], b.fa
				return row{name: fmt.Sprintf("**Floor C**: %d bare parked HTTP GETs answered at once", k),
					p50: ms(fc.pct(.5)), p99: ms(fc.pct(.99)),
					r50: ratio(fc.pct(.5), fa.pct(.5)), r99: ratio(fc.pct(.99), fa.pct(.99)),
					notes: fmt.Sprintf("n=%d (%d releases, each right after a send of the W=%d R=%d case); the handler blocks on a channel, then writes a one-message-sized body; time from close(channel) to each body read: the HTTP fan-out alone, no database; ratios vs floor A", len(fc), len(fc)/k, c.W, c.R)}
			})
		}
	}

	if b.opt.cpuProfile != "" && c.R == 1 && c.W == b.largestOneRoom() && !proto {
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
	}

	var (
		all                        dist
		posts, firstRead, lastRead dist
		lastHandler, lastAnswer    dist
		reads, acquires            dist
		readsPerSend, maxInFlight  []int
		poolWaits, poolAcquires    int64
		poolWaitTime               time.Duration
		totalConnsMax              int32
		perIterationCount          = c.W / c.R
		iterationStart             = time.Now()
	)
	// One unmeasured send first (to the last room) warms the path.
	for it := -1; it < c.iters; it++ {
		r := (it + c.R) % c.R
		want := len(byRoom[r])
		s0 := b.pool.Stat()
		b.trace.start()
		t0 := time.Now()
		if err := send(ctx, b.client, b.srv.URL, names[r], fmt.Sprintf("iteration %d", it)); err != nil {
			b.trace.stop()
			return err
		}
		posts = append(posts, time.Since(t0))
		lat, ids, err := cr.collect(ctx, want, t0, iterationTimeout)
		qs, acq, hs := b.trace.stop()
		s1 := b.pool.Stat()
		if err != nil {
			return err
		}
		if it < 0 {
			cr.release(ids)
			if err := waitFor(ctx, "all waiters parked again", time.Minute, parked); err != nil {
				return err
			}
			if fan != nil {
				if _, err := fan.once(ctx); err != nil {
					return fmt.Errorf("floor C: %w", err)
				}
			}
			continue
		}
		all = append(all, lat...)
		lastAnswer = append(lastAnswer, slices.Max(lat))
		poolAcquires += s1.AcquireCount() - s0.AcquireCount()
		poolWaits += s1.EmptyAcquireCount() - s0.EmptyAcquireCount()
		poolWaitTime += s1.EmptyAcquireWaitTime() - s0.EmptyAcquireWaitTime()
		totalConnsMax = max(totalConnsMax, s1.TotalConns())
		acquires = append(acquires, acq...)

		var rs []queryEvent
		for _, q := range qs {
			if q.kind == kindRead {
				rs = append(rs, q)
			}
		}
		readsPerSend = append(readsPerSend, len(rs))
		if len(rs) > 0 {
			fr, lr := rs[0].start, rs[0].end
			for _, q := range rs {
				reads = append(reads, q.end.Sub(q.start))
				if q.start.Before(fr) {
					fr = q.start
				}
				if q.end.After(lr) {
					lr = q.end
				}
			}
			firstRead = append(firstRead, fr.Sub(t0))
			lastRead = append(lastRead, lr.Sub(t0))
			maxInFlight = append(maxInFlight, inFlight(rs))
		}
		if len(hs) > 0 {
			lastHandler = append(lastHandler, slices.MaxFunc(hs, func(a, b time.Time) int { return a.Compare(b) }).Sub(t0))
		}
		cr.release(ids)
		if err := waitFor(ctx, "all waiters parked again", time.Minute, parked); err != nil {
			return err
		}
		if fan != nil {
			fc, err := fan.once(ctx)
			if err != nil {
				return fmt.Errorf("floor C: %w", err)
			}
			b.fanout[fan.k] = append(b.fanout[fan.k], fc...)
		}
	}
	elapsed := time.Since(iterationStart)

	notes := []string{
		fmt.Sprintf("n=%d (%d sends × %d waiters; the case took %s with floor C)", len(all), c.iters, perIterationCount, elapsed.Round(100*time.Millisecond)),
		"target ≤2× floor p50, ≤3× floor p99",
		fmt.Sprintf("per send (p50 over sends): POST answered %s, first re-read starts %s, last re-read ends %s, last handler returns %s, last waiter has its answer %s",
			ms(posts.pct(.5)), ms(firstRead.pct(.5)), ms(lastRead.pct(.5)), ms(lastHandler.pct(.5)), ms(lastAnswer.pct(.5))),
		fmt.Sprintf("re-reads per send %s, each %s p50 / %s p99 on its connection, up to %d in flight",
			intRange(readsPerSend), ms(reads.pct(.5)), ms(reads.pct(.99)), slices.Max(append(maxInFlight, 0))),
		fmt.Sprintf("pool (MaxConns %d, ≤%d open): %d of %d acquires waited for a connection, %s waiting in all; acquire p50 %s / p99 %s",
			b.opt.maxConns, totalConnsMax, poolWaits, poolAcquires, ms(poolWaitTime), ms(acquires.pct(.5)), ms(acquires.pct(.99))),
	}
	progress("send→wake W=%d R=%d (prototype %v): p50 %s p99 %s", c.W, c.R, proto, ms(all.pct(.5)), ms(all.pct(.99)))
	section, name := secLatency, fmt.Sprintf("Ours: send→wake, W=%d parked in R=%d room%s", c.W, c.R, plural(c.R))
	if proto {
		section, name = secProto, fmt.Sprintf("diag: send→wake, W=%d parked in R=%d room%s, **prototype** poll handler that coalesces identical re-reads", c.W, c.R, plural(c.R))
		notes = append(notes, "bench-only handler (localdev/bench/coalesce.go) on the service's hub and store, sends still POSTed to the service: what coalescing would gain")
	}
	b.add(section, func() row {
		fa := b.fa
		notes := notes
		if fc, ok := b.fanout[perIterationCount]; ok && perIterationCount > 1 {
			f50, f99 := fa.pct(.5)+fc.pct(.5), fa.pct(.99)+fc.pct(.99)
			notes = append(notes, fmt.Sprintf("vs floor A+C (commit→wake plus %d bare HTTP answers at once: %s p50, %s p99): p50 %s, p99 %s",
				perIterationCount, ms(f50), ms(f99), ratio(all.pct(.5), f50), ratio(all.pct(.99), f99)))
		}
		return row{
			name: name,
			p50:  ms(all.pct(.5)), p99: ms(all.pct(.99)),
			r50: ratio(all.pct(.5), fa.pct(.5)), r99: ratio(all.pct(.99), fa.pct(.99)),
			notes: strings.Join(notes, "; "),
		}
	})
	return nil
}

func (b *bench) largestOneRoom() int {
	w := 0
	for _, c := range b.opt.cases {
		if c.R == 1 {
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

// bareFanout is floor C: k requests parked on a bare net/http handler that
// holds each until a shared release, then answers a body the size of a
// one-message poll answer. Timing each answer from the release gives what
// waking k HTTP waiters costs with no database at all. It runs alongside a
// send→wake case, one release after each send, so both see the same moments.
type bareFanout struct {
	k   int
	srv *httptest.Server
	tr  *http.Transport
	cr  *crowd

	mu      sync.Mutex
	release chan struct{}
	held    atomic.Int64
}

func newBareFanout(ctx context.Context, k int) *bareFanout {
	f := &bareFanout{k: k, release: make(chan struct{}), tr: newTransport()}
	body := []byte(`{"room_id":"bench-room-w1000-r1-0","messages":[{"id":"msg_1","room_id":"bench-room-w1000-r1-0","sender":"bench","text":"iteration 0","source":null,"timestamp":"2026-01-01T00:00:00.000Z","thread_parent_id":null}],"has_more":false}` + "\n")
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		rel := f.release
		f.mu.Unlock()
		f.held.Add(1)
		select {
		case <-rel:
			f.held.Add(-1)
		case <-r.Context().Done():
			f.held.Add(-1)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	}))
	client := &http.Client{Transport: f.tr}
	f.cr = startCrowd(ctx, k, func(int) pollFunc { return pollBare(client, f.srv.URL+"/hold") })
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

// readStorm runs k store.Messages reads at once on the pool, as k woken
// waiters of one room do, with no HTTP and no send: the re-read part of a
// wake on its own. k is the most waiters one send wakes in the cases run.
func (b *bench) readStorm(ctx context.Context, cases []latCase) error {
	k := 0
	for _, c := range cases {
		k = max(k, c.W/c.R)
	}
	if k < 2 {
		return nil
	}
	const room = "bench-room-storm"
	if _, _, err := b.svc.Store.EnsureRoom(ctx, room); err != nil {
		return err
	}
	if _, err := b.svc.Store.SendMessage(ctx, letagents.NewMessage{RoomID: room, Sender: "bench", Text: "storm"}); err != nil {
		return err
	}
	q := store.MessageQuery{After: 0, Limit: letagents.DefaultPageSize}
	var single dist
	for i := range 120 {
		t0 := time.Now()
		if _, err := b.svc.Store.Messages(ctx, room, q); err != nil {
			return err
		}
		if i >= 20 {
			single = append(single, time.Since(t0))
		}
	}
	iters := 5
	if b.opt.quick {
		iters = 3
	}
	var all, lasts dist
	var waits int64
	var acquires dist
	for range iters {
		s0 := b.pool.Stat()
		b.trace.start()
		done := make([]time.Duration, k)
		errs := make(chan error, k)
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.svc.Store.Messages(ctx, room, q); err != nil {
					errs <- err
				}
				done[i] = time.Since(t0)
			}()
		}
		wg.Wait()
		_, acq, _ := b.trace.stop()
		acquires = append(acquires, acq...)
		waits += b.pool.Stat().EmptyAcquireCount() - s0.EmptyAcquireCount()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		all = append(all, done...)
		lasts = append(lasts, slices.Max(done))
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	r := row{
		name: fmt.Sprintf("diag: %d store.Messages re-reads at once (no HTTP, no send)", k),
		p50:  ms(all.pct(.5)), p99: ms(all.pct(.99)),
		r50: "—", r99: "—",
		notes: fmt.Sprintf("time from start to each read's return, n=%d (%d storms); the last read returns at %s p50; one read alone %s p50 / %s p99; %d of %d acquires waited, acquire p50 %s / p99 %s: the re-reads of one wake storm, queued on the pool; coalesced, they would be one read",
			len(all), iters, ms(lasts.pct(.5)), ms(single.pct(.5)), ms(single.pct(.99)), waits, len(acquires), ms(acquires.pct(.5)), ms(acquires.pct(.99))),
	}
	b.add(secStorm, func() row { return r })
	return nil
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
