package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/localdev/anchorproc"
)

// The side-by-side rows (ANCHOR_DIR set to a built checkout of the
// original, as make compat takes it: `node dist/api/migrate.js` and `node
// dist/api/server.js` with DB_URL and PORT) run the same client against
// our service and the original's, in turn, and print each figure of ours
// with its ratio to the original's. The bench builds nothing of the
// original's: without ANCHOR_DIR these rows are left out.
const anchorEnv = "ANCHOR_DIR"

// target is a server the side-by-side rows run against.
type target struct {
	name string
	base string
	// cpu is the CPU spent so far by the server and its database
	// backends (and this process, the client, which both rows share).
	cpu func(ctx context.Context) (time.Duration, bool)
}

// vsFigures are a target's side-by-side figures.
type vsFigures struct {
	sendRate          float64
	sendCPU           time.Duration
	sendCPUOK         bool
	wake1, wake100    dist
	wake1000, readLat dist
	// missed counts, by case, the waiters a burst left unanswered within
	// iterationTimeout (the case stops there); early those that answered
	// before the burst was sent (a server that did not hold the poll),
	// which are not timed.
	missed, early [3]int
}

// sideBySide starts the original from ANCHOR_DIR on a database of its own
// and runs the side-by-side cases against it and against ours.
func (b *bench) sideBySide(ctx context.Context) error {
	dir := os.Getenv(anchorEnv)
	if dir == "" {
		return nil
	}
	anchor, stop, err := b.startAnchor(ctx, dir)
	if err != nil {
		return fmt.Errorf("the original in %s: %w", dir, err)
	}
	defer stop()
	ours := target{name: "ours", base: b.srv.URL,
		cpu: cpuMeter{admin: b.pool, app: b.schema, pids: []int{os.Getpid()}}.sample}
	var figs [2]vsFigures
	for i, t := range []target{ours, anchor} {
		progress("side by side: %s", t.name)
		if figs[i], err = b.vsRun(ctx, t); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	o, a := figs[0], figs[1]
	// Both servers read again, alternating, over the rooms each one's
	// bursts wrote: the read row's ratio without the minutes between.
	var bursts [2][]string
	for k, t := range []target{ours, anchor} {
		for i := range vsReadRooms {
			bursts[k] = append(bursts[k], vsRoom(t.name, i))
		}
	}
	// The 1-waiter case's sends each follow vsSettle(1) of quiet, and on
	// this kind of machine the first statement after a second of it is
	// slower than after idleGap: its floor is sampled after the same.
	qf, qs, _, err := b.floorA(ctx, vsQuietFloors, vsSettle(1))
	if err != nil {
		return fmt.Errorf("floor A after %s of quiet: %w", vsSettle(1), err)
	}
	rc := &http.Client{Transport: vsTransport()}
	defer rc.CloseIdleConnections()
	alt, err := vsReadsAlternating(rc, [2]string{ours.base, anchor.base}, bursts, vsReadsEach)
	if err != nil {
		return fmt.Errorf("alternating reads: %w", err)
	}
	add := func(name, p50o, p50a, r string, notes string) {
		b.add(secVs, func() row {
			return row{name: name, p50: p50o, p99: p50a, r50: r, r99: "—", notes: notes}
		})
	}
	add("vs original: sends, 8 senders in 1 room", fmt.Sprintf("%.0f /s", o.sendRate), fmt.Sprintf("%.0f /s", a.sendRate),
		ratioF(o.sendRate, a.sendRate), "p50 column ours, p99 column the original's, ratio ours/original (higher is better here); anonymous POST /rooms/{room}/messages over keep-alive HTTP, 8 concurrent senders, 3 s each")
	if o.sendCPUOK && a.sendCPUOK {
		add("vs original: CPU per send (server, its backends and the client)", ms(o.sendCPU), ms(a.sendCPU), ratio(o.sendCPU, a.sendCPU),
			"p50 column ours, p99 column the original's, ratio ours/original; the original's is its node process and its backends by application_name")
	}
	for _, c := range []struct {
		name   string
		o, a   dist
		mo, ma int
		eo, ea int
		detail string
	}{
		{"vs original: send→wake p50, 1 waiter", o.wake1, a.wake1, o.missed[0], a.missed[0], o.early[0], a.early[0], quietNote(o.wake1, a.wake1, qf)},
		{"vs original: send→wake p50, 100 waiters in 100 rooms, 100 concurrent sends", o.wake100, a.wake100, o.missed[1], a.missed[1], o.early[1], a.early[1],
			"one send to each room at once"},
		{"vs original: send→wake p50, 1000 waiters in 100 rooms, 100 concurrent sends", o.wake1000, a.wake1000, o.missed[2], a.missed[2], o.early[2], a.early[2],
			"10 long-polls a room, one send to each room at once"},
		{"vs original: read of 50 messages right after the burst", o.readLat, a.readLat, 0, 0, 0, 0,
			"GET /rooms/{room}/messages?before=latest&limit=50 of a burst's rooms, one after another, as soon as the bursts are over"},
		{"vs original: read of 50 messages, the two servers' reads alternating", alt[0], alt[1], 0, 0, 0, 0,
			"the same reads of the same rooms once both have run, one of ours, one of the original's, in turn"},
	} {
		missed := ""
		if c.mo+c.ma > 0 {
			missed = fmt.Sprintf("; unanswered within %s, which ended the case: %d ours, %d the original's", iterationTimeout, c.mo, c.ma)
		}
		if c.eo+c.ea > 0 {
			missed += fmt.Sprintf("; answered before the send, so not timed (the poll was not held): %d ours, %d the original's", c.eo, c.ea)
		}
		p50 := func(d dist) string {
			if len(d) == 0 {
				return "—"
			}
			return ms(d.pct(.5))
		}
		r := "—"
		if len(c.o) > 0 && len(c.a) > 0 {
			r = ratio(c.o.pct(.5), c.a.pct(.5))
		}
		add(c.name, p50(c.o), p50(c.a), r,
			fmt.Sprintf("p50 column ours, p99 column the original's (both p50s), ratio ours/original; %s; n=%d / %d%s", c.detail, len(c.o), len(c.a), missed))
	}
	add(fmt.Sprintf("**Floor A after %s of quiet**: INSERT+NOTIFY → LISTEN wake (bare pgx)", vsSettle(1)), ms(qf.pct(.5)), "—", "1×",
		fmt.Sprintf("p50 column the floor of the 1-waiter row, sampled as floor A is (which follows %s of quiet) but after the quiet that row's sends follow; store.SendMessage after the same quiet, alternating with it, %s (%s it); n=%d each",
			idleGap, ms(qs.pct(.5)), ratio(qs.pct(.5), qf.pct(.5)), len(qf)))
	add("**Floor R**: GET /api/health of ours, in the same turns as the reads", ms(alt[2].pct(.5)), "—", "1×",
		fmt.Sprintf("p50 column floor R, which reads nothing: any request after the same idleness; ours' read of 50 in those turns %s it, the original's %s; n=%d",
			ratio(alt[0].pct(.5), alt[2].pct(.5)), ratio(alt[1].pct(.5), alt[2].pct(.5)), len(alt[2])))
	return nil
}

// vsRun runs the side-by-side cases against t.
func (b *bench) vsRun(ctx context.Context, t target) (vsFigures, error) {
	var f vsFigures
	client := &http.Client{Transport: vsTransport()}
	defer client.CloseIdleConnections()
	peers := &vsPeers{}
	defer peers.close()
	rooms := make([]string, 100)
	for i := range rooms {
		rooms[i] = vsRoom(t.name, i)
		if err := vsJoin(ctx, peers.client(i), t.base, rooms[i], i); err != nil {
			return f, err
		}
	}
	// Sends: 8 senders into one room.
	c0, ok0 := t.cpu(ctx)
	count, all, _, err := runConcurrent(ctx, 8, 3*time.Second, func(ctx context.Context, i, seq int) error {
		return vsSend(ctx, peers.client(i), t.base, rooms[0], fmt.Sprintf("sender %d says %d", i, seq), i)
	})
	if err != nil {
		return f, fmt.Errorf("sends: %w", err)
	}
	c1, ok1 := t.cpu(ctx)
	f.sendRate = float64(count) / 3
	f.sendCPU, f.sendCPUOK = (c1-c0)/time.Duration(max(1, all)), ok0 && ok1
	// One waiter, one send at a time.
	if f.wake1, f.missed[0], f.early[0], err = b.vsWake(ctx, client, peers, t.base, rooms[:1], 1, 30); err != nil {
		return f, fmt.Errorf("1 waiter: %w", err)
	}
	if f.wake100, f.missed[1], f.early[1], err = b.vsWake(ctx, client, peers, t.base, rooms, 1, 5); err != nil {
		return f, fmt.Errorf("100 waiters: %w", err)
	}
	if f.wake1000, f.missed[2], f.early[2], err = b.vsWake(ctx, client, peers, t.base, rooms, 10, 3); err != nil {
		return f, fmt.Errorf("1000 waiters: %w", err)
	}
	// The burst's rooms read at once, 20 of them five times over: twenty
	// samples' p50 moved by a third from run to run on a shared machine.
	for i := range vsReadsEach {
		d, err := vsRead(client, t.base, rooms[i%vsReadRooms])
		if err != nil {
			return f, err
		}
		f.readLat = append(f.readLat, d)
	}
	return f, nil
}

// vsReadsEach is how many reads each read row times of each server, over
// its first vsReadRooms rooms in turn.
const (
	vsReadsEach = 100
	vsReadRooms = 20
)

// vsRead times one read of room's newest 50 messages.
func vsRead(client *http.Client, base, room string) (time.Duration, error) {
	return vsGet(client, base+"/rooms/"+url.PathEscape(room)+"/messages?before=latest&limit=50")
}

// vsGet times a GET of u until its whole answer is read; an answer that
// is not a success is an error.
func vsGet(client *http.Client, u string) (time.Duration, error) {
	t0 := time.Now()
	resp, err := client.Get(u)
	if err != nil {
		return 0, err
	}
	if _, err := readAll(resp); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// vsReadsAlternating times n reads of each target's rooms, one of the
// first target's, then one of the second's, and so on. The read row
// right after each one's bursts times the two minutes apart, and on a
// shared machine a read moved by half from one minute to the next with
// nothing else running; alternated, both meet the same minute. Each turn
// ends with a GET of the first target's /api/health, which reads
// nothing (the third figure): floor R, what any request costs on this
// machine after the same idleness, which a read cannot go under.
func vsReadsAlternating(client *http.Client, bases [2]string, rooms [2][]string, n int) ([3]dist, error) {
	var out [3]dist
	for i := range n {
		for k := range 2 {
			d, err := vsRead(client, bases[k], rooms[k][i%len(rooms[k])])
			if err != nil {
				return out, err
			}
			out[k] = append(out[k], d)
		}
		d, err := vsGet(client, bases[0]+"/api/health")
		if err != nil {
			return out, err
		}
		out[2] = append(out[2], d)
	}
	return out, nil
}

// vsWake parks per long-polls in each room, then iters times sends one
// message to every room at once and times each waiter's answer from just
// before the sends. Nothing tells from outside whether the original's
// polls are parked yet, so on both servers alike the polls get a fixed
// time to settle before each burst (a poll not parked yet still gets the
// message, as backlog, so none is missed).
//
// A burst some waiters do not answer within iterationTimeout ends the
// case: what did answer is kept, and missed says how many did not. A
// waiter that answered before the sends (a server that answers a poll at
// once rather than hold it) is counted in early, not timed.
func (b *bench) vsWake(ctx context.Context, client *http.Client, peers *vsPeers, base string, rooms []string, per, iters int) (_ dist, missed, early int, _ error) {
	cursors := make([]int64, len(rooms))
	for i, r := range rooms {
		last, err := vsLast(ctx, client, base, r)
		if err != nil {
			return nil, 0, 0, err
		}
		cursors[i] = last
	}
	w := len(rooms) * per
	byRoom := make([][]int, len(rooms))
	cr := startCrowd(ctx, w, func(i int) pollFunc {
		r := i % len(rooms)
		byRoom[r] = append(byRoom[r], i)
		return pollRoom(client, base, rooms[r], cursors[r], nil)
	})
	defer func() {
		cr.stop()
		client.CloseIdleConnections()
	}()
	settle := vsSettle(w)
	var out dist
	for it := range iters {
		if err := sleepCtx(ctx, settle); err != nil {
			return nil, 0, 0, err
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(rooms))
		for i, r := range rooms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = vsSend(ctx, peers.client(i), base, r, fmt.Sprintf("burst %d", it), i)
			}()
		}
		lat, ids, err := cr.collect(ctx, w, t0, iterationTimeout)
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return nil, 0, 0, e
			}
		}
		for _, l := range lat {
			if l < 0 {
				early++
			} else {
				out = append(out, l)
			}
		}
		switch {
		case errors.Is(err, errTimeout):
			return out, w - len(lat), early, nil
		case err != nil:
			return nil, 0, 0, err
		}
		cr.release(ids)
	}
	return out, 0, early, nil
}

