package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// roomWithSender makes room name and returns it with what sends ann's
// text to it.
func roomWithSender(t *testing.T, s *store.Store, name string) (letagents.Room, func(text string) letagents.Message) {
	t.Helper()
	room, _, err := s.EnsureRoom(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return room, func(text string) letagents.Message {
		t.Helper()
		m, _, err := s.SendMessage(context.Background(), letagents.NewMessage{RoomID: room.ID, Sender: "ann", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// Every kind of live change is one event in the room's one sequence, read
// back in order with its item as it now is; a stream resuming after a
// message starts just after that message's event.
func TestRoomEventsOneSequence(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	room, send := roomWithSender(t, s, "log")
	send("one") // event 1
	// An accepted task posts its status line: a message (2), then the task (3).
	task, err := s.CreateTask(ctx, store.NewTask{RoomID: room.ID, Title: "t", CreatedBy: "ann", Accepted: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: room.ID, ActorLabel: "A",
		Snapshot: snapshot(t, `{"summary": "thinking"}`)}, now) // 4
	if err != nil {
		t.Fatal(err)
	}
	// A prompt-only message is an event that reads leave out (5).
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "ann", PromptKind: letagents.PromptAuto}); err != nil {
		t.Fatal(err)
	}
	send("three") // 6, message 4

	page, err := s.RoomEvents(ctx, room.ID, 0, 100, now)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		seq  int64
		kind letagents.EventKind
		ref  string
	}
	var got []item
	for _, e := range page.Events {
		it := item{seq: e.Seq, kind: e.Kind}
		switch {
		case e.Message != nil:
			it.ref = letagents.MessageID(e.Message.Seq)
		case e.Task != nil:
			it.ref = letagents.TaskID(e.Task.Seq)
		case e.Reasoning != nil:
			it.ref = e.Reasoning.Session.ID
		}
		got = append(got, it)
	}
	want := []item{{1, letagents.EventMessage, "msg_1"}, {2, letagents.EventMessage, "msg_2"}, {3, letagents.EventTask, letagents.TaskID(task.Seq)},
		{4, letagents.EventReasoning, rs.Session.ID}, {6, letagents.EventMessage, "msg_4"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || page.Last != 6 || page.HasMore {
		t.Errorf("events = %v last %d more %v; want %v last 6", got, page.Last, page.HasMore, want)
	}

	for _, c := range []struct {
		name     string
		after    int64
		want     letagents.EventStart
		wantCode letagents.ErrorKind
	}{
		{"from now on", -1, letagents.EventStart{Cursor: 6, Seq: 4}, ""},
		{"after nothing", 0, letagents.EventStart{Cursor: 0, Seq: 0}, ""},
		{"after the first message", 1, letagents.EventStart{Cursor: 1, Seq: 1}, ""},
		{"after the status line", 2, letagents.EventStart{Cursor: 2, Seq: 2}, ""},
		{"after the prompt", 3, letagents.EventStart{Cursor: 5, Seq: 3}, ""},
		{"past the newest", 99, letagents.EventStart{Cursor: 6, Seq: 4}, ""},
	} {
		at, err := s.EventStart(ctx, room.ID, c.after)
		if err != nil || at != c.want {
			t.Errorf("%s: EventStart(%d) = %+v, %v; want %+v", c.name, c.after, at, err, c.want)
		}
	}
	if _, err := s.EventStart(ctx, "nowhere", -1); codeOf(err) != letagents.NotFound {
		t.Errorf("EventStart of a missing room = %v, want NotFound", err)
	}
}

// A transaction that logs several events (an accepted task logs its
// status line and itself) rings its room once.
func TestRoomEventsOneNotifyPerTransaction(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "one bell")
	if err != nil {
		t.Fatal(err)
	}
	conn := listenRoom(t, d.Pool, s, room.ID)
	channel := pgx.Identifier{s.RoomChannel(room.ID)}.Sanitize()
	if _, err := s.CreateTask(ctx, store.NewTask{RoomID: room.ID, Title: "t", CreatedBy: "ann", Accepted: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: count those before a fence
	// rung after the task's transaction committed.
	if _, err := d.Pool.Exec(ctx, "NOTIFY "+channel+", 'fence'"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, testwait.Bound)
	defer cancel()
	rings := 0
	for {
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("waiting for the fence after %d rings: %v", rings, err)
		}
		if n.Payload == "fence" {
			break
		}
		rings++
	}
	if page, err := s.RoomEvents(ctx, room.ID, 0, 10, time.Now()); err != nil || len(page.Events) != 2 || rings != 1 {
		t.Errorf("an accepted task logged %d events (%v) and rang %d times; want 2 events, 1 ring", len(page.Events), err, rings)
	}
}

// Writers of every kind racing in one room, and a reader going on from
// the cursor each read gives it while they write: the reader sees every
// message once, in order. Event numbers are taken under the room row's
// lock held to commit, so one that commits late holds back every number
// after it; a number taken outside it (a global sequence) would let the
// reader pass a row that commits later, and skip it.
func TestRoomEventsConcurrentWritersLeaveNoGap(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "racing log")
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: fmt.Sprint("w", w), Text: fmt.Sprint(i)}); err != nil {
					errs <- err
				}
				var err error
				if w%2 == 0 {
					_, err = s.CreateTask(ctx, store.NewTask{RoomID: room.ID, Title: fmt.Sprint(w, i), CreatedBy: "ann"}, time.Now())
				} else {
					_, err = s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: room.ID, ActorLabel: "A",
						Snapshot: snapshot(t, `{"summary": "s"}`)}, time.Now())
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen []int64
	cursor := int64(0)
	deadline := time.Now().Add(testwait.Bound)
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		page, err := s.RoomEvents(ctx, room.ID, cursor, 7, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			if e.Message != nil {
				seen = append(seen, e.Message.Seq)
			}
		}
		cursor = page.Last
		// Once the writers are done, one more read that finds nothing
		// more ends it.
		if finished && !page.HasMore {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader did not reach the end in %s: %d messages seen", testwait.Bound, len(seen))
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("the reader saw %d messages, want %d: %v", len(seen), writers*each, seen)
	}
	for i, seq := range seen {
		if seq != int64(i+1) {
			t.Fatalf("message %d the reader saw is msg_%d, want msg_%d: %v", i, seq, i+1, seen)
		}
	}
}

