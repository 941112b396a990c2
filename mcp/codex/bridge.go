package codex

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
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
	// two native-activity reports: what comes sooner waits its turn.
	postGap = 750 * time.Millisecond
	// repeatWindow is how long a summary posted is not posted again
	// (Codex repeats its summaries when it retries a model stream).
	repeatWindow = 30 * time.Second
	// lostGrace is how long a bridge whose app-server connection dropped
	// leaves the ending to the starter that spawned the server (it knows
	// the exit status) before telling the room itself.
	lostGrace = 10 * time.Second
	// itemsPage is the page size of thread/items/list.
	itemsPage = 100
	// resumeEvery and resumeAttempts: how a stream retries following its
	// thread. Early in a thread's first turn Codex (0.171) refuses
	// thread/resume for a moment (its rollout "is empty", or "list_turns
	// is not supported yet"); after resumeAttempts the stream tries once
	// a tick.
	resumeEvery    = 250 * time.Millisecond
	resumeAttempts = 40
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
	// CloseReasoning closes the reasoning session id, as the worker whose
	// credentials creds are.
	CloseReasoning(ctx context.Context, roomID, id string, creds wire.SessionCredentials) error
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
	State    state.Store
	Activity Activity
	// Reasoning is nil to post no reasoning, only native activity.
	Reasoning Reasoning
	// Sessions is nil to leave a worker's agent session open when its
	// live session ends.
	Sessions Sessions
	Clock    Clock // nil: the system clock
	Logger   *slog.Logger
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

	// subscribed, when set, is told each session whose thread a stream
	// hears from then on (tests hold the worker's turn until then).
	subscribed func(sessionID string)
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
		if !ok || l.EndedAt != "" || (l.Status != StatusStarting && l.Status != StatusRunning) || pickWorker(l, st.AgentSessions) != agent.SessionID {
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

// ender is how this Bridges tells a room a session ended.
func (b *Bridges) ender() ender {
	return ender{room: Room{Activity: b.cfg.Activity, Reasoning: b.cfg.Reasoning, Sessions: b.cfg.Sessions}, state: b.cfg.State, clock: b.clock, log: b.log}
}

// stream runs one live session's stream until the session ends (then it
// tells the room how, unless the starter did), its app-server
// connection ends, or Close.
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

	s := newStreamer(b, live, agent)
	c, err := dial(b.ctx, live.ServerURL)
	if err != nil {
		b.log.Info("codex bridge could not reach the app-server", "session", live.SessionID, "error", err)
		if b.ctx.Err() == nil {
			s.lost(b.ctx)
		}
		return
	}
	defer c.Close()
	following := s.subscribe(b.ctx, c)
	// What the worker thought before it registered (joining, registering)
	// is in the turn's items: read them after subscribing, so that
	// nothing falls between; an item seen both ways is posted once.
	s.backfill(b.ctx, c)
	if following {
		s.heard()
	}
	// A turn that ended before the subscription sends no turn/completed.
	if s.turnEnded(b.ctx, c, false) {
		return
	}
	// Once the connection has ended, what the stream holds waits for the
	// ending (lost), which carries it: the starter may be telling the
	// room at this moment, and a post of the worker at work must not
	// land after it.
	if c.Err() == nil {
		s.flush(b.ctx)
	}
	tick := b.clock.After(tickEvery)
	var due <-chan time.Time
	for {
		if due == nil && c.Err() == nil {
			if d, ok := s.due(); ok {
				due = b.clock.After(d)
			}
		}
		select {
		case n, ok := <-c.Notifications():
			if !ok {
				s.lost(b.ctx)
				return
			}
			if o, ended := s.handle(b.ctx, n); ended {
				s.endTurn(b.ctx, c, o)
				return
			}
		case <-due:
			due = nil
			if c.Err() == nil {
				s.flush(b.ctx)
			}
		case <-tick:
			if !following && s.follow(b.ctx, c) == nil {
				following = true
				s.heard()
			}
			// The turn's end is also read, in case its notification never
			// comes: a stream that does not follow the thread hears none.
			if !s.tick(b.ctx, c) || s.turnEnded(b.ctx, c, following) {
				return
			}
			tick = b.clock.After(tickEvery)
		case <-b.ctx.Done():
			return
		}
	}
}

