package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// throughput runs n concurrent senders for the configured time five ways:
// bare INSERT+NOTIFY statements on pgx (floor D), bare HTTP POSTs of a
// send's body that touch no database (floor G), HTTP POSTs to the
// service by an anonymous sender and by agents' worker sessions (an owner
// token and a session, as every agent sends), and store.SendMessage calls
// (the service minus HTTP). Beside each rate it counts the CPU per send of
// this process and of the run's database backends (cpuMeter): the rates
// share two cores with whatever else runs, the CPU a send costs less so.
// An HTTP send's CPU is also given less floor G's: the statement and what
// the service does around it, which is what a send could save.
// Floor D and the agents' sends also run with one sender: each send is
// then a statement and a commit of its own, as every send on Lambda is,
// where concurrent ones share a batch's; and, as there, the process runs
// on one processor meanwhile (lambdaapi's oneProcessor).
func (b *bench) throughput(ctx context.Context) error {
	n, d := b.opt.senders, b.opt.tpDur
	rooms := make([]string, n)
	workers := make([]http.Header, n)
	for i := range n {
		rooms[i] = fmt.Sprintf("bench-room-tp-%d", i)
		var err error
		if workers[i], err = b.agentHeaders(ctx, rooms[i], fmt.Sprintf("bench-tp-%d", i)); err != nil {
			return err
		}
	}
	type kind struct {
		senders int
		procs   int // GOMAXPROCS while it runs; 0 leaves it
		count   int
		all     int // ops run, warm-up included: what the CPU was spent on
		time    time.Duration
		cpu     time.Duration
		cpuOK   bool
		lat     dist
		op      func(ctx context.Context, i, seq int) error
	}
	floorOp := func(ctx context.Context, i, seq int) error {
		_, err := b.pool.Exec(ctx, floorSQL, seq, b.floorChannel(100+i))
		return err
	}
	workerOp := func(ctx context.Context, i, seq int) error {
		return sendWith(ctx, b.client, b.srv.URL, rooms[i], fmt.Sprintf("throughput %d", seq), workers[i])
	}
	bare := httptest.NewServer(bareSends())
	defer bare.Close()
	floor := &kind{senders: n, op: floorOp}
	floorG := &kind{senders: n, op: func(ctx context.Context, i, seq int) error {
		return send(ctx, b.client, bare.URL, rooms[i], fmt.Sprintf("throughput %d", seq))
	}}
	viaHTTP := &kind{senders: n, op: func(ctx context.Context, i, seq int) error {
		return send(ctx, b.client, b.srv.URL, rooms[i], fmt.Sprintf("throughput %d", seq))
	}}
	viaWorker := &kind{senders: n, op: workerOp}
	viaStore := &kind{senders: n, op: func(ctx context.Context, i, seq int) error {
		_, _, err := b.svc.Store.SendMessage(ctx, letagents.NewMessage{RoomID: rooms[i], Sender: "bench", Text: fmt.Sprintf("throughput %d", seq)})
		return err
	}}
	floorAlone, workerAlone := &kind{senders: 1, procs: 1, op: floorOp}, &kind{senders: 1, procs: 1, op: workerOp}
	meter := cpuMeter{admin: b.pool, app: b.schema, pids: []int{os.Getpid()}}
	// Rounds alternate the kinds, so a slow moment of the machine falls on
	// all of them alike.
	rounds := 5
	if b.opt.quick {
		rounds = 2
	}
	kinds := []*kind{floor, floorG, viaHTTP, viaWorker, viaStore, floorAlone, workerAlone}
	for _, k := range kinds {
		k.cpuOK = true
	}
	for r := range rounds {
		for _, k := range kinds {
			procs := runtime.GOMAXPROCS(k.procs)
			c0, ok0 := meter.sample(ctx)
			count, all, lat, err := runConcurrent(ctx, k.senders, d/time.Duration(rounds), k.op)
			c1, ok1 := meter.sample(ctx)
			runtime.GOMAXPROCS(procs)
			if err != nil {
				return fmt.Errorf("round %d: %w", r, err)
			}
			k.cpu, k.cpuOK = k.cpu+c1-c0, k.cpuOK && ok0 && ok1
			k.count, k.all = k.count+count, k.all+all
			k.time += d / time.Duration(rounds)
			k.lat = append(k.lat, lat...)
		}
	}
	if b.opt.sendProf != "" {
		if err := b.profileSends(ctx, n, d, viaWorker.op); err != nil {
			return err
		}
	}
	rate := func(k *kind) float64 { return float64(k.count) / k.time.Seconds() }
	// The CPU was spent on the warm-up's sends too, so it is divided by
	// every send run.
	cpuEach := func(k *kind) time.Duration { return k.cpu / time.Duration(max(1, k.all)) }
	progress("throughput: floor %.0f/s, HTTP %.0f/s, worker %.0f/s, store %.0f/s; CPU per send floor %s, HTTP %s, worker %s, store %s; one at a time floor %s, worker %s",
		rate(floor), rate(viaHTTP), rate(viaWorker), rate(viaStore), ms(cpuEach(floor)), ms(cpuEach(viaHTTP)), ms(cpuEach(viaWorker)), ms(cpuEach(viaStore)),
		ms(cpuEach(floorAlone)), ms(cpuEach(workerAlone)))
	how := fmt.Sprintf("%s in all, in %d rounds alternating with the other throughput rows", d, rounds)
	b.add(secThroughput, func() row {
		return row{name: fmt.Sprintf("**Floor D**: bare INSERT+NOTIFY statements, %d concurrent conns", n),
			p50: fmt.Sprintf("%.0f /s", rate(floor)), p99: "—", r50: "1×", r99: "—",
			notes: fmt.Sprintf("p50 column is the rate; %s; on the pool, one channel per sender; each statement %s p50 / %s p99", how, ms(floor.lat.pct(.5)), ms(floor.lat.pct(.99)))}
	})
	for _, k := range []struct {
		*kind
		name, how string
	}{
		{viaHTTP, fmt.Sprintf("Ours: sustained sends, %d anonymous HTTP POST senders → %d rooms", n, n),
			"POST /rooms/{room}/messages over keep-alive HTTP with no credential, sender i → room i, no waiters parked"},
		{viaWorker, fmt.Sprintf("Ours: sustained sends, %d agents' HTTP POSTs (owner token + worker session) → %d rooms", n, n),
			"as the row above, each with its owner's bearer token and its worker session's headers, as an agent sends"},
		{viaStore, fmt.Sprintf("Ours: sustained sends, %d store.SendMessage callers → %d rooms", n, n),
			"svc.Store.SendMessage straight on the pool (the send minus HTTP, rate limit and sender checks)"},
	} {
		b.add(secThroughput, func() row {
			return row{name: k.name, p50: fmt.Sprintf("%.0f /s", rate(k.kind)), p99: "—", r50: ratioF(rate(k.kind), rate(floor)), r99: "—",
				notes: fmt.Sprintf("p50 column is the rate, ratio = ours / floor D; %s; %s; each %s p50 / %s p99",
					k.how, how, ms(k.lat.pct(.5)), ms(k.lat.pct(.99)))}
		})
	}
	type against struct {
		*kind
		name string
	}
	d0, d1 := against{floor, "floor D"}, against{floorAlone, "floor D1"}
	for _, k := range []struct {
		*kind
		name  string
		floor against
	}{
		{floor, "**Floor D**: CPU per bare INSERT+NOTIFY", d0},
		{floorG, "**Floor G**: CPU per bare HTTP POST of a send's body (decoded, a message's JSON answered, no database)", d0},
		{viaHTTP, "Ours: CPU per anonymous HTTP send", d0},
		{viaWorker, "Ours: CPU per agent's HTTP send (owner token + worker session)", d0},
		{viaStore, "Ours: CPU per store.SendMessage", d0},
		{floorAlone, "**Floor D1**: CPU per bare INSERT+NOTIFY, one sender, the process on one processor", d1},
		{workerAlone, "Ours: CPU per agent's HTTP send, one sender, the process on one processor (each its own statement and commit, and GOMAXPROCS 1, as on Lambda)", d1},
	} {
		b.add(secThroughput, func() row {
			r := row{name: k.name, p50: cpuPer(k.cpu, k.cpuOK, k.all), p99: "—", r50: "—", r99: "—",
				notes: "p50 column is CPU time per send of this process (client and server) and of the run's database backends (by application_name, from /proc), over the rows above' rounds; ratio = ours / " + k.floor.name + "'s"}
			if k.cpuOK && k.floor.cpuOK {
				r.r50 = ratio(cpuEach(k.kind), cpuEach(k.floor.kind))
			}
			return r
		})
	}
	for _, k := range []struct {
		*kind
		name string
	}{
		{viaHTTP, "Ours: CPU per anonymous HTTP send, less floor G's"},
		{viaWorker, "Ours: CPU per agent's HTTP send, less floor G's"},
	} {
		b.add(secThroughput, func() row {
			r := row{name: k.name, p50: "—", p99: "—", r50: "—", r99: "—",
				notes: "p50 column is the row's CPU per send less floor G's: what the send costs beyond the HTTP and JSON any send over HTTP spends; ratio = that / floor D's"}
			if k.cpuOK && floorG.cpuOK && floor.cpuOK {
				beyond := cpuEach(k.kind) - cpuEach(floorG)
				r.p50, r.r50 = ms(beyond), ratio(beyond, cpuEach(floor))
			}
			return r
		})
	}
	return nil
}

