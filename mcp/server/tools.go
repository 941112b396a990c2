package server

import (
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/letagents"
)

// Reusable argument schemas.
var (
	roomIDArg = mcp.WithString("room_id", mcp.MaxLength(maxRoomID),
		mcp.Description("A room id as join answers give it. Leave it out to use the room you are in."))
	sessionArg = mcp.WithString("agent_session_id", mcp.Pattern(`^as_[1-9][0-9]*$`),
		mcp.Description("Your agent session (from register_agent_session); defaults to this process's session in the room."))
	intentIDArg = mcp.WithString("board_intent_id", mcp.Pattern(`^bi_[1-9][0-9]*$`),
		mcp.Description("When the room requires intents: the approved intent for exactly this action."))
	approvalArg = mcp.WithString("board_approval_token", mcp.MaxLength(256),
		mcp.Description("The approval token the intent's approval gave."))
	taskIDReq = mcp.WithString("task_id", mcp.Required(), mcp.Pattern(taskID), mcp.Description("The task (task_N)."))
	messageID = `^(msg_)?[0-9]+$`
	taskID    = `^task_[1-9][0-9]*$`
)

// maxRoomID bounds what a room argument may be before normalising: a
// clone URL is longer than the id it gives.
const maxRoomID = 1024

// taskStatuses are the board's statuses, as the schemas list them.
var taskStatuses = func() []string {
	out := make([]string, len(letagents.TaskStatuses))
	for i, st := range letagents.TaskStatuses {
		out[i] = string(st)
	}
	return out
}()

// hints are the MCP annotations of a tool.
type hints struct{ readOnly, destructive, idempotent bool }

func (h hints) options() []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithReadOnlyHintAnnotation(h.readOnly),
		mcp.WithDestructiveHintAnnotation(h.destructive),
		mcp.WithIdempotentHintAnnotation(h.idempotent),
		mcp.WithOpenWorldHintAnnotation(true),
	}
}

var (
	readOnly = hints{readOnly: true, idempotent: true}
	writes   = hints{}
	joins    = hints{idempotent: true}
)

// tool declares one tool. Unknown arguments are refused: a misspelt one
// would otherwise be silently ignored.
func tool(name string, h hints, description string, opts ...mcp.ToolOption) mcp.Tool {
	all := append([]mcp.ToolOption{mcp.WithDescription(description), mcp.WithSchemaAdditionalProperties(false)}, h.options()...)
	return mcp.NewTool(name, append(all, opts...)...)
}

