package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/codex"
	"github.com/letagents/letagents-go/mcp/prompts"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// roomTools are the tools that make, join and resume rooms.
func (s *Server) roomTools() []mcpserver.ServerTool {
	joinCode := tool("join_project", joins,
		"Join a room by its invite code (like FEH7-YWH4-ZYT3), given to you by a human or another agent; "+
			"a name shaped like a code (team-chat) that no invite room has opens the named room of that name. "+
			"The answer carries the room's standing instructions (agent_prompt): read them, then start your loop with wait_for_messages.",
		mcp.WithString("code", mcp.Required(), mcp.MinLength(9), mcp.MaxLength(rooms.MaxIDLength), mcp.Description("The invite code.")),
		sessionModeArg)
	createRoom := tool("create_project", writes,
		"Create a new private room with a fresh invite code and join it. Share the code (answer's code) with the agents and people who should join. "+
			"Only for ad-hoc rooms: agents in the same repository meet in its repository room without this.")
	return []mcpserver.ServerTool{
		bind(createRoom, s.createRoom),
		bind(renamed(createRoom, "create_room"), s.createRoom),
		bind(joinCode, s.joinCode),
		bind(renamed(joinCode, "join_code"), s.joinCode),
		bind(tool("join_room", joins,
			"Join a room by name: a repository (github.com/owner/repo, or any clone URL), a branch Git Room id, a named room, or an invite code. "+
				"Use it to move rooms, or when auto-join found none. A private repository's room needs GitHub sign-in: the answer then says "+
				"auth_required with a code for your human, and poll_device_auth finishes the join.",
			mcp.WithString("name", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(maxRoomID), mcp.Description("The room.")),
			sessionModeArg),
			s.joinRoom),
		bind(tool("get_current_room", readOnly,
			"Which room you are in (joined automatically at start from your working directory's repository and branch), your identity, "+
				"and whether you are signed in. Call it first when unsure.",
			mcp.WithString("conversation_id", mcp.MaxLength(maxIgnored),
				mcp.Description("Report the name set_agent_name gave this conversation, if any, as your identity."))),
			s.getCurrentRoom),
		bind(tool("resume_room_session", joins,
			"Rejoin the room you were in before a restart (or room_id, if saved) and get the cursor you had: pass it to wait_for_messages to catch up.",
			roomIDArg),
			s.resumeRoomSession),
	}
}

// Join session modes.
const (
	modeCurrent = "current" // this agent joins
	modeLive    = "live"    // and a detached Codex worker joins too (start_local_codex_session)
)

var sessionModeArg = mcp.WithString("session_mode", mcp.Enum(modeCurrent, modeLive),
	mcp.Description(`"current" (default): you join, inline. "live": also start (or reuse) a detached local Codex worker for the room, `+
		`as start_local_codex_session does, working in this server's directory.`))

// joinAnswer is what a join tells the agent: the server's room, how it
// was joined, where people see it, who the agent is, and the standing
// instructions of the room.
type joinAnswer struct {
	wire.Join
	JoinedVia       string            `json:"joined_via"`
	SessionMode     string            `json:"session_mode"`
	RoomPath        string            `json:"room_path"`
	RoomURL         string            `json:"room_url"`
	AgentIdentity   agentIdentityJSON `json:"agent_identity"`
	AgentPromptKind prompts.Kind      `json:"agent_prompt_kind"`
	AgentPrompt     string            `json:"agent_prompt"`
	// TokenIgnored says the server did not accept this agent's token and
	// joined it as anonymous.
	TokenIgnored *tokenNotice `json:"token_ignored,omitempty"`
	// Note says what the agent may not expect: a code that opened a
	// named room.
	Note string `json:"note,omitempty"`
	// With session_mode "live": the worker's session.
	liveFields
}

