package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/letagents/letagents-go/mcp/identity"
	"github.com/letagents/letagents-go/mcp/state"
)

// Statuses of a live session.
const (
	StatusStarting    = "starting"
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
	StatusUnknown     = "unknown"
)

// Defaults of a start.
const (
	DefaultBin        = "codex"
	DefaultStopPhrase = "/stop-codex-room"
	// TokenPrefix starts a session's token, which the worker's closing
	// line repeats.
	TokenPrefix = "LOCAL_CODEX_ROOM_"
)

// Startup: a start waits up to registerWait for its worker to register
// in the room, looking every startupPoll, and fails if the worker dies
// or its turn ends meanwhile.
const (
	registerWait = 90 * time.Second
	startupPoll  = 500 * time.Millisecond
	// interruptSettle is how long the start's watch reads a turn as
	// interrupted before it believes it: Codex reads a turn that has just
	// ended as interrupted until it has written the end, which a busy
	// machine took more than one startupPoll to do (a model's error at
	// start then read as an interrupted turn).
	interruptSettle = 10 * time.Second
	// endWait bounds how long a stop, or the clean-up of an ended turn,
	// waits for the worker's bridge to tell the room before it tells it
	// itself and ends the app-server; looking every endPoll.
	endWait = 15 * time.Second
	endPoll = 100 * time.Millisecond
	// turnsPage is the page size of thread/turns/list.
	turnsPage = 20
)

// ErrNoSession is the error when no live session matches.
var ErrNoSession = errors.New("no local Codex live session found")

// Config is how a Manager reaches Codex.
type Config struct {
	// Bin is the codex binary (LETAGENTS_CODEX_BIN); DefaultBin when "".
	Bin string
	// ServerURL is the app-server to use (LETAGENTS_CODEX_SERVER_URL);
	// when "", a new one is spawned on a free loopback port.
	ServerURL string
	// Room is where the starter tells a room that a session ended when
	// the worker's bridge cannot (a stop, a dead app-server).
	Room Room
	// Clock is nil for the system clock.
	Clock  Clock
	Logger *slog.Logger
}

// Manager starts, inspects and stops the live sessions kept in a state
// file. It is safe for concurrent use.
type Manager struct {
	cfg   Config
	state state.Store
	clock Clock
	http  *http.Client
	log   *slog.Logger

	mu      sync.Mutex
	spawned map[int]*server // app-servers this process started, by pid, kept after they end
	closing bool            // Close has begun: a server that exits now was ended with this process
	watches sync.WaitGroup  // the goroutines waiting for spawned servers to exit

	// saved, when set (by tests), is told of each new session once it is
	// saved: where a test's worker registers, as a real worker does while
	// the start watches.
	saved func(state.CodexLiveSession)
}

