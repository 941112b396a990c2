package notify_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// wait bounds every wait in these tests. It only matters when something is
// truly broken, so it is generous enough for a loaded machine.
const wait = 60 * time.Second

type fixture struct {
	pool   *pgxpool.Pool
	hub    *notify.Hub
	prefix string // channel names are database-wide: keep each test's apart
}

// start runs a hub on a schema of its own.
func start(t *testing.T, opt notify.Options) *fixture {
	t.Helper()
	d := pgtest.NewEmpty(t)
	return run(t, d, db.Connector(d.Pool), opt)
}

// run runs a hub that connects with connect until the test ends. Unless the
// test sets one, commands get a deadline a loaded machine cannot miss, so
// that no reconnect rings a subscriber the test expects to stay quiet.
func run(t *testing.T, d *pgtest.DB, connect notify.Connector, opt notify.Options) *fixture {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Timeout == 0 {
		opt.Timeout = wait
	}
	hub := notify.New(connect, opt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	return &fixture{pool: d.Pool, hub: hub, prefix: d.Schema + "_"}
}

func (f *fixture) notify(t *testing.T, channel string) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), `SELECT pg_notify($1, '')`, channel); err != nil {
		t.Fatal(err)
	}
}

// subscribe subscribes to channel, and takes off the ring a subscriber gets
// when it arrives as the hub connects, so the next ring means something.
func (f *fixture) subscribe(t *testing.T, channel string) *notify.Subscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := f.hub.Subscribe(ctx, channel)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", channel, err)
	}
	t.Cleanup(s.Close)
	quiet(s)
	return s
}

// rang reports whether s is rung within the given time: pass wait to check
// it is rung, or a short time to check it stays quiet.
func rang(s *notify.Subscription, within time.Duration) bool {
	select {
	case <-s.C():
		return true
	case <-time.After(within):
		return false
	}
}

// quiet takes a pending ring off s. Subscribe returns after the hub rang
// the subscribers of a connection that is new, so none comes later.
func quiet(s *notify.Subscription) {
	select {
	case <-s.C():
	default:
	}
}

// eventually waits for cond, failing the test after wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNotificationReachesOnlyItsChannel(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	a1, a2 := f.subscribe(t, f.prefix+"a"), f.subscribe(t, f.prefix+"a")
	b := f.subscribe(t, f.prefix+"b")
	// A quoted identifier may hold any character: such names must work too.
	odd := f.subscribe(t, f.prefix+`Odd "Name"; DROP`)

	f.notify(t, f.prefix+"a")
	if !rang(a1, wait) || !rang(a2, wait) {
		t.Fatal("a subscriber of channel a was not rung")
	}
	if rang(b, 200*time.Millisecond) || rang(odd, 0) {
		t.Error("a notification on a rang another channel's subscriber")
	}
	f.notify(t, f.prefix+`Odd "Name"; DROP`)
	if !rang(odd, wait) {
		t.Error("the subscriber of an oddly named channel was not rung")
	}
	if st := f.hub.Stats(); st.Channels != 3 || st.Subscribers != 4 || st.Listening != 3 || st.Notifications < 2 {
		t.Errorf("Stats = %+v, want 3 channels, 4 subscribers, 3 listening, ≥2 notifications", st)
	}
}

func TestListenOnFirstUnlistenAfterLast(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	ch := f.prefix + "c"
	s1 := f.subscribe(t, ch)
	s2 := f.subscribe(t, ch)
	if st := f.hub.Stats(); st.Listening != 1 || st.Subscribers != 2 {
		t.Fatalf("after two subscribers Stats = %+v, want 1 channel listened", st)
	}
	s1.Close()
	s1.Close() // idempotent
	f.notify(t, ch)
	if !rang(s2, wait) {
		t.Fatal("remaining subscriber not rung after the other left")
	}
	s2.Close()
	eventually(t, "UNLISTEN after the last subscriber", func() bool {
		st := f.hub.Stats()
		return st.Listening == 0 && st.Channels == 0 && st.Subscribers == 0
	})
	// Coming back LISTENs again.
	s3 := f.subscribe(t, ch)
	f.notify(t, ch)
	if !rang(s3, wait) {
		t.Fatal("a new subscriber after UNLISTEN was not rung")
	}
}

