package codex

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/wire"
)

// Bridge timings.
const (
	// bindEvery and bindAttempts: how long a registering worker waits
	// for its live session to be saved (the starter saves it once the
	// turn has started, which may be after the worker registers).
	bindEvery    = time.Second
	bindAttempts = 30
	// postGap is the least time between two reasoning posts, and between
	// two native-activity reports unless one is a heartbeat.
	postGap = 750 * time.Millisecond
	// repeatWindow is how long the same reasoning post is not repeated.
	repeatWindow = 30 * time.Second
	// tickEvery is how often a stream checks its session and its quiet.
	tickEvery = 2 * time.Second
	// heartbeatAfter is the quiet after which a stream reports native
	// activity anyway, so the room does not take a thinking worker for gone.
	heartbeatAfter = 15 * time.Second
	// postTimeout bounds one post to the API.
	postTimeout = 30 * time.Second
)

// ReasoningGoal is the goal of the reasoning session a stream opens.
const ReasoningGoal = "Stream Codex runtime progress for this LetAgents room."

// HeartbeatMethod is the method of a heartbeat's native activity.
const HeartbeatMethod = "native_harness.heartbeat"

// maxSummary bounds a reasoning post's summary, in characters.
const maxSummary = 2000

// Presence statuses the bridge reports.
const (
	working = "working"
	idle    = "idle"
	blocked = "blocked"
)

// Activity reports a worker's native activity to its room;
// *apiclient.Client is one.
type Activity interface {
	ReportNativeActivity(ctx context.Context, roomID string, a wire.NativeActivity) error
}

// Reasoning is what the bridge needs of the room's reasoning sessions.
type Reasoning interface {
	// OpenReasoning starts a reasoning session whose first update is p,
	// answering its id.
	OpenReasoning(ctx context.Context, roomID string, p ReasoningPost) (string, error)
	// AddReasoning adds p to the reasoning session id.
	AddReasoning(ctx context.Context, roomID, id string, p ReasoningPost) error
}

// ReasoningPost is one reasoning post, made as the worker's session.
type ReasoningPost struct {
	wire.SessionCredentials
	ActorLabel string
	AgentKey   string
	Goal       string // set when opening a session
	Summary    string // a reasoning summary Codex wrote; never its raw reasoning
	Status     string // working, idle or blocked
}

// BridgeConfig is what a Bridges posts with and where it finds sessions.
type BridgeConfig struct {
	State    *state.File
	Activity Activity
	// Reasoning is nil to post no reasoning, only native activity.
	Reasoning Reasoning
	Clock     Clock // nil: the system clock
	Logger    *slog.Logger
}

// Bridges streams live sessions' progress into their rooms. A Codex
// worker registering its agent session (Registered) binds that session to
// its room's live session; the stream then hears the worker's thread on
// the app-server and posts its reasoning summaries and native activity as
// the worker. Nothing here fails the worker: errors are logged.
type Bridges struct {
	cfg    BridgeConfig
	clock  Clock
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	streams map[string]bool // live session ids being streamed
}