// quietNote details the 1-waiter row: its sends' quiet, and ours and a
// third of the original's p50 against qf, the floor after that quiet,
// for each that was timed.
func quietNote(ours, orig, qf dist) string {
	s := fmt.Sprintf("one long-poll, one send at a time after %s of quiet", vsSettle(1))
	if len(ours) > 0 {
		s += fmt.Sprintf("; ours %s the floor after the same quiet (below)", ratio(ours.pct(.5), qf.pct(.5)))
	}
	if len(orig) > 0 {
		s += fmt.Sprintf("; a third of the original's %s it", ratio(orig.pct(.5)/3, qf.pct(.5)))
	}
	return s
}

// vsSettle is the quiet before each burst of a side-by-side case with w
// waiters, for the original's polls to park: nothing tells from outside
// whether they have.
func vsSettle(w int) time.Duration { return time.Second + time.Duration(w)*time.Millisecond }

// vsQuietFloors is how many samples the floor after vsSettle(1) takes:
// each costs two of that quiet.
const vsQuietFloors = 12

// vsTransport is the side-by-side's HTTP transport. Node closes a
// keep-alive connection idle for 5 s, and a POST sent on it as it closes
// fails (Go does not send a POST again): it drops idle connections first.
func vsTransport() *http.Transport {
	tr := newTransport()
	tr.IdleConnTimeout = 4 * time.Second
	return tr
}

