package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// throughput runs n concurrent senders for the configured time three ways:
// bare INSERT+NOTIFY statements on pgx (the floor), HTTP POSTs to the
// service, and store.SendMessage calls (the service minus HTTP).
func (b *bench) throughput(ctx context.Context) error {
	n, d := b.opt.senders, b.opt.tpDur
	rooms := make([]string, n)
	for i := range n {
		rooms[i] = fmt.Sprintf("bench-room-tp-%d", i)
		if _, _, err := b.svc.Store.EnsureRoom(ctx, rooms[i]); err != nil {
			return err
		}
	}
	type kind struct {
		count int
		time  time.Duration
		lat   dist
		op    func(ctx context.Context, i, seq int) error
	}
	floor := &kind{op: func(ctx context.Context, i, seq int) error {
		_, err := b.pool.Exec(ctx, floorSQL, seq, b.floorChannel(100+i))
		return err
	}}
	viaHTTP := &kind{op: func(ctx context.Context, i, seq int) error {
		return send(ctx, b.client, b.srv.URL, rooms[i], fmt.Sprintf("throughput %d", seq))
	}}
	viaStore := &kind{op: func(ctx context.Context, i, seq int) error {
		_, _, err := b.svc.Store.SendMessage(ctx, letagents.NewMessage{RoomID: rooms[i], Sender: "bench", Text: fmt.Sprintf("throughput %d", seq)})
		return err
	}}
	// Rounds alternate the three, so a slow moment of the machine falls on
	// all of them alike.
	rounds := 5
	if b.opt.quick {
		rounds = 2
	}
	for r := range rounds {
		for _, k := range []*kind{floor, viaHTTP, viaStore} {
			count, lat, err := runConcurrent(ctx, n, d/time.Duration(rounds), k.op)
			if err != nil {
				return fmt.Errorf("round %d: %w", r, err)
			}
			k.count += count
			k.time += d / time.Duration(rounds)
			k.lat = append(k.lat, lat...)
		}
	}
	rate := func(k *kind) float64 { return float64(k.count) / k.time.Seconds() }
	progress("throughput: floor %.0f/s, HTTP %.0f/s, store %.0f/s", rate(floor), rate(viaHTTP), rate(viaStore))
	how := fmt.Sprintf("%s in all, in %d rounds alternating with the other two throughput rows", d, rounds)
	b.add(secThroughput, func() row {
		return row{name: fmt.Sprintf("**Floor D**: bare INSERT+NOTIFY statements, %d concurrent conns", n),
			p50: fmt.Sprintf("%.0f /s", rate(floor)), p99: "—", r50: "1×", r99: "—",
			notes: fmt.Sprintf("p50 column is the rate; %s; on the pool, one channel per sender; each statement %s p50 / %s p99", how, ms(floor.lat.pct(.5)), ms(floor.lat.pct(.99)))}
	})
	b.add(secThroughput, func() row {
		return row{name: fmt.Sprintf("Ours: sustained sends, %d HTTP POST senders → %d rooms", n, n),
			p50: fmt.Sprintf("%.0f /s", rate(viaHTTP)), p99: "—", r50: ratioF(rate(viaHTTP), rate(floor)), r99: "—",
			notes: fmt.Sprintf("p50 column is the rate, ratio = ours / floor D; POST /rooms/{room}/messages over keep-alive HTTP, sender i → room i, no waiters parked; %s; each POST %s p50 / %s p99",
				how, ms(viaHTTP.lat.pct(.5)), ms(viaHTTP.lat.pct(.99)))}
	})
	b.add(secThroughput, func() row {
		return row{name: fmt.Sprintf("Ours: sustained sends, %d store.SendMessage callers → %d rooms", n, n),
			p50: fmt.Sprintf("%.0f /s", rate(viaStore)), p99: "—", r50: ratioF(rate(viaStore), rate(floor)), r99: "—",
			notes: fmt.Sprintf("p50 column is the rate, ratio = ours / floor D; svc.Store.SendMessage straight on the pool (the send minus HTTP); %s; each call %s p50 / %s p99",
				how, ms(viaStore.lat.pct(.5)), ms(viaStore.lat.pct(.99)))}
	})
	return nil
}

// runConcurrent runs op in n goroutines for d after a short warm-up and
// returns how many operations started within d and each one's latency.
func runConcurrent(ctx context.Context, n int, d time.Duration, op func(ctx context.Context, i, seq int) error) (int, dist, error) {
	const warm = 100 * time.Millisecond
	start := time.Now()
	from, until := start.Add(warm), start.Add(warm+d)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lat   dist
		count int
		first error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine dist
			for seq := 0; ; seq++ {
				t0 := time.Now()
				if !t0.Before(until) || ctx.Err() != nil {
					break
				}
				if err := op(ctx, i, seq); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				if t0.After(from) {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			count += len(mine)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, nil, first
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	return count, lat, nil
}
