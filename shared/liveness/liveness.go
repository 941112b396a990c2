// Package liveness owns the liveness sweeper: the scheduled job that tells
// a room, once per outage, when a worker agent's message channel has been
// unreachable for a while, and again when the agent is back. Being the
// one periodic job, it also prunes what is kept only for a time: the room
// event log and the GitHub events past letagents.EventRetention, the
// GitHub deliveries' records past letagents.GitHubDeliveryRetention, and
// the hosted MCP sessions unused for letagents.HostedSessionIdle. It also
// merges the search index's pending list, which sends would otherwise
// merge when it fills (store.MergeSearchPending).
//
// A worker is reachable while a long-poll of its holds an unexpired
// delivery lease, or for letagents.ReconnectGrace after its last poll
// ended. An outage starts when the last poll ended, when the lease of a
// poll whose process died ran out, or, for a worker that never polled, at
// its last request. The sweeper runs every SweepInterval (an EventBridge
// schedule when deployed, a ticker in localdev); each run takes the time
// it is given, never the database's clock, so tests can move it.
package liveness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/store"
)

// Timings. The notice grace is configurable (LETAGENTS_LIVENESS_NOTICE_AFTER_MS,
// see config.Config); the others are fixed.
const (
	// DefaultNoticeAfter is how long a worker must be unreachable before
	// the room is told; MinNoticeAfter and MaxNoticeAfter bound the setting.
	DefaultNoticeAfter = 5 * time.Minute
	MinNoticeAfter     = 2 * time.Minute
	MaxNoticeAfter     = 60 * time.Minute
	// MaxOutageAge: an outage older than this is never announced (the
	// agent left long ago; announcing it now would only be noise), and
	// sessions not seen for longer are not even looked at.
	MaxOutageAge = 60 * time.Minute
	// SweepInterval is how often the sweeper runs.
	SweepInterval = time.Minute
)

// A sweep prunes each table pruneBatch rows at a time (one statement
// each, short, so no delete holds the table's rows long), at most
// pruneBatches times: a backlog, as one retention after the log's
// retention began, goes over several sweeps, each bounded.
const (
	pruneBatch   = 1000
	pruneBatches = 20
)

// Sweeper posts liveness notices.
type Sweeper struct {
	store       *store.Store
	noticeAfter time.Duration
	logger      *slog.Logger
}

