package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

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
		if saved.RuntimeKey == s.runtimeKey && match(a) {
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

// saveSession keeps a session for later runs; dropSession forgets one.
func (s *Server) saveSession(ctx context.Context, a wire.AgentSession) {
	s.update(ctx, func(st *state.State) error {
		st.AgentSessions[a.SessionID] = state.AgentSession{SessionID: a.SessionID, SessionToken: a.SessionToken, RoomID: a.RoomID,
			SessionKind: a.SessionKind, Runtime: a.Runtime, ActorLabel: a.ActorLabel, AgentKey: a.AgentKey,
			DisplayName: a.DisplayName, RuntimeKey: s.runtimeKey, CreatedAt: a.CreatedAt}
		return nil
	})
}

// forgetSessions drops every session of this agent, after the server said
// one has ended or is unknown: the agent registers anew.
func (s *Server) forgetSessions(ctx context.Context) {
	s.mu.Lock()
	clear(s.sessions)
	s.mu.Unlock()
	s.update(ctx, func(st *state.State) error {
		for id, a := range st.AgentSessions {
			if a.RuntimeKey == s.runtimeKey {
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
		return fail("Authenticated agent identity is required before registering an agent session.",
			"Sign in with start_device_auth / poll_device_auth; your agent is then registered in your account's directory.")
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
	s.saveSession(ctx, sess)
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
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	sess, bad := s.needSession(a.AgentSessionID, room)
	if bad != nil {
		return bad
	}
	var out json.RawMessage
	if err := s.api.Room(ctx, http.MethodPost, room, "/agent-sessions/"+url.PathEscape(sess.SessionID)+"/disconnect", nil, sess.creds(), &out); err != nil {
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
	if err := s.api.Room(ctx, http.MethodPost, sess.RoomID, "/presence", nil, body, nil); err != nil {
		s.log.Debug("presence not synced", "session", sess.SessionID, "error", err)
	}
}

type postStatusArgs struct {
	Status         string `json:"status"`
	RoomID         string `json:"room_id"`
	AgentSessionID string `json:"agent_session_id"`
}

func (s *Server) postStatus(ctx context.Context, a postStatusArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	sess, bad := s.needSession(a.AgentSessionID, room)
	if bad != nil {
		return bad
	}
	text := strings.TrimSpace(a.Status)
	status := classify(text)
	body := wire.PresenceUpdate{Status: status, StatusText: text, SessionCredentials: sess.creds()}
	if err := s.api.Room(ctx, http.MethodPost, room, "/presence", nil, body, nil); err != nil {
		return s.apiFailure(ctx, err)
	}
	s.syncPresence(ctx, sess, status, text)
	msg, err := s.apiAs(sess).Send(ctx, room, wire.SendMessage{Sender: sess.ActorLabel, Text: "[status] " + text})
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "status_posted": status, "sender": msg.Sender, "message_id": msg.ID, "timestamp": msg.Timestamp})
}

// roomCall calls a room route as a session (or as the owner alone) and
// answers what the server said, as it said it.
func (s *Server) roomCall(ctx context.Context, sess *agentSession, method, room, suffix string, query url.Values, body any) *mcp.CallToolResult {
	var out json.RawMessage
	if err := s.apiAs(sess).Room(ctx, method, room, suffix, query, body, &out); err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "room_id": room, "result": out})
}

// boardArgs are the arguments every board tool takes.
type boardArgs struct {
	RoomID             string `json:"room_id"`
	AgentSessionID     string `json:"agent_session_id"`
	BoardIntentID      string `json:"board_intent_id"`
	BoardApprovalToken string `json:"board_approval_token"`
}

// grant is the intent an action carries, when the room requires one.
func (b boardArgs) grant(body map[string]any) map[string]any {
	if b.BoardIntentID != "" {
		body["board_intent_id"] = b.BoardIntentID
	}
	if b.BoardApprovalToken != "" {
		body["board_approval_token"] = b.BoardApprovalToken
	}
	return body
}

// board resolves the room and the session of a board tool.
func (s *Server) board(b boardArgs, needWorker bool) (string, *agentSession, *mcp.CallToolResult) {
	room, bad := s.roomFor(b.RoomID)
	if bad != nil {
		return "", nil, bad
	}
	var sess *agentSession
	if needWorker {
		sess, bad = s.needSession(b.AgentSessionID, room)
	} else {
		sess, bad = s.sessionFor(b.AgentSessionID, room)
	}
	return room, sess, bad
}

type addTaskArgs struct {
	boardArgs
	Title           string `json:"title"`
	Description     string `json:"description"`
	SourceMessageID string `json:"source_message_id"`
}

func (s *Server) addTask(ctx context.Context, a addTaskArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	body := a.grant(map[string]any{"title": a.Title, "created_by": sess.ActorLabel})
	if a.Description != "" {
		body["description"] = a.Description
	}
	if a.SourceMessageID != "" {
		body["source_message_id"] = a.SourceMessageID
	}
	return s.roomCall(ctx, sess, http.MethodPost, room, "/tasks", nil, body)
}

type getBoardArgs struct {
	boardArgs
	Status   string `json:"status"`
	OpenOnly *bool  `json:"open_only"`
	After    string `json:"after"`
}

func (s *Server) getBoard(ctx context.Context, a getBoardArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	q := url.Values{}
	if a.Status != "" {
		q.Set("status", a.Status)
	}
	if a.OpenOnly == nil || *a.OpenOnly {
		q.Set("open", "true")
	}
	if a.After != "" {
		q.Set("after", a.After)
	}
	s.syncPresence(ctx, sess, "", "")
	return s.roomCall(ctx, sess, http.MethodGet, room, "/tasks", q, nil)
}

type taskArgs struct {
	boardArgs
	TaskID string `json:"task_id"`
}

func (t taskArgs) path(suffix string) string { return "/tasks/" + url.PathEscape(t.TaskID) + suffix }

type claimArgs struct {
	taskArgs
	LeaseTTLSeconds int `json:"lease_ttl_seconds"`
}

func (s *Server) claimTask(ctx context.Context, a claimArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	body := a.grant(map[string]any{"status": "assigned", "assignee": sess.ActorLabel, "assignee_agent_key": sess.AgentKey})
	if a.LeaseTTLSeconds > 0 {
		body["lease_ttl_seconds"] = a.LeaseTTLSeconds
	}
	r := s.roomCall(ctx, sess, http.MethodPatch, room, a.path(""), nil, body)
	if !r.IsError {
		s.syncPresence(ctx, sess, "working", "claimed "+a.TaskID)
	}
	return r
}

type updateTaskArgs struct {
	taskArgs
	Status   string `json:"status"`
	Assignee string `json:"assignee"`
	PRURL    string `json:"pr_url"`
}

// presenceFor is the presence a task status implies for its worker.
func presenceFor(status string) string {
	switch status {
	case "in_review":
		return "reviewing"
	case "blocked":
		return "blocked"
	case "done", "cancelled", "merged":
		return "idle"
	}
	return "working"
}

func (s *Server) updateTask(ctx context.Context, a updateTaskArgs) *mcp.CallToolResult {
	return s.changeTask(ctx, a)
}

func (s *Server) changeTask(ctx context.Context, a updateTaskArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	body := a.grant(map[string]any{})
	for k, v := range map[string]string{"status": a.Status, "assignee": a.Assignee, "pr_url": a.PRURL} {
		if v != "" {
			body[k] = v
		}
	}
	if a.Status == "assigned" && a.Assignee == "" {
		body["assignee"], body["assignee_agent_key"] = sess.ActorLabel, sess.AgentKey
	}
	r := s.roomCall(ctx, sess, http.MethodPatch, room, a.path(""), nil, body)
	if !r.IsError && a.Status != "" {
		s.syncPresence(ctx, sess, presenceFor(a.Status), a.TaskID+" "+a.Status)
	}
	return r
}

type completeArgs struct {
	taskArgs
	PRURL string `json:"pr_url"`
}

func (s *Server) completeTask(ctx context.Context, a completeArgs) *mcp.CallToolResult {
	return s.changeTask(ctx, updateTaskArgs{taskArgs: a.taskArgs, Status: "in_review", PRURL: a.PRURL})
}

type leaseArgs struct {
	taskArgs
	LeaseID              string `json:"lease_id"`
	Reason               string `json:"reason"`
	TargetAgentKey       string `json:"target_agent_key"`
	TargetAgentSessionID string `json:"target_agent_session_id"`
}

func (l leaseArgs) body(action string) map[string]any {
	body := l.grant(map[string]any{"action": action})
	for k, v := range map[string]string{"lease_id": l.LeaseID, "reason": l.Reason, "target_actor_key": l.TargetAgentKey,
		"target_agent_session_id": l.TargetAgentSessionID} {
		if v != "" {
			body[k] = v
		}
	}
	return body
}

// leaseTool is one of the lease tools: action on the task's work lease
// ("lease-action") or its review lease ("review-lease-action").
func (s *Server) leaseTool(route, action, presence string) mcpserver.ToolHandlerFunc {
	return handler(func(ctx context.Context, a leaseArgs) *mcp.CallToolResult {
		room, sess, bad := s.board(a.boardArgs, true)
		if bad != nil {
			return bad
		}
		r := s.roomCall(ctx, sess, http.MethodPost, room, a.path("/"+route), nil, a.body(action))
		if !r.IsError {
			s.syncPresence(ctx, sess, presence, action+" "+a.TaskID)
		}
		return r
	})
}

type intentArgs struct {
	boardArgs
	Action  string         `json:"action"`
	Payload map[string]any `json:"payload"`
	Reason  string         `json:"reason"`
	// The fields the specific register_*_intent tools build the payload from.
	TaskID               string `json:"task_id"`
	Title                string `json:"title"`
	Description          string `json:"description"`
	SourceMessageID      string `json:"source_message_id"`
	Status               string `json:"status"`
	LeaseAction          string `json:"lease_action"`
	LeaseID              string `json:"lease_id"`
	TargetActorKey       string `json:"target_actor_key"`
	TargetAgentSessionID string `json:"target_agent_session_id"`
}

// intentTool registers a board intent; build makes its action and payload
// from the arguments (nil: the generic tool, which takes them as given).
func (s *Server) intentTool(build func(intentArgs, agentSession) (string, any)) mcpserver.ToolHandlerFunc {
	return handler(func(ctx context.Context, a intentArgs) *mcp.CallToolResult {
		room, sess, bad := s.board(a.boardArgs, true)
		if bad != nil {
			return bad
		}
		action, payload := a.Action, any(a.Payload)
		if build != nil {
			action, payload = build(a, *sess)
		}
		body := map[string]any{"action": action, "payload": payload}
		if a.Reason != "" {
			body["reason"] = a.Reason
		}
		r := s.roomCall(ctx, sess, http.MethodPost, room, "/board-intents", nil, body)
		return r
	})
}

func createIntent(a intentArgs, _ agentSession) (string, any) {
	return letagents.IntentTaskCreate, letagents.NewTaskCreatePayload(a.Title, a.Description, a.SourceMessageID)
}

func claimIntent(a intentArgs, sess agentSession) (string, any) {
	return letagents.IntentTaskClaim, letagents.NewTaskMutationPayload(a.TaskID, "assigned", sess.ActorLabel, sess.AgentKey, "")
}

func closeIntent(a intentArgs, _ agentSession) (string, any) {
	return letagents.IntentTaskClose, letagents.NewTaskMutationPayload(a.TaskID, a.Status, "", "", "")
}

func leaseIntent(a intentArgs, _ agentSession) (string, any) {
	return letagents.IntentLeaseAction, letagents.NewLeaseActionPayload(a.TaskID, a.LeaseAction, a.LeaseID, a.TargetActorKey, a.TargetAgentSessionID)
}

type decideArgs struct {
	boardArgs
	IntentID string `json:"intent_id"`
	Reason   string `json:"reason"`
}

func (s *Server) decideIntent(verb string) mcpserver.ToolHandlerFunc {
	return handler(func(ctx context.Context, a decideArgs) *mcp.CallToolResult {
		room, sess, bad := s.board(a.boardArgs, false)
		if bad != nil {
			return bad
		}
		body := map[string]any{}
		if a.Reason != "" {
			body["reason"] = a.Reason
		}
		return s.roomCall(ctx, sess, http.MethodPost, room, "/board-intents/"+url.PathEscape(a.IntentID)+"/"+verb, nil, body)
	})
}

type listIntentsArgs struct {
	boardArgs
	Status string `json:"status"`
}

func (s *Server) listBoardIntents(ctx context.Context, a listIntentsArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	q := url.Values{}
	if a.Status != "" {
		q.Set("status", a.Status)
	}
	return s.roomCall(ctx, sess, http.MethodGet, room, "/board-intents", q, nil)
}

type settingsArgs struct {
	boardArgs
	ManagerMode string `json:"manager_mode"`
}

func (s *Server) boardSettings(set bool) mcpserver.ToolHandlerFunc {
	return handler(func(ctx context.Context, a settingsArgs) *mcp.CallToolResult {
		room, sess, bad := s.board(a.boardArgs, false)
		if bad != nil {
			return bad
		}
		if !set {
			return s.roomCall(ctx, sess, http.MethodGet, room, "/board-settings", nil, nil)
		}
		return s.roomCall(ctx, sess, http.MethodPatch, room, "/board-settings", nil, map[string]any{"manager_mode": a.ManagerMode})
	})
}