// vsRoom is the name of the side-by-side's room i on the target named
// name.
func vsRoom(name string, i int) string { return fmt.Sprintf("bench-vs-%s-%d", name, i) }

// vsClient is the address a side-by-side request says it comes from
// (X-Forwarded-For, which the original counts its rates by; ours counts
// by the peer and ignores it): one per room or sender, so that the
// original's join rate does not refuse the bench's setup.
func vsClient(i int) string { return fmt.Sprintf("10.23.%d.%d", i/250, 1+i%250) }

// vsPeers are the side-by-side's clients by number, client i connecting
// from a loopback address of its own (127.23.…, as vsClient's), so that
// ours, which counts rates by the peer, sees as many clients as the
// original does by X-Forwarded-For. With one address for all, the 100
// rooms' senders were one client to ours, whose sends take turns on its
// rate bucket's row: a burst from one machine, not from 100.
// A burst's senders ask for their clients at once, hence the lock.
type vsPeers struct {
	mu      sync.Mutex
	clients map[int]*http.Client
}

func (p *vsPeers) client(i int) *http.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[i]; ok {
		return c
	}
	tr := vsTransport()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 23, byte(i/250), byte(1+i%250))}}
	tr.DialContext = d.DialContext
	if p.clients == nil {
		p.clients = map[int]*http.Client{}
	}
	p.clients[i] = &http.Client{Transport: tr}
	return p.clients[i]
}