// NewBridges returns a Bridges; Close ends its streams.
func NewBridges(cfg BridgeConfig) *Bridges {
	b := &Bridges{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, streams: map[string]bool{}}
	if b.clock == nil {
		b.clock = realClock{}
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// Close ends the bindings and streams and waits for them.
func (b *Bridges) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// Registered is told of an agent session this process registered (and
// saved). A Codex worker's session is bound, in the background, to its
// room's live session, trying every bindEvery, bindAttempts times.
func (b *Bridges) Registered(agent state.AgentSession) {
	if !codexWorker(agent) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.bind(agent)
	}()
}

func (b *Bridges) bind(agent state.AgentSession) {
	for attempt := 1; ; attempt++ {
		if live, ok := b.claim(agent); ok {
			b.stream(live, agent)
			return
		}
		if attempt == bindAttempts {
			b.log.Debug("no live Codex session to bind", "agent_session", agent.SessionID, "room", agent.RoomID)
			return
		}
		select {
		case <-b.clock.After(bindEvery):
		case <-b.ctx.Done():
			return
		}
	}
}

// claim binds agent to its room's live session if that session is
// starting or running and agent is the worker it should bind: the one
// already bound, else the first Codex worker registered since the
// session started.
func (b *Bridges) claim(agent state.AgentSession) (state.CodexLiveSession, bool) {
	var live state.CodexLiveSession
	bound := false
	err := b.cfg.State.Update(b.ctx, func(st *state.State) error {
		l, ok := st.CodexLiveSessions[st.CurrentCodexLiveSessions[agent.RoomID]]
		if !ok || (l.Status != StatusStarting && l.Status != StatusRunning) || pickWorker(l, st.AgentSessions) != agent.SessionID {
			return nil
		}
		l.AgentSessionID = agent.SessionID
		l.UpdatedAt = stamp(b.clock.Now())
		st.CodexLiveSessions[l.SessionID] = l
		live, bound = l, true
		return nil
	})
	if err != nil {
		b.log.Debug("could not bind the live Codex session", "agent_session", agent.SessionID, "error", err)
		return live, false
	}
	return live, bound
}

// pickWorker is the agent session a live session streams as: the one it
// is bound to while that is saved, else the earliest Codex worker of its
// room registered since it started (a second's leeway for clocks).
func pickWorker(live state.CodexLiveSession, agents map[string]state.AgentSession) string {
	if a, ok := agents[live.AgentSessionID]; ok && codexWorker(a) {
		return a.SessionID
	}
	started, err := time.Parse(time.RFC3339Nano, live.StartedAt)
	if err != nil {
		return ""
	}
	best, bestAt := "", time.Time{}
	for id, a := range agents {
		at, err := time.Parse(time.RFC3339Nano, a.CreatedAt)
		if err != nil || a.RoomID != live.RoomID || !codexWorker(a) || at.Before(started.Add(-time.Second)) {
			continue
		}
		if best == "" || at.Before(bestAt) || (at.Equal(bestAt) && id < best) {
			best, bestAt = id, at
		}
	}
	return best
}

// codexWorker reports whether an agent session is a Codex worker's, with
// the credentials to post as it.
func codexWorker(a state.AgentSession) bool {
	kind := a.SessionKind == "" || a.SessionKind == "worker"
	return kind && a.SessionToken != "" && strings.Contains(strings.ToLower(a.Runtime), "codex")
}

// stream runs one live session's stream until its app-server connection
// ends, the session ends, or Close.
func (b *Bridges) stream(live state.CodexLiveSession, agent state.AgentSession) {
	b.mu.Lock()
	if b.streams[live.SessionID] {
		b.mu.Unlock()
		return
	}
	b.streams[live.SessionID] = true
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.streams, live.SessionID)
		b.mu.Unlock()
	}()

	c, err := dial(b.ctx, live.ServerURL)
	if err != nil {
		b.log.Info("codex bridge could not reach the app-server", "session", live.SessionID, "error", err)
		return
	}
	defer c.Close()
	// A connection hears a thread's events once it has resumed it.
	if err := call(b.ctx, c, "thread/resume", map[string]any{"threadId": live.ThreadID, "excludeTurns": true}, nil); err != nil {
		b.log.Debug("codex bridge could not subscribe to the thread", "session", live.SessionID, "error", err)
	}
	s := newStreamer(b, live, agent)
	tick := b.clock.After(tickEvery)
	for {
		select {
		case n, ok := <-c.Notifications():
			if !ok {
				return
			}
			s.handle(b.ctx, n)
		case <-tick:
			if !s.tick(b.ctx) {
				return
			}
			tick = b.clock.After(tickEvery)
		case <-b.ctx.Done():
			return
		}
	}
}

// streamer turns one thread's notifications into posts.
type streamer struct {
	b     *Bridges
	live  state.CodexLiveSession
	agent state.AgentSession
	since time.Time // when the stream began

	// Reasoning posts.
	reasoningID string                    // the open reasoning session, "" for none yet
	parts       map[string]map[int]string // summary parts by item, by index
	pending     *ReasoningPost            // waiting for postGap to pass
	lastPost    time.Time
	lastSig     string // summary and status of the last post

	// Native activity.
	seq        int64
	lastNative time.Time
	status     string // the worker's status as last heard
}

func newStreamer(b *Bridges, live state.CodexLiveSession, agent state.AgentSession) *streamer {
	return &streamer{b: b, live: live, agent: agent, since: b.clock.Now(), parts: map[string]map[int]string{}, status: working}
}

// notice is the part of a notification's params the bridge reads.
type notice struct {
	ThreadID     string          `json:"threadId"`
	TurnID       string          `json:"turnId"`
	ItemID       string          `json:"itemId"`
	SummaryIndex int             `json:"summaryIndex"`
	Delta        string          `json:"delta"`
	Status       json.RawMessage `json:"status"`
	Thread       struct {
		ID string `json:"id"`
	} `json:"thread"`
	Turn struct {
		Status string `json:"status"`
	} `json:"turn"`
	Item struct {
		ID      string   `json:"id"`
		Type    string   `json:"type"`
		Summary []string `json:"summary"`
	} `json:"item"`
}