// NewManager returns a Manager keeping its sessions in f.
func NewManager(f state.Store, cfg Config) *Manager {
	m := &Manager{cfg: cfg, state: f, clock: cfg.Clock, http: &http.Client{}, log: cfg.Logger, spawned: map[int]*server{}}
	if m.clock == nil {
		m.clock = realClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.cfg.Bin == "" {
		m.cfg.Bin = DefaultBin
	}
	return m
}

// Close ends the app-servers this process spawned, and with them their
// workers: a live session lasts as long as the MCP server that started it.
// It returns once the rooms have been told.
func (m *Manager) Close() {
	defer m.watches.Wait()
	m.mu.Lock()
	m.closing = true
	pids := make([]int, 0, len(m.spawned))
	for pid := range m.spawned {
		pids = append(pids, pid)
	}
	m.mu.Unlock()
	for _, pid := range pids {
		m.end(pid)
	}
}

// StartInput is what a start needs.
type StartInput struct {
	RoomID          string
	RoomIdentifier  string // what the worker joins: the invite code or the room's name
	RoomCode        string
	RoomDisplayName string
	JoinedVia       string // state.JoinedViaJoinCode or state.JoinedViaJoinRoom
	Cwd             string // the worker's directory (made absolute)
	Branch          string // its checked-out branch, "" if none
	StopPhrase      string // DefaultStopPhrase when ""
	MaxMinutes      int    // a hard stop after this long; 0 for none
	ServerURL       string // an app-server to use, before Config.ServerURL
}

// Start starts a live session for a room, or reuses the room's current
// one when it runs for the same directory and branch. A new session gets
// an app-server (the one named, else a spawned one), a thread and a turn
// with the worker's start prompt, and is saved in the state file; it is
// then watched for startupObservation, and the start fails (ending what it
// spawned) if the server goes away or the turn ends before the worker is
// in its loop.
func (m *Manager) Start(ctx context.Context, in StartInput) (sess state.CodexLiveSession, reused bool, err error) {
	cwd, err := filepath.Abs(in.Cwd)
	if err != nil {
		return sess, false, fmt.Errorf("working directory %q: %w", in.Cwd, err)
	}
	if cur, ok := m.find(m.load(), "", in.RoomID); ok && filepath.Clean(cur.Cwd) == cwd && cur.Branch == in.Branch {
		if st, err := m.inspect(ctx, cur); err == nil && (st.Session.Status == StatusRunning || st.Session.Status == StatusStarting) {
			return st.Session, true, nil
		}
	}

	serverURL := in.ServerURL
	if serverURL == "" {
		serverURL = m.cfg.ServerURL
	}
	picked := serverURL == ""
	if picked {
		if serverURL, err = freeServerURL(); err != nil {
			return sess, false, err
		}
	}
	if err := CheckServerURL(serverURL); err != nil {
		return sess, false, err
	}
	now := m.clock.Now().UTC()
	sess = state.CodexLiveSession{SessionID: identity.NewInstanceUUID(), RoomID: in.RoomID, RoomIdentifier: in.RoomIdentifier,
		RoomCode: in.RoomCode, RoomDisplayName: in.RoomDisplayName, JoinedVia: in.JoinedVia, Cwd: cwd, Branch: in.Branch,
		StopPhrase: in.StopPhrase, MaxMinutes: max(in.MaxMinutes, 0), Token: TokenPrefix + identity.NewInstanceUUID(),
		ServerURL: serverURL, CodexBin: m.cfg.Bin, Status: StatusStarting, StartedAt: stamp(now), UpdatedAt: stamp(now)}
	if sess.StopPhrase == "" {
		sess.StopPhrase = DefaultStopPhrase
	}
	if sess.MaxMinutes > 0 {
		sess.DeadlineUTC = now.Add(time.Duration(sess.MaxMinutes)*time.Minute).Format("2006-01-02 15:04:05") + " UTC"
	}

	if !ready(ctx, m.http, serverURL) {
		for try := 1; ; try++ {
			err := m.launch(ctx, &sess)
			if err == nil {
				break
			}
			if !picked || try == serverTries || !errors.Is(err, errPortTaken) {
				return sess, false, err
			}
			if sess.ServerURL, err = freeServerURL(); err != nil {
				return sess, false, err
			}
		}
	}
	// From here on a failure ends the server this start spawned.
	defer func() {
		if err != nil && sess.LaunchedServer {
			m.end(sess.ServerPID)
		}
	}()
	if err := m.startTurn(ctx, &sess); err != nil {
		return sess, false, err
	}
	if err := m.state.Update(ctx, func(st *state.State) error {
		st.CodexLiveSessions[sess.SessionID] = sess
		st.CurrentCodexLiveSessions[sess.RoomID] = sess.SessionID
		return nil
	}); err != nil {
		return sess, false, fmt.Errorf("save the live session: %w", err)
	}
	if m.saved != nil {
		m.saved(sess)
	}
	sess, err = m.observe(ctx, sess)
	return sess, false, err
}

// launch spawns the codex binary's app-server at the session's address
// and waits for it to listen; a server that does not is ended.
func (m *Manager) launch(ctx context.Context, sess *state.CodexLiveSession) error {
	s, err := spawn(m.cfg.Bin, sess.ServerURL)
	if err != nil {
		return err
	}
	defer s.forgetStderr()
	m.mu.Lock()
	m.spawned[s.pid] = s
	m.watches.Add(1)
	m.mu.Unlock()
	go m.watch(s)
	sess.ServerPID, sess.LaunchedServer = s.pid, true
	if err := m.awaitReady(ctx, s); err != nil {
		m.end(s.pid)
		return err
	}
	return nil
}

// startTurn connects to the session's app-server, starts a thread and its
// first turn with the start prompt, and records their ids.
func (m *Manager) startTurn(ctx context.Context, sess *state.CodexLiveSession) error {
	c, err := dial(ctx, sess.ServerURL)
	if err != nil {
		return err
	}
	defer c.Close()
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := call(ctx, c, "thread/start", struct{}{}, &thread); err != nil {
		return err
	}
	if sess.ThreadID = thread.Thread.ID; sess.ThreadID == "" {
		return errors.New("codex app-server did not return a thread id")
	}
	// The worker acts without asking: no one is there to approve.
	params := map[string]any{
		"threadId": sess.ThreadID, "cwd": sess.Cwd, "approvalPolicy": "never",
		"sandboxPolicy": map[string]string{"type": "dangerFullAccess"},
		"input":         []map[string]any{{"type": "text", "text": startPrompt(*sess), "text_elements": []any{}}},
	}
	var turn struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := call(ctx, c, "turn/start", params, &turn); err != nil {
		return err
	}
	if sess.TurnID = turn.Turn.ID; sess.TurnID == "" {
		return errors.New("codex app-server did not return a turn id")
	}
	return nil
}

// observe watches a started session on one app-server connection until
// its worker has registered in the room (the start succeeds), or its
// server goes away, its turn ends or registerWait passes (the start
// fails, saying why, and the worker is stopped). A worker that registered
// and whose turn then ended before a look (a short turn) started too.
func (m *Manager) observe(ctx context.Context, sess state.CodexLiveSession) (state.CodexLiveSession, error) {
	// A server that cannot be dialled is inspected as gone.
	c, err := dial(ctx, sess.ServerURL)
	if err == nil {
		defer c.Close()
	}
	deadline := m.clock.Now().Add(registerWait)
	var interrupted time.Time // since when the looks have read the turn interrupted
	for {
		settled := !interrupted.IsZero() && !m.clock.Now().Before(interrupted.Add(interruptSettle))
		st, err := m.inspectOn(ctx, c, sess, settled)
		if err != nil {
			return sess, err
		}
		switch sess = st.Session; {
		case statusName(st.TurnStatus) != "interrupted":
			interrupted = time.Time{}
		case interrupted.IsZero():
			interrupted = m.clock.Now()
		}
		// A bridge binds only a session that is starting or running: for
		// one that ended, registration is read from the agent sessions.
		if sess.AgentSessionID != "" || (terminal(sess.Status) && pickWorker(sess, m.load().AgentSessions) != "") {
			return m.started(ctx, sess), nil
		}
		var fail *StartError
		switch {
		case !st.ServerReachable:
			fail = &StartError{Kind: FailServer, Reason: "the codex app-server went away during startup"}
			if sess.LastError != "" {
				fail.Reason += " (" + sess.LastError + ")"
			}
		case sess.Status == StatusUnknown:
			fail = &StartError{Kind: FailServer, Reason: "worker status became unknown during startup (" + sess.LastError + ")"}
		case sess.Status == StatusCompleted:
			fail = &StartError{Kind: FailRegistration, Reason: "turn completed before the worker registered in the room"}
		case sess.Status == StatusFailed:
			fail = &StartError{Kind: failureKind(st.TurnError), Reason: "turn failed: " + sess.LastError}
		case terminal(sess.Status):
			fail = &StartError{Kind: FailServer, Reason: "turn " + sess.Status + " during startup"}
		case !m.clock.Now().Before(deadline):
			fail = &StartError{Kind: FailRegistration, Reason: "the worker did not register in the room within " + registerWait.String() +
				": " + whyUnregistered(st.RecentItems)}
		}
		if fail != nil {
			return m.failStart(ctx, sess, fail)
		}
		select {
		case <-m.clock.After(min(deadline.Sub(m.clock.Now()), startupPoll)):
		case <-ctx.Done():
			return sess, fmt.Errorf("watch the worker's start: %w", ctx.Err())
		}
	}
}

// started is the session of a start whose worker registered: running, or,
// when its turn has already ended, ended as a status call would end it.
// The room hears that ending from the starter if no bridge streams the
// session: a bridge cannot bind a session that has ended.
func (m *Manager) started(ctx context.Context, sess state.CodexLiveSession) state.CodexLiveSession {
	if terminal(sess.Status) {
		return m.endOwned(ctx, sess)
	}
	if sess.Status != StatusStarting {
		return sess
	}
	// A worker in the room is running, whatever Codex has written yet.
	upd, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
		if s.Status == StatusStarting {
			s.Status = StatusRunning
		}
	})
	if err != nil {
		return sess
	}
	return upd
}

