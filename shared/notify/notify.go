// Package notify owns the LISTEN side of PostgreSQL notifications for a
// long-running process: one dedicated connection that listens on the
// channels somebody is waiting on, and fans each notification out to them.
//
// A notification is a doorbell. Subscribers re-read what they want from
// the database when it rings, so a notification that is merged, missed or
// lost with a dropped connection costs a re-read, never a message: after a
// reconnect the hub rings every bell once, and forgets every payload. The
// hub keeps the last payload heard on each channel (Subscription.Heard,
// Latest); where the notifier says in it how far what it rings for has
// come, or what came, it can spare a subscriber its read.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Connector opens a fresh dedicated connection for the listener.
type Connector func(context.Context) (*pgx.Conn, error)

// Options tune a Hub; the zero value is usable.
//
// With the defaults a connection that goes silent (a partition, or a
// failover that sends no RST) is given up within PingInterval+Timeout, 8 s,
// when idle and within Timeout, 3 s, when a LISTEN or UNLISTEN is under way;
// the hub then reconnects and rings every subscriber.
type Options struct {
	// Logger receives connection errors (default: slog.Default()).
	Logger *slog.Logger
	// PingInterval is how long the listener may sit idle before it checks
	// the connection is still alive (default 5 s). A silent TCP peer would
	// otherwise go unnoticed until a notification failed to arrive.
	PingInterval time.Duration
	// Timeout bounds each command the listener sends (LISTEN, UNLISTEN, the
	// idle check; default 3 s). A command that outlives it means the
	// connection is dead, and the hub reconnects.
	Timeout time.Duration
	// ConnectTimeout bounds opening a connection (default 10 s), so a
	// server that accepts TCP but never answers does not stall the hub.
	ConnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnect attempts
	// (defaults 100 ms and 5 s); the wait doubles after each failure.
	MinBackoff, MaxBackoff time.Duration
	// Linger keeps a channel LISTENed for this long after its last
	// subscriber leaves (default 0: UNLISTEN at once), give or take
	// PingInterval: a long-poll answered comes back at once, and finds
	// its channel listened, with what was heard there (Heard), instead
	// of waiting for an UNLISTEN and a LISTEN.
	Linger time.Duration
}

// Hub multiplexes many subscribers over one listening connection. LISTEN is
// issued for a channel when its first subscriber arrives and UNLISTEN when
// its last one leaves, or Options.Linger after.
type Hub struct {
	connect Connector
	opt     Options

	mu       sync.Mutex
	channels map[string]*channel
	// changed names the channels gained or lost since the listener last
	// looked (all of them after a lost connection): it LISTENs and
	// UNLISTENs only those, not the thousands it already has, on each
	// pass, which is one notification.
	changed  map[string]struct{}
	kick     context.CancelFunc // interrupts the listener's wait, nil when it is not waiting
	listened int
	pid      uint32
	// lingering are the channels kept listened with no subscriber
	// (Options.Linger), by name; the listener sweeps them at sweepAt.
	lingering map[string]*channel
	sweepAt   time.Time

	reconnects    atomic.Int64
	notifications atomic.Int64
	idleChecks    atomic.Int64
	queueUsage    atomic.Uint64 // math.Float64bits of the last reading
}

// queueWarn is the share of the server's notification queue above which
// the hub warns: past 100% every NOTIFYing commit fails, and a listener
// that stops reading (a stuck poll process) is what fills it.
const queueWarn = 0.5

type channel struct {
	// subs (*Subscription keys) is added to under Hub.mu and taken from by
	// Close without it: a crowd that one ring woke closes at once, and
	// queued on one mutex the closes held each answer back (the mutex
	// profile's largest wait with 4,500 polls in a room). n counts it.
	subs      sync.Map
	n         atomic.Int64
	ready     chan struct{} // closed once LISTEN is in effect on the current connection
	listening bool
	// heard is the last notification the listener received on the
	// channel since it began to listen on the current connection (nil
	// when none): Subscription.Heard and Latest. It is written under
	// Hub.mu and read without it by every woken subscriber.
	heard atomic.Pointer[heard]
	// idle is when its last subscriber left, while it lingers.
	idle time.Time
}

// heard is a notification's payload, and what Subscription.Latest's read
// made of it, once.
type heard struct {
	payload string
	once    sync.Once
	value   any
}

