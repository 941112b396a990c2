package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/codex"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// codexTools are the tools of live Codex sessions: a detached Codex
// worker, in a codex app-server on this machine, that joins a room and
// stays in its loop.
func (s *Server) codexTools() []mcpserver.ServerTool {
	sessionIDArg := mcp.WithString("session_id", mcp.MaxLength(maxLiveSessionID),
		mcp.Description("A live session's id (session_id of local_codex_session); default: the current room's, else the latest."))
	return []mcpserver.ServerTool{
		bind(tool("start_local_codex_session", writes,
			"Start (or reuse) a detached local Codex worker for a room: it joins the room in its own Codex session, keeps polling, takes part in "+
				"the discussion and does repository work in cwd when asked, until a room message equals the stop phrase. Needs the codex CLI "+
				"(LETAGENTS_CODEX_BIN), signed in. This process joins the room too.",
			mcp.WithString("room", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(maxRoomID),
				mcp.Description("The room: an invite code or a room name (as join_room takes).")),
			cwdArg("The worker's working directory, for repository work (default: the server's)."),
			mcp.WithString("stop_phrase", mcp.MinLength(1), mcp.MaxLength(maxStopPhrase),
				mcp.Description("The exact room message that stops the worker (default "+codex.DefaultStopPhrase+").")),
			mcp.WithNumber("max_minutes", mcp.Min(0), mcp.Max(maxLiveMinutes),
				mcp.Description("A hard stop after this many minutes; 0 (default) runs until stopped.")),
			mcp.WithString("server_url", mcp.MaxLength(maxServerURL),
				mcp.Description("A running codex app-server to use (ws://host:port); default LETAGENTS_CODEX_SERVER_URL, else a new one."))),
			s.startCodexSession),
		bind(tool("status_local_codex_session", readOnly,
			"Inspect a detached local Codex worker: whether its app-server answers, its thread's and turn's status, and its last few items.",
			sessionIDArg),
			s.statusCodexSession),
		bind(tool("stop_local_codex_session", hints{destructive: true, idempotent: true},
			"Stop a detached local Codex worker: interrupt its turn and end the app-server this machine started for it.",
			sessionIDArg,
			mcp.WithBoolean("shutdown_server", mcp.Description("Accepted for older clients: a spawned app-server is always ended."))),
			s.stopCodexSession),
	}
}

// Bounds of the live-session tools' arguments.
const (
	maxLiveSessionID = 64          // a UUID, with room to spare
	maxStopPhrase    = 200         // a phrase someone types
	maxLiveMinutes   = 7 * 24 * 60 // a week
	maxServerURL     = 2048        // an address, as browsers bound URLs
)

// codexReasoning is where the Codex bridge posts reasoning summaries: the
// room's reasoning sessions API, as the worker.
func (s *Server) codexReasoning() codex.Reasoning { return reasoningPoster{s.api} }

// reasoningPoster posts the bridge's summaries as reasoning sessions.
type reasoningPoster struct{ api *apiclient.Client }

func (r reasoningPoster) OpenReasoning(ctx context.Context, room string, p codex.ReasoningPost) (string, error) {
	w, err := r.api.CreateReasoningSession(ctx, room, wire.CreateReasoningSession{ActorLabel: p.ActorLabel, AgentKey: p.AgentKey,
		ReasoningSnapshot: wire.ReasoningSnapshot{Summary: p.Summary, Goal: p.Goal, Status: p.Status}, SessionCredentials: p.SessionCredentials})
	return w.Session.ID, err
}

func (r reasoningPoster) AddReasoning(ctx context.Context, room, id string, p codex.ReasoningPost) error {
	_, err := r.api.AddReasoningUpdate(ctx, room, id, wire.AddReasoningUpdate{ActorLabel: p.ActorLabel,
		ReasoningSnapshot: wire.ReasoningSnapshot{Summary: p.Summary, Status: p.Status}, SessionCredentials: p.SessionCredentials})
	return err
}

