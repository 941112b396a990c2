package server

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// intentTools are the tools of board intents, which a room's manager_mode
// may require for every board action of its agents, and of that setting.
func (s *Server) intentTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("register_board_intent", writes,
			"Ask leave for a board action when the room requires intents (get_board_settings: manager_mode intent_required): give the action and its exact payload. "+
				"An admin approves it; pass the intent id and approval token to the action. Prefer the specific register_task_*_intent tools.",
			mcp.WithString("action", mcp.Required(), mcp.Enum(letagents.IntentActions...), mcp.Description("The action.")),
			mcp.WithObject("payload", mcp.Required(), mcp.Description("The action's payload, exactly as the action will send it.")),
			intentReasonArg("Why, for the approver."), roomIDArg, sessionArg),
			s.registerBoardIntent),
		bind(tool("register_task_create_intent", writes,
			"Ask leave to create a task (rooms that require intents): same title, description and source as you will pass to add_task.",
			mcp.WithString("title", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxTaskTitleBytes), mcp.Description("The task's title.")),
			mcp.WithString("description", mcp.MaxLength(letagents.MaxTaskDescriptionBytes), mcp.Description("Its description.")),
			mcp.WithString("source_message_id", mcp.Pattern(messageID), mcp.Description("The message that asked for it.")),
			intentReasonArg("Why."), roomIDArg, sessionArg),
			s.registerTaskCreateIntent),
		bind(tool("register_task_claim_intent", writes,
			"Ask leave to claim a task (rooms that require intents); then claim_task with the intent id and approval token.",
			taskIDReq, intentReasonArg("Why."), roomIDArg, sessionArg),
			s.registerTaskClaimIntent),
		bind(tool("register_task_close_intent", writes,
			"Ask leave to close a task (done, cancelled or merged) in rooms that require intents.",
			taskIDReq, mcp.WithString("status", mcp.Required(), mcp.Enum(string(letagents.TaskDone), string(letagents.TaskCancelled), string(letagents.TaskMerged)),
				mcp.Description("How it closes.")),
			intentReasonArg("Why."), roomIDArg, sessionArg),
			s.registerTaskCloseIntent),
		bind(tool("register_task_lease_action_intent", writes,
			"Ask leave to release or hand off a task's work lease in rooms that require intents.",
			taskIDReq, mcp.WithString("lease_action", mcp.Required(), mcp.Enum(letagents.LeaseActionRelease, letagents.LeaseActionHandoff), mcp.Description("The lease action.")),
			leaseIDArg("The lease."),
			mcp.WithString("target_actor_key", mcp.MaxLength(letagents.MaxSenderBytes), mcp.Description("For a handoff: the agent's key.")),
			mcp.WithString("target_agent_session_id", mcp.Pattern(sessionID), mcp.Description("For a handoff: its session.")),
			intentReasonArg("Why."), roomIDArg, sessionArg),
			s.registerLeaseActionIntent),
		bind(tool("list_board_intents", readOnly,
			"List the room's board intents (pending ones wait for an admin).",
			mcp.WithString("status", mcp.Enum(letagents.IntentStatuses...), mcp.Description("Only these.")),
			roomIDArg, sessionArg),
			s.listBoardIntents),
		bind(tool("approve_board_intent", writes,
			"Approve a pending board intent (room admins). The answer's approval_token, shown once, goes to whoever acts on it.",
			mcp.WithString("intent_id", mcp.Required(), mcp.Pattern(boardIntent), mcp.Description("The intent.")),
			intentReasonArg("Why."), roomIDArg, sessionArg),
			s.approveBoardIntent),
		bind(tool("deny_board_intent", writes,
			"Deny a pending board intent (room admins): the agent that asked may not take that action. Say why in reason, so it can propose something better.",
			mcp.WithString("intent_id", mcp.Required(), mcp.Pattern(boardIntent), mcp.Description("The intent.")),
			intentReasonArg("Why."), roomIDArg, sessionArg),
			s.denyBoardIntent),
		bind(tool("get_board_settings", readOnly,
			"Read the board's settings: manager_mode says whether agents need approved intents for board actions.",
			roomIDArg, sessionArg),
			s.getBoardSettings),
		bind(tool("set_board_manager_mode", writes,
			"Set the board's manager_mode (room admins): off, manager_optional, or intent_required (agents then need an approved intent per board action).",
			mcp.WithString("manager_mode", mcp.Required(), mcp.Enum(letagents.ManagerModes...), mcp.Description("The mode.")),
			roomIDArg, sessionArg),
			s.setBoardManagerMode),
	}
}

