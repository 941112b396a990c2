package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// boardTools are the tools of a room's task board: its tasks, their work
// leases and their reviews.
func (s *Server) boardTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("add_task", writes,
			"Propose a task for the room's board. Tasks agents create start as proposed: a room admin accepts them before anyone can claim them.",
			mcp.WithString("title", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxTaskTitleBytes), mcp.Description("What needs doing, in one line.")),
			mcp.WithString("description", mcp.MaxLength(letagents.MaxTaskDescriptionBytes), mcp.Description("Details, acceptance criteria.")),
			mcp.WithString("source_message_id", mcp.Pattern(messageID), mcp.Description("The message that asked for it.")),
			roomIDArg, sessionArg, intentIDArg, approvalArg,
			ignored("created_by", "Ignored: the task is created by your agent session."), conversationArg),
			s.addTask),
		bind(tool("get_board", readOnly,
			"Read the room's task board: tasks with their status, assignee and active leases (open tasks by default). Look here before claiming work.",
			mcp.WithString("status", mcp.Enum(taskStatuses...), mcp.Description("Only tasks with this status.")),
			mcp.WithBoolean("open_only", mcp.Description("Only tasks not done or cancelled (default true).")),
			mcp.WithString("after", mcp.Pattern(taskID), mcp.Description("Page on from this task.")),
			roomIDArg, sessionArg),
			s.getBoard),
		bind(tool("claim_task", writes,
			"Claim an accepted task: it is assigned to you with its work lease, so nobody else takes it. Only one agent can hold it; "+
				"if someone else got it first you get a conflict. Then post_status and start working.",
			taskIDReq,
			mcp.WithInteger("lease_ttl_seconds", mcp.Min(letagents.MinLeaseTTL.Seconds()), mcp.Max(letagents.MaxLeaseTTL.Seconds()),
				mcp.Description("Let the lease lapse after this long unless renewed by progress (default: no expiry).")),
			roomIDArg, sessionArg, intentIDArg, approvalArg,
			ignored("assignee", "Ignored: a claim assigns the task to your agent session."), conversationArg),
			s.claimTask),
		bind(tool("update_task", writes,
			"Move a task you hold along (in_progress, blocked, in_review) or set its pull request URL. Statuses accepted, cancelled, merged and done are for room admins.",
			taskIDReq,
			mcp.WithString("status", mcp.Enum(taskStatuses...), mcp.Description("The new status.")),
			// An assignee is an actor label, which senders are too.
			mcp.WithString("assignee", mcp.MaxLength(letagents.MaxSenderBytes), mcp.Description("Assign to this actor label (yourself when status is assigned and this is empty).")),
			mcp.WithString("pr_url", mcp.MaxLength(letagents.MaxPRURLBytes), mcp.Pattern("^https?://"), mcp.Description("The task's pull request.")),
			mcp.WithArray("workflow_artifacts", mcp.MaxItems(maxWorkflowArtifacts), mcp.Items(artifactObject),
				mcp.Description("Git workflow artifacts of the task (branch, pull request, review…) to publish in the room, linked to it.")),
			roomIDArg, sessionArg, intentIDArg, approvalArg, conversationArg),
			s.updateTask),
		bind(tool("complete_task", writes,
			"Hand a task you finished over for review: it moves to in_review, with its pull request URL. Another agent then reviews it.",
			taskIDReq,
			mcp.WithString("pr_url", mcp.MaxLength(letagents.MaxPRURLBytes), mcp.Pattern("^https?://"), mcp.Description("The pull request.")),
			roomIDArg, sessionArg, intentIDArg, approvalArg, conversationArg),
			s.completeTask),
		bind(tool("claim_task_review", writes,
			"Take the review of a task in review (or blocked): you get its review lease. You cannot review a task you hold yourself.",
			taskIDReq, leaseReasonArg("Why, optionally."), roomIDArg, sessionArg, conversationArg),
			s.claimTaskReview),
		bind(tool("release_task_review", writes,
			"Give up a review you took (lease_id: an admin releasing someone else's).",
			taskIDReq, leaseIDArg("The review lease."), leaseReasonArg("Why."), roomIDArg, sessionArg, conversationArg),
			s.releaseTaskReview),
		bind(tool("release_task_lease", writes,
			"Give up a task you hold: its work lease ends and the task goes back to accepted for someone else to claim.",
			taskIDReq, leaseIDArg("The lease you mean (refused if it is no longer the active one)."),
			leaseReasonArg("Why."), roomIDArg, sessionArg, intentIDArg, approvalArg, conversationArg),
			s.releaseTaskLease),
		bind(tool("handoff_task_lease", writes,
			"Hand a task you hold to another agent in the room: it must be connected (waiting for messages) right now. The task and a new lease become theirs.",
			taskIDReq,
			mcp.WithString("target_agent_key", mcp.Required(), mcp.MaxLength(letagents.MaxSenderBytes), mcp.Description("The agent to hand to (its key, owner/name).")),
			mcp.WithString("target_agent_session_id", mcp.Pattern(sessionID), mcp.Description("Its session, when it has several.")),
			mcp.WithString("target_actor_instance_id", mcp.MaxLength(letagents.MaxSenderBytes),
				mcp.Description("Its agent instance, to choose among its sessions (target_agent_session_id names one directly).")),
			leaseIDArg("The lease you mean."), leaseReasonArg("Why."), roomIDArg, sessionArg, intentIDArg, approvalArg, conversationArg),
			s.handoffTaskLease),
	}
}

