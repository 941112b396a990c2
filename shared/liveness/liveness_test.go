package liveness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
	"github.com/letagents/letagents-go/shared/testclock"
)

const grace = liveness.DefaultNoticeAfter

// env is a test database with a sweeper on it.
type env struct {
	db    *pgtest.DB
	store *store.Store
	sw    *liveness.Sweeper
}

func newEnv(t *testing.T) *env {
	t.Helper()
	d := pgtest.New(t)
	st := store.New(d.Pool)
	return &env{db: d, store: st, sw: liveness.New(st, grace, nil)}
}

// sweep runs one sweep at now and checks what it posted.
func (e *env) sweep(t *testing.T, now time.Time, wantOffline, wantRecovered int) liveness.Report {
	t.Helper()
	r, err := e.sw.Sweep(context.Background(), now)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if r.Offline != wantOffline || r.Recovered != wantRecovered || r.Failed != 0 {
		t.Errorf("sweep at %v: %+v; want %d offline, %d recovered notices", now.Format(time.TimeOnly), r, wantOffline, wantRecovered)
	}
	return r
}

// notice is a liveness notice as the room has it.
// notice is a posted notice as stored: sender and source together, as
// only the server may write them.
type notice struct {
	from, text, clientID string
}

// notices lists the room's messages whose client id starts with prefix.
func (e *env) notices(t *testing.T, room, prefix string) []notice {
	t.Helper()
	rows, err := e.db.Pool.Query(context.Background(), `SELECT sender || '/' || coalesce(source, 'null'), text, client_message_id FROM messages
		WHERE room_id = $1 AND starts_with(client_message_id, $2) ORDER BY seq`, room, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []notice
	for rows.Next() {
		var n notice
		if err := rows.Scan(&n.from, &n.text, &n.clientID); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// system is how a notice of the server's is stored (notice.from).
const system = letagents.SystemSender + "/" + letagents.SourceSystem

func offlineID(w storetest.Worker, epoch time.Time) string {
	return fmt.Sprintf("agent_liveness:offline:%d:%d", w.ID, epoch.UnixMilli())
}

func TestOfflineOnceThenRecovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t0 := time.Now().Truncate(time.Millisecond)
	w := storetest.Register(t, e.store, "team", "Builder", letagents.SessionWorker, t0)
	stopped := t0.Add(30 * time.Second)
	storetest.Poll(t, e.store, w.RoomID, w.ID, t0, stopped)

	// Within the grace: nothing, but the roster is told, in the sweep
	// after its reconnect grace ended, that messages no longer reach it.
	if r := e.sweep(t, stopped.Add(time.Minute), 0, 0); r.Checked != 1 || r.Lapsed != 1 {
		t.Errorf("checked %d sessions, told %d lapses; want 1 and 1", r.Checked, r.Lapsed)
	}
	if r := e.sweep(t, stopped.Add(grace-time.Second), 0, 0); r.Checked != 1 || r.Lapsed != 0 {
		t.Errorf("checked %d sessions, told %d lapses; want 1 and none", r.Checked, r.Lapsed)
	}
	// The grace has passed: one notice; later sweeps add none.
	e.sweep(t, stopped.Add(grace), 1, 0)
	e.sweep(t, stopped.Add(grace+time.Minute), 0, 0)
	e.sweep(t, stopped.Add(grace+30*time.Minute), 0, 0)
	got := e.notices(t, "team", "agent_liveness:")
	want := notice{system, "[status] Builder's message channel has been unreachable for 5m — it may still be working outside the room. " +
		"This does not authorize taking over its work: reassign only after its lease expires or is handed off, or when a human says so.",
		offlineID(w, stopped)}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("notices = %q, want only %q", got, want)
	}

	// It polls again: reachable, so one recovery notice.
	back := stopped.Add(grace + 40*time.Minute)
	storetest.Poll(t, e.store, w.RoomID, w.ID, back, time.Time{})
	e.sweep(t, back.Add(time.Second), 0, 1)
	e.sweep(t, back.Add(time.Minute), 0, 0)
	announced := stopped.Add(grace) // the offline notice's time
	got = e.notices(t, "team", "agent_liveness:recovered:")
	want = notice{system, "[status] Builder is back online and reachable again.",
		fmt.Sprintf("agent_liveness:recovered:%d:%d", w.ID, announced.UnixMilli())}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("recovery notices = %q, want only %q", got, want)
	}

	// Its poll process dies: the lease lapses, and that outage gets its
	// own notice, measured from the lapse.
	lapse := back.Add(letagents.DeliveryLease)
	e.sweep(t, lapse.Add(grace-time.Second), 0, 0)
	e.sweep(t, lapse.Add(grace+65*time.Second), 1, 0)
	got = e.notices(t, "team", "agent_liveness:offline:")
	if len(got) != 2 || got[1].clientID != offlineID(w, lapse) || !strings.Contains(got[1].text, "unreachable for 6m —") {
		t.Errorf("offline notices = %q, want a second one for the outage from %v, 6m long", got, lapse)
	}
}