func (r reasoningPoster) CloseReasoning(ctx context.Context, room, id string, creds wire.SessionCredentials) error {
	now := time.Now().UTC().Format(time.RFC3339)
	_, err := r.api.ChangeReasoningSession(ctx, room, id, wire.ChangeReasoningSession{ClosedAt: &now, SessionCredentials: creds})
	return err
}

// liveSessionJSON is a live session as tools show it: without its token.
type liveSessionJSON struct {
	SessionID       string  `json:"session_id"`
	RoomID          string  `json:"room_id"`
	RoomCode        *string `json:"room_code"`
	RoomDisplayName *string `json:"room_display_name"`
	JoinedVia       string  `json:"joined_via"`
	Cwd             string  `json:"cwd"`
	Branch          *string `json:"branch"`
	StopPhrase      string  `json:"stop_phrase"`
	MaxMinutes      int     `json:"max_minutes"`
	DeadlineUTC     *string `json:"deadline_utc"`
	ThreadID        string  `json:"thread_id"`
	TurnID          string  `json:"turn_id"`
	ServerURL       string  `json:"server_url"`
	ServerPID       *int    `json:"server_pid"`
	LaunchedServer  bool    `json:"launched_server"`
	Status          string  `json:"status"`
	LastError       *string `json:"last_error"`
	AgentSessionID  *string `json:"agent_session_id"`
	EndedAt         *string `json:"ended_at"`
	StartedAt       string  `json:"started_at"`
	UpdatedAt       string  `json:"updated_at"`
}

func liveSession(l state.CodexLiveSession) *liveSessionJSON {
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	out := &liveSessionJSON{SessionID: l.SessionID, RoomID: l.RoomID, RoomCode: str(l.RoomCode), RoomDisplayName: str(l.RoomDisplayName),
		JoinedVia: l.JoinedVia, Cwd: l.Cwd, Branch: str(l.Branch), StopPhrase: l.StopPhrase, MaxMinutes: l.MaxMinutes,
		DeadlineUTC: str(l.DeadlineUTC), ThreadID: l.ThreadID, TurnID: l.TurnID, ServerURL: l.ServerURL, LaunchedServer: l.LaunchedServer,
		Status: l.Status, LastError: str(l.LastError), AgentSessionID: str(l.AgentSessionID), EndedAt: str(l.EndedAt), StartedAt: l.StartedAt, UpdatedAt: l.UpdatedAt}
	if l.ServerPID > 0 {
		out.ServerPID = &l.ServerPID
	}
	return out
}

// liveFields are what a join or start answers of the live session.
type liveFields struct {
	LocalCodexSession        *liveSessionJSON `json:"local_codex_session,omitempty"`
	LocalCodexSessionStarted *bool            `json:"local_codex_session_started,omitempty"`
	LocalCodexSessionReused  *bool            `json:"local_codex_session_reused,omitempty"`
}

// startLive starts or reuses the live session of a room this process has
// just joined: the worker joins it as j says (by invite code when that is
// how it was joined), working in dir ("" for the server's).
func (s *Server) startLive(ctx context.Context, j joinAnswer, dir string, in codex.StartInput) (liveFields, *mcp.CallToolResult) {
	if dir == "" {
		dir = s.cfg.Dir
	}
	abs, err := filepath.Abs(dir)
	if st, serr := os.Stat(abs); err != nil || serr != nil || !st.IsDir() {
		return liveFields{}, fail("cwd "+dir+" is not a directory", "Pass the worker's working directory as cwd.")
	}
	in.RoomID, in.JoinedVia, in.RoomIdentifier, in.Cwd = j.RoomID, j.JoinedVia, j.RoomID, abs
	if j.Code != nil {
		in.RoomCode = *j.Code
	}
	if j.JoinedVia == state.JoinedViaJoinCode && j.Code != nil {
		in.RoomIdentifier = *j.Code
	}
	in.RoomDisplayName = j.DisplayName
	in.Branch = s.detect(ctx, abs).CurrentBranch
	sess, reused, err := s.codex.Start(ctx, in)
	if err != nil {
		return liveFields{}, fail(err.Error(), codex.Hint(err))
	}
	started := !reused
	return liveFields{LocalCodexSession: liveSession(sess), LocalCodexSessionStarted: &started, LocalCodexSessionReused: &reused}, nil
}