// A crowd that one ring woke closes at once (no lock held between them),
// while others subscribe and close on the same channel: the channel stays
// listened as long as anyone is on it, and goes when the last one leaves.
func TestCrowdClosesWhileOthersSubscribe(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	ch := f.prefix + "crowd"
	stays := f.subscribe(t, ch)
	const n = 200
	crowd := make([]*notify.Subscription, n)
	for i := range crowd {
		crowd[i] = f.subscribe(t, ch)
	}
	f.notify(t, ch)
	var wg sync.WaitGroup
	for _, s := range crowd {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if rang(s, wait) {
				s.Close()
			}
		}()
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if other, err := f.hub.Subscribe(ctx, ch); err == nil {
				other.Close()
			}
		}()
	}
	wg.Wait()
	if st := f.hub.Stats(); st.Subscribers != 1 || st.Channels != 1 {
		t.Fatalf("after the crowd left Stats = %+v; want the one that stayed", st)
	}
	quiet(stays)
	f.notify(t, ch)
	if !rang(stays, wait) {
		t.Fatal("the subscriber that stayed was not rung after the crowd left")
	}
	stays.Close()
	eventually(t, "UNLISTEN after the last subscriber", func() bool {
		st := f.hub.Stats()
		return st.Listening == 0 && st.Channels == 0 && st.Subscribers == 0
	})
}

// One subscription on several channels is rung by each of them, and its
// Close leaves a channel another subscriber still holds.
func TestSubscribeAllRingsForEveryChannel(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	a, b := f.prefix+"a", f.prefix+"b"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	both, err := f.hub.SubscribeAll(ctx, a, b, a)
	if err != nil {
		t.Fatal(err)
	}
	quiet(both)
	onlyB := f.subscribe(t, b)
	for _, ch := range []string{a, b} {
		f.notify(t, ch)
		if !rang(both, wait) {
			t.Fatalf("a notification on %s did not ring the subscription to both", ch)
		}
	}
	if st := f.hub.Stats(); st.Channels != 2 || st.Subscribers != 3 || st.Listening != 2 {
		t.Errorf("Stats = %+v, want 2 channels, 3 subscribers (one per channel held), 2 listening", st)
	}
	both.Close()
	eventually(t, "UNLISTEN of the channel nobody holds", func() bool {
		st := f.hub.Stats()
		return st.Channels == 1 && st.Listening == 1 && st.Subscribers == 1
	})
	quiet(onlyB)
	f.notify(t, b)
	if !rang(onlyB, wait) {
		t.Error("the other subscriber of b was not rung after the shared subscription closed")
	}
}

func TestReconnectRingsEverySubscriberAndListensAgain(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{MinBackoff: 10 * time.Millisecond})
	subs := []*notify.Subscription{f.subscribe(t, f.prefix+"x"), f.subscribe(t, f.prefix+"y")}
	pid := f.hub.Stats().BackendPID
	if pid == 0 {
		t.Fatal("no backend pid while connected")
	}
	var killed bool
	if err := f.pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, killed, err)
	}
	// Anything sent while the listener was away rang nobody, so every
	// subscriber is rung once the listener is back.
	for i, s := range subs {
		if !rang(s, wait) {
			t.Fatalf("subscriber %d not rung after the reconnect", i)
		}
	}
	eventually(t, "re-LISTEN on the new connection", func() bool {
		st := f.hub.Stats()
		return st.Listening == 2 && st.BackendPID != 0 && st.BackendPID != pid && st.Reconnects >= 1
	})
	f.notify(t, f.prefix+"y")
	if !rang(subs[1], wait) {
		t.Fatal("notification after the reconnect not delivered")
	}
}