// bareSends answers POST /rooms/{room}/messages as a send does over HTTP
// and JSON alone: the body decoded, a message's fields answered with 201,
// nothing stored. What it costs this process (server and client) is what
// any send over HTTP costs before it does anything.
func bareSends() http.Handler {
	var seq atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rooms/{room}/messages", func(w http.ResponseWriter, r *http.Request) {
		var in wire.SendMessage
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := seq.Add(1)
		out := wire.Message{ID: letagents.MessageID(n), RoomID: r.PathValue("room"), Sender: in.Sender, Text: in.Text,
			Timestamp: letagents.FormatTime(time.Now()), ThreadRootID: letagents.MessageID(n)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}

// runConcurrent runs op in n goroutines for d after a short warm-up and
// returns how many operations started within d, how many ran in all (the
// warm-up's too) and each one's latency.
func runConcurrent(ctx context.Context, n int, d time.Duration, op func(ctx context.Context, i, seq int) error) (int, int, dist, error) {
	const warm = 100 * time.Millisecond
	start := time.Now()
	from, until := start.Add(warm), start.Add(warm+d)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lat   dist
		count int
		all   int
		first error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine dist
			ran := 0
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
				ran++
				if t0.After(from) {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			count += len(mine)
			all += ran
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, 0, nil, first
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, nil, err
	}
	return count, all, lat, nil
}

// profileSends runs op as the throughput rows do, for d, under a CPU
// profile of this process (client and server) written to -sendprofile,
// and prints the statements the database ran meanwhile by their time,
// when pg_stat_statements is loaded there (shared_preload_libraries): the
// server's side of the same sends.
func (b *bench) profileSends(ctx context.Context, n int, d time.Duration, op func(ctx context.Context, i, seq int) error) error {
	f, err := os.Create(b.opt.sendProf)
	if err != nil {
		return err
	}
	defer f.Close()
	_, statErr := b.pool.Exec(ctx, `SELECT public.pg_stat_statements_reset()`)
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	count, _, _, err := runConcurrent(ctx, n, d, op)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	progress("send profile: %d agents' sends in %s written to %s", count, d, b.opt.sendProf)
	if statErr != nil {
		progress("send profile: no pg_stat_statements (%v)", statErr)
		return nil
	}
	rows, err := b.pool.Query(ctx, `
		SELECT calls, total_exec_time, total_plan_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
		FROM public.pg_stat_statements WHERE calls > 0 ORDER BY total_exec_time + total_plan_time DESC LIMIT 12`)
	if err != nil {
		return fmt.Errorf("read pg_stat_statements: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var calls, nrows int64
		var exec, plan float64
		var query string
		if err := rows.Scan(&calls, &exec, &plan, &nrows, &query); err != nil {
			return err
		}
		progress("statement: %d calls, %.3f ms exec + %.3f ms plan each, %d rows: %s", calls, exec/float64(calls), plan/float64(calls), nrows, query)
	}
	return rows.Err()
}