// subscribe makes c hear the session's thread, trying every resumeEvery,
// resumeAttempts times. It answers whether c follows the thread; when it
// does not, the failure is logged as a warning, the stream goes on
// trying once a tick, reads the turn's end on each tick, and the turn's
// summaries go out with the ending.
func (s *streamer) subscribe(ctx context.Context, c *Conn) bool {
	for attempt := 1; ; attempt++ {
		err := s.follow(ctx, c)
		if err == nil {
			return true
		}
		if attempt == resumeAttempts || c.Err() != nil {
			s.b.log.Warn("codex bridge cannot follow the worker's thread yet: its summaries reach the room with the ending", "session", s.live.SessionID,
				"attempts", attempt, "error", err)
			return false
		}
		s.b.log.Debug("codex bridge: thread/resume refused; trying again", "session", s.live.SessionID, "attempt", attempt, "error", err)
		// A connection that ends meanwhile fails the next try at once: a
		// call can fail on its write before the connection reads as ended.
		select {
		case <-s.b.clock.After(resumeEvery):
		case <-c.Done():
		case <-ctx.Done():
			return false
		}
	}
}

// follow asks the app-server once for the session's thread's events on c:
// a connection hears a thread once it has resumed it.
func (s *streamer) follow(ctx context.Context, c *Conn) error {
	return call(ctx, c, "thread/resume", map[string]any{"threadId": s.live.ThreadID, "excludeTurns": true}, nil)
}

// heard tells the test hook, if set, that the stream follows its thread.
func (s *streamer) heard() {
	if s.b.subscribed != nil {
		s.b.subscribed(s.live.SessionID)
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
	parts       map[string]map[int]string // summary parts being written, by item, by index
	queued      map[string]int            // how many parts of an item are queued
	pending     []ReasoningPost           // queued, oldest first, waiting for postGap
	lastPost    time.Time
	recent      map[string]time.Time // summaries posted, when

	// Native activity.
	seq        int64
	lastNative time.Time
	nextMethod string // a report waiting for postGap, "" for none
	status     string // the worker's status as last heard
	text       string // what the worker does, as last heard: the roster shows it
	lastErr    string // the last error Codex reported on the thread
	endRead    bool   // the last tick read the turn ended
}

func newStreamer(b *Bridges, live state.CodexLiveSession, agent state.AgentSession) *streamer {
	return &streamer{b: b, live: live, agent: agent, since: b.clock.Now(), parts: map[string]map[int]string{}, queued: map[string]int{},
		recent: map[string]time.Time{}, status: working}
}

// notice is the part of a notification's params the bridge reads.
type notice struct {
	ThreadID     string          `json:"threadId"`
	TurnID       string          `json:"turnId"`
	ItemID       string          `json:"itemId"`
	SummaryIndex int             `json:"summaryIndex"`
	Delta        string          `json:"delta"`
	Status       json.RawMessage `json:"status"`
	WillRetry    bool            `json:"willRetry"`
	Error        *turnError      `json:"error"`
	Thread       struct {
		ID string `json:"id"`
	} `json:"thread"`
	Turn struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Error  *turnError `json:"error"`
	} `json:"turn"`
	Item reasoningItem `json:"item"`
}

// reasoningItem is the part of a thread item the bridge reads: a
// reasoning item's summary, never its content (the raw reasoning), a
// command's command line, a tool call's tool.
type reasoningItem struct {
	ID      string   `json:"id"`
	Type    string   `json:"type"`
	Summary []string `json:"summary"`
	Command string   `json:"command"`
	Tool    string   `json:"tool"`
}

// handle takes one notification of the app-server. Only the session's
// thread counts. Raw reasoning (item/reasoning/textDelta, a reasoning
// item's content) is never read. It answers how the session ended when
// its turn did.
func (s *streamer) handle(ctx context.Context, n Notification) (outcome, bool) {
	var p notice
	if json.Unmarshal(n.Params, &p) != nil {
		return outcome{}, false
	}
	thread := p.ThreadID
	if thread == "" {
		thread = p.Thread.ID
	}
	if thread != s.live.ThreadID {
		return outcome{}, false
	}
	s.status = statusOf(n.Method, p)
	if text := describe(n.Method, p); text != "" {
		s.text = text
	}
	switch n.Method {
	case "item/reasoning/summaryTextDelta":
		if s.parts[p.ItemID] == nil {
			s.parts[p.ItemID] = map[int]string{}
		}
		s.parts[p.ItemID][p.SummaryIndex] += p.Delta
	case "item/reasoning/summaryPartAdded":
		// A new part begins: those before it are complete.
		for i := s.queued[p.ItemID]; i < p.SummaryIndex; i++ {
			s.queue(s.parts[p.ItemID][i])
		}
		s.queued[p.ItemID] = max(s.queued[p.ItemID], p.SummaryIndex)
	case "item/completed":
		if p.Item.Type == "reasoning" {
			s.queueItem(p.Item)
		}
	case "error":
		if p.Error != nil && p.Error.Message != "" {
			s.lastErr = p.Error.Message
		}
	case "turn/completed":
		if s.live.TurnID == "" || p.Turn.ID == "" || p.Turn.ID == s.live.TurnID {
			msg := s.lastErr
			if p.Turn.Error != nil && p.Turn.Error.Message != "" {
				msg = p.Turn.Error.Message
			}
			return turnOutcome(p.Turn.Status, msg), true
		}
	}
	s.flush(ctx)
	s.report(ctx, n.Method)
	return outcome{}, false
}