// failStart marks a session whose start failed, stops its worker, and
// answers the failure.
func (m *Manager) failStart(ctx context.Context, sess state.CodexLiveSession, fail *StartError) (state.CodexLiveSession, error) {
	if c, err := dial(ctx, sess.ServerURL); err == nil {
		_ = call(ctx, c, "turn/interrupt", map[string]string{"threadId": sess.ThreadID, "turnId": sess.TurnID}, nil)
		c.Close()
	}
	failed, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
		s.Status, s.LastError = StatusFailed, fail.Reason
	})
	if err == nil {
		sess = failed
	}
	m.endOwned(ctx, sess)
	return sess, fail
}

// whyUnregistered is what the worker's turn says of why it did not
// register: the error its register_agent_session (or join) call got, or
// that it made none.
func whyUnregistered(items []map[string]any) string {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i]["type"] == "mcpToolCall" && items[i]["error"] != nil && items[i]["error"] != "" {
			return fmt.Sprintf("its %v call failed: %v", items[i]["tool"], items[i]["error"])
		}
	}
	return "it made no successful register_agent_session call (does its LetAgents MCP server get LETAGENTS_TOKEN and LETAGENTS_API_URL in its env?)"
}

// Status is what an inspection found.
type Status struct {
	Session         state.CodexLiveSession
	ServerReachable bool
	ThreadStatus    json.RawMessage // as the app-server gave it; nil when unread
	TurnStatus      json.RawMessage
	TurnError       *turnError       // a failed turn's error
	RecentItems     []map[string]any // the turn's last items, reasoning left out
}