// New returns a Hub that opens its connection with connect. Call Run to start it.
func New(connect Connector, opt Options) *Hub {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.PingInterval <= 0 {
		opt.PingInterval = 5 * time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 3 * time.Second
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = 10 * time.Second
	}
	if opt.MinBackoff <= 0 {
		opt.MinBackoff = 100 * time.Millisecond
	}
	if opt.MaxBackoff < opt.MinBackoff {
		opt.MaxBackoff = max(5*time.Second, opt.MinBackoff)
	}
	return &Hub{connect: connect, opt: opt, channels: map[string]*channel{}, changed: map[string]struct{}{},
		lingering: map[string]*channel{}}
}

// Subscription is one subscriber's doorbell on one or more channels.
type Subscription struct {
	hub   *Hub
	names []string
	chs   []*channel
	c     chan struct{}
	once  sync.Once
	heard []string // by channel, as SubscribeListened found them
}

// C receives a value (at most one pending) each time one of its channels
// is notified, and once after every reconnect of the listener.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Close ends the subscription; the last one on a channel makes the listener
// UNLISTEN it. Close is idempotent.
func (s *Subscription) Close() {
	s.once.Do(func() {
		emptied := false
		for _, ch := range s.chs {
			ch.subs.Delete(s)
			emptied = ch.n.Add(-1) == 0 || emptied
		}
		if !emptied {
			return
		}
		// A subscriber may have come since (it counts under the lock).
		h := s.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, ch := range s.chs {
			if ch.n.Load() != 0 || h.channels[s.names[i]] != ch {
				continue
			}
			if h.opt.Linger > 0 {
				ch.idle = time.Now()
				h.lingering[s.names[i]] = ch
			} else {
				h.dropLocked(s.names[i])
			}
		}
	})
}

// Subscribe registers a subscriber on channel and returns once the listener
// is LISTENing on it, so anything committed after Subscribe returns rings
// the bell. Read what you are waiting for only after that, or a notification
// could fall between the read and the LISTEN. It fails only when ctx ends
// first (for example while the listener is reconnecting).
func (h *Hub) Subscribe(ctx context.Context, name string) (*Subscription, error) {
	return h.SubscribeAll(ctx, name)
}

// SubscribeAll is Subscribe to several channels with one doorbell, which
// any of them rings: a waiter that wakes for any of a few causes holds
// one subscription rather than one each.
func (h *Hub) SubscribeAll(ctx context.Context, names ...string) (*Subscription, error) {
	s := &Subscription{hub: h, c: make(chan struct{}, 1)}
	readies := make([]chan struct{}, 0, len(names))
	h.mu.Lock()
	for _, name := range names {
		ch := h.channels[name]
		if ch == nil {
			ch = &channel{ready: make(chan struct{})}
			h.channels[name] = ch
			h.changedLocked(name)
		}
		if h.joinLocked(s, name, ch) {
			readies = append(readies, ch.ready)
		}
	}
	h.mu.Unlock()

	for _, ready := range readies {
		select {
		case <-ready:
		case <-ctx.Done():
			s.Close()
			return nil, ctx.Err()
		}
	}
	return s, nil
}

// SubscribeListened is SubscribeAll of channels the listener LISTENs on
// already, which costs it nothing: nil, and nothing subscribed, when it
// is not on one of them. A waiter that reads before it subscribes (so
// that a request answered at once LISTENs for nothing) can subscribe
// first when the room has other waiters, and read once.
func (h *Hub) SubscribeListened(names ...string) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range names {
		if ch := h.channels[name]; ch == nil || !ch.listening {
			return nil
		}
	}
	s := &Subscription{hub: h, c: make(chan struct{}, 1)}
	for _, name := range names {
		if ch := h.channels[name]; h.joinLocked(s, name, ch) {
			s.heard = append(s.heard, ch.payload())
		}
	}
	return s
}

// Waited reports whether channel name has a subscriber now. A notifier
// in the same process can put more in a payload that only a subscriber
// would read (store.Store.WaitersFrom).
func (h *Hub) Waited(name string) bool {
	h.mu.Lock()
	ch := h.channels[name]
	h.mu.Unlock()
	return ch != nil && ch.n.Load() > 0
}

// Heard is the payload of the last notification on channel name that
// the listener received before SubscribeListened made s, since it began
// to listen there on its current connection: "" when none (or s came
// from SubscribeAll). Any notification after it rings s. A notifier
// whose payload tells how far the thing it rings for has come (a room's
// newest message) lets a subscriber that has come as far skip its read.
func (s *Subscription) Heard(name string) string {
	for i, n := range s.names {
		if n == name && i < len(s.heard) {
			return s.heard[i]
		}
	}
	return ""
}

