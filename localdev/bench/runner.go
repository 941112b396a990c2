package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/letagents/letagents-go/localdev/runnerproc"
)

// runnerBurst is how many sends a burst makes at once, each into a room
// of its own: what a crowd of agents does to the local runner.
const runnerBurst = 100

// runner measures the local runner (./localdev, built and started as it
// is run, on the bench's schema) against the in-process service: the same
// HTTP sends, in alternating rounds, as bursts of runnerBurst concurrent
// sends into as many rooms, and one at a time. What the runner adds is its
// routing, the API Gateway event it builds, the Lambda invocation through
// the runtime's handler, and its own pool.
func (b *bench) runner(ctx context.Context) error {
	base, pool, stop, err := b.startRunner(ctx)
	if err != nil {
		return err
	}
	defer stop()
	rooms := make([]string, runnerBurst)
	for i := range rooms {
		rooms[i] = fmt.Sprintf("bench-room-runner-%d", i)
		if _, _, err := b.svc.Store.EnsureRoom(ctx, rooms[i]); err != nil {
			return err
		}
	}
	tr := newTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: iterationTimeout}

	type side struct {
		base          string
		burst, single dist
	}
	viaRunner, inProcess := &side{base: base}, &side{base: b.srv.URL}
	seq := 0
	burst := func(s *side, keep bool) error {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for i := range runnerBurst {
			seq++
			text := fmt.Sprintf("runner burst %d", seq)
			wg.Go(func() {
				t0 := time.Now()
				err := send(ctx, client, s.base, rooms[i], text)
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else if keep {
					s.burst = append(s.burst, d)
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			return fmt.Errorf("%d of %d sends failed, first: %w", len(errs), runnerBurst, errs[0])
		}
		return nil
	}
	// One at a time, the two sides alternating send by send, so a slow
	// moment of the machine falls on both.
	singles := func(n int) error {
		for i := range n {
			for _, s := range []*side{viaRunner, inProcess} {
				if err := sleepCtx(ctx, idleGap); err != nil {
					return err
				}
				seq++
				t0 := time.Now()
				if err := send(ctx, client, s.base, rooms[i%runnerBurst], fmt.Sprintf("runner single %d", seq)); err != nil {
					return err
				}
				s.single = append(s.single, time.Since(t0))
			}
		}
		return nil
	}
	// A first burst each opens the connections (client and pool) that the
	// measured ones reuse.
	for _, s := range []*side{viaRunner, inProcess} {
		if err := burst(s, false); err != nil {
			return err
		}
	}
	rounds := 10
	if b.opt.quick {
		rounds = 4
	}
	for r := range rounds {
		for _, s := range []*side{viaRunner, inProcess} {
			if err := burst(s, true); err != nil {
				return fmt.Errorf("round %d: %w", r, err)
			}
			if err := sleepCtx(ctx, idleGap); err != nil {
				return err
			}
		}
	}
	n := 100
	if b.opt.quick {
		n = 40
	}
	if err := singles(n); err != nil {
		return err
	}
	progress("runner: burst p50 %s vs in process %s; one at a time p50 %s vs %s",
		ms(viaRunner.burst.pct(.5)), ms(inProcess.burst.pct(.5)), ms(viaRunner.single.pct(.5)), ms(inProcess.single.pct(.5)))
	b.add(secRunner, func() row {
		return row{name: fmt.Sprintf("In process: %d concurrent HTTP sends into %d rooms", runnerBurst, runnerBurst),
			p50: ms(inProcess.burst.pct(.5)), p99: ms(inProcess.burst.pct(.99)), r50: "1×", r99: "1×",
			notes: fmt.Sprintf("n=%d in %d bursts, each send timed from its POST to its answer read; `service.FromPool` on an httptest server, pool MaxConns=%d; bursts alternate with the runner's",
				len(inProcess.burst), rounds, b.opt.maxConns)}
	})
	b.add(secRunner, func() row {
		return row{name: fmt.Sprintf("Local runner: %d concurrent HTTP sends into %d rooms", runnerBurst, runnerBurst),
			p50: ms(viaRunner.burst.pct(.5)), p99: ms(viaRunner.burst.pct(.99)),
			r50: ratio(viaRunner.burst.pct(.5), inProcess.burst.pct(.5)), r99: ratio(viaRunner.burst.pct(.99), inProcess.burst.pct(.99)),
			notes: fmt.Sprintf("ratio = runner / in process; `go run ./localdev` built and run as a separate process on the bench's schema (LOG_LEVEL=warn, as the in-process service), %s; every send through the gateway's routing, a payload v2 event and the Lambda runtime's handler", pool)}
	})
	b.add(secRunner, func() row {
		return row{name: "Local runner: one send at a time",
			p50: ms(viaRunner.single.pct(.5)), p99: ms(viaRunner.single.pct(.99)),
			r50: ratio(viaRunner.single.pct(.5), inProcess.single.pct(.5)), r99: ratio(viaRunner.single.pct(.99), inProcess.single.pct(.99)),
			notes: fmt.Sprintf("ratio = runner / in process (one at a time there: %s p50 / %s p99); n=%d each, alternating, each after %s idle: what routing and the Lambda emulation add to one request",
				ms(inProcess.single.pct(.5)), ms(inProcess.single.pct(.99)), len(viaRunner.single), idleGap)}
	})
	if b.opt.hook == "on" {
		if err := b.hookBench(ctx, base); err != nil {
			return fmt.Errorf("hook: %w", err)
		}
	}
	return nil
}

// startRunner starts the local runner on the bench's schema (which is
// migrated already), and returns its URL, what it says of its pool, and a
// function that stops it.
func (b *bench) startRunner(ctx context.Context) (base, pool string, stop func(), err error) {
	p, err := runnerproc.Start(ctx, []string{"DB_URL=" + b.url, "LOG_LEVEL=warn", "DB_MAX_CONNS="}, nil)
	if err != nil {
		return "", "", nil, err
	}
	return p.URL, "its pool " + p.Pool, p.Stop, nil
}