// Inspect reads a live session's state from its app-server and saves what
// it found: the session id's, else roomID's current one, else the most
// recently updated current one. It answers ErrNoSession when none
// matches. An owned app-server that is unreachable, unreadable or whose
// turn has ended is ended.
func (m *Manager) Inspect(ctx context.Context, id, roomID string) (Status, error) {
	sess, ok := m.find(m.load(), id, roomID)
	if !ok {
		return Status{}, ErrNoSession
	}
	st, err := m.inspect(ctx, sess)
	if err == nil && terminal(st.Session.Status) {
		m.endOwned(ctx, st.Session)
	}
	return st, err
}

// inspect is inspectOn over a connection of its own.
func (m *Manager) inspect(ctx context.Context, sess state.CodexLiveSession) (Status, error) {
	if !ready(ctx, m.http, sess.ServerURL) {
		return m.inspectOn(ctx, nil, sess, true)
	}
	c, err := dial(ctx, sess.ServerURL)
	if err != nil {
		// It answers its probe but will not talk: the worker's state is
		// unknown, and why is the error.
		upd, uerr := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
			if !terminal(s.Status) {
				s.Status, s.LastError = StatusUnknown, err.Error()
			}
		})
		if uerr != nil {
			return Status{}, uerr
		}
		return Status{Session: upd, ServerReachable: true}, nil
	}
	defer c.Close()
	return m.inspectOn(ctx, c, sess, true)
}

// inspectOn reads a session's thread over c (nil or closed: the server is
// unreachable) and saves the status it derives. A final status stays. A
// turn read as interrupted is taken for ended only when trustInterrupted:
// Codex (0.171) reads a turn that has just ended, whose end it has not
// written yet, as interrupted (and without its error), and the start's
// watch, which would fail on it, waits until the reads have said so for
// interruptSettle.
func (m *Manager) inspectOn(ctx context.Context, c *Conn, sess state.CodexLiveSession, trustInterrupted bool) (Status, error) {
	if c == nil || c.Err() != nil {
		exit := m.exitOf(sess)
		upd, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
			if terminal(s.Status) {
				return
			}
			if exit != "" {
				s.Status, s.LastError = StatusFailed, exit
				return
			}
			s.Status, s.LastError = StatusUnknown, "the codex app-server at "+s.ServerURL+" does not answer"
		})
		if err != nil {
			return Status{}, err
		}
		return Status{Session: upd}, nil
	}
	read, err := readThread(ctx, c, sess)
	if err != nil {
		upd, uerr := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
			if !terminal(s.Status) {
				s.Status, s.LastError = StatusUnknown, err.Error()
			}
		})
		if uerr != nil {
			return Status{}, uerr
		}
		return Status{Session: upd, ServerReachable: true}, nil
	}
	upd, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
		prev := s.Status
		if read.Turn.status() == "interrupted" && !terminal(prev) && !trustInterrupted {
			return
		}
		s.Status = derive(prev, true, statusName(read.Status), read.Turn.status())
		switch {
		case terminal(prev):
		case s.Status == StatusFailed && read.Turn != nil && read.Turn.Error != nil:
			s.LastError = read.Turn.Error.Message
		case s.Status == StatusFailed:
			s.LastError = "the codex thread is in status " + statusName(read.Status)
		default:
			s.LastError = ""
		}
	})
	if err != nil {
		return Status{}, err
	}
	out := Status{Session: upd, ServerReachable: true, ThreadStatus: read.Status, RecentItems: recentItems(read.Items)}
	if read.Turn != nil {
		out.TurnStatus, out.TurnError = read.Turn.Status, read.Turn.Error
	}
	return out, nil
}