func TestSubscribeGivesUpWhenNotListening(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	hub := notify.New(db.Connector(d.Pool), notify.Options{}) // never Run
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := hub.Subscribe(ctx, "nobody"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe on a hub that is not running = %v, want deadline exceeded", err)
	}
	if st := hub.Stats(); st.Subscribers != 0 || st.Channels != 0 {
		t.Errorf("a failed Subscribe left %+v behind", st)
	}
}

func TestIdlePingKeepsDelivering(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{PingInterval: 20 * time.Millisecond})
	s := f.subscribe(t, f.prefix+"idle")
	eventually(t, "several idle checks", func() bool { return f.hub.Stats().IdleChecks >= 3 })
	f.notify(t, f.prefix+"idle")
	if !rang(s, wait) {
		t.Fatal("not rung after idle pings")
	}
	if st := f.hub.Stats(); st.Reconnects != 0 {
		t.Errorf("idle pings caused %d reconnects, want 0", st.Reconnects)
	}
}

func TestIdleCheckReportsQueueUsage(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{PingInterval: 20 * time.Millisecond})
	ctx := context.Background()
	// A session that LISTENs and sits in an open transaction reads nothing,
	// so the server's queue keeps what is sent meanwhile.
	stuck, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Release()
	ch := f.prefix + "stuck"
	if _, err := stuck.Exec(ctx, `LISTEN `+ch); err != nil {
		t.Fatal(err)
	}
	if _, err := stuck.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = stuck.Exec(ctx, `ROLLBACK`)
		_, _ = stuck.Exec(ctx, `UNLISTEN *`)
	}()
	if _, err := f.pool.Exec(ctx, `SELECT pg_notify($1, repeat('x', 1000) || g) FROM generate_series(1, 2000) g`, ch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the idle check to see a non-empty queue", func() bool { return f.hub.Stats().QueueUsage > 0 })
	if u := f.hub.Stats().QueueUsage; u > 1 {
		t.Errorf("QueueUsage = %v, want a fraction", u)
	}
}

func TestManySubscribersChurn(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	// Subscribing and leaving from many goroutines at once must leave the
	// hub consistent: every channel still subscribed is listened.
	const n = 200
	errs := make(chan error, n)
	keep := make(chan *notify.Subscription, n)
	for i := range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			s, err := f.hub.Subscribe(ctx, f.prefix+string(rune('a'+i%10)))
			if err != nil {
				errs <- err
				return
			}
			if i%2 == 0 {
				s.Close()
				errs <- nil
				return
			}
			keep <- s
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(keep)
	var kept []*notify.Subscription
	for s := range keep {
		kept = append(kept, s)
		t.Cleanup(s.Close)
	}
	eventually(t, "a consistent channel set", func() bool {
		st := f.hub.Stats()
		return st.Subscribers == len(kept) && st.Listening == st.Channels
	})
	for i := range 10 {
		f.notify(t, f.prefix+string(rune('a'+i)))
	}
	for i, s := range kept {
		if !rang(s, wait) {
			t.Fatalf("kept subscriber %d not rung", i)
		}
	}
}