func (p *vsPeers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
}

func vsJoin(ctx context.Context, client *http.Client, base, room string, i int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rooms/"+url.PathEscape(room)+"/join", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", vsClient(i))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	if _, err := readAll(resp); err != nil {
		return fmt.Errorf("join %s: %w", room, err)
	}
	return nil
}

func vsSend(ctx context.Context, client *http.Client, base, room, text string, i int) error {
	return sendWith(ctx, client, base, room, text, http.Header{"X-Forwarded-For": {vsClient(i)}})
}

// vsLast is the number of a room's newest message, 0 for none.
func vsLast(ctx context.Context, client *http.Client, base, room string) (int64, error) {
	var page struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	if err := getJSON(ctx, client, base+"/rooms/"+url.PathEscape(room)+"/messages?before=latest&limit=1", &page); err != nil {
		return 0, err
	}
	if len(page.Messages) == 0 {
		return 0, nil
	}
	return strconv.ParseInt(strings.TrimPrefix(page.Messages[0].ID, "msg_"), 10, 64)
}

// startAnchor serves the original in dir on a database of its own (on the
// bench's server, dropped with the run), its backends named by
// application_name for the CPU meter.
func (b *bench) startAnchor(ctx context.Context, dir string) (target, func(), error) {
	var t target
	dbName := b.schema + "_anchor"
	admin, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return t, nil, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{dbName}.Sanitize()); err != nil {
		return t, nil, fmt.Errorf("create database: %w", err)
	}
	b.mu.Lock()
	b.extraDatabases = append(b.extraDatabases, dbName)
	b.mu.Unlock()
	u, err := url.Parse(b.dbURL)
	if err != nil {
		return t, nil, err
	}
	u.Path = "/" + dbName
	q := u.Query()
	q.Set("application_name", dbName)
	u.RawQuery = q.Encode()
	work, err := os.MkdirTemp("", "bench-anchor-")
	if err != nil {
		return t, nil, err
	}
	p, err := anchorproc.Start(ctx, dir, u.String(), work)
	if err != nil {
		return t, nil, err // work stays: the error names the log in it
	}
	stop := func() { p.Stop(); _ = os.RemoveAll(work) }
	t = target{name: "original", base: p.URL,
		cpu: cpuMeter{admin: b.pool, app: dbName, pids: []int{os.Getpid(), p.Pid()}}.sample}
	return t, stop, nil
}