// handle takes one notification of the app-server. Only the session's
// thread counts. Raw reasoning (item/reasoning/textDelta, a reasoning
// item's content) is never read.
func (s *streamer) handle(ctx context.Context, n Notification) {
	var p notice
	if json.Unmarshal(n.Params, &p) != nil {
		return
	}
	thread := p.ThreadID
	if thread == "" {
		thread = p.Thread.ID
	}
	if thread != s.live.ThreadID {
		return
	}
	s.status = statusOf(n.Method, p)
	switch n.Method {
	case "item/reasoning/summaryTextDelta":
		if s.parts[p.ItemID] == nil {
			s.parts[p.ItemID] = map[int]string{}
		}
		s.parts[p.ItemID][p.SummaryIndex] += p.Delta
	case "item/reasoning/summaryPartAdded":
		// A new part begins: the one before it is complete.
		if text := s.parts[p.ItemID][p.SummaryIndex-1]; p.SummaryIndex > 0 && text != "" {
			s.queue(text)
		}
	case "item/completed":
		if p.Item.Type == "reasoning" {
			if k := len(p.Item.Summary); k > 0 {
				s.queue(p.Item.Summary[k-1])
			}
			delete(s.parts, p.Item.ID)
		}
	}
	s.flush(ctx)
	s.report(ctx, n.Method, false)
}

// tick checks the session is still live, sends a held reasoning post
// whose time has come, and a heartbeat after heartbeatAfter of quiet.
// It answers false when the stream should end.
func (s *streamer) tick(ctx context.Context) bool {
	st, err := s.b.cfg.State.Load()
	if err == nil {
		live, ok := st.CodexLiveSessions[s.live.SessionID]
		if !ok || terminal(live.Status) {
			return false
		}
	}
	s.flush(ctx)
	quiet := s.lastNative
	if quiet.IsZero() {
		quiet = s.since
	}
	if s.b.clock.Now().Sub(quiet) >= heartbeatAfter {
		s.report(ctx, HeartbeatMethod, true)
	}
	return true
}

// queue holds a reasoning summary for the next post.
func (s *streamer) queue(summary string) {
	summary = strings.TrimSpace(summary)
	if summary == "" {
		return
	}
	if utf8.RuneCountInString(summary) > maxSummary {
		summary = string([]rune(summary)[:maxSummary-1]) + "…"
	}
	s.pending = &ReasoningPost{Summary: summary, Status: s.status}
}

// flush posts the held reasoning summary, unless the last post was less
// than postGap ago (it waits) or was the same less than repeatWindow ago
// (it is dropped). The first post opens the reasoning session; a failed
// update opens a new one.
func (s *streamer) flush(ctx context.Context) {
	r := s.b.cfg.Reasoning
	if s.pending == nil || r == nil {
		return
	}
	now := s.b.clock.Now()
	if !s.lastPost.IsZero() && now.Sub(s.lastPost) < postGap {
		return
	}
	p := *s.pending
	s.pending = nil
	sig := p.Status + "\x00" + p.Summary
	if sig == s.lastSig && now.Sub(s.lastPost) < repeatWindow {
		return
	}
	s.lastPost, s.lastSig = now, sig
	p.SessionCredentials = wire.SessionCredentials{AgentSessionID: s.agent.SessionID, AgentSessionToken: s.agent.SessionToken}
	p.ActorLabel, p.AgentKey = s.agent.ActorLabel, s.agent.AgentKey
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	if s.reasoningID != "" {
		err := r.AddReasoning(ctx, s.live.RoomID, s.reasoningID, p)
		if err == nil {
			return
		}
		s.b.log.Debug("codex bridge: reasoning update failed; opening a new session", "session", s.live.SessionID, "error", err)
		s.reasoningID = ""
	}
	p.Goal = ReasoningGoal
	id, err := r.OpenReasoning(ctx, s.live.RoomID, p)
	if err != nil {
		s.b.log.Debug("codex bridge: could not open a reasoning session", "session", s.live.SessionID, "error", err)
		return
	}
	s.reasoningID = id
}

// report sends native activity: at most one per postGap, except a
// heartbeat (force), each with the next sequence number.
func (s *streamer) report(ctx context.Context, method string, force bool) {
	now := s.b.clock.Now()
	if !force && !s.lastNative.IsZero() && now.Sub(s.lastNative) < postGap {
		return
	}
	s.lastNative = now
	s.seq++
	status := s.status
	if force && status != idle {
		status = working
	}
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	err := s.b.cfg.Activity.ReportNativeActivity(ctx, s.live.RoomID, wire.NativeActivity{
		ObservedAt: now.UTC().Format(time.RFC3339Nano), Sequence: s.seq, Method: method, Status: status,
		SessionCredentials: wire.SessionCredentials{AgentSessionID: s.agent.SessionID, AgentSessionToken: s.agent.SessionToken},
	})
	if err != nil {
		s.b.log.Debug("codex bridge: native activity not reported", "session", s.live.SessionID, "error", err)
	}
}

// statusOf is what a notification says of the worker: blocked by an
// error or a failed turn, idle once its turn or thread is done, else
// working.
func statusOf(method string, p notice) string {
	switch method {
	case "error":
		return blocked
	case "turn/completed":
		if p.Turn.Status == "failed" {
			return blocked
		}
		return idle
	case "thread/status/changed":
		switch statusName(p.Status) {
		case "idle", "notLoaded":
			return idle
		case "systemError":
			return blocked
		}
	}
	return working
}