// intentReasonArg is the reason an intent, its approval or its denial
// gives.
func intentReasonArg(description string) mcp.ToolOption {
	return mcp.WithString("reason", mcp.MaxLength(letagents.MaxIntentReasonBytes), mcp.Description(description))
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

// registerBoardIntent registers the action and payload given as they are.
func (s *Server) registerBoardIntent(ctx context.Context, a intentArgs) *mcp.CallToolResult {
	return s.registerIntent(ctx, a, func(agentSession) (string, any) { return a.Action, a.Payload })
}

// The specific register_*_intent tools build the payload as the action
// will: the same builders the server hashes the action's payload with.

func (s *Server) registerTaskCreateIntent(ctx context.Context, a intentArgs) *mcp.CallToolResult {
	return s.registerIntent(ctx, a, func(agentSession) (string, any) {
		return letagents.IntentTaskCreate, letagents.NewTaskCreatePayload(a.Title, a.Description, a.SourceMessageID)
	})
}

func (s *Server) registerTaskClaimIntent(ctx context.Context, a intentArgs) *mcp.CallToolResult {
	return s.registerIntent(ctx, a, func(sess agentSession) (string, any) {
		return letagents.IntentTaskClaim, letagents.NewTaskMutationPayload(a.TaskID, string(letagents.TaskAssigned), sess.ActorLabel, sess.AgentKey, "")
	})
}

func (s *Server) registerTaskCloseIntent(ctx context.Context, a intentArgs) *mcp.CallToolResult {
	return s.registerIntent(ctx, a, func(agentSession) (string, any) {
		return letagents.IntentTaskClose, letagents.NewTaskMutationPayload(a.TaskID, a.Status, "", "", "")
	})
}

func (s *Server) registerLeaseActionIntent(ctx context.Context, a intentArgs) *mcp.CallToolResult {
	return s.registerIntent(ctx, a, func(agentSession) (string, any) {
		return letagents.IntentLeaseAction, letagents.NewLeaseActionPayload(a.TaskID, a.LeaseAction, a.LeaseID, a.TargetActorKey, a.TargetAgentSessionID)
	})
}

// registerIntent registers a board intent as the caller's worker session;
// build makes its action and payload, from the session when it needs it.
func (s *Server) registerIntent(ctx context.Context, a intentArgs, build func(agentSession) (string, any)) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	action, payload := build(*sess)
	raw, err := json.Marshal(payload)
	if err != nil {
		return fail("could not encode the intent's payload: "+err.Error(), "Pass the payload as a JSON object.")
	}
	i, err := s.apiAs(sess).RegisterIntent(ctx, room, wire.RegisterIntent{Action: action, Payload: raw, Reason: a.Reason})
	return s.roomResult(ctx, room, i, err)
}

type decideArgs struct {
	boardArgs
	IntentID string `json:"intent_id"`
	Reason   string `json:"reason"`
}

func (s *Server) approveBoardIntent(ctx context.Context, a decideArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	i, err := s.apiAs(sess).ApproveIntent(ctx, room, a.IntentID, a.Reason)
	return s.roomResult(ctx, room, i, err)
}

func (s *Server) denyBoardIntent(ctx context.Context, a decideArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	i, err := s.apiAs(sess).DenyIntent(ctx, room, a.IntentID, a.Reason)
	return s.roomResult(ctx, room, i, err)
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
	list, err := s.apiAs(sess).BoardIntents(ctx, room, a.Status)
	return s.roomResult(ctx, room, list, err)
}

type settingsArgs struct {
	boardArgs
	ManagerMode string `json:"manager_mode"`
}

func (s *Server) getBoardSettings(ctx context.Context, a settingsArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	b, err := s.apiAs(sess).BoardSettings(ctx, room)
	return s.roomResult(ctx, room, b, err)
}

func (s *Server) setBoardManagerMode(ctx context.Context, a settingsArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	b, err := s.apiAs(sess).SetBoardSettings(ctx, room, wire.BoardSettingsUpdate{ManagerMode: a.ManagerMode})
	return s.roomResult(ctx, room, b, err)
}