// Latest is what read makes of the payload of the last notification on
// channel name that the listener has received, as of now, since it began
// to listen there on its current connection (read(""): none, or s is not
// on name). A subscriber woken by its bell finds here what rang it, or a
// later notification on the same channel; a reconnect clears it (and
// rings). read runs once for each notification, for the first subscriber
// that asks, and every other gets what it made: a ring that wakes a
// crowd is read once. So every caller on a channel must pass the same
// read, and treat its value as shared.
func (s *Subscription) Latest(name string, read func(payload string) any) any {
	for i, n := range s.names {
		if n != name {
			continue
		}
		if h := s.chs[i].heard.Load(); h != nil {
			h.once.Do(func() { h.value = read(h.payload) })
			return h.value
		}
		break
	}
	return read("")
}

// payload is the last notification's payload, "" for none.
func (ch *channel) payload() string {
	if h := ch.heard.Load(); h != nil {
		return h.payload
	}
	return ""
}

// joinLocked adds s to ch, the hub's channel of name, unless it is on it
// already (a name given twice); a channel that lingered has a subscriber
// again.
func (h *Hub) joinLocked(s *Subscription, name string, ch *channel) bool {
	if _, dup := ch.subs.LoadOrStore(s, struct{}{}); dup {
		return false
	}
	if ch.n.Add(1) == 1 {
		delete(h.lingering, name)
	}
	s.names, s.chs = append(s.names, name), append(s.chs, ch)
	return true
}

// dropLocked forgets channel name, which has no subscriber, and tells the
// listener to UNLISTEN it.
func (h *Hub) dropLocked(name string) {
	delete(h.channels, name)
	delete(h.lingering, name)
	h.changedLocked(name)
}

// sweepLocked drops the channels that have lingered for Linger with no
// subscriber, looking at most four times a Linger.
func (h *Hub) sweepLocked(now time.Time) {
	if len(h.lingering) == 0 || now.Before(h.sweepAt) {
		return
	}
	h.sweepAt = now.Add(h.opt.Linger / 4)
	for name, ch := range h.lingering {
		if ch.n.Load() == 0 && now.Sub(ch.idle) >= h.opt.Linger {
			h.dropLocked(name)
		}
	}
}

// changedLocked tells the listener channel name came or went.
func (h *Hub) changedLocked(name string) {
	h.changed[name] = struct{}{}
	if h.kick != nil {
		h.kick()
		h.kick = nil
	}
}

// Stats is a snapshot of a Hub.
type Stats struct {
	Channels      int     // channels kept: with a subscriber, or lingering
	Lingering     int     // channels kept with no subscriber (Options.Linger)
	Subscribers   int     // subscriptions open, counted once per channel
	Listening     int     // channels LISTENed on the current connection
	BackendPID    uint32  // the listener connection's server process, 0 when down
	Reconnects    int64   // connections opened after the first
	Notifications int64   // notifications received
	IdleChecks    int64   // idle checks the server answered
	QueueUsage    float64 // pg_notification_queue_usage() at the last idle check, 0 to 1
}

// Stats returns a snapshot of the hub's state.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Channels: len(h.channels), Lingering: len(h.lingering), Listening: h.listened, BackendPID: h.pid,
		Reconnects: h.reconnects.Load(), Notifications: h.notifications.Load(),
		IdleChecks: h.idleChecks.Load(), QueueUsage: math.Float64frombits(h.queueUsage.Load())}
	for _, ch := range h.channels {
		st.Subscribers += int(ch.n.Load())
	}
	return st
}

// Run keeps the listener connected until ctx ends, reconnecting with
// backoff after any failure. It returns ctx's error.
func (h *Hub) Run(ctx context.Context) error {
	backoff := h.opt.MinBackoff
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			h.reconnects.Add(1)
		}
		connectCtx, cancel := context.WithTimeout(ctx, h.opt.ConnectTimeout)
		conn, err := h.connect(connectCtx)
		cancel()
		if err != nil {
			err = fmt.Errorf("connect: %w", err)
		} else {
			start := time.Now()
			err = h.serve(ctx, conn)
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			h.lost()
			if time.Since(start) > h.opt.MaxBackoff {
				backoff = h.opt.MinBackoff // it worked for a while: retry quickly
			}
		}
		if ctx.Err() != nil {
			break
		}
		h.opt.Logger.Warn("notify: listener connection failed; reconnecting", "error", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, h.opt.MaxBackoff)
	}
	return ctx.Err()
}