// queueItem queues the parts of a completed reasoning item not queued yet.
func (s *streamer) queueItem(it reasoningItem) {
	for _, part := range it.Summary[min(s.queued[it.ID], len(it.Summary)):] {
		s.queue(part)
	}
	s.queued[it.ID] = max(s.queued[it.ID], len(it.Summary))
	delete(s.parts, it.ID)
}

// backfill queues the summaries of the turn's reasoning items not queued
// yet: those that completed before the stream began, and at the end
// those whose notifications were missed.
func (s *streamer) backfill(ctx context.Context, c *Conn) {
	if c == nil {
		return
	}
	items, err := turnReasoning(ctx, c, s.live)
	if err != nil {
		s.b.log.Debug("codex bridge could not read the turn's items", "session", s.live.SessionID, "error", err)
	}
	for _, it := range items {
		s.queueItem(it)
	}
}

// turnReasoning reads the reasoning items of the session's turn, in
// order: thread/items/list page by page, or the turn as thread/read
// includes it where items are not listed (0.171 lists them only once the
// turn has ended).
func turnReasoning(ctx context.Context, c *Conn, live state.CodexLiveSession) ([]reasoningItem, error) {
	var out []reasoningItem
	cursor := ""
	for {
		params := map[string]any{"threadId": live.ThreadID, "turnId": live.TurnID, "limit": itemsPage}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Data []struct {
				Item reasoningItem `json:"item"`
			} `json:"data"`
			NextCursor string `json:"nextCursor"`
		}
		err := call(ctx, c, "thread/items/list", params, &page)
		if unsupported(err) {
			return readReasoning(ctx, c, live)
		}
		if err != nil {
			return out, err
		}
		for _, e := range page.Data {
			if e.Item.Type == "reasoning" {
				out = append(out, e.Item)
			}
		}
		if page.NextCursor == "" || page.NextCursor == cursor || len(page.Data) == 0 {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// readReasoning is turnReasoning for an app-server that does not list
// the turn's items: the turn as thread/read includes it.
func readReasoning(ctx context.Context, c *Conn, live state.CodexLiveSession) ([]reasoningItem, error) {
	read, err := readThreadTurns(ctx, c, live, threadRead{})
	if err != nil {
		return nil, err
	}
	var out []reasoningItem
	for _, raw := range read.Items {
		var it reasoningItem
		if json.Unmarshal(raw, &it) == nil && it.Type == "reasoning" {
			out = append(out, it)
		}
	}
	return out, nil
}

// endTurn tells the room the turn ended with o, with every summary of the
// turn: those missed are read back first (the turn's items are listed
// once it has ended).
func (s *streamer) endTurn(ctx context.Context, c *Conn, o outcome) {
	s.backfill(ctx, c)
	s.end(ctx, o)
}

// turnEnded reads whether the session's turn has ended and, if so, tells
// the room how.
// When following is true the thread's own turn/completed, which says
// how the turn ended, is waited for: the end is acted on only when read
// again on the next tick. A read is less sure: a turn rebuilt from the
// rollout (0.171's fallback) reads as interrupted however it ended.
func (s *streamer) turnEnded(ctx context.Context, c *Conn, following bool) bool {
	read, err := readThread(ctx, c, s.live)
	if err != nil || read.Turn == nil {
		return false
	}
	var st string
	switch derive("", true, statusName(read.Status), read.Turn.status()) {
	case StatusCompleted:
		st = "completed"
	case StatusInterrupted:
		st = "interrupted"
	case StatusFailed:
		st = "failed"
	default:
		s.endRead = false
		return false
	}
	if following && !s.endRead {
		s.endRead = true
		return false
	}
	msg := s.lastErr
	if read.Turn.Error != nil && read.Turn.Error.Message != "" {
		msg = read.Turn.Error.Message
	}
	s.endTurn(ctx, c, turnOutcome(st, msg))
	return true
}

// tick checks the session is still live, sends what waits, and a
// heartbeat after heartbeatAfter of quiet. It answers false when the
// stream should end: the session ended elsewhere (a stop) — then the
// room is told, with the turn's summaries read over c (nil: none read),
// unless the starter told it.
func (s *streamer) tick(ctx context.Context, c *Conn) bool {
	st, err := s.b.cfg.State.Load()
	if err == nil {
		live, ok := st.CodexLiveSessions[s.live.SessionID]
		switch {
		case !ok || live.EndedAt != "":
			return false
		case terminal(live.Status):
			o := stoppedOutcome
			if live.Status == StatusFailed {
				o = outcome{presence: blocked, reason: "Codex worker is blocked: " + live.LastError, status: StatusFailed, lastError: live.LastError,
					method: "turn/completed"}
			}
			s.endTurn(ctx, c, o)
			return false
		}
	}
	s.flush(ctx)
	quiet := s.lastNative
	if quiet.IsZero() {
		quiet = s.since
	}
	if s.b.clock.Now().Sub(quiet) >= heartbeatAfter {
		s.report(ctx, HeartbeatMethod)
	}
	return true
}

// lost is the end of the app-server connection. A server the starter
// spawned is the starter's to report (it knows how the process ended);
// after lostGrace, or at once for a server it did not spawn, the bridge
// tells the room itself.
func (s *streamer) lost(ctx context.Context) {
	if s.live.LaunchedServer {
		select {
		case <-s.b.clock.After(lostGrace):
		case <-ctx.Done():
		}
	}
	s.end(ctx, exitOutcome(nil))
}

// end tells the room the session ended with o, with every summary still
// held, unless someone told it already.
func (s *streamer) end(ctx context.Context, o outcome) {
	e := s.b.ender()
	live, agent, ok, err := e.claim(context.WithoutCancel(ctx), s.live.SessionID, o)
	if err != nil || !ok {
		return
	}
	if agent.SessionID != s.agent.SessionID {
		agent = s.agent
	}
	var held []string
	for _, p := range s.pending {
		if !s.repeated(p.Summary, s.b.clock.Now()) {
			held = append(held, p.Summary)
		}
	}
	s.pending = nil
	e.finish(ctx, live, agent, s.reasoningID, held, s.seq+1, o)
}

// ended reports whether the live session has ended: whoever claimed the
// ending (this stream or the starter) tells the room, and nothing of the
// worker at work is posted after it (what is held then is dropped: the
// ending was told without it).
func (s *streamer) ended() bool {
	st, err := s.b.cfg.State.Load()
	if err != nil {
		return false
	}
	l, ok := st.CodexLiveSessions[s.live.SessionID]
	return ok && l.EndedAt != ""
}

// queue holds a reasoning summary for a coming post.
func (s *streamer) queue(summary string) {
	summary = strings.TrimSpace(summary)
	if summary == "" {
		return
	}
	s.text = line("thinking: " + summary)
	s.pending = append(s.pending, ReasoningPost{Summary: clip(summary), Status: s.status})
}

// due is how long until what waits may go, ok false when nothing waits.
func (s *streamer) due() (time.Duration, bool) {
	now := s.b.clock.Now()
	var d time.Duration
	waits := false
	if len(s.pending) > 0 && s.b.cfg.Reasoning != nil {
		d, waits = max(postGap-now.Sub(s.lastPost), 0), true
	}
	if s.nextMethod != "" {
		n := max(postGap-now.Sub(s.lastNative), 0)
		if !waits || n < d {
			d = n
		}
		waits = true
	}
	return d, waits
}

// repeated reports whether summary was posted within repeatWindow of
// now, forgetting what is older.
func (s *streamer) repeated(summary string, now time.Time) bool {
	for sum, at := range s.recent {
		if now.Sub(at) >= repeatWindow {
			delete(s.recent, sum)
		}
	}
	_, ok := s.recent[summary]
	return ok
}

// flush sends what waits once postGap has passed since the last post of
// its kind: the held summaries as one post (those posted within
// repeatWindow left out; as many as fit in maxSummary, the rest at the
// next chance) and the latest native activity held. The first reasoning
// post opens the reasoning session; a failed update opens a new one.
func (s *streamer) flush(ctx context.Context) {
	now := s.b.clock.Now()
	if s.nextMethod != "" && now.Sub(s.lastNative) >= postGap {
		s.report(ctx, s.nextMethod)
	}
	r := s.b.cfg.Reasoning
	if len(s.pending) == 0 || r == nil || (!s.lastPost.IsZero() && now.Sub(s.lastPost) < postGap) {
		return
	}
	if s.ended() {
		s.pending = nil
		return
	}
	var parts []string
	status, size, took := "", 0, 0
	for _, p := range s.pending {
		n := utf8.RuneCountInString(p.Summary)
		if len(parts) > 0 && size+2+n > maxSummary {
			break
		}
		took++
		if s.repeated(p.Summary, now) || slices.Contains(parts, p.Summary) {
			continue
		}
		parts, size, status = append(parts, p.Summary), size+2+n, p.Status
	}
	s.pending = s.pending[took:]
	if len(parts) == 0 {
		return
	}
	for _, part := range parts {
		s.recent[part] = now
	}
	s.lastPost = now
	p := ReasoningPost{Summary: strings.Join(parts, "\n\n"), Status: status,
		SessionCredentials: wire.SessionCredentials{AgentSessionID: s.agent.SessionID, AgentSessionToken: s.agent.SessionToken},
		ActorLabel:         s.agent.ActorLabel, AgentKey: s.agent.AgentKey}
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
	// Whoever ends the session closes it: the starter too.
	if err := s.b.cfg.State.Update(ctx, func(st *state.State) error {
		if l, ok := st.CodexLiveSessions[s.live.SessionID]; ok {
			l.ReasoningSessionID = id
			st.CodexLiveSessions[l.SessionID] = l
		}
		return nil
	}); err != nil {
		s.b.log.Debug("codex bridge: could not save the reasoning session", "session", s.live.SessionID, "error", err)
	}
}

// report sends native activity with the next sequence number, or holds
// it (the latest wins) until postGap has passed since the last report.
func (s *streamer) report(ctx context.Context, method string) {
	now := s.b.clock.Now()
	if !s.lastNative.IsZero() && now.Sub(s.lastNative) < postGap {
		s.nextMethod = method
		return
	}
	s.nextMethod = ""
	if s.ended() {
		return
	}
	s.lastNative = now
	s.seq++
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	err := s.b.cfg.Activity.ReportNativeActivity(ctx, s.live.RoomID, wire.NativeActivity{
		ObservedAt: now.UTC().Format(time.RFC3339Nano), Sequence: s.seq, Method: method, Status: s.status, Text: s.text,
		SessionCredentials: wire.SessionCredentials{AgentSessionID: s.agent.SessionID, AgentSessionToken: s.agent.SessionToken},
	})
	if err != nil {
		s.b.log.Debug("codex bridge: native activity not reported", "session", s.live.SessionID, "error", err)
	}
}

// statusOf is what a notification says of the worker: blocked by an
// error it will not retry or a failed turn, idle once its turn or thread
// is done, else working.
func statusOf(method string, p notice) string {
	switch method {
	case "error":
		if p.WillRetry {
			return working
		}
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

// maxLine bounds the line native activity carries, in characters.
const maxLine = 160

// describe is the line a notification gives of what the worker does, ""
// when it tells nothing new.
func describe(method string, p notice) string {
	switch method {
	case "item/started":
		switch p.Item.Type {
		case "commandExecution":
			return line("running " + p.Item.Command)
		case "mcpToolCall":
			return line("calling " + p.Item.Tool)
		case "fileChange":
			return "editing files"
		case "webSearch":
			return "searching the web"
		case "agentMessage":
			return "writing"
		case "reasoning":
			return "thinking"
		}
	case "error":
		if p.Error != nil && p.Error.Message != "" {
			retry := ""
			if p.WillRetry {
				retry = " (retrying)"
			}
			return line("model error" + retry + ": " + p.Error.Message)
		}
	case "turn/started":
		return "working"
	}
	return ""
}

// line is text made one line of at most maxLine characters.
func line(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > maxLine {
		return string(r[:maxLine-1]) + "…"
	}
	return text
}