// New returns a sweeper over st that announces workers unreachable for
// noticeAfter (DefaultNoticeAfter when zero).
func New(st *store.Store, noticeAfter time.Duration, logger *slog.Logger) *Sweeper {
	if noticeAfter <= 0 {
		noticeAfter = DefaultNoticeAfter
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{store: st, noticeAfter: noticeAfter, logger: logger}
}

// Report counts what one sweep did.
type Report struct {
	Checked   int `json:"checked"`   // live worker sessions looked at
	Offline   int `json:"offline"`   // offline notices posted
	Recovered int `json:"recovered"` // recovery notices posted
	Failed    int `json:"failed"`    // sessions whose notice failed (retried next sweep)
	Lapsed    int `json:"lapsed"`    // workers whose reach lapsed since the last sweep, told to the roster
	Pruned    int `json:"pruned"`    // room events deleted, past letagents.EventRetention
	// GitHub events and deliveries' records deleted, past
	// letagents.EventRetention and letagents.GitHubDeliveryRetention.
	GitHubEvents     int `json:"github_events_pruned"`
	GitHubDeliveries int `json:"github_deliveries_pruned"`
	// MCPSessions counts hosted MCP sessions deleted, unused for
	// letagents.HostedSessionIdle.
	MCPSessions int `json:"mcp_sessions_pruned"`
	// MCPEvents counts hosted MCP stream events deleted, past
	// letagents.HostedEventRetention.
	MCPEvents int `json:"mcp_events_pruned"`
	// SearchMerged counts the search index's pending pages merged into it.
	SearchMerged int `json:"search_pages_merged"`
}

// Sweep looks at every room's live workers seen within MaxOutageAge and
// posts the notices due at now, then prunes what is past its retention
// at now and merges the search index's pending list (see the package
// comment). A failure on one session does not stop the others, nor the
// pruning, nor one table's pruning another's; the failures are returned
// joined.
func (s *Sweeper) Sweep(ctx context.Context, now time.Time) (Report, error) {
	var r Report
	candidates, err := s.store.LivenessCandidates(ctx, now, now.Add(-MaxOutageAge))
	if err != nil {
		return r, fmt.Errorf("liveness sweep: %w", err)
	}
	decide := func(st store.LivenessState) (store.LivenessNotice, bool) { return Decide(st, now, s.noticeAfter) }
	var errs []error
	for _, st := range candidates {
		r.Checked++
		// Most sessions need nothing: decide on the list's snapshot first,
		// and lock only those that may need a notice, deciding again there.
		if _, ok := decide(st); !ok {
			continue
		}
		var n store.LivenessNotice // as decided under the lock
		posted, err := s.store.AnnounceLiveness(ctx, st.Session.ID, now, func(fresh store.LivenessState) (store.LivenessNotice, bool) {
			var ok bool
			n, ok = decide(fresh)
			return n, ok
		})
		switch {
		case err != nil:
			r.Failed++
			errs = append(errs, fmt.Errorf("session %d: %w", st.Session.ID, err))
			if ctx.Err() != nil {
				return r, fmt.Errorf("liveness sweep: %w", errors.Join(errs...))
			}
			continue
		case !posted:
			continue
		case n.Kind == store.NoticeOffline:
			r.Offline++
		default:
			r.Recovered++
		}
		s.logger.Info("liveness notice posted", "kind", n.Kind, "room", rooms.ForLog(st.Session.RoomID), "session", st.Session.ID)
	}
	lapsed, err := s.store.AnnounceReachLapses(ctx, now.Add(-SweepInterval), now)
	r.Lapsed = lapsed
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range []struct {
		what   string
		prune  func(context.Context, time.Time, int) (int, error)
		before time.Time
		count  *int
	}{
		{"room events", s.store.PruneRoomEvents, now.Add(-letagents.EventRetention), &r.Pruned},
		// Events before deliveries: a delivery's record goes only once no
		// event names it.
		{"GitHub events", s.store.PruneGitHubEvents, now.Add(-letagents.EventRetention), &r.GitHubEvents},
		{"GitHub deliveries", s.store.PruneGitHubDeliveries, now.Add(-letagents.GitHubDeliveryRetention), &r.GitHubDeliveries},
		{"MCP sessions", s.store.PruneMCPSessions, now.Add(-letagents.HostedSessionIdle), &r.MCPSessions},
		{"MCP stream events", s.store.PruneMCPEvents, now.Add(-letagents.HostedEventRetention), &r.MCPEvents},
	} {
		n, err := prune(ctx, p.prune, p.before)
		*p.count = n
		if err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", p.what, err))
		}
	}
	if r.SearchMerged, err = s.store.MergeSearchPending(ctx); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("liveness sweep: %w", errors.Join(errs...))
	}
	return r, nil
}

// prune deletes with batch what is older than before, in bounded
// batches, and says how many rows it deleted.
func prune(ctx context.Context, batch func(context.Context, time.Time, int) (int, error), before time.Time) (int, error) {
	total := 0
	for range pruneBatches {
		n, err := batch(ctx, before, pruneBatch)
		total += n
		if err != nil {
			return total, err
		}
		if n < pruneBatch {
			break
		}
	}
	return total, nil
}