// lost forgets the LISTEN state of a dead connection, so new subscribers
// wait for the next one, which listens on every channel.
func (h *Hub) lost() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listened, h.pid, h.kick = 0, 0, nil
	for name, ch := range h.channels {
		h.changed[name] = struct{}{}
		if ch.listening {
			ch.listening = false
			ch.ready = make(chan struct{})
		}
		ch.heard.Store(nil) // what was sent meanwhile went unheard
	}
}

// serve runs one connection until it fails or ctx ends.
func (h *Hub) serve(ctx context.Context, conn *pgx.Conn) error {
	listened := map[string]bool{}
	fresh := true
	h.mu.Lock()
	h.pid = conn.PgConn().PID()
	h.mu.Unlock()
	for {
		h.mu.Lock()
		h.sweepLocked(time.Now())
		var batch map[string]struct{}
		if len(h.changed) > 0 {
			batch, h.changed = h.changed, map[string]struct{}{}
		}
		var sql strings.Builder
		listen := map[string]bool{} // what this pass sends: true LISTEN, false UNLISTEN
		for name := range batch {
			if on := h.channels[name] != nil; on != listened[name] {
				listen[name] = on
				if !on {
					sql.WriteString("UN")
				}
				sql.WriteString("LISTEN " + pgx.Identifier{name}.Sanitize() + ";")
			}
		}
		h.mu.Unlock()

		if sql.Len() > 0 {
			// No arguments, so pgx sends this as one simple-protocol batch.
			// A deadline hit closes the connection (pgx cannot tell where
			// the protocol stands), and Run opens a new one, which listens
			// on every channel (lost).
			execCtx, cancel := context.WithTimeout(ctx, h.opt.Timeout)
			_, err := conn.Exec(execCtx, sql.String())
			cancel()
			if err != nil {
				return fmt.Errorf("LISTEN/UNLISTEN: %w", err)
			}
		}

		h.mu.Lock()
		for name, on := range listen {
			if on {
				listened[name] = true
			} else {
				delete(listened, name)
			}
		}
		// A channel of the batch is ready once listened, whatever came or
		// went since it was sent (that is in h.changed, for the next pass).
		for name := range batch {
			if ch := h.channels[name]; ch != nil && listened[name] && !ch.listening {
				ch.listening = true
				close(ch.ready)
			}
		}
		h.listened = len(listened)
		if fresh {
			// Anything sent while no connection listened rang nobody:
			// every subscriber re-reads once.
			for _, ch := range h.channels {
				ring(ch)
			}
		}
		fresh = false
		if len(h.changed) > 0 {
			h.mu.Unlock()
			continue
		}
		waitCtx, cancel := context.WithTimeout(ctx, h.opt.PingInterval)
		h.kick = cancel
		h.mu.Unlock()

		n, err := conn.WaitForNotification(waitCtx)
		interrupted := waitCtx.Err() != nil
		cancel()
		h.mu.Lock()
		h.kick = nil
		h.mu.Unlock()
		switch {
		case err == nil:
			h.notifications.Add(1)
			h.dispatch(n.Channel, n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case conn.IsClosed() || !interrupted:
			return fmt.Errorf("wait for notification: %w", err)
		case waitCtx.Err() == context.DeadlineExceeded: // idle, not kicked
			if err := h.ping(ctx, conn); err != nil {
				return fmt.Errorf("idle check: %w", err)
			}
		}
	}
}

// ping checks an idle connection is alive, and reads how full the server's
// notification queue is while at it.
func (h *Hub) ping(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, h.opt.Timeout)
	defer cancel()
	var usage float64
	if err := conn.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage); err != nil {
		return err
	}
	h.idleChecks.Add(1)
	h.queueUsage.Store(math.Float64bits(usage))
	if usage >= queueWarn {
		h.opt.Logger.Warn("notify: the notification queue is filling; some listener is not reading", "usage", usage)
	}
	return nil
}

func (h *Hub) dispatch(name, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.channels[name]; ch != nil {
		ch.heard.Store(&heard{payload: payload})
		ring(ch)
	}
}

// ring wakes every subscriber of ch without blocking: one pending wake is
// as good as many, since the subscriber re-reads everything after its cursor.
func ring(ch *channel) {
	ch.subs.Range(func(k, _ any) bool {
		select {
		case k.(*Subscription).c <- struct{}{}:
		default:
		}
		return true
	})
}
