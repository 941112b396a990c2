package notify_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/notify"
	"github.com/letagents/letagents-go/shared/pgtest"
)

type fixture struct {
	pool   *pgxpool.Pool
	hub    *notify.Hub
	prefix string // channel names are database-wide: keep each test's apart
}

func start(t *testing.T, opt notify.Options) *fixture {
	t.Helper()
	d := pgtest.NewEmpty(t)
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	hub := notify.New(db.Connector(d.Pool), opt)
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

func (f *fixture) subscribe(t *testing.T, channel string) *notify.Subscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := f.hub.Subscribe(ctx, channel)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", channel, err)
	}
	t.Cleanup(s.Close)
	return s
}

func rang(s *notify.Subscription, within time.Duration) bool {
	select {
	case <-s.C():
		return true
	case <-time.After(within):
		return false
	}
}

// eventually waits for cond, failing the test after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
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
	if !rang(a1, 5*time.Second) || !rang(a2, 5*time.Second) {
		t.Fatal("a subscriber of channel a was not rung")
	}
	if rang(b, 200*time.Millisecond) || rang(odd, 0) {
		t.Error("a notification on a rang another channel's subscriber")
	}
	f.notify(t, f.prefix+`Odd "Name"; DROP`)
	if !rang(odd, 5*time.Second) {
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
	if !rang(s2, 5*time.Second) {
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
	if !rang(s3, 5*time.Second) {
		t.Fatal("a new subscriber after UNLISTEN was not rung")
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
		if !rang(s, 10*time.Second) {
			t.Fatalf("subscriber %d not rung after the reconnect", i)
		}
	}
	eventually(t, "re-LISTEN on the new connection", func() bool {
		st := f.hub.Stats()
		return st.Listening == 2 && st.BackendPID != 0 && st.BackendPID != pid && st.Reconnects >= 1
	})
	f.notify(t, f.prefix+"y")
	if !rang(subs[1], 5*time.Second) {
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
	time.Sleep(150 * time.Millisecond) // several idle pings
	f.notify(t, f.prefix+"idle")
	if !rang(s, 5*time.Second) {
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
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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
		if !rang(s, 5*time.Second) {
			t.Fatalf("kept subscriber %d not rung", i)
		}
	}
}
