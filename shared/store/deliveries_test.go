package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

// send posts text to room as sender (as worker session pub, with source
// agent, when pub is not 0), failing the test on error.
func send(t *testing.T, s *store.Store, room, sender, text string, pub int64, parent int64) letagents.Message {
	t.Helper()
	n := letagents.NewMessage{RoomID: room, Sender: sender, Text: text, PublisherSessionID: pub, ThreadParentSeq: parent}
	if pub != 0 {
		n.Source = letagents.SourceAgent
	}
	m, _, err := s.SendMessage(context.Background(), n)
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	return m
}

func refIDs(refs []letagents.AgentRef) []int64 {
	out := []int64{}
	for _, r := range refs {
		out = append(out, r.SessionID)
	}
	return out
}

func TestMentionsResolvedAtSend(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := testNow()
	builder := storetest.Register(t, s, "mentions", "Builder", letagents.SessionWorker, now)
	otter := storetest.Register(t, s, "mentions", "Calm Otter", letagents.SessionWorker, now)
	dotted := storetest.Register(t, s, "mentions", "Dr. Who.", letagents.SessionWorker, now)
	watcher := storetest.Register(t, s, "mentions", "Watcher", letagents.SessionController, now)
	gone := storetest.Register(t, s, "mentions", "Gone", letagents.SessionWorker, now)
	storetest.Register(t, s, "elsewhere", "Stranger", letagents.SessionWorker, now)
	if _, err := s.EndAgentSession(ctx, "mentions", gone.ID, now); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		text string
		pub  int64
		want []int64
	}{
		{"display name", "@Builder please", 0, []int64{builder.ID}},
		{"any case", "@BUILDER", 0, []int64{builder.ID}},
		{"spaces dropped", "@CalmOtter and @calmotter", 0, []int64{otter.ID}},
		{"bracketed display name", "@[calm  otter]", 0, []int64{otter.ID}},
		{"actor label", "@[" + builder.ActorLabel + "]", 0, []int64{builder.ID}},
		{"dots as letagents.MentionName keeps them", "@" + letagents.MentionName("Dr. Who."), 0, []int64{dotted.ID}},
		{"controllers too", "@Watcher", 0, []int64{watcher.ID}},
		{"several, by id", "@Watcher @Builder", 0, []int64{builder.ID, watcher.ID}},
		{"ended session", "@Gone", 0, nil},
		{"another room's", "@Stranger", 0, nil},
		{"unknown", "@nobody", 0, nil},
		{"not oneself", "@Builder I did it", builder.ID, nil},
		{"in code", "`@Builder`", 0, nil},
	}
	for _, tt := range tests {
		m := send(t, s, "mentions", "ann", tt.text, tt.pub, 0)
		if got := refIDs(m.Mentions); !slices.Equal(got, append([]int64{}, tt.want...)) {
			t.Errorf("%s: send(%q) mentions %v, want %v", tt.name, tt.text, got, tt.want)
		}
		page, err := s.Messages(ctx, "mentions", store.MessageQuery{After: m.Seq - 1, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := refIDs(page.Messages[0].Mentions); !slices.Equal(got, append([]int64{}, tt.want...)) {
			t.Errorf("%s: read back, %q mentions %v, want %v", tt.name, tt.text, got, tt.want)
		}
		if got := page.Messages[0].Mentions; !slices.Equal(got, m.Mentions) {
			t.Errorf("%s: read back, %q mentions %+v, want what the send answered, %+v", tt.name, tt.text, got, m.Mentions)
		}
		if len(m.Mentions) > 0 && (m.Mentions[0].DisplayName == "" || m.Mentions[0].ActorLabel == "") {
			t.Errorf("%s: mention %+v has no names", tt.name, m.Mentions[0])
		}
	}
}

func TestRecordSurfacedAndCursor(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := testNow()
	room := "surfaced"
	if _, _, err := s.EnsureRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	early := send(t, s, room, "ann", "before anyone came", 0, 0)
	b := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, now)
	if u := take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10}); len(u.Messages) != 0 || u.Cursor != early.Seq {
		t.Fatalf("a new session takes %d messages, cursor %d; want none (the history is not unread), cursor %d", len(u.Messages), u.Cursor, early.Seq)
	}
	m1 := send(t, s, room, "ann", "one", 0, 0)
	own := send(t, s, room, b.ActorLabel, "mine", b.ID, 0)
	m3 := send(t, s, room, "ann", "three", 0, 0)
	if err := s.RecordSurfaced(ctx, b.ID, room, []int64{m1.Seq, own.Seq, early.Seq}, letagents.ViaWait, now); err != nil {
		t.Fatal(err)
	}
	// A later surfacing of the same message keeps the first.
	if err := s.RecordSurfaced(ctx, b.ID, room, []int64{m1.Seq}, letagents.ViaRead, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Receipts(ctx, room, []int64{early.Seq, m1.Seq, own.Seq, m3.Seq}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seq  int64
		via  letagents.Via
		seen bool
	}{{early.Seq, letagents.ViaWait, true}, {m1.Seq, letagents.ViaWait, true}, {own.Seq, "", false}, {m3.Seq, "", false}} {
		seen := r[c.seq].SeenBy
		switch {
		case c.seen && (len(seen) != 1 || seen[0].SessionID != b.ID || seen[0].Via != c.via || !seen[0].SurfacedAt.Equal(now)):
			t.Errorf("msg %d seen by %+v; want Builder once, via %s at %v", c.seq, seen, c.via, now)
		case !c.seen && len(seen) != 0:
			t.Errorf("msg %d seen by %+v; want nobody (own messages are not recorded)", c.seq, seen)
		}
	}
	// The cursor is past the newest surfaced; m3 is still unread.
	u := take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10})
	if ids := seqsOf(u); !slices.Equal(ids, []int64{m3.Seq}) {
		t.Errorf("after surfacing msgs %d and %d, the take is %v; want only %d", m1.Seq, own.Seq, ids, m3.Seq)
	}
	// A surfacing never moves the cursor back.
	if err := s.RecordSurfaced(ctx, b.ID, room, []int64{early.Seq}, letagents.ViaRead, now); err != nil {
		t.Fatal(err)
	}
	if u := take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10}); len(u.Messages) != 0 || u.Cursor != m3.Seq {
		t.Errorf("after reading history, the take is %v, cursor %d; want nothing, cursor %d", seqsOf(u), u.Cursor, m3.Seq)
	}
}

