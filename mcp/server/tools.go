package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/shared/letagents"
)

// tools is every tool, family by family; each family's table sits with
// its handlers. What a model reads to decide when to call a tool and what
// to pass is its declaration there.
func (s *Server) tools() []mcpserver.ServerTool {
	var all []mcpserver.ServerTool
	for _, family := range [][]mcpserver.ServerTool{
		s.roomTools(), s.messageTools(), s.artifactTools(), s.authTools(), s.repoTools(),
		s.sessionTools(), s.boardTools(), s.intentTools(), s.identityTools(), s.reasoningTools(), s.codexTools(), s.searchTools(),
	} {
		all = append(all, family...)
	}
	for i, t := range all {
		if why, ok := machineTools[t.Tool.Name]; ok {
			all[i].Tool.Description += " Not on the hosted endpoint (/mcp): " + why
		}
	}
	return all
}

// machineTools are the tools that need the agent's machine (its working
// directory, git, the state file's sign-in, Codex), with why the hosted
// endpoint, which has none of it, refuses them. Both transports list
// them, so that one tool list serves both; the description says so.
var machineTools = map[string]string{
	"start_device_auth":          "your MCP client signs in by itself (OAuth), or sends an owner token as its bearer.",
	"poll_device_auth":           "your MCP client signs in by itself (OAuth), or sends an owner token as its bearer.",
	"clear_saved_auth":           "nothing is saved there; sign out in your MCP client.",
	"check_repo":                 "it cannot see your files; call join_room with the repository's URL (and branch room id) instead.",
	"initialize_repo":            "it cannot write your files; commit .letagents.json yourself.",
	"check_repo_visibility":      "it cannot see your git remote; join_room with the repository's URL tells whether you may join.",
	"start_local_codex_session":  "Codex workers run on your machine; use the local letagents server for them.",
	"status_local_codex_session": "Codex workers run on your machine; use the local letagents server for them.",
	"stop_local_codex_session":   "Codex workers run on your machine; use the local letagents server for them.",
}

// hostedSignIn is the hint of a hosted session that the API asked to sign in.
const hostedSignIn = "Sign in through your MCP client: the hosted endpoint (/mcp) asks it for OAuth sign-in with GitHub, " +
	"or give the client an owner token to send as \"Authorization: Bearer <token>\"."

// bind makes a tool of its declaration and its handler. Every tool has
// this one handler shape: the context and the tool's arguments decoded
// into the handler's own type, answering the tool's result (failures are
// results too, from fail and apiFailure). Arguments that do not decode
// (the schema check has passed by then, so this is rare) answer as a
// failure.
func bind[T any](t mcp.Tool, fn func(context.Context, T) *mcp.CallToolResult) mcpserver.ServerTool {
	return mcpserver.ServerTool{Tool: t, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a T
		if err := req.BindArguments(&a); err != nil {
			return fail("bad arguments: "+err.Error(), ""), nil
		}
		if p, ok := any(&a).(progressArgs); ok {
			p.setMeta(req.Params.Meta)
		}
		return fn(ctx, a), nil
	}}
}

// progressArgs are the arguments of a tool that reports progress while it
// blocks: bind hands them the request's metadata, which holds the client's
// progress token.
type progressArgs interface{ setMeta(*mcp.Meta) }

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

// Bounds of arguments the API never sees (a directory, an ignored
// argument) or takes before normalising. Every other maximum length is
// the API's own limit, from shared/letagents, so a tool cannot accept what
// the API refuses nor refuse what it accepts. (JSON Schema counts
// characters where the API counts bytes: a text of many multi-byte
// characters can pass the schema and still be refused, with the API's
// message.)
const (
	// maxRoomID bounds what a room argument may be before normalising: a
	// clone URL is longer than the id it gives.
	maxRoomID = 1024
	// maxPath bounds a directory argument (Linux's PATH_MAX).
	maxPath = 4096
	// maxIgnored bounds an argument the tools accept and ignore, for
	// clients of the original server that pass it (a sender), and a
	// conversation id, which never leaves this process: generous, since
	// the original took any length.
	maxIgnored = 1024
	// maxLeaseID bounds a lease id (tl_ and 32 hex digits here; the API
	// bounds lease_id by nothing but the body, and an older server's ids
	// may be longer).
	maxLeaseID = 64
	// maxReadLimit bounds read_messages' limit: more than a reader can use.
	maxReadLimit = 10000
	// maxWorkflowArtifacts bounds update_task's workflow_artifacts, as the
	// original did; each is published on its own.
	maxWorkflowArtifacts = 32
)

// Patterns of ids.
const (
	messageID   = `^(` + letagents.MessagePrefix + `)?[0-9]+$`
	taskID      = `^` + letagents.TaskPrefix + `[1-9][0-9]*$`
	sessionID   = `^` + letagents.AgentSessionPrefix + `[1-9][0-9]*$`
	boardIntent = `^` + letagents.IntentPrefix + `[1-9][0-9]*$`
)

// Reusable argument schemas.
var (
	roomIDArg = mcp.WithString("room_id", mcp.MaxLength(maxRoomID),
		mcp.Description("A room id as join answers give it. Leave it out to use the room you are in."))
	sessionArg = mcp.WithString("agent_session_id", mcp.Pattern(sessionID),
		mcp.Description("Your agent session (from register_agent_session); defaults to this process's session in the room."))
	intentIDArg = mcp.WithString("board_intent_id", mcp.Pattern(boardIntent),
		mcp.Description("When the room requires intents: the approved intent for exactly this action."))
	approvalArg = mcp.WithString("board_approval_token", mcp.MaxLength(letagents.MaxTokenBytes),
		mcp.Description("The approval token the intent's approval gave."))
	taskIDReq = mcp.WithString("task_id", mcp.Required(), mcp.Pattern(taskID), mcp.Description("The task (task_N)."))
	cwdArg    = func(description string) mcp.ToolOption {
		return mcp.WithString("cwd", mcp.MaxLength(maxPath), mcp.Description(description))
	}
	// conversationArg is the original's per-conversation identity scope on
	// a write, which it ignored there too: a write is signed by the agent
	// session, or by this agent.
	conversationArg = ignored("conversation_id", "Ignored: you write as your agent session, or as this agent.")
	// senderArg is the original's deprecated override of who writes.
	senderArg = ignored("sender", "Ignored: you write as your agent session, or as this agent.")
)

// ignored declares an argument the original server took and this one
// ignores, so its clients' calls keep working.
func ignored(name, description string) mcp.ToolOption {
	return mcp.WithString(name, mcp.MaxLength(maxIgnored), mcp.Description(description))
}

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

// tool declares one tool. Unknown arguments are accepted and ignored, as
// the original server did: its clients pass arguments of its other
// versions (conversation_id, sender, agent_session_id…), and refusing them
// broke their calls. The arguments a tool declares are still checked.
func tool(name string, h hints, description string, opts ...mcp.ToolOption) mcp.Tool {
	all := append([]mcp.ToolOption{mcp.WithDescription(description)}, h.options()...)
	return mcp.NewTool(name, append(all, opts...)...)
}

// renamed is an alias of a tool under another name, for clients that know
// the other one.
func renamed(t mcp.Tool, name string) mcp.Tool {
	t.Description = "Alias of " + t.Name + ". " + t.Description
	t.Name = name
	return t
}