type startCodexArgs struct {
	Room       string  `json:"room"`
	Cwd        string  `json:"cwd"`
	StopPhrase string  `json:"stop_phrase"`
	MaxMinutes float64 `json:"max_minutes"`
	ServerURL  string  `json:"server_url"`
}

func (s *Server) startCodexSession(ctx context.Context, a startCodexArgs) *mcp.CallToolResult {
	if a.ServerURL != "" {
		if err := codex.CheckServerURL(a.ServerURL); err != nil {
			return fail(err.Error(), "Pass the app-server's WebSocket address, such as ws://127.0.0.1:4500.")
		}
	}
	id, via := strings.ToUpper(strings.TrimSpace(a.Room)), state.JoinedViaJoinCode
	if !rooms.IsInviteCode(id) {
		n, err := rooms.Normalize(a.Room)
		if err != nil {
			return fail(err.Error(), "Pass an invite code or a room name, such as github.com/owner/repo.")
		}
		id, via = n, joinedViaFor(n)
	}
	j, needsAuth, err := s.join(ctx, id, via)
	if err != nil || needsAuth != nil {
		return s.answerJoin(ctx, j, needsAuth, err)
	}
	live, bad := s.startLive(ctx, j, a.Cwd, codex.StartInput{StopPhrase: a.StopPhrase, MaxMinutes: int(a.MaxMinutes), ServerURL: a.ServerURL})
	if bad != nil {
		return bad
	}
	return result(struct {
		Success bool `json:"success"`
		Room    any  `json:"room"`
		liveFields
		AgentIdentity agentIdentityJSON `json:"agent_identity"`
	}{Success: true, Room: map[string]any{"room_id": j.RoomID, "code": j.Code, "display_name": j.DisplayName, "joined_via": j.JoinedVia,
		"room_path": j.RoomPath, "room_url": j.RoomURL}, liveFields: live, AgentIdentity: j.AgentIdentity})
}

type codexSessionArgs struct {
	SessionID      string `json:"session_id"`
	ShutdownServer bool   `json:"shutdown_server"`
}

// noLiveSession is the answer when no live session matches.
func noLiveSession() *mcp.CallToolResult {
	return fail("No local Codex live session found.", "Start one with start_local_codex_session, or join with session_mode \"live\".")
}

func (s *Server) statusCodexSession(ctx context.Context, a codexSessionArgs) *mcp.CallToolResult {
	st, err := s.codex.Inspect(ctx, a.SessionID, s.currentRoomID())
	switch {
	case errors.Is(err, codex.ErrNoSession):
		return noLiveSession()
	case err != nil:
		return fail(err.Error(), "")
	}
	items := st.RecentItems
	if items == nil {
		items = []map[string]any{}
	}
	return result(map[string]any{"success": true, "session": liveSession(st.Session), "server_reachable": st.ServerReachable,
		"thread_status": st.ThreadStatus, "turn_status": st.TurnStatus, "recent_items": items})
}

func (s *Server) stopCodexSession(ctx context.Context, a codexSessionArgs) *mcp.CallToolResult {
	sess, err := s.codex.Stop(ctx, a.SessionID, s.currentRoomID())
	switch {
	case errors.Is(err, codex.ErrNoSession):
		return noLiveSession()
	case err != nil:
		return fail(err.Error(), "")
	}
	return result(map[string]any{"success": true, "session": liveSession(sess)})
}

// currentRoomID is the room this process is in, "" in the lobby.
func (s *Server) currentRoomID() string {
	r, ok := s.current()
	if !ok {
		return ""
	}
	return r.join.RoomID
}

// currentLive is what get_current_room says of live sessions: roomID's
// current one ("" for the latest of any room's) and how many are saved.
func (s *Server) currentLive(roomID string) (*liveSessionJSON, int) {
	sess, ok, n := s.codex.Current(roomID)
	if !ok {
		return nil, n
	}
	return liveSession(sess), n
}