func take(t *testing.T, s *store.Store, w storetest.Worker, q store.UnreadQuery) letagents.Unread {
	t.Helper()
	u, err := s.TakeUnread(context.Background(), w.ID, w.RoomID, q, testNow())
	if err != nil {
		t.Fatalf("%s takes unread: %v", w.DisplayName, err)
	}
	return u
}

func seqsOf(u letagents.Unread) []int64 {
	out := []int64{}
	for _, m := range u.Messages {
		out = append(out, m.Seq)
	}
	return out
}

func TestTakeUnread(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := testNow()
	room := "unread"
	b := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, now)
	other := storetest.Register(t, s, room, "Reviewer", letagents.SessionWorker, now)

	root := send(t, s, room, b.ActorLabel, "I take the login form", b.ID, 0)                                               // own: never unread
	send(t, s, room, other.ActorLabel, "lunch?", other.ID, 0)                                                              // not addressed
	reply := send(t, s, room, "ann", "thanks", 0, root.Seq)                                                                // a reply in Builder's thread, from a person
	mention := send(t, s, room, other.ActorLabel, "@Builder see msg_1", other.ID, 0)                                       // an agent's mention
	asked := send(t, s, room, "ann", "@Builder can you also fix the test?", 0, 0)                                          // a person asks
	strangerThread := send(t, s, room, "ann", "another topic", 0, 0)                                                       // not Builder's thread
	send(t, s, room, other.ActorLabel, "on it", other.ID, strangerThread.Seq)                                              // reply in a thread Builder never wrote in
	sys, _, err := s.SendMessage(context.Background(), letagents.SystemMessage(room, "[status] @Builder's task_1 is due")) // the server's: never asked
	if err != nil {
		t.Fatal(err)
	}

	// Addressed: the reply in Builder's thread and the two mentions.
	u := take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAddressed, Limit: 2})
	if got := seqsOf(u); !slices.Equal(got, []int64{reply.Seq, mention.Seq}) || !u.HasMore || !u.Asked {
		t.Fatalf("addressed take (limit 2) = %v, has_more %v, asked %v; want [%d %d], more, asked", got, u.HasMore, u.Asked, reply.Seq, mention.Seq)
	}
	if u.Messages[0].Addressed != letagents.AddressedThread || !u.Messages[0].Asked ||
		u.Messages[1].Addressed != letagents.AddressedMention || u.Messages[1].Asked {
		t.Errorf("addressed take: %q asked %v, %q asked %v; want thread (a person's: asked), mention (an agent's: not asked)",
			u.Messages[0].Addressed, u.Messages[0].Asked, u.Messages[1].Addressed, u.Messages[1].Asked)
	}
	if u.Cursor != mention.Seq {
		t.Errorf("cut take: cursor %d, want the last taken %d", u.Cursor, mention.Seq)
	}
	u = take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAddressed, Limit: 10})
	if got := seqsOf(u); !slices.Equal(got, []int64{asked.Seq, sys.Seq}) || u.HasMore || u.Cursor != sys.Seq || u.Messages[1].Asked {
		t.Fatalf("second addressed take = %v, has_more %v, cursor %d; want [%d %d] (the server's notice not asking), no more, cursor %d",
			got, u.HasMore, u.Cursor, asked.Seq, sys.Seq, sys.Seq)
	}
	// The filter passed over chat and the rest: all finds nothing new.
	if u := take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10}); len(u.Messages) != 0 {
		t.Errorf("take after the addressed ones = %v; want none (the cursor passed the rest)", seqsOf(u))
	}

	// Reviewer, with all: everything but its own, oldest first.
	u = take(t, s, other, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10})
	want := []int64{root.Seq, reply.Seq, asked.Seq, strangerThread.Seq, sys.Seq}
	if got := seqsOf(u); !slices.Equal(got, want) || u.Asked {
		t.Errorf("Reviewer's take (all) = %v, asked %v; want %v, not asked (nobody addressed Reviewer)", got, u.Asked, want)
	}
}

