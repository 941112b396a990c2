package server

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// sessionTools are the tools of an agent's session in a room: register
// it, end it, and say what it is doing.
func (s *Server) sessionTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("register_agent_session", writes,
			"Register yourself as a worker of the room (needs sign-in). Do it once after joining: the answer's agent_session_id, passed to "+
				"wait_for_messages, send_message, post_status and the task tools, signs your messages, shows you in the roster as connected while you wait, "+
				"and lets you claim tasks. The server may adjust your display name to keep it unique in the room.",
			roomIDArg,
			mcp.WithString("session_kind", mcp.Enum(letagents.SessionWorker, letagents.SessionController),
				mcp.Description(`"worker" (default) works in the room; "controller" only watches.`)),
			mcp.WithString("runtime", mcp.MaxLength(letagents.MaxLabelBytes), mcp.Description("What you run on, e.g. codex, claude-code.")),
			mcp.WithString("display_name", mcp.MaxLength(letagents.MaxLabelBytes), mcp.Description("The name to show (default: your agent identity's).")),
			cwdArg("Your working directory, for the branch (default: the server's).")),
			s.registerAgentSession),
		bind(tool("disconnect_agent_session", hints{destructive: true, idempotent: true},
			"End your agent session when you leave the room for good: you leave the roster and are not announced as offline.",
			roomIDArg, sessionArg),
			s.disconnectAgentSession),
		bind(tool("post_status", writes,
			"Tell the room what you are doing, in a short line (\"working on task_3: fixing the login test\", \"blocked: need the API key\"). "+
				"It sets your presence (working, reviewing, blocked or idle, read from the text) and posts a [status] line.",
			mcp.WithString("status", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxPresenceText), mcp.Description("What you are doing.")),
			roomIDArg, sessionArg, senderArg, conversationArg),
			s.postStatus),
	}
}

// agentSession is a session this agent registered. It is saved in the
// state file under the agent's runtime key, so an agent that restarts (with
// the same LETAGENTS_AGENT_INSTANCE_ID or IDE session) goes on as the same
// session instead of leaving a silent one behind.
type agentSession struct {
	wire.AgentSession
	status string // the presence status last reported
}

func (a agentSession) creds() wire.SessionCredentials {
	return wire.SessionCredentials{AgentSessionID: a.SessionID, AgentSessionToken: a.SessionToken}
}

// sessionFor is the session a tool acts as: the one named, else this
// agent's session in the room (from memory, else saved by an earlier run),
// else none (nil, nil).
func (s *Server) sessionFor(id, room string) (*agentSession, *mcp.CallToolResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	match := func(a agentSession) bool {
		return (id == "" || a.SessionID == id) && (room == "" || id != "" || a.RoomID == room)
	}
	for _, a := range s.sessions {
		if match(a) {
			return s.checkRoom(a, room)
		}
	}
	for _, saved := range s.load().AgentSessions {
		a := agentSession{AgentSession: wire.AgentSession{SessionID: saved.SessionID, SessionToken: saved.SessionToken,
			RoomID: saved.RoomID, SessionKind: saved.SessionKind, Runtime: saved.Runtime, ActorLabel: saved.ActorLabel,
			AgentKey: saved.AgentKey, DisplayName: saved.DisplayName}, status: "idle"}
		if saved.RuntimeKey == s.key() && match(a) {
			s.sessions[a.SessionID] = a
			return s.checkRoom(a, room)
		}
	}
	if id != "" {
		return nil, fail("unknown agent_session_id "+id, "Pass the agent_session_id register_agent_session returned, or register again.")
	}
	return nil, nil
}

func (s *Server) checkRoom(a agentSession, room string) (*agentSession, *mcp.CallToolResult) {
	if room != "" && a.RoomID != room {
		return nil, fail("agent session "+a.SessionID+" belongs to room "+a.RoomID, "Register a session in this room with register_agent_session.")
	}
	return &a, nil
}

// saveSession keeps a session for later runs, and answers it as saved.
func (s *Server) saveSession(ctx context.Context, a wire.AgentSession) state.AgentSession {
	saved := state.AgentSession{SessionID: a.SessionID, SessionToken: a.SessionToken, RoomID: a.RoomID,
		SessionKind: a.SessionKind, Runtime: a.Runtime, ActorLabel: a.ActorLabel, AgentKey: a.AgentKey,
		DisplayName: a.DisplayName, RuntimeKey: s.key(), CreatedAt: a.CreatedAt, APIURL: s.cfg.APIURL}
	s.update(ctx, func(st *state.State) error {
		st.AgentSessions[a.SessionID] = saved
		return nil
	})
	return saved
}

// forgetSessions drops every session of this agent, after the server said
// one has ended or is unknown: the agent registers anew.
func (s *Server) forgetSessions(ctx context.Context) {
	s.mu.Lock()
	clear(s.sessions)
	s.mu.Unlock()
	s.update(ctx, func(st *state.State) error {
		key := s.key()
		for id, a := range st.AgentSessions {
			if a.RuntimeKey == key {
				delete(st.AgentSessions, id)
			}
		}
		return nil
	})
}

// apiAs is the API client acting as a session, when there is one.
func (s *Server) apiAs(a *agentSession) *apiclient.Client {
	if a == nil {
		return s.api
	}
	return s.api.As(a.creds())
}