func TestNativeActivitySuppressesTheNotice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t0 := time.Now().Truncate(time.Millisecond)
	w := storetest.Register(t, e.store, "busy", "Runner", letagents.SessionWorker, t0)
	storetest.Poll(t, e.store, w.RoomID, w.ID, t0, t0)
	if err := e.store.RecordNativeActivity(context.Background(), w.RoomID, w.ID, letagents.NativeActivity{At: t0.Add(4 * time.Minute), Method: "item/started"}); err != nil {
		t.Fatal(err)
	}
	// Unreachable for 6 minutes, but its runtime spoke 2 minutes ago.
	e.sweep(t, t0.Add(6*time.Minute), 0, 0)
	e.sweep(t, t0.Add(4*time.Minute+grace-time.Second), 0, 0)
	// Its runtime has been quiet for the grace too: now the room is told.
	e.sweep(t, t0.Add(4*time.Minute+grace+time.Second), 1, 0)
	got := e.notices(t, "busy", "agent_liveness:")
	if len(got) != 1 || !strings.Contains(got[0].text, "unreachable for 9m — it may still be working outside the room. Its runtime last reported activity 5m ago. ") {
		t.Errorf("notices = %q, want one saying 9m unreachable, runtime last heard 5m ago", got)
	}
}

func TestEndedSessionsAndControllersAreNeverAnnounced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Millisecond)
	ended := storetest.Register(t, e.store, "quiet", "Leaver", letagents.SessionWorker, t0)
	ctrl := storetest.Register(t, e.store, "quiet", "Watcher", letagents.SessionController, t0)
	gone := storetest.Register(t, e.store, "quiet", "Goner", letagents.SessionWorker, t0)
	for _, w := range []storetest.Worker{ended, ctrl, gone} {
		storetest.Poll(t, e.store, w.RoomID, w.ID, t0, t0.Add(time.Second))
	}
	if _, err := e.store.EndAgentSession(ctx, "quiet", ended.ID, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Goner is announced, then ends: no recovery, nothing more.
	e.sweep(t, t0.Add(grace+2*time.Second), 1, 0)
	if _, err := e.store.EndAgentSession(ctx, "quiet", gone.ID, t0.Add(grace+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r := e.sweep(t, t0.Add(grace+2*time.Minute), 0, 0); r.Checked != 0 {
		t.Errorf("checked %d sessions, want 0: ended sessions and controllers are not looked at", r.Checked)
	}
	e.sweep(t, t0.Add(30*time.Minute), 0, 0)
	if got := e.notices(t, "quiet", "agent_liveness:"); len(got) != 1 || got[0].clientID != offlineID(gone, t0.Add(time.Second)) {
		t.Errorf("notices = %q, want only Goner's offline notice", got)
	}
}

func TestOutagesOlderThanAnHourAreNotAnnounced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Millisecond)
	old := storetest.Register(t, e.store, "history", "Oldie", letagents.SessionWorker, t0)
	talker := storetest.Register(t, e.store, "history", "Talker", letagents.SessionWorker, t0)
	recent := storetest.Register(t, e.store, "history", "Recent", letagents.SessionWorker, t0)
	storetest.Poll(t, e.store, old.RoomID, old.ID, t0, t0)
	storetest.Poll(t, e.store, talker.RoomID, talker.ID, t0, t0)
	storetest.Poll(t, e.store, recent.RoomID, recent.ID, t0, t0.Add(2*time.Minute))
	// Talker still sends with its session now and then, but never polls:
	// it stays a candidate, yet its outage began at its last poll.
	if _, err := e.store.AgentSessionByToken(ctx, auth.HashToken(talker.Token), t0.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r := e.sweep(t, t0.Add(61*time.Minute), 1, 0); r.Checked != 2 {
		t.Errorf("checked %d sessions, want 2 (Talker and Recent; Oldie was not seen within the hour)", r.Checked)
	}
	got := e.notices(t, "history", "agent_liveness:")
	if len(got) != 1 || got[0].clientID != offlineID(recent, t0.Add(2*time.Minute)) || !strings.Contains(got[0].text, "Recent's message channel has been unreachable for 59m —") {
		t.Errorf("notices = %q, want only Recent's, 59m", got)
	}
}

func TestWorkerThatNeverPolled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Millisecond)
	w := storetest.Register(t, e.store, "silent", "Mute", letagents.SessionWorker, t0)
	e.sweep(t, t0.Add(grace-time.Second), 0, 0)
	e.sweep(t, t0.Add(grace), 1, 0)
	// A request with its session moves its last sighting, but the room
	// has not heard it is back: no second offline notice.
	if _, err := e.store.AgentSessionByToken(ctx, auth.HashToken(w.Token), t0.Add(6*time.Minute)); err != nil {
		t.Fatal(err)
	}
	e.sweep(t, t0.Add(6*time.Minute+grace+time.Second), 0, 0)
	storetest.Poll(t, e.store, w.RoomID, w.ID, t0.Add(20*time.Minute), time.Time{})
	e.sweep(t, t0.Add(20*time.Minute), 0, 1)
	if got := e.notices(t, "silent", "agent_liveness:"); len(got) != 2 || got[0].clientID != offlineID(w, t0) {
		t.Errorf("notices = %q, want the offline notice from registration and one recovery", got)
	}
}