func TestTakeUnreadOnlyIfAsked(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := testNow()
	room := "asked"
	b := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, now)
	other := storetest.Register(t, s, room, "Reviewer", letagents.SessionWorker, now)
	q := store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10, OnlyIfAsked: true}

	tests := []struct {
		name      string
		sender    string
		pub       int64
		text      string
		kind      letagents.PromptKind
		wantTaken bool
	}{
		{"an agent's mention", other.ActorLabel, other.ID, "@Builder ping", "", false},
		{"a person, not addressed", "ann", 0, "hello all", "", false},
		{"a person's mention", "ann", 0, "@Builder are you there?", "", true},
		{"a person's inline prompt", "ann", 0, "everyone: rebase on main", letagents.PromptInline, true},
	}
	for _, tt := range tests {
		take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 50}) // start from nothing unread
		n := letagents.NewMessage{RoomID: room, Sender: tt.sender, Text: tt.text, PublisherSessionID: tt.pub, PromptKind: tt.kind}
		if tt.pub != 0 {
			n.Source = letagents.SourceAgent
		}
		m, _, err := s.SendMessage(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		u := take(t, s, b, q)
		if got := len(u.Messages) > 0; got != tt.wantTaken || u.Asked != tt.wantTaken {
			t.Errorf("%s: only-if-asked take = %v (asked %v); want taken %v", tt.name, seqsOf(u), u.Asked, tt.wantTaken)
		}
		if !tt.wantTaken {
			// Nothing was taken: the message is still unread.
			if u := take(t, s, b, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10}); !slices.Equal(seqsOf(u), []int64{m.Seq}) {
				t.Errorf("%s: after a take that declined, the plain take = %v; want [%d]", tt.name, seqsOf(u), m.Seq)
			}
		}
	}
}

func TestTakeUnreadTakesTurns(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	now := testNow()
	b := storetest.Register(t, s, "turns", "Builder", letagents.SessionWorker, now)
	for range 5 {
		send(t, s, "turns", "ann", "news", 0, 0)
	}
	release := d.HoldLock(t, `SELECT 1 FROM agent_sessions WHERE id = $1 FOR UPDATE`, b.ID)
	const hooks = 4
	takes := make([]letagents.Unread, hooks)
	errs := make([]error, hooks)
	d.Race(t, hooks, release, func(i int) {
		takes[i], errs[i] = s.TakeUnread(context.Background(), b.ID, "turns", store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 2}, now)
	})
	var all []int64
	for i, u := range takes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		all = append(all, seqsOf(u)...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("%d hooks at once took %v between them; want each of msgs 1..5 exactly once", hooks, all)
	}
}

func TestTakeUnreadRefusals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := testNow()
	b := storetest.Register(t, s, "refusals", "Builder", letagents.SessionWorker, now)
	storetest.Register(t, s, "elsewhere", "Other", letagents.SessionWorker, now)
	for _, tt := range []struct {
		name string
		room string
		q    store.UnreadQuery
		want letagents.ErrorKind
	}{
		{"limit 0", "refusals", store.UnreadQuery{Filter: letagents.UnreadAll}, letagents.Invalid},
		{"limit too big", "refusals", store.UnreadQuery{Filter: letagents.UnreadAll, Limit: letagents.MaxUnreadLimit + 1}, letagents.Invalid},
		{"another room", "elsewhere", store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 1}, letagents.NotFound},
	} {
		_, err := s.TakeUnread(context.Background(), b.ID, tt.room, tt.q, now)
		if codeOf(err) != tt.want {
			t.Errorf("%s: TakeUnread = %v, want a %s error", tt.name, err, tt.want)
		}
	}
}