func TestSilentConnectionIsReplaced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opt  notify.Options
		// newSubscriber arrives after the connection went silent, so the
		// hub's LISTEN gets no answer.
		newSubscriber bool
		// holdNew: new connections are black-holed too until the hub has
		// given up on one, as when a server accepts TCP but never answers.
		holdNew bool
	}{
		{name: "idle", opt: notify.Options{PingInterval: 100 * time.Millisecond, Timeout: time.Second}},
		{name: "LISTEN unanswered", newSubscriber: true,
			// Only the LISTEN's deadline can notice: no idle check runs.
			opt: notify.Options{PingInterval: time.Hour, Timeout: time.Second}},
		{name: "connect unanswered", holdNew: true,
			opt: notify.Options{PingInterval: 100 * time.Millisecond, Timeout: time.Second, ConnectTimeout: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.opt.MinBackoff, tt.opt.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
			d := pgtest.NewEmpty(t)
			p := newProxy(t, d.Pool.Config().ConnConfig)
			var connects atomic.Int64
			f := run(t, d, func(ctx context.Context) (*pgx.Conn, error) {
				connects.Add(1)
				return p.connect(ctx)
			}, tt.opt)
			old := f.subscribe(t, f.prefix+"old")
			pid := f.hub.Stats().BackendPID

			p.holdNew(tt.holdNew)
			attempts := connects.Load()
			p.freeze()
			if tt.holdNew {
				// A second attempt means the first one, unanswered, was given up.
				eventually(t, "two connection attempts after the freeze", func() bool { return connects.Load() >= attempts+2 })
				p.holdNew(false)
			}
			latest, channel := old, f.prefix+"old"
			if tt.newSubscriber {
				channel = f.prefix + "new"
				latest = f.subscribe(t, channel)
			}
			if !rang(old, wait) {
				t.Fatal("the subscriber was not rung after its connection went silent")
			}
			eventually(t, "a new listener connection", func() bool {
				st := f.hub.Stats()
				return st.BackendPID != 0 && st.BackendPID != pid && st.Reconnects >= 1 && st.Listening == st.Channels
			})
			f.notify(t, channel)
			if !rang(latest, wait) {
				t.Fatal("a notification after the reconnect was not delivered")
			}
		})
	}
}

// proxy forwards TCP connections to the test database. It can freeze the
// open ones: they stop carrying bytes either way but stay open, as a
// partition or a failover without RST leaves a connection.
type proxy struct {
	cfg *pgx.ConnConfig
	ln  net.Listener

	mu     sync.Mutex
	links  []*link
	conns  []net.Conn // every socket, closed when the test ends
	closed bool       // the test ended
	hold   bool       // new connections start frozen
}

type link struct {
	mu     sync.Mutex
	frozen bool
}

func newProxy(t *testing.T, cfg *pgx.ConnConfig) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{cfg: cfg, ln: ln}
	network, address := pgconn.NetworkAddress(cfg.Host, cfg.Port)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.track(c) {
				return
			}
			l := &link{}
			p.mu.Lock()
			l.frozen = p.hold
			p.links = append(p.links, l)
			p.mu.Unlock()
			if l.frozen {
				continue // accepted, and never answered
			}
			up, err := net.Dial(network, address)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(up) {
				return
			}
			wg.Go(func() { l.pipe(up, c) })
			wg.Go(func() { l.pipe(c, up) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// track records c to be closed when the test ends, or closes it now if the
// test has ended.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

// connect opens a connection to the database through the proxy.
func (p *proxy) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg := p.cfg.Copy()
	cfg.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", p.ln.Addr().String())
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// freeze black-holes every open connection; once it returns not a byte
// more passes.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.mu.Lock()
		l.frozen = true
		l.mu.Unlock()
	}
}

// holdNew sets whether connections opened from now on are black-holed.
func (p *proxy) holdNew(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = on
}

// pipe copies src to dst until either closes or the link freezes; a frozen
// link drops what it reads and leaves both ends open.
func (l *link) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		l.mu.Lock()
		if l.frozen {
			l.mu.Unlock()
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); err == nil {
				err = werr
			}
		}
		l.mu.Unlock()
		if err != nil {
			src.Close()
			dst.Close()
			return
		}
	}
}