// TestHooksKeepAWorkerReached: a worker with no long-poll whose hooks
// take its unread messages is not announced, until a message waits past
// the grace; the notice says so, and the next take brings it back.
func TestHooksKeepAWorkerReached(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Millisecond)
	w := storetest.Register(t, e.store, "hooked", "Hooky", letagents.SessionWorker, t0)
	storetest.Poll(t, e.store, w.RoomID, w.ID, t0, t0) // its last poll ended at t0
	send := func(text string) {
		t.Helper()
		if _, _, err := e.store.SendMessage(ctx, letagents.NewMessage{RoomID: "hooked", Sender: "ann", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	hook := func(at time.Time) {
		t.Helper()
		if _, err := e.store.TakeUnread(ctx, w.ID, "hooked", store.UnreadQuery{Filter: letagents.UnreadAll, Limit: 10}, at); err != nil {
			t.Fatal(err)
		}
	}
	send("one")
	hook(t0.Add(4 * time.Minute))
	e.sweep(t, t0.Add(grace+time.Second), 0, 0)

	send("two") // sent at about t0; no hook takes it
	e.sweep(t, t0.Add(8*time.Minute), 1, 0)
	got := e.notices(t, "hooked", "agent_liveness:offline:")
	if len(got) != 1 || !strings.Contains(got[0].text, " 1 message sent ") || !strings.Contains(got[0].text, " ago has not reached it. ") {
		t.Errorf("offline notices = %q; want one saying a message has not reached Hooky", got)
	}
	hook(t0.Add(9 * time.Minute))
	e.sweep(t, t0.Add(9*time.Minute+time.Second), 0, 1)
}

func TestConcurrentSweepsPostOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t0 := time.Now().Truncate(time.Millisecond)
	const workers, sweepers = 3, 4
	for i := range workers {
		w := storetest.Register(t, e.store, "crowd", fmt.Sprintf("Worker%d", i), letagents.SessionWorker, t0)
		storetest.Poll(t, e.store, w.RoomID, w.ID, t0, t0.Add(time.Second))
	}
	sweep := func(now time.Time) (total liveness.Report) {
		t.Helper()
		reports := make([]liveness.Report, sweepers)
		errs := make([]error, sweepers)
		// Every sweeper lists the workers, then waits for the first one
		// it would announce: all of them hold the same candidates.
		release := e.db.HoldLock(t, `SELECT 1 FROM agent_sessions FOR UPDATE`)
		e.db.Race(t, sweepers, release, func(i int) {
			// Each its own instance, as two Lambda invocations would be.
			reports[i], errs[i] = liveness.New(store.New(e.db.Pool), grace, nil).Sweep(context.Background(), now)
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("sweeper %d: %v", i, err)
			}
			total.Offline += reports[i].Offline
			total.Recovered += reports[i].Recovered
		}
		return total
	}
	if r := sweep(t0.Add(time.Second + grace)); r.Offline != workers {
		t.Errorf("concurrent sweeps posted %d offline notices, want %d (one per worker)", r.Offline, workers)
	}
	if got := e.notices(t, "crowd", "agent_liveness:offline:"); len(got) != workers {
		t.Errorf("%d offline notices in the room, want %d", len(got), workers)
	}
	rows, err := e.db.Pool.Query(context.Background(), `SELECT room_id, id FROM agent_sessions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var room string
		var id int64
		if err := rows.Scan(&room, &id); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.OpenDelivery(context.Background(), room, id, t0.Add(10*time.Minute), t0.Add(12*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if r := sweep(t0.Add(11 * time.Minute)); r.Recovered != workers {
		t.Errorf("concurrent sweeps posted %d recovery notices, want %d", r.Recovered, workers)
	}
	if got := e.notices(t, "crowd", "agent_liveness:recovered:"); len(got) != workers {
		t.Errorf("%d recovery notices in the room, want %d", len(got), workers)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "1m"}, {30 * time.Second, "1m"}, {time.Minute, "1m"}, {5*time.Minute + 59*time.Second, "5m"},
		{59*time.Minute + 59*time.Second, "59m"}, {time.Hour, "1h"}, {65 * time.Minute, "1h 5m"}, {2*time.Hour + 30*time.Second, "2h"},
	} {
		if got := liveness.FormatDuration(tt.d); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	live := letagents.AgentSession{ID: 7, Kind: letagents.SessionWorker, DisplayName: "Ada", LastSeenAt: now.Add(-time.Hour)}
	with := func(f func(*store.LivenessState)) store.LivenessState {
		st := store.LivenessState{Session: live}
		f(&st)
		return st
	}
	tests := []struct {
		name string
		st   store.LivenessState
		want string // "" none, else kind
		says string // a part of the notice's text
	}{
		{"connected", with(func(s *store.LivenessState) { s.Session.OpenConnections = 1 }), "", ""},
		{"within the reconnect grace", with(func(s *store.LivenessState) { s.Session.LastDisconnectedAt = now.Add(-9 * time.Second) }), "", ""},
		{"down the grace", with(func(s *store.LivenessState) { s.Session.LastDisconnectedAt = now.Add(-grace) }), store.NoticeOffline, ""},
		{"down less than the grace", with(func(s *store.LivenessState) { s.Session.LastDisconnectedAt = now.Add(-grace + time.Millisecond) }), "", ""},
		{"down exactly an hour", with(func(s *store.LivenessState) { s.Session.LastDisconnectedAt = now.Add(-time.Hour) }), store.NoticeOffline, ""},
		{"down over an hour", with(func(s *store.LivenessState) { s.Session.LastDisconnectedAt = now.Add(-time.Hour - time.Millisecond) }), "", ""},
		{"lapse later than the close", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-50 * time.Minute)
			s.LapsedAt = now.Add(-time.Minute)
		}), "", ""},
		{"never connected, seen long ago", with(func(s *store.LivenessState) { s.Session.LastSeenAt = now.Add(-10 * time.Minute) }), store.NoticeOffline, ""},
		{"already announced", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.OfflineEpoch, s.OfflineAnnouncedAt = s.Session.LastDisconnectedAt, now.Add(-4*time.Minute)
		}), "", ""},
		{"an earlier outage announced and recovered", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.OfflineEpoch, s.OfflineAnnouncedAt, s.RecoveryAnnouncedAt = now.Add(-40*time.Minute), now.Add(-35*time.Minute), now.Add(-20*time.Minute)
		}), store.NoticeOffline, ""},
		{"native activity within the grace", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.Session.LastNativeActivityAt = now.Add(-grace + time.Second)
		}), "", ""},
		{"ended", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.Session.EndedAt = now.Add(-time.Minute)
		}), "", ""},
		{"controller", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.Session.Kind = letagents.SessionController
		}), "", ""},
		{"back after a notice", with(func(s *store.LivenessState) {
			s.Session.OpenConnections = 1
			s.OfflineAnnouncedAt = now.Add(-time.Minute)
		}), store.NoticeRecovered, ""},
		{"back, recovery already told", with(func(s *store.LivenessState) {
			s.Session.OpenConnections = 1
			s.OfflineAnnouncedAt, s.RecoveryAnnouncedAt = now.Add(-time.Minute), now.Add(-30*time.Second)
		}), "", ""},
		{"hooks keep it up to date", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.UnreadCheckedAt, s.Unsurfaced, s.OldestUnsurfacedAt = now.Add(-time.Minute), 1, now.Add(-30*time.Second)
		}), "", ""},
		{"hooks run, yet a message waits past the grace", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.UnreadCheckedAt, s.Unsurfaced, s.OldestUnsurfacedAt = now.Add(-time.Minute), 2, now.Add(-6*time.Minute)
		}), store.NoticeOffline, "2 messages sent over the last 6m have not reached it."},
		{"hooks stopped", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.UnreadCheckedAt, s.Unsurfaced, s.OldestUnsurfacedAt = now.Add(-grace), 1, now.Add(-3*time.Minute)
		}), store.NoticeOffline, "1 message sent 3m ago has not reached it."},
		{"a full backlog", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.Unsurfaced, s.OldestUnsurfacedAt = letagents.UnreadScan, now.Add(-50*time.Minute)
		}), store.NoticeOffline, "Over 999 messages sent over the last 50m have not reached it."},
		{"back through hooks after a notice", with(func(s *store.LivenessState) {
			s.Session.LastDisconnectedAt = now.Add(-10 * time.Minute)
			s.OfflineAnnouncedAt = now.Add(-2 * time.Minute)
			s.UnreadCheckedAt = now.Add(-10 * time.Second)
		}), store.NoticeRecovered, "is back online"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, ok := liveness.Decide(tt.st, now, grace)
			if got := map[bool]string{true: n.Kind}[ok]; got != tt.want {
				t.Fatalf("Decide = %q (%v), want %q", got, n, tt.want)
			}
			if ok && (n.Message.Sender != letagents.SystemSender || n.Message.Source != letagents.SourceSystem || !strings.HasPrefix(n.Message.Text, "[status] Ada") ||
				!strings.HasPrefix(n.Message.ClientMessageID, "agent_liveness:"+n.Kind+":7:")) {
				t.Errorf("notice = %+v", n)
			}
			if !strings.Contains(n.Message.Text, tt.says) {
				t.Errorf("notice %q does not say %q", n.Message.Text, tt.says)
			}
		})
	}
}

// A sweep also prunes the room event log: the events other than messages
// that are past letagents.EventRetention at the sweep's time go, and
// message events stay.
func TestSweepPrunesOldRoomEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	room, _, err := e.store.EnsureRoom(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "ann", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	// Its status line is a message; the task's change is not.
	if _, err := e.store.CreateTask(ctx, store.NewTask{RoomID: room.ID, Title: "t", CreatedBy: "ann", Accepted: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	kinds := func() string {
		t.Helper()
		var got string
		if err := e.db.Pool.QueryRow(ctx, `SELECT string_agg(kind, ',' ORDER BY seq) FROM room_events WHERE room_id = $1`, room.ID).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	now := time.Now()
	for _, c := range []struct {
		name   string
		at     time.Time
		pruned int
		kinds  string
	}{
		{"within the retention", now, 0, "message,message,task"},
		{"past it", now.Add(letagents.EventRetention + time.Minute), 1, "message,message"},
	} {
		if r := e.sweep(t, c.at, 0, 0); r.Pruned != c.pruned {
			t.Errorf("%s: the sweep pruned %d events, want %d", c.name, r.Pruned, c.pruned)
		}
		if got := kinds(); got != c.kinds {
			t.Errorf("%s: the log holds %s, want %s", c.name, got, c.kinds)
		}
	}
}

// A sweep prunes what GitHub's webhooks left as the room event log is
// pruned: a GitHub event past letagents.EventRetention goes, and the
// record of its delivery with it, never before (a repeat of the delivery
// meanwhile is a duplicate), and an ignored delivery's record past
// letagents.GitHubDeliveryRetention; and the hosted MCP sessions unused
// for letagents.HostedSessionIdle. The sweep's time is a test clock's.
func TestSweepPrunesGitHubAndMCPSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const repo = "github.com/acme/app"
	if _, _, err := e.store.EnsureRoom(ctx, repo); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	clock := testclock.New(start)
	event := func(room string) *letagents.GitHubEvent {
		return &letagents.GitHubEvent{RoomID: room, EventType: letagents.GitHubPullRequest, Action: "opened", ObjectID: "7",
			ObjectURL: "https://github.com/acme/app/pull/7", Title: "Fix", State: "open", Actor: "ann", Metadata: []byte(`{}`),
			Line: "[github] ann opened PR #7"}
	}
	take := func(id string, received time.Time, ev *letagents.GitHubEvent) store.DeliveryOutcome {
		t.Helper()
		out, err := e.store.TakeGitHubDelivery(ctx, store.GitHubDelivery{ID: id, EventName: "pull_request", Action: "opened",
			RoomID: repo, ReceivedAt: received}, ev)
		if err != nil {
			t.Fatalf("take delivery %s: %v", id, err)
		}
		return out
	}
	take("logged", start, event(repo))
	take("ignored", start, event("github.com/acme/unopened"))
	// Received, by the server's clock, long before its event was logged:
	// its record stays as long as the event.
	take("skewed", start.Add(-30*24*time.Hour), event(repo))
	for _, id := range []string{"old", "recent"} {
		if err := e.store.CreateSession(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.Pool.Exec(ctx, `UPDATE mcp_sessions SET used_at = used_at - interval '3 days' WHERE id = 'old'`); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	count := func(table string) int {
		t.Helper()
		var n int
		if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	for _, step := range []struct {
		name                         string
		by                           time.Duration // the clock's move before the sweep
		events, deliveries, sessions int           // pruned
		leftEvents, leftDeliveries   int
		leftSessions                 int
		redelivered                  bool // a repeat of "logged" is taken afresh
	}{
		{"a minute short of the retention", letagents.EventRetention - time.Minute, 0, 0, 1, 2, 3, 1, false},
		{"past it", letagents.EventRetention + time.Minute + end.Sub(start), 2, 3, 1, 0, 0, 0, true},
	} {
		clock.Advance(step.by - clock.Now().Sub(start))
		r, err := e.sw.Sweep(ctx, clock.Now())
		if err != nil {
			t.Fatalf("%s: sweep: %v", step.name, err)
		}
		if r.GitHubEvents != step.events || r.GitHubDeliveries != step.deliveries || r.MCPSessions != step.sessions {
			t.Errorf("%s: pruned %d GitHub events, %d deliveries, %d MCP sessions; want %d, %d, %d", step.name,
				r.GitHubEvents, r.GitHubDeliveries, r.MCPSessions, step.events, step.deliveries, step.sessions)
		}
		if ev, dl, ss := count("github_events"), count("github_deliveries"), count("mcp_sessions"); ev != step.leftEvents ||
			dl != step.leftDeliveries || ss != step.leftSessions {
			t.Errorf("%s: %d GitHub events, %d deliveries, %d MCP sessions left; want %d, %d, %d", step.name,
				ev, dl, ss, step.leftEvents, step.leftDeliveries, step.leftSessions)
		}
		// A duplicate changes nothing; one taken afresh comes last.
		if out := take("logged", clock.Now(), event(repo)); out.Duplicate == step.redelivered {
			t.Errorf("%s: a repeat of the delivery is a duplicate: %t, want %t", step.name, out.Duplicate, !step.redelivered)
		}
	}

	for name, prune := range map[string]func(context.Context, time.Time, int) (int, error){
		"GitHub events": e.store.PruneGitHubEvents, "GitHub deliveries": e.store.PruneGitHubDeliveries, "MCP sessions": e.store.PruneMCPSessions,
		"MCP stream events": e.store.PruneMCPEvents,
	} {
		var bad *letagents.Error
		if _, err := prune(ctx, clock.Now(), 0); !errors.As(err, &bad) || bad.Kind != letagents.Invalid {
			t.Errorf("pruning %s with a limit of 0: %v, want Invalid", name, err)
		}
	}
}

// The deliveries' records outlive GitHub's redelivery window.
func TestDeliveryRetentionCoversRedelivery(t *testing.T) {
	t.Parallel()
	if letagents.GitHubDeliveryRetention < letagents.GitHubRedelivery || letagents.GitHubDeliveryRetention < letagents.EventRetention {
		t.Errorf("deliveries are kept %v; want at least GitHub's redelivery window %v and the events' retention %v",
			letagents.GitHubDeliveryRetention, letagents.GitHubRedelivery, letagents.EventRetention)
	}
}

// The sweep prunes the hosted MCP endpoint's stream events past
// letagents.HostedEventRetention, the session's later ones kept.
func TestSweepPrunesMCPEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if err := e.store.CreateSession(ctx, "mcps_sweep", ""); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{`{"old":true}`, `{"new":true}`} {
		if _, err := e.store.StoreMCPEvent(ctx, "mcps_sweep", "stream", []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.Pool.Exec(ctx, `UPDATE mcp_events SET created_at = created_at - $1::interval WHERE message = '{"old":true}'`,
		(letagents.HostedEventRetention + time.Minute).String()); err != nil {
		t.Fatal(err)
	}
	r, err := e.sw.Sweep(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := e.db.Pool.Query(ctx, `SELECT message FROM mcp_events`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			t.Fatal(err)
		}
		left = append(left, m)
	}
	if r.MCPEvents != 1 || len(left) != 1 || left[0] != `{"new":true}` {
		t.Errorf("pruned %d MCP events, left %v; want 1 pruned and the newer one left", r.MCPEvents, left)
	}
}

// A sweep merges the words sends left in the search index's pending list,
// and the messages are found as before.
func TestSweepMergesSearchPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.store.EnsureRoom(ctx, "merged"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.SendMessage(ctx, letagents.NewMessage{RoomID: "merged", Sender: "ann", Text: "the deploy of v1.2.3 failed on eu-west-1"}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} { // then nothing is left to merge
		r, err := e.sw.Sweep(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := r.SearchMerged > 0; got != want {
			t.Errorf("sweep %d merged %d pending pages; want some: %v", i+1, r.SearchMerged, want)
		}
	}
	p, err := e.store.Search(ctx, []string{"merged"}, letagents.SearchQuery{Text: "v1.2.3 failed", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Hits) != 1 || p.Hits[0].Message.Seq != 1 {
		t.Errorf("search after the merge: %+v, want message 1", p.Hits)
	}
}