// listenRoom is a connection of pool that LISTENs on room's channel
// until the test ends.
func listenRoom(t *testing.T, pool *pgxpool.Pool, s *store.Store, room string) *pgxpool.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.RoomChannel(room)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "UNLISTEN *") })
	return conn
}

// A rename is one room event whose item is the room as renamed; renaming
// a room that does not exist logs nothing.
func TestRenameRoomLogsOneEvent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "renamed")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"Blue Otter", "Red Fox"} {
		before, err := s.RoomEvents(ctx, room.ID, 0, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.RenameRoom(ctx, room.ID, name)
		if err != nil || got.DisplayName != name {
			t.Fatalf("rename %d = %+v, %v", i, got, err)
		}
		page, err := s.RoomEvents(ctx, room.ID, before.Last, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) != 1 || page.Events[0].Kind != letagents.EventRoom || page.Events[0].Room == nil ||
			page.Events[0].Room.DisplayName != name || page.Last != before.Last+1 {
			t.Errorf("rename to %q: events %+v last %d, want one room event named so after %d", name, page.Events, page.Last, before.Last)
		}
	}
	if _, err := s.RenameRoom(ctx, "nowhere", "x"); codeOf(err) != letagents.NotFound {
		t.Errorf("renaming a missing room = %v, want NotFound", err)
	}
}