// SubscribeListened subscribes only where the listener is on every
// channel already, costing it nothing, and is rung as Subscribe is.
func TestSubscribeListenedOnlyWhereListened(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	a, b := f.prefix+"a", f.prefix+"b"
	if s := f.hub.SubscribeListened(a); s != nil {
		s.Close()
		t.Fatal("SubscribeListened subscribed to a channel nobody listens on")
	}
	f.subscribe(t, a)
	if s := f.hub.SubscribeListened(a, b); s != nil {
		s.Close()
		t.Fatal("SubscribeListened subscribed when one of its channels is not listened")
	}
	if st := f.hub.Stats(); st.Channels != 1 || st.Subscribers != 1 {
		t.Fatalf("after refused SubscribeListened Stats = %+v, want the one channel and subscriber there were", st)
	}
	s := f.hub.SubscribeListened(a, a)
	if s == nil {
		t.Fatal("SubscribeListened refused a channel the listener is on")
	}
	defer s.Close()
	if st := f.hub.Stats(); st.Subscribers != 2 {
		t.Errorf("Stats = %+v, want 2 subscribers (a name given twice counts once)", st)
	}
	f.notify(t, a)
	if !rang(s, wait) {
		t.Error("a SubscribeListened subscriber was not rung")
	}
}

// TestWaitedWhileSubscribed: a channel is waited on while it has a
// subscriber, by Subscribe or SubscribeListened, and not once the last
// has left, though it lingers listened.
func TestWaitedWhileSubscribed(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{Linger: time.Hour})
	a, b := f.prefix+"a", f.prefix+"b"
	if f.hub.Waited(a) {
		t.Error("a channel nobody subscribed to is waited on")
	}
	first := f.subscribe(t, a)
	second := f.hub.SubscribeListened(a)
	if second == nil {
		t.Fatal("SubscribeListened refused a listened channel")
	}
	for _, c := range []struct {
		what    string
		close   *notify.Subscription
		waitedA bool
	}{
		{"two subscribers", nil, true},
		{"the first gone", first, true},
		{"both gone, lingering", second, false},
	} {
		if c.close != nil {
			c.close.Close()
		}
		if got := f.hub.Waited(a); got != c.waitedA {
			t.Errorf("%s: Waited = %v, want %v", c.what, got, c.waitedA)
		}
		if f.hub.Waited(b) {
			t.Errorf("%s: another channel is waited on", c.what)
		}
	}
	if st := f.hub.Stats(); st.Lingering != 1 {
		t.Errorf("Stats = %+v, want the channel lingering", st)
	}
}

// TestHeardIsTheLastPayloadOnThisConnection: a subscription made where
// the listener is on its channel already reads the payload of the last
// notification heard there; one made where nothing was heard, or by
// SubscribeAll, reads ""; and a reconnect forgets what was heard, since
// what was sent meanwhile went unheard. Latest is the same payload as of
// now, for any subscription on the channel.
func TestHeardIsTheLastPayloadOnThisConnection(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{MinBackoff: 10 * time.Millisecond})
	a := f.prefix + "a"
	first := f.subscribe(t, a)
	heard := func() string {
		s := f.hub.SubscribeListened(a)
		if s == nil {
			t.Fatal("SubscribeListened refused a channel the listener is on")
		}
		defer s.Close()
		return s.Heard(a)
	}
	if got := heard(); got != "" {
		t.Errorf("Heard before any notification = %q, want \"\"", got)
	}
	for _, payload := range []string{"41", "42"} {
		if _, err := f.pool.Exec(context.Background(), `SELECT pg_notify($1, $2)`, a, payload); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Heard to be "+payload, func() bool { return heard() == payload })
		if got := first.Latest(a, echo); got != payload {
			t.Errorf("Latest after %s = %q", payload, got)
		}
	}
	if got := first.Heard(a); got != "" {
		t.Errorf("a SubscribeAll subscription's Heard = %q, want \"\"", got)
	}
	if got := first.Latest(f.prefix+"unsubscribed", echo); got != "" {
		t.Errorf("Latest of a channel the subscription is not on = %q, want \"\"", got)
	}
	pid := f.hub.Stats().BackendPID
	if _, err := f.pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "re-LISTEN on the new connection", func() bool {
		st := f.hub.Stats()
		return st.Listening == 1 && st.BackendPID != 0 && st.BackendPID != pid
	})
	if got := heard(); got != "" {
		t.Errorf("Heard after a reconnect = %q, want \"\"", got)
	}
	if got := first.Latest(a, echo); got != "" {
		t.Errorf("Latest after a reconnect = %q, want \"\"", got)
	}
}