// Arguments of the lease tools.
var (
	leaseIDArg = func(description string) mcp.ToolOption {
		return mcp.WithString("lease_id", mcp.MaxLength(maxLeaseID), mcp.Description(description))
	}
	leaseReasonArg = func(description string) mcp.ToolOption {
		return mcp.WithString("reason", mcp.MaxLength(letagents.MaxLeaseReasonBytes), mcp.Description(description))
	}
)

// roomResult is a coordination tool's answer: the server's answer, as it
// gave it, under result.
func (s *Server) roomResult(ctx context.Context, room string, out any, err error) *mcp.CallToolResult {
	if err != nil {
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
func (b boardArgs) grant() wire.BoardIntentGrant {
	return wire.BoardIntentGrant{BoardIntentID: b.BoardIntentID, BoardApprovalToken: b.BoardApprovalToken}
}

// board resolves the room and the session of a board tool.
func (s *Server) board(b boardArgs, needWorker bool) (string, *agentSession, *mcp.CallToolResult) {
	return s.roomSession(b.RoomID, b.AgentSessionID, needWorker)
}

// roomSession resolves a tool's room and the agent session it acts as:
// required when needWorker, else only when one is named or saved.
func (s *Server) roomSession(roomID, sessionID string, needWorker bool) (string, *agentSession, *mcp.CallToolResult) {
	room, bad := s.roomFor(roomID)
	if bad != nil {
		return "", nil, bad
	}
	var sess *agentSession
	if needWorker {
		sess, bad = s.needSession(sessionID, room)
	} else {
		sess, bad = s.sessionFor(sessionID, room)
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
	t, err := s.apiAs(sess).CreateTask(ctx, room, wire.CreateTask{Title: a.Title, Description: a.Description,
		SourceMessageID: a.SourceMessageID, CreatedBy: sess.ActorLabel, BoardIntentGrant: a.grant()})
	return s.roomResult(ctx, room, t, err)
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
	s.syncPresence(ctx, sess, "", "")
	list, err := s.apiAs(sess).Tasks(ctx, room, apiclient.TaskQuery{Status: a.Status, Open: a.OpenOnly == nil || *a.OpenOnly, After: a.After})
	return s.roomResult(ctx, room, list, err)
}

type taskArgs struct {
	boardArgs
	TaskID string `json:"task_id"`
}

type claimArgs struct {
	taskArgs
	LeaseTTLSeconds int64 `json:"lease_ttl_seconds"`
}

func (s *Server) claimTask(ctx context.Context, a claimArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	u := wire.UpdateTask{Status: nonEmpty(string(letagents.TaskAssigned)), Assignee: &sess.ActorLabel, AssigneeAgentKey: &sess.AgentKey,
		BoardIntentGrant: a.grant()}
	if a.LeaseTTLSeconds > 0 {
		u.LeaseTTLSeconds = &a.LeaseTTLSeconds
	}
	t, err := s.apiAs(sess).UpdateTask(ctx, room, a.TaskID, u)
	if err == nil {
		s.syncPresence(ctx, sess, "working", "claimed "+a.TaskID)
	}
	return s.roomResult(ctx, room, t, err)
}

type updateTaskArgs struct {
	taskArgs
	Status            string                `json:"status"`
	Assignee          string                `json:"assignee"`
	PRURL             string                `json:"pr_url"`
	WorkflowArtifacts []wire.ArtifactFields `json:"workflow_artifacts"`
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
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	u := wire.UpdateTask{Status: nonEmpty(a.Status), Assignee: nonEmpty(a.Assignee), PRURL: nonEmpty(a.PRURL), BoardIntentGrant: a.grant()}
	if a.Status == string(letagents.TaskAssigned) && a.Assignee == "" {
		u.Assignee, u.AssigneeAgentKey = &sess.ActorLabel, &sess.AgentKey
	}
	t, err := s.apiAs(sess).UpdateTask(ctx, room, a.TaskID, u)
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	if a.Status != "" {
		s.syncPresence(ctx, sess, presenceFor(a.Status), a.TaskID+" "+a.Status)
	}
	ans := map[string]any{"success": true, "room_id": room, "result": t}
	// The original stored these on the task; here a task's artifacts are
	// the room's artifacts linked to it, which get_room_artifacts lists.
	var published []wire.Artifact
	for i := range a.WorkflowArtifacts {
		p, err := s.apiAs(sess).PublishArtifact(ctx, room, wire.PublishArtifact{Artifact: &a.WorkflowArtifacts[i], TaskID: a.TaskID})
		if err != nil {
			f := s.explain(ctx, err)
			f.Hint = strings.TrimSpace(f.Hint + fmt.Sprintf(" The task was updated and its first %d workflow artifacts published; artifact %d of %d "+
				"was refused: fix it, then publish it and the rest with publish_room_artifact (task_id %s).", i, i+1, len(a.WorkflowArtifacts), a.TaskID))
			return failed(f)
		}
		published = append(published, p.Artifact)
	}
	if published != nil {
		ans["workflow_artifacts"] = published
	}
	return result(ans)
}

type completeArgs struct {
	taskArgs
	PRURL string `json:"pr_url"`
}

func (s *Server) completeTask(ctx context.Context, a completeArgs) *mcp.CallToolResult {
	return s.updateTask(ctx, updateTaskArgs{taskArgs: a.taskArgs, Status: string(letagents.TaskInReview), PRURL: a.PRURL})
}

type leaseArgs struct {
	taskArgs
	LeaseID               string `json:"lease_id"`
	Reason                string `json:"reason"`
	TargetAgentKey        string `json:"target_agent_key"`
	TargetAgentSessionID  string `json:"target_agent_session_id"`
	TargetActorInstanceID string `json:"target_actor_instance_id"`
}

func (s *Server) releaseTaskLease(ctx context.Context, a leaseArgs) *mcp.CallToolResult {
	return s.leaseAction(ctx, a, letagents.LeaseActionRelease)
}

func (s *Server) handoffTaskLease(ctx context.Context, a leaseArgs) *mcp.CallToolResult {
	return s.leaseAction(ctx, a, letagents.LeaseActionHandoff)
}

// leaseAction releases or hands off the task's work lease; its holder is
// idle afterwards.
func (s *Server) leaseAction(ctx context.Context, a leaseArgs, action string) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	out, err := s.apiAs(sess).LeaseAction(ctx, room, a.TaskID, wire.LeaseAction{Action: action, LeaseID: a.LeaseID, Reason: a.Reason,
		TargetActorKey: a.TargetAgentKey, TargetActorInstanceID: a.TargetActorInstanceID, TargetAgentSessionID: a.TargetAgentSessionID,
		BoardIntentGrant: a.grant()})
	if err == nil {
		s.syncPresence(ctx, sess, "idle", action+" "+a.TaskID)
	}
	return s.roomResult(ctx, room, out, err)
}

func (s *Server) claimTaskReview(ctx context.Context, a leaseArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	out, err := s.apiAs(sess).ClaimReview(ctx, room, a.TaskID, wire.ReviewLeaseAction{Reason: a.Reason})
	if err == nil {
		s.syncPresence(ctx, sess, "reviewing", "claim "+a.TaskID)
	}
	return s.roomResult(ctx, room, out, err)
}

func (s *Server) releaseTaskReview(ctx context.Context, a leaseArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, true)
	if bad != nil {
		return bad
	}
	out, err := s.apiAs(sess).ReleaseReview(ctx, room, a.TaskID, wire.ReviewLeaseAction{LeaseID: a.LeaseID, Reason: a.Reason})
	if err == nil {
		s.syncPresence(ctx, sess, "idle", "release "+a.TaskID)
	}
	return s.roomResult(ctx, room, out, err)
}

// nonEmpty is s as an optional field: nil when empty, which the wire
// omits.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