func TestReceipts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	t0 := testNow().Add(-time.Hour) // sessions registered an hour ago
	room := "receipts"
	b := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, t0)
	r := storetest.Register(t, s, room, "Reviewer", letagents.SessionWorker, t0)
	storetest.Register(t, s, room, "Watcher", letagents.SessionController, t0)
	m := send(t, s, room, "ann", "@Builder @Reviewer look", 0, 0)
	mine := send(t, s, room, b.ActorLabel, "done", b.ID, 0)
	late := storetest.Register(t, s, room, "Late", letagents.SessionWorker, testNow().Add(time.Minute)) // joined after both

	surfaced := m.CreatedAt.Add(1500 * time.Millisecond)
	if err := s.RecordSurfaced(ctx, b.ID, room, []int64{m.Seq}, letagents.ViaHook, surfaced); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		at         time.Time
		seq        int64
		wantSeen   []int64
		wantUnread []int64
	}{
		{"just sent: nobody is late yet", m.CreatedAt.Add(time.Second), m.Seq, []int64{b.ID}, nil},
		{"after UnreadAfter", m.CreatedAt.Add(letagents.UnreadAfter), m.Seq, []int64{b.ID}, []int64{r.ID}},
		{"the sender is not late", mine.CreatedAt.Add(letagents.UnreadAfter), mine.Seq, nil, []int64{r.ID}},
	}
	for _, tt := range tests {
		got, err := s.Receipts(ctx, room, []int64{tt.seq, 999}, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got[999]; ok {
			t.Errorf("%s: a receipt for a message that does not exist", tt.name)
		}
		rc, ok := got[tt.seq]
		if !ok || !rc.SentAt.Equal(map[int64]time.Time{m.Seq: m.CreatedAt, mine.Seq: mine.CreatedAt}[tt.seq]) {
			t.Fatalf("%s: receipt %+v (found %v); want one, sent at the message's time", tt.name, rc, ok)
		}
		var seen []int64
		for _, d := range rc.SeenBy {
			seen = append(seen, d.SessionID)
		}
		if !slices.Equal(seen, tt.wantSeen) || !slices.Equal(refIDs(rc.UnreadBy), append([]int64{}, tt.wantUnread...)) {
			t.Errorf("%s: seen by %v, unread by %v; want seen by %v, unread by %v (never the controller, nor Late (%d) who came after)",
				tt.name, seen, refIDs(rc.UnreadBy), tt.wantSeen, tt.wantUnread, late.ID)
		}
		if len(rc.SeenBy) == 1 && (rc.SeenBy[0].Via != letagents.ViaHook || rc.SeenBy[0].Latency != 1500*time.Millisecond ||
			rc.SeenBy[0].DisplayName != "Builder") {
			t.Errorf("%s: delivery %+v; want Builder via hook, 1.5 s after the send", tt.name, rc.SeenBy[0])
		}
	}
}

