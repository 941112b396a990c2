package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
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

// Startup observation: a started worker is watched this long, every
// startupPoll, and the start fails if it dies or its turn ends meanwhile.
const (
	startupObservation = 8 * time.Second
	startupPoll        = 500 * time.Millisecond
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
	// Clock is nil for the system clock.
	Clock  Clock
	Logger *slog.Logger
}

// Manager starts, inspects and stops the live sessions kept in a state
// file. It is safe for concurrent use.
type Manager struct {
	cfg   Config
	state *state.File
	clock Clock
	http  *http.Client
	log   *slog.Logger

	mu      sync.Mutex
	spawned map[int]*server // app-servers this process started, by pid, kept after they end
}

// NewManager returns a Manager keeping its sessions in f.
func NewManager(f *state.File, cfg Config) *Manager {
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
func (m *Manager) Close() {
	m.mu.Lock()
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
	if serverURL == "" {
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
		s, err := spawn(m.cfg.Bin, serverURL)
		if err != nil {
			return sess, false, err
		}
		m.mu.Lock()
		m.spawned[s.pid] = s
		m.mu.Unlock()
		sess.ServerPID, sess.LaunchedServer = s.pid, true
		if err := m.awaitReady(ctx, s, serverURL); err != nil {
			m.end(s.pid)
			return sess, false, err
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
	sess, err = m.observe(ctx, sess)
	return sess, false, err
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

// observe watches a started session for startupObservation: it fails the
// session if its server goes away, its status cannot be read, or its turn
// ends, and answers the session as last inspected otherwise.
func (m *Manager) observe(ctx context.Context, sess state.CodexLiveSession) (state.CodexLiveSession, error) {
	deadline := m.clock.Now().Add(startupObservation)
	for {
		left := deadline.Sub(m.clock.Now())
		if left <= 0 {
			return sess, nil
		}
		select {
		case <-m.clock.After(min(left, startupPoll)):
		case <-ctx.Done():
			return sess, fmt.Errorf("watch the worker's start: %w", ctx.Err())
		}
		st, err := m.inspect(ctx, sess)
		if err != nil {
			return sess, err
		}
		sess = st.Session
		reason := ""
		switch {
		case !st.ServerReachable:
			reason = "app-server became unreachable during startup"
		case sess.Status == StatusUnknown:
			reason = "worker status became unknown during startup"
			if sess.LastError != "" {
				reason += " (" + sess.LastError + ")"
			}
		case sess.Status == StatusCompleted:
			reason = "turn completed before entering the room polling loop"
		case terminal(sess.Status):
			reason = "turn entered " + sess.Status
		}
		if reason != "" {
			failed, uerr := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
				s.Status, s.LastError = StatusFailed, reason
			})
			if uerr == nil {
				sess = failed
			}
			return sess, fmt.Errorf("codex worker exited during startup: %s", reason)
		}
	}
}

// Status is what an inspection found.
type Status struct {
	Session         state.CodexLiveSession
	ServerReachable bool
	ThreadStatus    json.RawMessage // as the app-server gave it; nil when unread
	TurnStatus      json.RawMessage
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
	return m.inspect(ctx, sess)
}

func (m *Manager) inspect(ctx context.Context, sess state.CodexLiveSession) (Status, error) {
	if !ready(ctx, m.http, sess.ServerURL) {
		upd, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) { s.Status = derive(s.Status, false, "", "") })
		if err != nil {
			return Status{}, err
		}
		m.endOwned(upd)
		return Status{Session: upd}, nil
	}
	read, err := m.readThread(ctx, sess)
	if err != nil {
		upd, uerr := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) { s.Status, s.LastError = StatusUnknown, err.Error() })
		if uerr != nil {
			return Status{}, uerr
		}
		m.endOwned(upd)
		return Status{Session: upd, ServerReachable: true}, nil
	}
	turn := read.turn(sess.TurnID)
	var turnStatus json.RawMessage
	var items []map[string]any
	if turn != nil {
		turnStatus, items = turn.Status, recentItems(turn.Items)
	}
	upd, err := m.update(ctx, sess.SessionID, func(s *state.CodexLiveSession) {
		s.Status, s.LastError = derive(s.Status, true, statusName(read.Thread.Status), turn.status()), ""
	})
	if err != nil {
		return Status{}, err
	}
	if terminal(upd.Status) {
		m.endOwned(upd)
	}
	return Status{Session: upd, ServerReachable: true, ThreadStatus: read.Thread.Status, TurnStatus: turnStatus, RecentItems: items}, nil
}

// Stop interrupts a live session's turn (when its server is up), marks it
// interrupted and ends its app-server if this machine spawned it. It
// finds the session as Inspect does.
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
		s.Status, s.LastError = StatusInterrupted, ""
		if !reachable {
			s.LastError = "server unreachable at stop time"
		}
	})
	if err != nil {
		return sess, err
	}
	m.endOwned(upd)
	return upd, nil
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

// endOwned ends a session's app-server if this machine spawned it.
func (m *Manager) endOwned(s state.CodexLiveSession) {
	if s.LaunchedServer && s.ServerPID > 0 {
		m.end(s.ServerPID)
	}
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
	case thread == "systemError" || thread == "error" || turn == "failed":
		return StatusFailed
	case turn == "completed":
		return StatusCompleted
	case turn == "interrupted":
		return StatusInterrupted
	case turn == "inProgress" || thread == "active":
		return StatusRunning
	case !reachable:
		if prev == StatusCompleted || prev == StatusInterrupted {
			return prev
		}
		return StatusUnknown
	}
	return prev
}

// stamp is how the state file writes times.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// readThread reads the session's thread with its turns. A thread whose
// first turn is not yet written reads as empty.
func (m *Manager) readThread(ctx context.Context, sess state.CodexLiveSession) (threadRead, error) {
	var read threadRead
	c, err := dial(ctx, sess.ServerURL)
	if err != nil {
		return read, err
	}
	defer c.Close()
	err = call(ctx, c, "thread/read", map[string]any{"threadId": sess.ThreadID, "includeTurns": true}, &read)
	if err != nil && strings.Contains(err.Error(), "not materialized yet") {
		return threadRead{}, nil
	}
	return read, err
}

// threadRead is the answer to thread/read.
type threadRead struct {
	Thread struct {
		Status json.RawMessage `json:"status"`
		Turns  []turnRead      `json:"turns"`
	} `json:"thread"`
}

// turn is the turn with id, else the latest one, else nil.
func (r threadRead) turn(id string) *turnRead {
	turns := r.Thread.Turns
	for i := range turns {
		if turns[i].ID == id {
			return &turns[i]
		}
	}
	if len(turns) == 0 {
		return nil
	}
	return &turns[len(turns)-1]
}

type turnRead struct {
	ID     string          `json:"id"`
	Status json.RawMessage `json:"status"`
	// Items are decoded one by one (recentItems): an item of a shape this
	// package does not know must not make the whole read fail.
	Items []json.RawMessage `json:"items"`
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

// recentItems describes a turn's last six items: the text of messages,
// only the kind of everything else (reasoning above all).
func recentItems(items []json.RawMessage) []map[string]any {
	items = items[max(len(items)-6, 0):]
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