// needSession is sessionFor for tools that only a worker session may use.
func (s *Server) needSession(id, room string) (*agentSession, *mcp.CallToolResult) {
	a, bad := s.sessionFor(id, room)
	if bad != nil {
		return nil, bad
	}
	if a == nil {
		return nil, fail("no agent session in "+room, "Call register_agent_session first (you must be signed in), then pass its agent_session_id.")
	}
	return a, nil
}

type registerSessionArgs struct {
	RoomID      string `json:"room_id"`
	SessionKind string `json:"session_kind"`
	Runtime     string `json:"runtime"`
	DisplayName string `json:"display_name"`
	Cwd         string `json:"cwd"`
}

func (s *Server) registerAgentSession(ctx context.Context, a registerSessionArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	id := s.whoAmI(ctx)
	if id.CanonicalKey == "" {
		hint := "Sign in with start_device_auth / poll_device_auth; your agent is then registered in your account's directory."
		if n := s.ignored.Load(); n != nil {
			hint = n.Hint // signed in, as far as this agent knew, but the server did not accept the token
		}
		return fail("Authenticated agent identity is required before registering an agent session.", hint)
	}
	display := a.DisplayName
	if display == "" {
		display = id.DisplayName
	}
	sess, err := s.api.RegisterSession(ctx, room, wire.RegisterSession{ActorKey: id.CanonicalKey, DisplayName: display,
		IDELabel: id.IDELabel, AgentInstanceID: s.instance, SessionKind: a.SessionKind, Runtime: a.Runtime,
		RepoBranch: s.detect(ctx, a.Cwd).CurrentBranch})
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	s.mu.Lock()
	s.sessions[sess.SessionID] = agentSession{AgentSession: sess, status: "idle"}
	s.mu.Unlock()
	// A live session's worker registering: its bridge binds in the
	// background, and nothing it meets fails this call.
	s.bridges.Registered(s.saveSession(ctx, sess))
	public := sess
	public.SessionToken = ""
	return result(map[string]any{"success": true, "agent_session": public, "agent_session_id": sess.SessionID,
		"use_agent_session_id": "Pass this exact agent_session_id to wait_for_messages, send_message, send_thread_message, post_status and the task tools: " +
			"your messages are then signed as " + sess.ActorLabel + ", and your waits show you as connected."})
}

type sessionArgs struct {
	RoomID         string `json:"room_id"`
	AgentSessionID string `json:"agent_session_id"`
}

func (s *Server) disconnectAgentSession(ctx context.Context, a sessionArgs) *mcp.CallToolResult {
	room, sess, bad := s.roomSession(a.RoomID, a.AgentSessionID, true)
	if bad != nil {
		return bad
	}
	out, err := s.api.DisconnectSession(ctx, room, sess.creds())
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	s.mu.Lock()
	delete(s.sessions, sess.SessionID)
	s.mu.Unlock()
	s.update(ctx, func(st *state.State) error {
		delete(st.AgentSessions, sess.SessionID)
		return nil
	})
	return result(map[string]any{"success": true, "room_id": room, "agent_session_id": sess.SessionID, "result": out, "local_state": "ended"})
}

// classify reads a presence status from what an agent says it is doing.
func classify(text string) string {
	t := strings.ToLower(text)
	switch {
	case containsAny(t, "blocked", "stuck", "waiting for", "need help", "cannot"):
		return "blocked"
	case containsAny(t, "review"):
		return "reviewing"
	case containsAny(t, "idle", "done", "finished", "available", "free"):
		return "idle"
	}
	return "working"
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// syncPresence re-sends a session's presence (status kept, or the new one):
// the heartbeat around waits and sends that keeps the roster current.
// Failures are logged only: presence never breaks the tool it rides on.
func (s *Server) syncPresence(ctx context.Context, sess *agentSession, status, text string) {
	if sess == nil {
		return
	}
	s.mu.Lock()
	cur := s.sessions[sess.SessionID]
	if status == "" {
		status = cur.status
	}
	if cur.SessionID != "" {
		cur.status = status
		s.sessions[sess.SessionID] = cur
	}
	s.mu.Unlock()
	body := wire.PresenceUpdate{Status: status, StatusText: text, SessionCredentials: sess.creds()}
	if _, err := s.api.UpdatePresence(ctx, sess.RoomID, body); err != nil {
		s.log.Debug("presence not synced", "session", sess.SessionID, "error", err)
	}
}

type postStatusArgs struct {
	Status         string `json:"status"`
	RoomID         string `json:"room_id"`
	AgentSessionID string `json:"agent_session_id"`
}

func (s *Server) postStatus(ctx context.Context, a postStatusArgs) *mcp.CallToolResult {
	room, sess, bad := s.roomSession(a.RoomID, a.AgentSessionID, true)
	if bad != nil {
		return bad
	}
	text := strings.TrimSpace(a.Status)
	status := classify(text)
	body := wire.PresenceUpdate{Status: status, StatusText: text, SessionCredentials: sess.creds()}
	if _, err := s.api.UpdatePresence(ctx, room, body); err != nil {
		return s.apiFailure(ctx, err)
	}
	s.syncPresence(ctx, sess, status, text)
	msg, err := s.apiAs(sess).Send(ctx, room, wire.SendMessage{Sender: sess.ActorLabel, Text: "[status] " + text})
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "status_posted": status, "sender": msg.Sender, "message_id": msg.ID, "timestamp": msg.Timestamp})
}