// Stop interrupts a live session's turn (when its server is up) and
// marks it interrupted (a final status stays); once the room has been
// told (by the worker's bridge, which hears the turn end, else by the
// starter after endWait) it ends the app-server if this machine spawned
// it. It finds the session as Inspect does.
func (m *Manager) Stop(ctx context.Context, id, roomID string) (state.CodexLiveSession, error) {
	sess, ok := m.find(m.load(), id, roomID)
	if !ok {
		return sess, ErrNoSession
	}
	reachable := ready(ctx, m.http, sess.ServerURL)
	if reachable {
		if c, err := dial(ctx, sess.ServerURL); err == nil {
			err = call(ctx, c, "turn/interrupt", map[string]string{"threadId": sess.ThreadID, "turnId": sess.TurnID}, nil)
			c.Close()
			if err != nil {
				m.log.Info("could not interrupt the codex turn", "session", sess.SessionID, "error", err)
			}
		}
	}
	upd, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
		if terminal(s.Status) {
			return
		}
		s.Status, s.LastError = StatusInterrupted, ""
		if !reachable {
			s.LastError = "server unreachable at stop time"
		}
	})
	if err != nil {
		return sess, err
	}
	return m.endOwned(ctx, upd), nil
}

// endOwned ends a session whose worker is done: it waits up to endWait
// for the room to have been told (the worker's bridge does it when it
// hears the turn end), tells it itself if no one began to, and ends the
// app-server if this machine spawned it. It answers the session as saved then.
func (m *Manager) endOwned(ctx context.Context, s state.CodexLiveSession) state.CodexLiveSession {
	if s.AgentSessionID != "" {
		// Real time, not the package's clock: this waits for another
		// process's posts to the API, however slow, not for a timing.
		deadline := time.Now().Add(endWait)
		for s.ToldAt == "" && time.Now().Before(deadline) && ctx.Err() == nil {
			select {
			case <-time.After(endPoll):
			case <-ctx.Done():
			}
			if cur, ok := m.load().CodexLiveSessions[s.SessionID]; ok {
				s = cur
			}
		}
	}
	if s.EndedAt == "" {
		m.tell(ctx, s.SessionID, outcomeOf(s))
		if cur, ok := m.load().CodexLiveSessions[s.SessionID]; ok {
			s = cur
		}
	}
	if s.LaunchedServer && s.ServerPID > 0 {
		m.end(s.ServerPID)
	}
	return s
}

// tell tells the room the session id ended with o, unless it was told.
// When no bridge posted for the session (none saved a reasoning session),
// the turn's reasoning summaries, read over a connection of the
// starter's own, go with the ending: a turn that ended before its
// worker's bridge heard it loses none.
func (m *Manager) tell(ctx context.Context, id string, o outcome) {
	e := ender{room: m.cfg.Room, state: m.state, clock: m.clock, log: m.log}
	live, agent, ok, err := e.claim(context.WithoutCancel(ctx), id, o)
	if err != nil {
		m.log.Warn("could not record the end of the codex live session", "session", id, "error", err)
		return
	}
	if !ok || m.cfg.Room.Activity == nil {
		return
	}
	var held []string
	if live.ReasoningSessionID == "" && agent.SessionToken != "" && m.cfg.Room.Reasoning != nil {
		held = m.summaries(ctx, live)
	}
	e.finish(ctx, live, agent, "", held, 1<<40, o)
}