// Run sweeps at once and then every interval until ctx ends, at the time
// now tells. Errors are logged: the next sweep retries.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration, now func() time.Time) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sweepCtx, cancel := context.WithTimeout(ctx, max(interval, 10*time.Second))
		r, err := s.Sweep(sweepCtx, now())
		cancel()
		if err != nil && ctx.Err() == nil {
			s.logger.Error("liveness sweep", "error", err, "checked", r.Checked, "offline", r.Offline, "recovered", r.Recovered, "pruned", r.Pruned,
				"github_events_pruned", r.GitHubEvents, "github_deliveries_pruned", r.GitHubDeliveries, "mcp_sessions_pruned", r.MCPSessions)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Decide says which notice, if any, a session's state calls for at now,
// given the notice grace:
//
//   - recovered: the worker is reachable, and an offline notice was posted
//     with no recovery announced since;
//   - offline: the worker has been unreachable for at least grace and at
//     most MaxOutageAge, this outage was not announced yet, no offline
//     notice is still standing (the room was never told it came back), and
//     its runtime reported no activity within grace (it is then busy
//     outside the room, not gone). The notice says how many of the room's
//     messages have not reached it, and since when.
//
// A worker its hooks keep up to date (HookReached) counts as reachable.
// Ended sessions and controllers get no notice.
func Decide(st store.LivenessState, now time.Time, grace time.Duration) (store.LivenessNotice, bool) {
	a := st.Session
	if !a.Live() || a.Kind != letagents.SessionWorker {
		return store.LivenessNotice{}, false
	}
	standing := !st.OfflineAnnouncedAt.IsZero() && st.RecoveryAnnouncedAt.Before(st.OfflineAnnouncedAt)
	if a.Reachable(now) || HookReached(st, now, grace) {
		if !standing {
			return store.LivenessNotice{}, false
		}
		return store.LivenessNotice{Kind: store.NoticeRecovered, Message: notice("[status] "+a.DisplayName+" is back online and reachable again.",
			clientID(store.NoticeRecovered, a.ID, st.OfflineAnnouncedAt))}, true
	}
	epoch := OutageStart(st)
	down := now.Sub(epoch)
	switch {
	case down < grace || down > MaxOutageAge:
		return store.LivenessNotice{}, false
	case st.OfflineEpoch.Equal(epoch) || standing:
		return store.LivenessNotice{}, false
	case !a.LastNativeActivityAt.IsZero() && a.LastNativeActivityAt.After(now.Add(-grace)):
		return store.LivenessNotice{}, false
	}
	text := "[status] " + a.DisplayName + "'s message channel has been unreachable for " + FormatDuration(down) +
		" — it may still be working outside the room."
	if !a.LastNativeActivityAt.IsZero() {
		text += " Its runtime last reported activity " + FormatDuration(now.Sub(a.LastNativeActivityAt)) + " ago."
	}
	if st.Unsurfaced > 0 {
		text += " " + unsurfaced(st.Unsurfaced, now.Sub(st.OldestUnsurfacedAt))
	}
	text += " This does not authorize taking over its work: reassign only after its lease expires or is handed off, or when a human says so."
	return store.LivenessNotice{Kind: store.NoticeOffline, Epoch: epoch, Message: notice(text, clientID(store.NoticeOffline, a.ID, epoch))}, true
}

// HookReached reports whether a worker without a delivery connection is
// kept up to date by its runtime's hooks (letagents hook): it took its
// unread messages within grace, and none of the room's messages has
// waited past its cursor for grace or longer.
func HookReached(st store.LivenessState, now time.Time, grace time.Duration) bool {
	return !st.UnreadCheckedAt.IsZero() && now.Sub(st.UnreadCheckedAt) < grace &&
		(st.Unsurfaced == 0 || now.Sub(st.OldestUnsurfacedAt) < grace)
}

// unsurfaced is the sentence of a notice that says how many messages,
// the oldest sent age ago, have not reached the worker (the store counts
// at most letagents.UnreadScan).
func unsurfaced(n int, age time.Duration) string {
	count := strconv.Itoa(n) + " messages"
	switch {
	case n == 1:
		return "1 message sent " + FormatDuration(age) + " ago has not reached it."
	case n >= letagents.UnreadScan:
		count = "Over " + strconv.Itoa(letagents.UnreadScan-1) + " messages"
	}
	return count + " sent over the last " + FormatDuration(age) + " have not reached it."
}

// OutageStart is when an unreachable session's current outage began: the
// later of its last closed poll and its last lapsed delivery lease, or,
// when it never held one, its last request.
func OutageStart(st store.LivenessState) time.Time {
	start := st.Session.LastDisconnectedAt
	if st.LapsedAt.After(start) {
		start = st.LapsedAt
	}
	if start.IsZero() {
		start = st.Session.LastSeenAt
	}
	return start
}

// notice is a liveness notice as the server posts it (the store sets its
// room).
func notice(text, clientID string) letagents.NewMessage {
	m := letagents.SystemMessage("", text)
	m.ClientMessageID = clientID
	return m
}

// clientID is a notice's client_message_id: one per session and outage
// (offline, by its start) or per offline notice (recovered, by its time).
func clientID(kind string, sessionID int64, at time.Time) string {
	return letagents.LivenessClientIDPrefix + kind + ":" + strconv.FormatInt(sessionID, 10) + ":" + strconv.FormatInt(at.UnixMilli(), 10)
}

// FormatDuration renders an outage's length for people: whole minutes,
// at least 1m, and from an hour on as hours and minutes ("1h", "1h 5m").
func FormatDuration(d time.Duration) string {
	m := max(int64(d/time.Minute), 1)
	switch h, rest := m/60, m%60; {
	case h == 0:
		return strconv.FormatInt(m, 10) + "m"
	case rest == 0:
		return strconv.FormatInt(h, 10) + "h"
	default:
		return strconv.FormatInt(h, 10) + "h " + strconv.FormatInt(rest, 10) + "m"
	}
}