// echo is a Latest read that makes nothing of the payload.
func echo(payload string) any { return payload }

// TestLatestReadsEachNotificationOnce: the subscribers a notification
// woke share what one read made of its payload, and the next
// notification is read anew.
func TestLatestReadsEachNotificationOnce(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{})
	a := f.prefix + "a"
	subs := make([]*notify.Subscription, 8)
	for i := range subs {
		subs[i] = f.subscribe(t, a)
	}
	var reads atomic.Int64
	read := func(payload string) any {
		reads.Add(1)
		return "read " + payload
	}
	for n, payload := range []string{"1", "2"} {
		if _, err := f.pool.Exec(context.Background(), `SELECT pg_notify($1, $2)`, a, payload); err != nil {
			t.Fatal(err)
		}
		for _, s := range subs {
			if !rang(s, wait) {
				t.Fatalf("notification %s rang no bell", payload)
			}
		}
		var wg sync.WaitGroup
		for _, s := range subs {
			wg.Go(func() {
				if got := s.Latest(a, read); got != "read "+payload {
					t.Errorf("Latest after %s = %v", payload, got)
				}
			})
		}
		wg.Wait()
		if got := reads.Load(); got != int64(n+1) {
			t.Errorf("after notification %s: %d reads of payloads, want %d", payload, got, n+1)
		}
	}
}

// TestLingerKeepsAChannelListened: with Linger, a channel whose last
// subscriber left stays LISTENed, so the next subscriber finds it
// listened at once, with what was heard there, and is rung.
func TestLingerKeepsAChannelListened(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{Linger: time.Hour}) // no sweep drops it while the test runs
	a := f.prefix + "a"
	f.subscribe(t, a).Close()
	if _, err := f.pool.Exec(context.Background(), `SELECT pg_notify($1, '7')`, a); err != nil {
		t.Fatal(err)
	}
	var s *notify.Subscription
	eventually(t, "the lingering channel to hear 7", func() bool {
		if s != nil {
			s.Close()
		}
		s = f.hub.SubscribeListened(a)
		return s != nil && s.Heard(a) == "7"
	})
	defer s.Close()
	if st := f.hub.Stats(); st.Channels != 1 || st.Lingering != 0 || st.Listening != 1 {
		t.Errorf("Stats with a subscriber back = %+v, want 1 channel, none lingering, 1 listened", st)
	}
	f.notify(t, a)
	if !rang(s, wait) {
		t.Fatal("a subscriber of a lingering channel was not rung")
	}
	s.Close()
	if st := f.hub.Stats(); st.Channels != 1 || st.Lingering != 1 || st.Listening != 1 || st.Subscribers != 0 {
		t.Errorf("Stats after the last close = %+v, want 1 channel kept, lingering, listened, no subscriber", st)
	}
}

// TestLingerEnds: a channel nobody comes back to is UNLISTENed once
// Linger has passed.
func TestLingerEnds(t *testing.T) {
	t.Parallel()
	f := start(t, notify.Options{Linger: 20 * time.Millisecond, PingInterval: 50 * time.Millisecond})
	f.subscribe(t, f.prefix+"a").Close()
	eventually(t, "the lingering channel to be UNLISTENed", func() bool {
		st := f.hub.Stats()
		return st.Listening == 0 && st.Lingering == 0 && st.Channels == 0
	})
	if s := f.hub.SubscribeListened(f.prefix + "a"); s != nil {
		s.Close()
		t.Error("SubscribeListened subscribed to a channel no longer listened")
	}
}