// summaries are the reasoning summaries of live's turn, in order, each
// once; none when its app-server cannot be read.
func (m *Manager) summaries(ctx context.Context, live state.CodexLiveSession) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postTimeout)
	defer cancel()
	if !ready(ctx, m.http, live.ServerURL) {
		return nil
	}
	c, err := dial(ctx, live.ServerURL)
	if err != nil {
		m.log.Info("could not read the codex turn's summaries for its ending", "session", live.SessionID, "error", err)
		return nil
	}
	defer c.Close()
	items, err := turnReasoning(ctx, c, live)
	if err != nil {
		m.log.Info("could not read the codex turn's summaries for its ending", "session", live.SessionID, "error", err)
	}
	var out []string
	for _, it := range items {
		for _, part := range it.Summary {
			if part = strings.TrimSpace(part); part != "" && !slices.Contains(out, part) {
				out = append(out, part)
			}
		}
	}
	return out
}

// watch waits for a spawned app-server to exit and tells the rooms of
// its sessions that were not told: an app-server that dies takes its
// worker and the worker's bridge with it.
func (m *Manager) watch(s *server) {
	defer m.watches.Done()
	<-s.exited
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	for _, live := range m.load().CodexLiveSessions {
		if !live.LaunchedServer || live.ServerPID != s.pid || live.EndedAt != "" {
			continue
		}
		o := exitOutcome(s.err)
		switch {
		case terminal(live.Status):
			o = outcomeOf(live)
		case closing:
			o = starterGoneOutcome
		}
		m.tell(context.Background(), live.SessionID, o)
	}
}

// exitOf is how the app-server of sess exited, when this process spawned
// it and it did; "" otherwise.
func (m *Manager) exitOf(sess state.CodexLiveSession) string {
	if !sess.LaunchedServer {
		return ""
	}
	m.mu.Lock()
	s, ok := m.spawned[sess.ServerPID]
	m.mu.Unlock()
	if !ok {
		return ""
	}
	select {
	case <-s.exited:
		return exitOutcome(s.err).lastError
	default:
		return ""
	}
}

// outcomeOf is the outcome a session's saved status says.
func outcomeOf(s state.CodexLiveSession) outcome {
	switch s.Status {
	case StatusCompleted:
		return turnOutcome("completed", "")
	case StatusFailed:
		return turnOutcome("failed", s.LastError)
	case StatusInterrupted:
		return stoppedOutcome
	}
	return exitOutcome(nil)
}

// Current is roomID's current live session ("" for the most recently
// updated of all rooms' current ones), and how many sessions are saved.
func (m *Manager) Current(roomID string) (sess state.CodexLiveSession, ok bool, count int) {
	st := m.load()
	sess, ok = m.find(st, "", roomID)
	return sess, ok, len(st.CodexLiveSessions)
}

// find is the session named by id, else roomID's current one, else (both
// empty) the most recently updated current session of any room.
func (m *Manager) find(st state.State, id, roomID string) (state.CodexLiveSession, bool) {
	switch {
	case id != "":
		s, ok := st.CodexLiveSessions[id]
		return s, ok
	case roomID != "":
		s, ok := st.CodexLiveSessions[st.CurrentCodexLiveSessions[roomID]]
		return s, ok
	}
	var best state.CodexLiveSession
	found := false
	for _, sid := range st.CurrentCodexLiveSessions {
		if s, ok := st.CodexLiveSessions[sid]; ok && (!found || s.UpdatedAt > best.UpdatedAt) {
			best, found = s, true
		}
	}
	return best, found
}

func (m *Manager) load() state.State {
	st, err := m.state.Load()
	if err != nil {
		m.log.Warn("could not read the local state", "error", err)
	}
	return st
}