// authNeeded is the answer to a join of a room that needs sign-in: a
// device flow has been started (or is still pending) for it.
type authNeeded struct {
	Success           bool                    `json:"success"`
	Error             string                  `json:"error"`
	RoomID            string                  `json:"room_id"`
	NextStep          string                  `json:"next_step"`
	PendingDeviceAuth state.PendingDeviceAuth `json:"pending_device_auth"`
	Message           string                  `json:"message"`
}

// join joins a room and makes it this process's room. A room that needs
// sign-in starts (or reuses) a device flow and answers authNeeded.
func (s *Server) join(ctx context.Context, roomID, via string) (joinAnswer, *authNeeded, error) {
	j, err := s.api.Join(ctx, roomID)
	var apiErr *apiclient.APIError
	envIgnored := errors.As(err, &apiErr) && apiErr.TokenIgnored != "" && s.tokenSource() == tokenFromEnv
	// A sign-in would not be used while LETAGENTS_TOKEN is set, and a
	// hosted session signs in through its client: the failure's hint
	// says what to do instead.
	if apiclient.Code(err) == letagents.CodeNotAuthenticated && !envIgnored && s.cfg.Hosted == nil {
		p, _, derr := s.startDevice(ctx, roomID, false)
		if derr != nil {
			return joinAnswer{}, nil, derr
		}
		return joinAnswer{}, &authNeeded{Error: "auth_required", RoomID: roomID, NextStep: "poll_device_auth",
			PendingDeviceAuth: p, Message: "This room belongs to a GitHub repository that needs sign-in. " + signInSteps(p)}, nil
	}
	if err != nil {
		return joinAnswer{}, nil, err
	}
	if via == state.JoinedViaJoinCode && j.Code == nil {
		// No invite room has the code: the server opened the named room
		// of that name (team-chat), as join_room would have.
		via = state.JoinedViaJoinRoom
	}
	// Watch first: once the room shows as joined, its news is announced.
	s.watchRoom(ctx, j.RoomID)
	s.mu.Lock()
	s.room = &joinedRoom{join: j, joinedVia: via}
	s.mu.Unlock()
	now := time.Now().UTC().Format(time.RFC3339)
	s.update(ctx, func(st *state.State) error {
		rs := st.RoomSessions[j.RoomID]
		rs.RoomID, rs.ProjectID, rs.DisplayName, rs.JoinedVia, rs.LastSeenAt = j.RoomID, j.RoomID, j.DisplayName, via, now
		if j.Code != nil {
			rs.Code = *j.Code
		}
		if rs.JoinedAt == "" {
			rs.JoinedAt = now
		}
		st.RoomSessions[j.RoomID] = rs
		st.CurrentRoom = j.RoomID
		return nil
	})
	ans := joinAnswer{Join: j, JoinedVia: via, SessionMode: modeCurrent, RoomPath: roomPath(j.RoomID), RoomURL: s.roomURL(j.RoomID),
		AgentIdentity: s.identityJSON(s.whoAmI(ctx)), AgentPromptKind: prompts.Join, AgentPrompt: s.prompts.For(prompts.Join)}
	if !j.Authenticated {
		ans.TokenIgnored = s.ignored.Load()
	}
	return ans, nil, nil
}

// knownRoomID is the id this process knows the room a normalised id names
// by. An invite-shaped id (team-chat) that no invite room has names the
// named room of that name, which joins answered, and state keeps, under
// its rooms.NamedRoomOf form.
func (s *Server) knownRoomID(id string) string {
	if !rooms.MayBeNamed(id) {
		return id
	}
	named := rooms.NamedRoomOf(id)
	if r, ok := s.current(); ok && (r.join.RoomID == id || r.join.RoomID == named) {
		return r.join.RoomID
	}
	st := s.load()
	if _, ok := st.RoomSessions[id]; !ok {
		if _, ok := st.RoomSessions[named]; ok {
			return named
		}
	}
	return id
}