func TestDeliveryLatencies(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room := "latency"
	t0 := testNow().Add(-time.Hour)
	b := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, t0)
	quiet := storetest.Register(t, s, room, "Quiet", letagents.SessionWorker, t0)
	var seqs []int64
	var sent []time.Time
	for range 100 {
		m := send(t, s, room, "ann", "tick", 0, 0)
		seqs, sent = append(seqs, m.Seq), append(sent, m.CreatedAt)
	}
	// Message i is surfaced i+1 ms after it was sent.
	for i, seq := range seqs {
		if err := s.RecordSurfaced(ctx, b.ID, room, []int64{seq}, letagents.ViaWait, sent[i].Add(time.Duration(i+1)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.DeliveryLatencies(ctx, []int64{b.ID, quiet.ID}, t0)
	if err != nil {
		t.Fatal(err)
	}
	l := got[b.ID]
	near := func(d, want time.Duration) bool { return (d - want).Abs() < 100*time.Microsecond }
	if l.Count != 100 || !near(l.P50, 50500*time.Microsecond) || !near(l.P99, 99010*time.Microsecond) {
		t.Errorf("Builder's latency = %+v; want 100 deliveries, p50 50.5 ms, p99 99.01 ms (interpolated)", l)
	}
	if _, ok := got[quiet.ID]; ok {
		t.Errorf("Quiet surfaced nothing yet has a latency %+v", got[quiet.ID])
	}
	// Only deliveries since the window's start count.
	if got, err := s.DeliveryLatencies(ctx, []int64{b.ID}, testNow().Add(time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("latencies since an hour from now = %v, %v; want none", got, err)
	}
}

func TestLivenessSeesUnsurfaced(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room := "unsurfaced"
	now := testNow()
	b := storetest.Register(t, s, room, "Builder", letagents.SessionWorker, now.Add(-time.Minute))
	first := send(t, s, room, "ann", "one", 0, 0)
	send(t, s, room, b.ActorLabel, "mine", b.ID, 0)
	send(t, s, room, "ann", "two", 0, 0)
	st := candidateIDs(t, s, now)[b.ID]
	if st.Unsurfaced != 2 || !st.OldestUnsurfacedAt.Equal(first.CreatedAt) || !st.UnreadCheckedAt.IsZero() {
		t.Errorf("before any take: unsurfaced %d since %v, checked %v; want 2 since %v, never checked",
			st.Unsurfaced, st.OldestUnsurfacedAt, st.UnreadCheckedAt, first.CreatedAt)
	}
	checked := testNow()
	if _, err := s.TakeUnread(ctx, b.ID, room, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10}, checked); err != nil {
		t.Fatal(err)
	}
	st = candidateIDs(t, s, now)[b.ID]
	if st.Unsurfaced != 0 || !st.OldestUnsurfacedAt.IsZero() || !st.UnreadCheckedAt.Equal(checked) {
		t.Errorf("after a take: unsurfaced %d since %v, checked %v; want 0, checked at %v", st.Unsurfaced, st.OldestUnsurfacedAt, st.UnreadCheckedAt, checked)
	}
}

// TestTakeUnreadDurabilityIsItsOwn: a take, the record of what a wait
// surfaced and a session's touch commit without waiting for their flush
// (synchronous_commit off), and that holds for their transaction alone:
// the pooled connection they ran on, the only one here, goes back to the
// server's setting for whatever runs on it next.
func TestTakeUnreadDurabilityIsItsOwn(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	pool := pgtest.NewProxy(t, d).Pool(t, 1)
	s := store.New(pool)
	ctx := context.Background()
	now := testNow()
	b := storetest.Register(t, s, "durable", "Builder", letagents.SessionWorker, now)
	var want string
	if err := pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		room    string
		send    bool
		wantErr bool
	}{
		{"a take with a message", "durable", true, false},
		{"a take with nothing", "durable", false, false},
		{"a refused take", "elsewhere", false, true},
	}
	for _, tt := range tests {
		var seq int64
		if tt.send {
			seq = send(t, s, "durable", "ann", "news", 0, 0).Seq
		}
		u, err := s.TakeUnread(ctx, b.ID, tt.room, store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 5}, now)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s: err %v; want an error: %v", tt.name, err, tt.wantErr)
		}
		if tt.send && len(u.Messages) != 1 {
			t.Errorf("%s: took %d messages; want 1", tt.name, len(u.Messages))
		}
		if tt.send {
			if err := s.RecordSurfaced(ctx, b.ID, tt.room, []int64{seq}, letagents.ViaWait, now); err != nil {
				t.Fatalf("%s: record surfaced: %v", tt.name, err)
			}
			if _, err := s.AgentSessionByToken(ctx, auth.HashToken(b.Token), now); err != nil {
				t.Fatalf("%s: session by token: %v", tt.name, err)
			}
		}
		var got string
		if err := pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: synchronous_commit after the take is %q; want the server's %q", tt.name, got, want)
		}
	}
}

// A take that cannot commit by the deadline its caller gave takes
// nothing: its hook has given up and would never print what it recorded.
func TestTakeUnreadDeadline(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := testNow()
	b := storetest.Register(t, s, "deadline", "Builder", letagents.SessionWorker, now)
	news := send(t, s, "deadline", "ann", "news", 0, 0)

	q := store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10, Deadline: time.Now().Add(-time.Millisecond)}
	_, err := s.TakeUnread(context.Background(), b.ID, "deadline", q, now)
	if e, ok := errors.AsType[*letagents.Error](err); !ok || e.Code != letagents.CodeUnreadTooLate || e.Kind != letagents.Unavailable {
		t.Fatalf("a take past its deadline = %v; want an Unavailable %s", err, letagents.CodeUnreadTooLate)
	}
	q.Deadline = time.Now().Add(time.Minute)
	if u := take(t, s, b, q); !slices.Equal(seqsOf(u), []int64{news.Seq}) {
		t.Errorf("the take after the late one = %v; want [%d]: the late one took nothing", seqsOf(u), news.Seq)
	}
}