// update changes a saved session and stamps it.
func (m *Manager) update(ctx context.Context, id string, fn func(*state.CodexLiveSession)) (state.CodexLiveSession, error) {
	var out state.CodexLiveSession
	err := m.state.Update(ctx, func(st *state.State) error {
		s, ok := st.CodexLiveSessions[id]
		if !ok {
			return ErrNoSession
		}
		fn(&s)
		s.UpdatedAt = stamp(m.clock.Now())
		st.CodexLiveSessions[id] = s
		if st.CurrentCodexLiveSessions[s.RoomID] == "" {
			st.CurrentCodexLiveSessions[s.RoomID] = id
		}
		out = s
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("update live session %s: %w", id, err)
	}
	return out, nil
}

// end ends a spawned app-server. One this process spawned is ended only
// while it runs: once it has exited, its pid may be another process's.
func (m *Manager) end(pid int) {
	m.mu.Lock()
	s, ours := m.spawned[pid]
	m.mu.Unlock()
	if ours {
		select {
		case <-s.exited:
			return
		default:
		}
	}
	if err := terminate(pid); err != nil {
		m.log.Warn("could not end the codex app-server", "pid", pid, "error", err)
	}
}

// terminal reports whether a session's worker is done.
func terminal(status string) bool {
	return status == StatusCompleted || status == StatusInterrupted || status == StatusFailed
}

// derive is a session's status from what an inspection saw: the thread's
// status and the turn's (either "" when unread).
func derive(prev string, reachable bool, thread, turn string) string {
	switch {
	case terminal(prev):
		return prev
	case thread == "systemError" || thread == "error" || turn == "failed":
		return StatusFailed
	case turn == "completed":
		return StatusCompleted
	case turn == "interrupted":
		return StatusInterrupted
	case turn == "inProgress" || thread == "active":
		return StatusRunning
	case !reachable:
		return StatusUnknown
	}
	return prev
}

// stamp is how the state file writes times.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// threadRead is what an inspection reads of a thread: its status, the
// session's turn (nil before it is written) and that turn's last items.
type threadRead struct {
	Status json.RawMessage
	Turn   *turnRead
	Items  []json.RawMessage
}

// readThread reads the session's thread status (thread/read), finds its
// turn (thread/turns/list, newest first, page by page) and reads the
// turn's last items (thread/items/list). A thread whose first turn is
// not yet written reads as empty.
func readThread(ctx context.Context, c *Conn, sess state.CodexLiveSession) (threadRead, error) {
	var out threadRead
	var thread struct {
		Thread struct {
			Status json.RawMessage `json:"status"`
		} `json:"thread"`
	}
	err := call(ctx, c, "thread/read", map[string]any{"threadId": sess.ThreadID}, &thread)
	if notWritten(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Status = thread.Thread.Status
	cursor := ""
	for out.Turn == nil {
		params := map[string]any{"threadId": sess.ThreadID, "limit": turnsPage, "itemsView": "notLoaded"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Data       []turnRead `json:"data"`
			NextCursor string     `json:"nextCursor"`
		}
		err = call(ctx, c, "thread/turns/list", params, &page)
		if unsupported(err) {
			return readThreadTurns(ctx, c, sess, out)
		}
		if notWritten(err) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for i := range page.Data {
			if page.Data[i].ID == sess.TurnID {
				out.Turn = &page.Data[i]
			}
		}
		if page.NextCursor == "" || page.NextCursor == cursor || len(page.Data) == 0 {
			break
		}
		cursor = page.NextCursor
	}
	if out.Turn == nil {
		return out, nil
	}
	var items struct {
		Data []struct {
			Item json.RawMessage `json:"item"`
		} `json:"data"`
	}
	err = call(ctx, c, "thread/items/list", map[string]any{"threadId": sess.ThreadID, "turnId": sess.TurnID,
		"sortDirection": "desc", "limit": recentCount}, &items)
	if unsupported(err) {
		return readThreadTurns(ctx, c, sess, out)
	}
	if err != nil {
		return out, err
	}
	for i := len(items.Data) - 1; i >= 0; i-- {
		out.Items = append(out.Items, items.Data[i].Item)
	}
	return out, nil
}

// readThreadTurns reads the session's turn and its items the way Codex
// deprecated (thread/read with includeTurns), for an app-server that
// does not serve thread/turns/list or thread/items/list for the thread:
// 0.171 answers "list_turns is not supported yet" for a thread it runs.
func readThreadTurns(ctx context.Context, c *Conn, sess state.CodexLiveSession, out threadRead) (threadRead, error) {
	var read struct {
		Thread struct {
			Status json.RawMessage `json:"status"`
			Turns  []turnRead      `json:"turns"`
		} `json:"thread"`
	}
	err := call(ctx, c, "thread/read", map[string]any{"threadId": sess.ThreadID, "includeTurns": true}, &read)
	if notWritten(err) || unsupported(err) {
		// A running turn 0.171 will not list: the thread's status is
		// what there is; the bridge reports the turn's end.
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Status = read.Thread.Status
	rebuilt := false
	for i := range read.Thread.Turns {
		if t := &read.Thread.Turns[i]; t.ID == sess.TurnID {
			out.Items = t.Items
			// A turn the listing gave keeps the status it gave.
			if out.Turn == nil {
				out.Turn, rebuilt = t, true
			}
		}
	}
	// Rebuilt from the rollout, a turn whose end is not written yet reads
	// as interrupted (seen with 0.171), and 0.171 rebuilds only a turn it
	// will not list: one that runs, or has just ended. Early in the turn
	// the thread still reads as idle: a rebuilt "interrupted" is a turn
	// running, and so is any turn of an active thread, but not one of a
	// thread in error, which has just failed.
	thread := statusName(out.Status)
	if rebuilt && (thread == "active" || (out.Turn.status() == "interrupted" && thread != "systemError")) {
		out.Turn.Status, out.Turn.Error = json.RawMessage(`"inProgress"`), nil
	}
	return out, nil
}

// notWritten reports whether err says the thread's history is not on
// disk yet (early in its first turn): the thread then reads as empty.
func notWritten(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "not materialized yet") || strings.Contains(err.Error(), "is empty"))
}

// unsupported reports whether err is the app-server's answer to a method
// it does not serve (JSON-RPC "method not found").
func unsupported(err error) bool {
	var rpc *RPCError
	return errors.As(err, &rpc) && rpc.Code == -32601
}

// turnRead is the part of a turn an inspection reads.
type turnRead struct {
	ID     string          `json:"id"`
	Status json.RawMessage `json:"status"`
	Error  *turnError      `json:"error"`
	// Items are read only by readThreadTurns, and decoded one by one
	// (recentItems): an item of a shape this package does not know must
	// not make the whole read fail.
	Items []json.RawMessage `json:"items"`
}

// turnError is a failed turn's error, as Codex reports it.
type turnError struct {
	Message string `json:"message"`
	// Info is Codex's kind of error: a name such as "unauthorized", or an
	// object naming it.
	Info json.RawMessage `json:"codexErrorInfo"`
}

// status is the turn's status name; "" for no turn.
func (t *turnRead) status() string {
	if t == nil {
		return ""
	}
	return statusName(t.Status)
}

// statusName is the name of a status the app-server writes as a string,
// or as an object holding it under "type" (threads) or "status" (older
// turns); "" when there is none.
func statusName(raw json.RawMessage) string {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name
	}
	var o struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return ""
	}
	if o.Type != "" {
		return o.Type
	}
	return o.Status
}