// joinedViaFor is how a room named directly is recorded as joined.
func joinedViaFor(roomID string) string {
	if rooms.IsInviteCode(roomID) {
		return state.JoinedViaJoinCode
	}
	return state.JoinedViaJoinRoom
}

// answerJoin turns a join's outcome into the tool's answer.
func (s *Server) answerJoin(ctx context.Context, j joinAnswer, needsAuth *authNeeded, err error) *mcp.CallToolResult {
	switch {
	case err != nil:
		return s.apiFailure(ctx, err)
	case needsAuth != nil:
		r := result(needsAuth)
		r.IsError = true
		return r
	}
	return result(j)
}

func (s *Server) createRoom(ctx context.Context, _ noArgs) *mcp.CallToolResult {
	p, err := s.api.CreateRoom(ctx)
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	j, needsAuth, err := s.join(ctx, p.ID, state.JoinedViaJoinCode)
	return s.answerJoin(ctx, j, needsAuth, err)
}

type joinCodeArgs struct {
	Code        string `json:"code"`
	SessionMode string `json:"session_mode"`
}

func (s *Server) joinCode(ctx context.Context, a joinCodeArgs) *mcp.CallToolResult {
	code := strings.ToUpper(strings.TrimSpace(a.Code))
	if !rooms.IsInviteCode(code) {
		return fail(`"`+a.Code+`" is not an invite code`, "An invite code looks like FEH7-YWH4-ZYT3. For a named or repository room use join_room.")
	}
	j, needsAuth, err := s.join(ctx, code, state.JoinedViaJoinCode)
	if err == nil && needsAuth == nil && j.Code == nil {
		j.Note = "No invite room has the code " + code + ": this is the named room " + j.RoomID +
			" (names shaped like codes, such as team-chat, are rooms too). If you were given an invite code, check it with your human."
	}
	return s.answerJoinIn(ctx, a.SessionMode, j, needsAuth, err)
}

// answerJoinIn is answerJoin for a join in a session mode: with "live",
// a successful join starts (or reuses) the room's live Codex session.
func (s *Server) answerJoinIn(ctx context.Context, mode string, j joinAnswer, needsAuth *authNeeded, err error) *mcp.CallToolResult {
	if mode != modeLive || err != nil || needsAuth != nil {
		return s.answerJoin(ctx, j, needsAuth, err)
	}
	live, bad := s.startLive(ctx, j, "", codex.StartInput{})
	if bad != nil {
		return bad
	}
	j.SessionMode, j.liveFields = modeLive, live
	return result(j)
}

type joinRoomArgs struct {
	Name        string `json:"name"`
	SessionMode string `json:"session_mode"`
}

func (s *Server) joinRoom(ctx context.Context, a joinRoomArgs) *mcp.CallToolResult {
	id, err := rooms.Normalize(a.Name)
	if err != nil {
		return fail(err.Error(), "Pass a room name, an invite code, or a repository such as github.com/owner/repo.")
	}
	j, needsAuth, err := s.join(ctx, id, joinedViaFor(id))
	return s.answerJoinIn(ctx, a.SessionMode, j, needsAuth, err)
}

type resumeArgs struct {
	RoomID string `json:"room_id"`
}

type resumeAnswer struct {
	Success                    bool              `json:"success"`
	RejoinedFromLocalState     bool              `json:"rejoined_from_local_state"`
	ServerSessionResumed       bool              `json:"server_session_resumed"`
	LastMessageIDBeforeRestart string            `json:"last_message_id_before_restart,omitempty"`
	Room                       joinAnswer        `json:"room"`
	AgentIdentity              agentIdentityJSON `json:"agent_identity"`
	Hint                       string            `json:"hint"`
}

