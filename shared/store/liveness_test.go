package store_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

func candidateIDs(t *testing.T, s *store.Store, now time.Time) map[int64]store.LivenessState {
	t.Helper()
	list, err := s.LivenessCandidates(context.Background(), now, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]store.LivenessState{}
	for _, st := range list {
		out[st.Session.ID] = st
	}
	return out
}

func TestLivenessCandidates(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	t0 := testNow()
	later := t0.Add(2 * time.Hour)

	old := storetest.Register(t, s, "cand", "Old", letagents.SessionWorker, t0)             // not seen for 2 h
	leased := storetest.Register(t, s, "cand", "Leased", letagents.SessionWorker, t0)       // a poll still renews its lease
	lapsed := storetest.Register(t, s, "cand", "Lapsed", letagents.SessionWorker, t0)       // its poll process died 5 min ago
	ended := storetest.Register(t, s, "cand", "Ended", letagents.SessionWorker, later)      // ended
	ctrl := storetest.Register(t, s, "cand", "Watcher", letagents.SessionController, later) // not a worker
	recent := storetest.Register(t, s, "other", "Recent", letagents.SessionWorker, later)   // another room, seen just now
	closed := storetest.Register(t, s, "other", "Closed", letagents.SessionWorker, t0)      // closed a poll 10 min ago

	if _, err := s.OpenDelivery(ctx, leased.RoomID, leased.ID, t0, later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenDelivery(ctx, lapsed.RoomID, lapsed.ID, later.Add(-10*time.Minute), later.Add(-8*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenDelivery(ctx, lapsed.RoomID, lapsed.ID, later.Add(-7*time.Minute), later.Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	d, err := s.OpenDelivery(ctx, closed.RoomID, closed.ID, later.Add(-20*time.Minute), later)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CloseDelivery(ctx, d.ID, later.Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndAgentSession(ctx, "cand", ended.ID, later); err != nil {
		t.Fatal(err)
	}

	got := candidateIDs(t, s, later)
	for _, a := range []storetest.Worker{old, ended, ctrl} {
		if _, ok := got[a.ID]; ok {
			t.Errorf("%s is a candidate; want only live workers seen within the hour", a.DisplayName)
		}
	}
	for _, a := range []storetest.Worker{leased, lapsed, recent, closed} {
		if _, ok := got[a.ID]; !ok {
			t.Errorf("%s is not a candidate", a.DisplayName)
		}
	}
	if st := got[leased.ID]; st.Session.OpenConnections != 1 || !st.LapsedAt.IsZero() {
		t.Errorf("leased: %d open, lapsed at %v; want 1 open, never lapsed", st.Session.OpenConnections, st.LapsedAt)
	}
	if st := got[lapsed.ID]; st.Session.OpenConnections != 0 || !st.LapsedAt.Equal(later.Add(-5*time.Minute)) || !st.Session.LastDisconnectedAt.IsZero() {
		t.Errorf("lapsed: %d open, lapsed at %v, disconnected %v; want 0, the latest lease's end %v, never disconnected",
			st.Session.OpenConnections, st.LapsedAt, st.Session.LastDisconnectedAt, later.Add(-5*time.Minute))
	}
	if st := got[closed.ID]; !st.Session.LastDisconnectedAt.Equal(later.Add(-10*time.Minute)) || !st.LapsedAt.IsZero() {
		t.Errorf("closed: disconnected %v, lapsed %v; want %v and never", st.Session.LastDisconnectedAt, st.LapsedAt, later.Add(-10*time.Minute))
	}
}

// offlineOnce is a decide that posts one offline notice for the session
// unless one was recorded, counting the times it chose to post.
// systemNotice is a liveness notice as the sweeper builds one; its room
// is left for the store to set.
func systemNotice(text, clientID string) letagents.NewMessage {
	m := letagents.SystemMessage("ignored", text)
	m.ClientMessageID = clientID
	return m
}

func offlineOnce(proposed *atomic.Int32, epoch time.Time) func(store.LivenessState) (store.LivenessNotice, bool) {
	return func(st store.LivenessState) (store.LivenessNotice, bool) {
		if st.OfflineEpoch.Equal(epoch) {
			return store.LivenessNotice{}, false
		}
		proposed.Add(1)
		return store.LivenessNotice{Kind: store.NoticeOffline, Epoch: epoch, Message: systemNotice("[status] gone", "agent_liveness:offline:test")}, true
	}
}

func TestAnnounceLivenessPostsOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s, pool := store.New(d.Pool), d.Pool
	ctx := context.Background()
	now := testNow()
	a := storetest.Register(t, s, "race", "Racer", letagents.SessionWorker, now)
	epoch := now.Add(-10 * time.Minute)

	const sweepers = 8
	var proposed atomic.Int32
	posted := make([]bool, sweepers)
	errs := make([]error, sweepers)
	release := d.HoldLock(t, `SELECT 1 FROM agent_sessions WHERE id = $1 FOR UPDATE`, a.ID)
	d.Race(t, sweepers, release, func(i int) {
		posted[i], errs[i] = s.AnnounceLiveness(ctx, a.ID, now, offlineOnce(&proposed, epoch))
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sweeper %d: %v", i, err)
		}
	}
	if n := len(slices.DeleteFunc(posted, func(p bool) bool { return !p })); n != 1 {
		t.Errorf("%d sweepers posted, want exactly 1", n)
	}
	// The lock, not the unique index, must keep the notice single: every
	// sweeper but the first reads the first one's mark and declines.
	if n := proposed.Load(); n != 1 {
		t.Errorf("%d sweepers decided to post, want 1: the others must see the first one's mark under the lock", n)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM messages WHERE room_id = 'race' AND client_message_id = 'agent_liveness:offline:test'`); n != 1 {
		t.Errorf("%d notices in the room, want 1", n)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM messages WHERE room_id = 'ignored'`); n != 0 {
		t.Errorf("the notice went to the message's RoomID, want the session's room")
	}
	st := candidateIDs(t, s, now)[a.ID]
	if !st.OfflineEpoch.Equal(epoch) || !st.OfflineAnnouncedAt.Equal(now) || !st.RecoveryAnnouncedAt.IsZero() {
		t.Errorf("marks: epoch %v announced %v recovered %v; want %v, %v, never", st.OfflineEpoch, st.OfflineAnnouncedAt, st.RecoveryAnnouncedAt, epoch, now)
	}
}

func TestAnnounceLivenessMarks(t *testing.T) {
	t.Parallel()
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	now := testNow()
	a := storetest.Register(t, s, "marks", "Marker", letagents.SessionWorker, now)
	messages := func() int {
		return countRows(t, pool, `SELECT count(*) FROM messages WHERE room_id = 'marks'`)
	}

	// Declined: nothing written.
	posted, err := s.AnnounceLiveness(ctx, a.ID, now, func(store.LivenessState) (store.LivenessNotice, bool) { return store.LivenessNotice{}, false })
	if err != nil || posted || messages() != 0 {
		t.Fatalf("declined: posted %v, err %v, %d messages; want nothing", posted, err, messages())
	}
	// A session that does not exist: nothing, no error.
	if posted, err := s.AnnounceLiveness(ctx, a.ID+1000, now, offlineOnce(new(atomic.Int32), now)); err != nil || posted {
		t.Errorf("unknown session: posted %v, err %v", posted, err)
	}

	recovered := func(st store.LivenessState) (store.LivenessNotice, bool) {
		return store.LivenessNotice{Kind: store.NoticeRecovered, Message: systemNotice("[status] back", "agent_liveness:recovered:test")}, true
	}
	later := now.Add(time.Minute)
	if posted, err := s.AnnounceLiveness(ctx, a.ID, later, recovered); err != nil || !posted {
		t.Fatalf("recovery: posted %v, err %v", posted, err)
	}
	if st := candidateIDs(t, s, later)[a.ID]; !st.RecoveryAnnouncedAt.Equal(later) || !st.OfflineAnnouncedAt.IsZero() {
		t.Errorf("after a recovery notice: recovered %v, offline %v; want %v and never", st.RecoveryAnnouncedAt, st.OfflineAnnouncedAt, later)
	}

	// A message already holding the notice's id (clients may not take
	// one; a notice whose mark was lost could) does not wedge the session:
	// the mark is recorded, nothing posted twice.
	squatter := systemNotice("squatter", "agent_liveness:offline:test")
	squatter.RoomID = "marks"
	if _, _, err := s.SendMessage(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	epoch := now.Add(-time.Hour)
	posted, err = s.AnnounceLiveness(ctx, a.ID, later, offlineOnce(new(atomic.Int32), epoch))
	if err != nil || posted {
		t.Errorf("id already taken: posted %v, err %v; want not posted, no error", posted, err)
	}
	if st := candidateIDs(t, s, later)[a.ID]; !st.OfflineEpoch.Equal(epoch) {
		t.Errorf("id already taken: offline epoch %v, want the mark %v recorded", st.OfflineEpoch, epoch)
	}
	if n := messages(); n != 2 {
		t.Errorf("%d messages, want 2 (the recovery and the squatter)", n)
	}
}