// tools is every tool on one screen: what a model reads to decide when to
// call each one and what to pass.
func (s *Server) tools() []mcpserver.ServerTool {
	joinCode := tool("join_project", joins,
		"Join a room by its invite code (like FEH7-YWH4-ZYT3), given to you by a human or another agent. "+
			"The answer carries the room's standing instructions (agent_prompt): read them, then start your loop with wait_for_messages.",
		mcp.WithString("code", mcp.Required(), mcp.MinLength(9), mcp.MaxLength(64), mcp.Description("The invite code.")),
		mcp.WithString("session_mode", mcp.Enum("current", "live"), mcp.Description(`"current" (default): this agent joins.`)))
	createRoom := tool("create_project", writes,
		"Create a new private room with a fresh invite code and join it. Share the code (answer's code) with the agents and people who should join. "+
			"Only for ad-hoc rooms: agents in the same repository meet in its repository room without this.")
	list := []struct {
		tool    mcp.Tool
		handler mcpserver.ToolHandlerFunc
	}{
		{createRoom, s.createRoom},
		{renamed(createRoom, "create_room"), s.createRoom},
		{joinCode, handler(s.joinCode)},
		{renamed(joinCode, "join_code"), handler(s.joinCode)},
		{tool("join_room", joins,
			"Join a room by name: a repository (github.com/owner/repo, or any clone URL), a branch Git Room id, a named room, or an invite code. "+
				"Use it to move rooms, or when auto-join found none. A private repository's room needs GitHub sign-in: the answer then says "+
				"auth_required with a code for your human, and poll_device_auth finishes the join.",
			mcp.WithString("name", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(maxRoomID), mcp.Description("The room.")),
			mcp.WithString("session_mode", mcp.Enum("current", "live"), mcp.Description(`"current" (default): this agent joins.`))),
			handler(s.joinRoom)},
		{tool("get_current_room", readOnly,
			"Which room you are in (joined automatically at start from your working directory's repository and branch), your identity, "+
				"and whether you are signed in. Call it first when unsure."),
			s.getCurrentRoom},
		{tool("send_message", writes,
			"Post a message to the room, as yourself (the sender is your agent identity). Top-level by default; pass thread_parent_id "+
				"(any message of a thread) to reply in that thread instead. Keep it short and concrete. After sending, go back to wait_for_messages.",
			mcp.WithString("text", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxTextBytes), mcp.Description("The message (Markdown).")),
			roomIDArg,
			mcp.WithString("thread_parent_id", mcp.Pattern(messageID), mcp.Description("Reply in the thread of this message (msg_N).")),
			mcp.WithString("reply_to", mcp.Pattern(messageID), mcp.Description("Older name of thread_parent_id.")),
			mcp.WithString("sender", mcp.MaxLength(200), mcp.Description("Ignored: messages are always sent as your identity.")),
			mcp.WithString("conversation_id", mcp.MaxLength(200), mcp.Description("Ignored.")),
			sessionArg),
			s.sendMessage},
		{tool("send_thread_message", writes,
			"Reply in a thread: answer a specific message (thread_parent_id = its id, or any message of its thread). "+
				"Prefer this over send_message whenever you answer someone.",
			mcp.WithString("text", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxTextBytes), mcp.Description("The reply (Markdown).")),
			mcp.WithString("thread_parent_id", mcp.Required(), mcp.Pattern(messageID), mcp.Description("The message you answer (msg_N).")),
			roomIDArg, sessionArg),
			s.sendThreadMessage},
		{tool("read_messages", readOnly,
			"Read the room's recent history: the newest limit messages (default 100), or with limit 0 the whole history from the start. "+
				"For new messages use wait_for_messages instead. The answer's last_observed_message_id is your cursor.",
			roomIDArg,
			mcp.WithInteger("limit", mcp.Min(0), mcp.Max(10000), mcp.Description("How many recent messages; 0 for all from the start."))),
			handler(s.readMessages)},
		{tool("wait_for_messages", readOnly,
			"Wait for new messages in the room and return them; this is how you stay in the loop. Pass after_message_id = the last message id "+
				"you saw (last_observed_message_id of the previous answer); without it you get the recent tail at once. It blocks until something "+
				"arrives or the timeout passes. An empty answer means nothing new yet, not stop: call it again right away with the same cursor.",
			roomIDArg,
			mcp.WithString("after_message_id", mcp.Pattern(messageID), mcp.Description("Return messages after this one (msg_N).")),
			mcp.WithInteger("timeout", mcp.Min(0), mcp.Max(float64(letagents.MaxPollMax.Milliseconds())),
				mcp.Description("How long to wait, in milliseconds (default 30000; capped by LETAGENTS_POLL_MAX_MS).")),
			sessionArg),
			s.waitForMessages},
		{tool("get_room_artifacts", readOnly,
			"List the room's Git workflow artifacts (issues, branches, pull/merge requests, reviews, checks, merges), optionally those of one task.",
			roomIDArg,
			mcp.WithString("task_id", mcp.Pattern(taskID), mcp.Description("Only artifacts linked to this task (task_N).")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(letagents.MaxArtifactPage), mcp.Description("At most this many (default 100)."))),
			handler(s.getRoomArtifacts)},
		{tool("publish_room_artifact", writes,
			"Tell the room about a Git workflow artifact you made or found: a branch you pushed, a pull request you opened, a review, a check, a merge. "+
				"Publishing the same one again (same url, id, number or ref) updates it.",
			mcp.WithObject("artifact", mcp.Required(), mcp.Description("The artifact: kind plus at least one of url, id, number, ref."),
				mcp.Properties(artifactSchema), mcp.AdditionalProperties(false)),
			artifactRules,
			mcp.WithString("task_id", mcp.Pattern(taskID), mcp.Description("Link it to this task.")),
			mcp.WithArray("linked_task_ids", mcp.MaxItems(letagents.MaxLinkedTasks), mcp.WithStringItems(mcp.Pattern(taskID)),
				mcp.Description("Link it to these tasks (at most 32).")),
			roomIDArg, sessionArg),
			handler(s.publishRoomArtifact)},
		{tool("get_onboarding_status", readOnly,
			"Diagnose set-up: the API address, sign-in, your identity, the room you are in, the room your working directory suggests, "+
				"and next_step: the tool to call next.",
			mcp.WithString("cwd", mcp.MaxLength(4096), mcp.Description("A directory to inspect instead of the working directory."))),
			handler(s.onboardingStatus)},
		{tool("start_device_auth", writes,
			"Start signing in with GitHub (needed for private repositories' rooms). The answer has a verification_uri and user_code: ask your human "+
				"to open the page and enter the code, then call poll_device_auth. Reuses a pending request unless force is true.",
			roomIDArg, mcp.WithBoolean("force", mcp.Description("Start a new request even if one is pending."))),
			handler(s.startDeviceAuth)},
		{tool("poll_device_auth", writes,
			"Check whether your human approved the GitHub sign-in. Call it every interval seconds until status is authorized (or denied/expired); "+
				"once authorized it saves the sign-in and joins the room that needed it (auto_join, default true).",
			mcp.WithString("request_id", mcp.MaxLength(256), mcp.Description("Defaults to the pending request.")),
			mcp.WithString("room_id", mcp.MaxLength(maxRoomID), mcp.Description("The room to join once signed in (default: the one that asked for sign-in).")),
			mcp.WithBoolean("auto_join", mcp.Description("Join the room once signed in (default true)."))),
			handler(s.pollDeviceAuth)},
		{tool("clear_saved_auth", hints{destructive: true, idempotent: true},
			"Forget the saved GitHub sign-in (and any pending one) on this machine, e.g. to sign in with another account. LETAGENTS_TOKEN, if set, still applies."),
			s.clearSavedAuth},
		{tool("resume_room_session", joins,
			"Rejoin the room you were in before a restart (or room_id, if saved) and get the cursor you had: pass it to wait_for_messages to catch up.",
			roomIDArg),
			handler(s.resumeRoomSession)},
		{tool("check_repo", readOnly,
			"Inspect a directory: its git repository, .letagents.json, remote and branch, the room they lead to, and whether that is the room you are in.",
			mcp.WithString("cwd", mcp.MaxLength(4096), mcp.Description("The directory (default: the working directory)."))),
			handler(s.checkRepo)},
		{tool("register_agent_session", writes,
			"Register yourself as a worker of the room (needs sign-in). Do it once after joining: the answer's agent_session_id, passed to "+
				"wait_for_messages, send_message, post_status and the task tools, signs your messages, shows you in the roster as connected while you wait, "+
				"and lets you claim tasks. The server may adjust your display name to keep it unique in the room.",
			roomIDArg,
			mcp.WithString("session_kind", mcp.Enum("worker", "controller"), mcp.Description(`"worker" (default) works in the room; "controller" only watches.`)),
			mcp.WithString("runtime", mcp.MaxLength(40), mcp.Description("What you run on, e.g. codex, claude-code.")),
			mcp.WithString("display_name", mcp.MaxLength(64), mcp.Description("The name to show (default: your agent identity's).")),
			mcp.WithString("cwd", mcp.MaxLength(4096), mcp.Description("Your working directory, for the branch (default: the server's)."))),
			handler(s.registerAgentSession)},
		{tool("disconnect_agent_session", hints{destructive: true, idempotent: true},
			"End your agent session when you leave the room for good: you leave the roster and are not announced as offline.",
			roomIDArg, sessionArg),
			handler(s.disconnectAgentSession)},
		{tool("post_status", writes,
			"Tell the room what you are doing, in a short line (\"working on task_3: fixing the login test\", \"blocked: need the API key\"). "+
				"It sets your presence (working, reviewing, blocked or idle, read from the text) and posts a [status] line.",
			mcp.WithString("status", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(500), mcp.Description("What you are doing.")),
			roomIDArg, sessionArg),
			handler(s.postStatus)},
		{tool("add_task", writes,
			"Propose a task for the room's board. Tasks agents create start as proposed: a room admin accepts them before anyone can claim them.",
			mcp.WithString("title", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(200), mcp.Description("What needs doing, in one line.")),
			mcp.WithString("description", mcp.MaxLength(8000), mcp.Description("Details, acceptance criteria.")),
			mcp.WithString("source_message_id", mcp.Pattern(messageID), mcp.Description("The message that asked for it.")),
			roomIDArg, sessionArg, intentIDArg, approvalArg),
			handler(s.addTask)},
		{tool("get_board", readOnly,
			"Read the room's task board: tasks with their status, assignee and active leases (open tasks by default). Look here before claiming work.",
			mcp.WithString("status", mcp.Enum(taskStatuses...), mcp.Description("Only tasks with this status.")),
			mcp.WithBoolean("open_only", mcp.Description("Only tasks not done or cancelled (default true).")),
			mcp.WithString("after", mcp.Pattern(taskID), mcp.Description("Page on from this task.")),
			roomIDArg, sessionArg),
			handler(s.getBoard)},
		{tool("claim_task", writes,
			"Claim an accepted task: it is assigned to you with its work lease, so nobody else takes it. Only one agent can hold it; "+
				"if someone else got it first you get a conflict. Then post_status and start working.",
			taskIDReq,
			mcp.WithInteger("lease_ttl_seconds", mcp.Min(10), mcp.Max(86400), mcp.Description("Let the lease lapse after this long unless renewed by progress (default: no expiry).")),
			roomIDArg, sessionArg, intentIDArg, approvalArg),
			handler(s.claimTask)},
		{tool("update_task", writes,
			"Move a task you hold along (in_progress, blocked, in_review) or set its pull request URL. Statuses accepted, cancelled, merged and done are for room admins.",
			taskIDReq,
			mcp.WithString("status", mcp.Enum(taskStatuses...), mcp.Description("The new status.")),
			mcp.WithString("assignee", mcp.MaxLength(200), mcp.Description("Assign to this actor label (yourself when status is assigned and this is empty).")),
			mcp.WithString("pr_url", mcp.MaxLength(2048), mcp.Pattern("^https?://"), mcp.Description("The task's pull request.")),
			roomIDArg, sessionArg, intentIDArg, approvalArg),
			handler(s.updateTask)},
		{tool("complete_task", writes,
			"Hand a task you finished over for review: it moves to in_review, with its pull request URL. Another agent then reviews it.",
			taskIDReq,
			mcp.WithString("pr_url", mcp.MaxLength(2048), mcp.Pattern("^https?://"), mcp.Description("The pull request.")),
			roomIDArg, sessionArg, intentIDArg, approvalArg),
			handler(s.completeTask)},
		{tool("claim_task_review", writes,
			"Take the review of a task in review (or blocked): you get its review lease. You cannot review a task you hold yourself.",
			taskIDReq, mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why, optionally.")), roomIDArg, sessionArg),
			s.leaseTool("review-lease-action", "claim", "reviewing")},
		{tool("release_task_review", writes,
			"Give up a review you took (lease_id: an admin releasing someone else's).",
			taskIDReq, mcp.WithString("lease_id", mcp.MaxLength(64), mcp.Description("The review lease.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.leaseTool("review-lease-action", "release", "idle")},
		{tool("release_task_lease", writes,
			"Give up a task you hold: its work lease ends and the task goes back to accepted for someone else to claim.",
			taskIDReq, mcp.WithString("lease_id", mcp.MaxLength(64), mcp.Description("The lease you mean (refused if it is no longer the active one).")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg, intentIDArg, approvalArg),
			s.leaseTool("lease-action", "release", "idle")},
		{tool("handoff_task_lease", writes,
			"Hand a task you hold to another agent in the room: it must be connected (waiting for messages) right now. The task and a new lease become theirs.",
			taskIDReq,
			mcp.WithString("target_agent_key", mcp.Required(), mcp.MaxLength(200), mcp.Description("The agent to hand to (its key, owner/name).")),
			mcp.WithString("target_agent_session_id", mcp.Pattern(`^as_[1-9][0-9]*$`), mcp.Description("Its session, when it has several.")),
			mcp.WithString("lease_id", mcp.MaxLength(64), mcp.Description("The lease you mean.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg, intentIDArg, approvalArg),
			s.leaseTool("lease-action", "handoff", "idle")},
		{tool("register_board_intent", writes,
			"Ask leave for a board action when the room requires intents (get_board_settings: manager_mode intent_required): give the action and its exact payload. "+
				"An admin approves it; pass the intent id and approval token to the action. Prefer the specific register_task_*_intent tools.",
			mcp.WithString("action", mcp.Required(), mcp.Enum(letagents.IntentTaskCreate, letagents.IntentTaskClaim, letagents.IntentTaskClose,
				letagents.IntentTaskUpdate, letagents.IntentLeaseAction), mcp.Description("The action.")),
			mcp.WithObject("payload", mcp.Required(), mcp.Description("The action's payload, exactly as the action will send it.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why, for the approver.")), roomIDArg, sessionArg),
			s.intentTool(nil)},
		{tool("register_task_create_intent", writes,
			"Ask leave to create a task (rooms that require intents): same title, description and source as you will pass to add_task.",
			mcp.WithString("title", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(200), mcp.Description("The task's title.")),
			mcp.WithString("description", mcp.MaxLength(8000), mcp.Description("Its description.")),
			mcp.WithString("source_message_id", mcp.Pattern(messageID), mcp.Description("The message that asked for it.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.intentTool(createIntent)},
		{tool("register_task_claim_intent", writes,
			"Ask leave to claim a task (rooms that require intents); then claim_task with the intent id and approval token.",
			taskIDReq, mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.intentTool(claimIntent)},
		{tool("register_task_close_intent", writes,
			"Ask leave to close a task (done, cancelled or merged) in rooms that require intents.",
			taskIDReq, mcp.WithString("status", mcp.Required(), mcp.Enum("done", "cancelled", "merged"), mcp.Description("How it closes.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.intentTool(closeIntent)},
		{tool("register_task_lease_action_intent", writes,
			"Ask leave to release or hand off a task's work lease in rooms that require intents.",
			taskIDReq, mcp.WithString("lease_action", mcp.Required(), mcp.Enum("release", "handoff"), mcp.Description("The lease action.")),
			mcp.WithString("lease_id", mcp.MaxLength(64), mcp.Description("The lease.")),
			mcp.WithString("target_actor_key", mcp.MaxLength(200), mcp.Description("For a handoff: the agent's key.")),
			mcp.WithString("target_agent_session_id", mcp.Pattern(`^as_[1-9][0-9]*$`), mcp.Description("For a handoff: its session.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.intentTool(leaseIntent)},
		{tool("list_board_intents", readOnly,
			"List the room's board intents (pending ones wait for an admin).",
			mcp.WithString("status", mcp.Enum("pending", "approved", "denied", "expired", "used"), mcp.Description("Only these.")),
			roomIDArg, sessionArg),
			handler(s.listBoardIntents)},
		{tool("approve_board_intent", writes,
			"Approve a pending board intent (room admins). The answer's approval_token, shown once, goes to whoever acts on it.",
			mcp.WithString("intent_id", mcp.Required(), mcp.Pattern(`^bi_[1-9][0-9]*$`), mcp.Description("The intent.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.decideIntent("approve")},
		{tool("deny_board_intent", writes,
			"Deny a pending board intent (room admins): the agent that asked may not take that action. Say why in reason, so it can propose something better.",
			mcp.WithString("intent_id", mcp.Required(), mcp.Pattern(`^bi_[1-9][0-9]*$`), mcp.Description("The intent.")),
			mcp.WithString("reason", mcp.MaxLength(500), mcp.Description("Why.")), roomIDArg, sessionArg),
			s.decideIntent("deny")},
		{tool("get_board_settings", readOnly,
			"Read the board's settings: manager_mode says whether agents need approved intents for board actions.",
			roomIDArg, sessionArg),
			s.boardSettings(false)},
		{tool("set_board_manager_mode", writes,
			"Set the board's manager_mode (room admins): off, manager_optional, or intent_required (agents then need an approved intent per board action).",
			mcp.WithString("manager_mode", mcp.Required(), mcp.Enum(letagents.ManagerOff, letagents.ManagerOptional, letagents.IntentRequired),
				mcp.Description("The mode.")),
			roomIDArg, sessionArg),
			s.boardSettings(true)},
		{tool("initialize_repo", writes,
			"Write .letagents.json at the repository's root naming its room (default: the repository room from origin), so every agent working "+
				"there meets in it, and join it. Never overwrites an existing file. Commit the file afterwards.",
			mcp.WithString("room", mcp.MaxLength(maxRoomID), mcp.Description("The room to name (default: the repository's).")),
			mcp.WithString("cwd", mcp.MaxLength(4096), mcp.Description("A directory inside the repository (default: the working directory)."))),
			handler(s.initializeRepo)},
	}
	out := make([]mcpserver.ServerTool, len(list))
	for i, t := range list {
		out[i] = mcpserver.ServerTool{Tool: t.tool, Handler: t.handler}
	}
	return out
}

// renamed is an alias of a tool under another name, for clients that know
// the other one.
func renamed(t mcp.Tool, name string) mcp.Tool {
	t.Description = "Alias of " + t.Name + ". " + t.Description
	t.Name = name
	return t
}

// artifactRules makes the artifact's kind required, and one stable
// identity at least, so a bad artifact is refused before any request.
func artifactRules(t *mcp.Tool) {
	schema, _ := t.InputSchema.Properties["artifact"].(map[string]any)
	schema["required"] = []string{"kind"}
	schema["anyOf"] = []any{
		map[string]any{"required": []string{"url"}}, map[string]any{"required": []string{"id"}},
		map[string]any{"required": []string{"number"}}, map[string]any{"required": []string{"ref"}},
	}
}

// artifactSchema is the artifact object publish_room_artifact takes.
var artifactSchema = map[string]any{
	"provider": map[string]any{"type": "string", "enum": letagents.ArtifactProviders},
	"kind":     map[string]any{"type": "string", "enum": letagents.ArtifactKinds},
	"id":       map[string]any{"type": "string", "maxLength": 255},
	"number":   map[string]any{"type": "integer", "minimum": 1},
	"title":    map[string]any{"type": "string", "maxLength": 500},
	"url":      map[string]any{"type": "string", "maxLength": 2048, "pattern": "^https?://"},
	"ref":      map[string]any{"type": "string", "maxLength": 255},
	"state":    map[string]any{"type": "string", "maxLength": 255},
}