// What the roster shows of a worker is a presence event when it changes:
// a join, a new status or text, a new native status or text, an end. A
// report that moves only times (the heartbeat agents send with every tool
// call and wait), a late native report, a second end and anything of a
// controller log none; a session changed twice shows once, as it now is.
func TestPresenceEvents(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	const room = "roster"
	t0 := time.Now().Add(-time.Minute).UTC()
	var w, c storetest.Worker
	presence := func(a *storetest.Worker, status, text string, at time.Duration) func() error {
		return func() error {
			_, err := s.SetPresence(ctx, room, a.ID, letagents.Presence{Status: status, Text: text, UpdatedAt: t0.Add(at)})
			return err
		}
	}
	native := func(a *storetest.Worker, status, method, text string, at time.Duration) func() error {
		return func() error {
			return s.RecordNativeActivity(ctx, room, a.ID, letagents.NativeActivity{At: t0.Add(at), Status: status, Method: method, Text: text})
		}
	}
	end := func(a *storetest.Worker) func() error {
		return func() error { _, err := s.EndAgentSession(ctx, room, a.ID, t0.Add(time.Minute)); return err }
	}
	var conn store.Delivery // the latest delivery connection opened
	wait := func(a *storetest.Worker, at time.Duration) func() error {
		return func() (err error) {
			conn, err = s.OpenDelivery(ctx, room, a.ID, t0.Add(at), t0.Add(at+letagents.DeliveryLease))
			return err
		}
	}
	waitAgain := func(a *storetest.Worker, closed, at time.Duration) func() error {
		return func() error {
			if err := s.CloseDelivery(ctx, conn.ID, t0.Add(closed)); err != nil {
				return err
			}
			return wait(a, at)()
		}
	}
	for _, step := range []struct {
		name string
		do   func() error
		logs bool
	}{
		{"a worker joins", func() error { w = storetest.Register(t, s, room, "Worker", letagents.SessionWorker, t0); return nil }, true},
		{"a controller joins", func() error {
			c = storetest.Register(t, s, room, "Watcher", letagents.SessionController, t0)
			return nil
		}, false},
		{"the first report", presence(&w, "working", "on task_1", time.Second), true},
		{"the same report again", presence(&w, "working", "on task_1", 2*time.Second), false},
		{"a new text", presence(&w, "working", "on task_2", 3*time.Second), true},
		{"a new status", presence(&w, "blocked", "on task_2", 4*time.Second), true},
		{"a controller's report", presence(&c, "working", "watching", 5*time.Second), false},
		{"the first native report", native(&w, "working", "item/started", "go test", 6*time.Second), true},
		{"another method, same status and text", native(&w, "working", "item/completed", "go test", 7*time.Second), false},
		{"a late native report", native(&w, "idle", "turn/completed", "done", 5*time.Second), false},
		{"a new native text", native(&w, "working", "item/started", "go vet", 8*time.Second), true},
		{"it waits: messages reach it now", wait(&w, 10*time.Second), true},
		{"its wait ends and it waits again at once", waitAgain(&w, 20*time.Second, 21*time.Second), false},
		{"it waits again after more than the reconnect grace", waitAgain(&w, 30*time.Second, 30*time.Second+letagents.ReconnectGrace), true},
		{"a controller waits", wait(&c, 50*time.Second), false},
		{"the controller ends", end(&c), false},
		{"the worker ends", end(&w), true},
		{"the worker ends again", end(&w), false},
		{"a report after the end", presence(&w, "idle", "", 9*time.Second), false},
	} {
		before, err := s.RoomEvents(ctx, room, 0, 100, time.Now())
		if codeOf(err) == letagents.NotFound {
			before.Last = 0 // no room before the first join
		} else if err != nil {
			t.Fatal(err)
		}
		was := conn
		err = step.do()
		if step.name == "a report after the end" {
			if codeOf(err) != letagents.Unauthorized {
				t.Errorf("%s = %v, want Unauthorized", step.name, err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		page, err := s.RoomEvents(ctx, room, before.Last, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !step.logs && (len(page.Events) != 0 || page.Last != before.Last):
			t.Errorf("%s logged %+v (last %d after %d), want nothing", step.name, page.Events, page.Last, before.Last)
		case step.logs && (len(page.Events) != 1 || page.Events[0].Kind != letagents.EventPresence || page.Events[0].Session == nil ||
			page.Events[0].Session.ID != w.ID):
			t.Errorf("%s logged %+v, want one presence event of the worker", step.name, page.Events)
		case conn != was && (step.logs && conn.Event != page.Last || !step.logs && conn.Event != 0):
			// The stream that opened the connection leaves out its own news by this number.
			t.Errorf("%s: the opened connection names event %d, the log's last is %d", step.name, conn.Event, page.Last)
		}
	}
	page, err := s.RoomEvents(ctx, room, 0, 100, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var sessions []letagents.AgentSession
	for _, e := range page.Events {
		if e.Session != nil {
			sessions = append(sessions, *e.Session)
		}
	}
	if len(sessions) != 1 || sessions[0].Live() || sessions[0].Presence.Text != "on task_2" || sessions[0].Native.Text != "go vet" {
		t.Errorf("every event from the start gives sessions %+v, want the worker once, ended, as it last was", sessions)
	}
}

// Pruning takes the oldest events other than messages logged before the
// bound, a batch at a time, and never a message's: a reader still gets
// every message, numbered as before, resumes after any of them, and the
// log goes on from where it was.
func TestPruneRoomEventsKeepsMessages(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	room, send := roomWithSender(t, s, "pruned")
	first := send("one") // event 1
	// The status line (2), the task (3), a reasoning session (4), a pin
	// (5), a rename (6), each in a transaction of its own, so logged in
	// this order.
	if _, err := s.CreateTask(ctx, store.NewTask{RoomID: room.ID, Title: "t", CreatedBy: "ann", Accepted: true}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateReasoningSession(ctx, store.NewReasoningSession{RoomID: room.ID, ActorLabel: "A",
		Snapshot: snapshot(t, `{"summary": "thinking"}`)}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PinMessage(ctx, room.ID, first.Seq, "ann", true, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RenameRoom(ctx, room.ID, "Blue Otter"); err != nil {
		t.Fatal(err)
	}
	send("two") // event 7

	if _, err := s.PruneRoomEvents(ctx, now, 0); codeOf(err) != letagents.Invalid {
		t.Errorf("a limit of 0 = %v, want Invalid", err)
	}
	seqs := func(after int64) []int64 {
		t.Helper()
		page, err := s.RoomEvents(ctx, room.ID, after, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range page.Events {
			got = append(got, e.Seq)
		}
		return got
	}
	later := time.Now().Add(time.Hour)
	for _, step := range []struct {
		name   string
		before time.Time
		want   int     // events pruned
		left   []int64 // the log after it
	}{
		{"nothing is older than the bound", time.Now().Add(-time.Hour), 0, []int64{1, 2, 3, 4, 5, 6, 7}},
		{"a batch of the oldest", later, 3, []int64{1, 2, 6, 7}},
		{"fewer than a batch: the last", later, 1, []int64{1, 2, 7}},
		{"none left", later, 0, []int64{1, 2, 7}},
	} {
		n, err := s.PruneRoomEvents(ctx, step.before, 3)
		if err != nil || n != step.want {
			t.Errorf("%s: pruned %d, %v; want %d", step.name, n, err, step.want)
		}
		if got := seqs(0); fmt.Sprint(got) != fmt.Sprint(step.left) {
			t.Errorf("%s: the log holds events %v, want %v", step.name, got, step.left)
		}
	}

	at, err := s.EventStart(ctx, room.ID, first.Seq)
	if err != nil || at.Cursor != 1 || at.Seq != first.Seq {
		t.Errorf("resuming after %d starts at %+v, %v; want just after event 1", first.Seq, at, err)
	}
	send("three")
	if got := seqs(7); fmt.Sprint(got) != "[8]" {
		t.Errorf("the next message's event after pruning = %v, want [8]", got)
	}
}

// A worker's reach lapses with time alone, so the sweep tells the roster:
// once, in the sweep whose window holds the moment, and not for a worker
// still reached.
func TestReachLapsesAnnounced(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	const room = "lapses"
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	waited := storetest.Register(t, s, room, "Waited", letagents.SessionWorker, t0)
	hooked := storetest.Register(t, s, room, "Hooked", letagents.SessionWorker, t0)
	waiting := storetest.Register(t, s, room, "Waiting", letagents.SessionWorker, t0)
	storetest.Register(t, s, room, "Watcher", letagents.SessionController, t0)
	storetest.Poll(t, s, room, waited.ID, t0, t0.Add(time.Second)) // reached until t0+1s+ReconnectGrace
	if _, err := s.TakeUnread(ctx, hooked.ID, room, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 1}, t0); err != nil {
		t.Fatal(err) // its hooks ran at t0: reached until t0+HookGrace
	}
	storetest.Poll(t, s, room, waiting.ID, t0, time.Time{}) // parked, its lease till t0+DeliveryLease
	for _, tt := range []struct {
		name      string
		from, to  time.Duration
		announced []int64
	}{
		{"before any lapse", -time.Minute, 0, nil},
		{"the wait's grace ends", 0, time.Minute, []int64{waited.ID}},
		{"a parked wait's lease runs out, unrenewed", time.Minute, 2 * time.Minute, []int64{waiting.ID}},
		{"nothing lapses", 2 * time.Minute, 3 * time.Minute, nil},
		{"the hooks' grace ends", 4 * time.Minute, 5 * time.Minute, []int64{hooked.ID}},
	} {
		before, err := s.RoomEvents(ctx, room, 0, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.AnnounceReachLapses(ctx, t0.Add(tt.from), t0.Add(tt.to))
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.RoomEvents(ctx, room, before.Last, 100, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range page.Events {
			if e.Session != nil {
				got = append(got, e.Session.ID)
			}
		}
		if n != len(tt.announced) || !slices.Equal(got, tt.announced) {
			t.Errorf("%s: announced %d, events for %v; want %v", tt.name, n, got, tt.announced)
		}
	}
}

// statementCounter counts the statements a pool runs: each a round trip.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A stream woken by a send reads its page of events once: a message's
// event (a send's, a pin's) comes with its message, which is left out
// with its event when it is prompt-only, as reads leave it out.
func TestRoomEventsReadMessagesWithTheirEvents(t *testing.T) {
	t.Parallel()
	counter := &statementCounter{}
	s := store.New(pgtest.New(t).TracedPool(t, counter))
	ctx := context.Background()
	now := time.Now()
	room, send := roomWithSender(t, s, "one-read")
	send("one")
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "ann", PromptKind: letagents.PromptAuto}); err != nil {
		t.Fatal(err)
	}
	two := send("two")
	if _, err := s.PinMessage(ctx, room.ID, two.Seq, "ann", true, now); err != nil {
		t.Fatal(err)
	}

	before := counter.n.Load()
	page, err := s.RoomEvents(ctx, room.ID, 0, 100, now)
	if err != nil {
		t.Fatal(err)
	}
	if n := counter.n.Load() - before; n != 1 {
		t.Errorf("a page of message and pin events took %d statements, want 1", n)
	}
	var got []string
	for _, e := range page.Events {
		if e.Message == nil {
			t.Fatalf("event %d (%s) has no message", e.Seq, e.Kind)
		}
		got = append(got, fmt.Sprintf("%s %s %s pinned=%v", e.Kind, letagents.MessageID(e.Message.Seq), e.Message.Text, !e.Message.PinnedAt.IsZero()))
	}
	want := []string{"message msg_1 one pinned=false", "message msg_3 two pinned=true", "pin msg_3 two pinned=true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %q, want %q (the prompt-only message left out)", got, want)
	}
}

// TestRingNamesTheNewestMessage: a room's ring carries its newest message
// number as of the event, a message's own and any other event's alike,
// which is what lets a listener that heard it spare a poll its read. A
// message sent in a transaction of its own rings with the message after
// its number, as a read of the room gives it (compared whole), unless its
// JSON would not fit in a payload; every other event rings with the
// number alone.
func TestRingNamesTheNewestMessage(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	now := time.Now()
	room, _, err := s.EnsureRoom(ctx, "numbered bell")
	if err != nil {
		t.Fatal(err)
	}
	rev := storetest.Register(t, s, room.ID, "Rev", letagents.SessionWorker, now)
	conn := listenRoom(t, d.Pool, s, room.ID)
	// ring waits for the next notification and reads its payload.
	ring := func(what string) store.Ring {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, testwait.Bound)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("%s: no notification: %v", what, err)
		}
		r, ok := store.ParseRing(n.Payload)
		if !ok {
			t.Fatalf("%s: payload %q is no ring", what, n.Payload)
		}
		return r
	}
	long := strings.Repeat("a parent longer than a quote. ", 30)
	github := letagents.SystemMessage(room.ID, "a PR opened")
	github.ClientMessageID = letagents.GitHubLineClientIDPrefix + "42"
	for _, c := range []struct {
		name    string
		send    func() error
		last    int64 // the room's newest message after it
		message bool  // the ring carries that message
	}{
		{"a message", sendText(s, room.ID, "ann", "one"), 1, true},
		{"a long message", sendText(s, room.ID, "bob", long), 2, true},
		{"a reply, its quote cut", func() error {
			_, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "cy", Text: "re", ThreadParentSeq: 2})
			return err
		}, 3, true},
		{"a mention", sendText(s, room.ID, "ann", "over to you @Rev"), 4, true},
		{"a prompt-only message", func() error {
			_, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "ann", PromptKind: letagents.PromptAuto})
			return err
		}, 5, true},
		{"a GitHub line", func() error { _, _, err := s.SendMessage(ctx, github); return err }, 6, true},
		{"an anonymous checked send", func() error {
			_, err := s.Send(ctx, anonymousSend(letagents.NewMessage{RoomID: room.ID, Sender: "dee", Text: "checked"}, now))
			return err
		}, 7, true},
		{"a worker's signed send", func() error {
			_, err := s.Send(ctx, signedSend(rev, letagents.NewMessage{RoomID: room.ID, Sender: "ignored", Text: "signed"}, now))
			return err
		}, 8, true},
		{"a message too long for a payload", sendText(s, room.ID, "ann", strings.Repeat(`"`, 4000)), 9, false},
		{"a text longer than a payload", sendText(s, room.ID, "ann", strings.Repeat("long ", 2000)), 10, false},
		{"a task", func() error {
			_, err := s.CreateTask(ctx, store.NewTask{RoomID: room.ID, Title: "t", CreatedBy: "ann"}, now)
			return err
		}, 10, false},
	} {
		if err := c.send(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := ring(c.name)
		if r.Last != c.last || (r.Message != nil) != c.message {
			t.Errorf("%s: ring names message %d, carries one: %v; want %d, %v", c.name, r.Last, r.Message != nil, c.last, c.message)
			continue
		}
		if r.Message == nil {
			continue
		}
		page, err := s.Messages(ctx, room.ID, store.MessageQuery{After: r.Last - 1, Limit: 1, IncludePromptOnly: true})
		if err != nil || len(page.Messages) != 1 {
			t.Fatalf("%s: read back %+v, %v", c.name, page, err)
		}
		if got, read := utcTimes(*r.Message), utcTimes(page.Messages[0]); !reflect.DeepEqual(got, read) {
			t.Errorf("%s: the ring's message\n%+v\nis not the read's\n%+v", c.name, got, read)
		}
		// The ring's event is the message's in the room's log, the newest.
		evs, err := s.RoomEvents(ctx, room.ID, r.Event-1, 10, now)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		case evs.Last != r.Event:
			t.Errorf("%s: the ring names event %d, the log's newest is %d", c.name, r.Event, evs.Last)
		case r.Message.PromptKind == letagents.PromptAuto: // the log's reads leave it out
		case len(evs.Events) != 1 || evs.Events[0].Kind != letagents.EventMessage || evs.Events[0].Message.Seq != r.Last:
			t.Errorf("%s: event %d is %+v, want message %d's", c.name, r.Event, evs.Events, r.Last)
		}
	}
}