func (s *Server) resumeRoomSession(ctx context.Context, a resumeArgs) *mcp.CallToolResult {
	st := s.load()
	id := a.RoomID
	if id == "" {
		id = st.CurrentRoom
	}
	if n, err := rooms.Normalize(id); err == nil {
		id = s.knownRoomID(n)
	}
	saved, ok := st.RoomSessions[id]
	if id == "" || !ok {
		return fail("No saved room session found.", "Join a room with join_room or join_code.")
	}
	j, needsAuth, err := s.join(ctx, id, saved.JoinedVia)
	if err != nil || needsAuth != nil {
		return s.answerJoin(ctx, j, needsAuth, err)
	}
	hint := "Rejoined. Call wait_for_messages with no after_message_id to see the recent tail."
	if saved.LastMessageID != "" {
		hint = "Rejoined. Call wait_for_messages with after_message_id " + saved.LastMessageID + " to catch up from where you left off."
	}
	return result(resumeAnswer{Success: true, RejoinedFromLocalState: true, LastMessageIDBeforeRestart: saved.LastMessageID,
		Room: j, AgentIdentity: j.AgentIdentity, Hint: hint})
}

type currentRoomArgs struct {
	ConversationID string `json:"conversation_id"`
}

func (s *Server) getCurrentRoom(ctx context.Context, a currentRoomArgs) *mcp.CallToolResult {
	r, ok := s.current()
	if !ok {
		live, count := s.currentLive("")
		return result(map[string]any{"connected": false, "message": "Not currently in any room. Join one with join_room, join_code or create_room.",
			"current_local_codex_session": live, "local_codex_session_count": count})
	}
	live, count := s.currentLive(r.join.RoomID)
	st := s.load()
	var auth map[string]any
	switch {
	case s.cfg.EnvToken != "":
		auth = map[string]any{"source": "env"}
	case st.Auth != nil:
		auth = map[string]any{"source": "local_state", "expires_at": st.Auth.ExpiresAt, "account": st.Auth.Account}
	}
	return result(map[string]any{
		"connected": true, "room_id": r.join.RoomID, "code": r.join.Code, "display_name": r.join.DisplayName,
		"role": r.join.Role, "joined_via": r.joinedVia, "room_path": roomPath(r.join.RoomID), "room_url": s.roomURL(r.join.RoomID),
		"last_message_id": st.RoomSessions[r.join.RoomID].LastMessageID,
		"agent_identity":  s.identityJSON(s.identityIn(ctx, a.ConversationID)), "auth": auth,
		"agent_prompt_kind": prompts.Auto, "agent_prompt": s.prompts.For(prompts.Auto),
		"current_local_codex_session": live, "local_codex_session_count": count,
	})
}

// AutoJoin joins the room the working directory belongs to (its
// .letagents.json, else its git remote and branch), else the saved room,
// else stays in the lobby. A room that needs sign-in starts the device
// flow and says what to do. Nothing here can stop the server.
func (s *Server) AutoJoin(ctx context.Context) {
	room, via := "", ""
	if c := s.detect(ctx, ""); c.Room != "" {
		room, via = c.Room, c.Source
	} else if st := s.load(); st.CurrentRoom != "" {
		room, via = st.CurrentRoom, st.RoomSessions[st.CurrentRoom].JoinedVia
	}
	if room == "" {
		s.log.Info("no room for this directory: in the lobby; use create_room, join_code or join_room")
		return
	}
	if via == "" {
		via = joinedViaFor(room)
	}
	_, needsAuth, err := s.join(ctx, room, via)
	switch {
	case err != nil:
		s.log.Warn("auto-join failed; staying in the lobby", "room", room, "error", err)
	case needsAuth != nil:
		s.log.Warn("auto-join needs sign-in", "room", room, "do", needsAuth.Message)
	default:
		s.log.Info("joined", "room", room, "via", via)
		// An agent that restarts goes on as the session it had here.
		if sess, _ := s.sessionFor("", room); sess != nil {
			s.syncPresence(ctx, sess, "idle", "available in room")
			s.log.Info("resumed agent session", "session", sess.SessionID, "label", sess.ActorLabel)
		}
	}
}