// itemRead is the part of a thread item an inspection shows. Content is
// read only for user messages: its shape differs between item types.
type itemRead struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Phase   string          `json:"phase"`
	Content json.RawMessage `json:"content"`
}

// recentCount is how many of a turn's last items an inspection shows.
const recentCount = 6

// recentItems describes a turn's last items: the text of messages, the
// tool and error of MCP tool calls, only the kind of everything else
// (reasoning above all).
func recentItems(items []json.RawMessage) []map[string]any {
	items = items[max(len(items)-recentCount, 0):]
	out := make([]map[string]any, 0, len(items))
	for _, raw := range items {
		var it itemRead
		if json.Unmarshal(raw, &it) != nil {
			// A field of another type than messages have: only the kind shows.
			var kind struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(raw, &kind)
			it = itemRead{Type: kind.Type}
		}
		switch it.Type {
		case "mcpToolCall":
			var call struct {
				Tool  string `json:"tool"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
				Result *struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			_ = json.Unmarshal(raw, &call) // an unknown shape shows only the kind
			entry := map[string]any{"type": it.Type, "tool": call.Tool}
			switch {
			case call.Error != nil:
				entry["error"] = call.Error.Message
			case call.Result != nil && call.Result.IsError && len(call.Result.Content) > 0:
				entry["error"] = call.Result.Content[0].Text
			}
			out = append(out, entry)
		case "agentMessage":
			out = append(out, map[string]any{"type": it.Type, "phase": it.Phase, "text": it.Text})
		case "userMessage":
			var content []struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(it.Content, &content) // an unknown shape shows no text
			parts := make([]string, len(content))
			for i, c := range content {
				parts[i] = c.Text
			}
			out = append(out, map[string]any{"type": it.Type, "text": strings.Join(parts, "\n")})
		default:
			kind := it.Type
			if kind == "" {
				kind = "unknown"
			}
			out = append(out, map[string]any{"type": kind})
		}
	}
	return out
}