// sendText sends text to room under sender.
func sendText(s *store.Store, room, sender, text string) func() error {
	return func() error {
		_, _, err := s.SendMessage(context.Background(), letagents.NewMessage{RoomID: room, Sender: sender, Text: text})
		return err
	}
}

// utcTimes is m with its times in UTC, so that messages compare by
// instant whatever zone their times were read in.
func utcTimes(m letagents.Message) letagents.Message {
	m.CreatedAt, m.PinnedAt = m.CreatedAt.UTC(), m.PinnedAt.UTC()
	if m.ReplyTo != nil {
		q := *m.ReplyTo
		q.CreatedAt = q.CreatedAt.UTC()
		m.ReplyTo = &q
	}
	if m.Thread != nil {
		th := *m.Thread
		th.LatestReplyAt = th.LatestReplyAt.UTC()
		m.Thread = &th
	}
	return m
}

// What is not a ring's payload is no ring, and a ring's message must be
// the one it numbers.
func TestParseRingRefusesOtherPayloads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		payload string
		ok      bool
		last    int64
		message bool
	}{
		{"12", true, 12, false},
		{`3 {"seq": 3, "room_id": "r", "sender": "ann", "text": "hi", "event": 5}`, true, 3, true},
		{`3 {"seq": 3, "room_id": "r", "sender": "ann", "text": "hi"}`, false, 0, false},
		{"", false, 0, false},
		{"fence", false, 0, false},
		{"fence {}", false, 0, false},
		{"12 {", false, 0, false},
		{`12 {"seq": 13, "sender": "ann", "text": "hi"}`, false, 0, false},
		{`12 {"sender": "ann"}`, false, 0, false},
		{`12 {"seq": "twelve"}`, false, 0, false},
	} {
		r, ok := store.ParseRing(c.payload)
		if ok != c.ok || r.Last != c.last || (r.Message != nil) != c.message {
			t.Errorf("ParseRing(%q) = %+v, %v; want %d, a message %v, %v", c.payload, r, ok, c.last, c.message, c.ok)
		}
		// The number alone is read whatever follows it.
		if last, ok := store.RingLast(c.payload); c.ok && (!ok || last != c.last) {
			t.Errorf("RingLast(%q) = %d, %v; want %d", c.payload, last, ok, c.last)
		}
	}
	for _, payload := range []string{"", "fence", "fence {}", " 12"} {
		if last, ok := store.RingLast(payload); ok {
			t.Errorf("RingLast(%q) = %d, true; want no number", payload, last)
		}
	}
}
