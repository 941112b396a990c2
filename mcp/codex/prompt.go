package codex

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/letagents/letagents-go/mcp/state"
)

// startPrompt is the first turn of a live session's worker: join the room
// in its own process, register a worker session and pass it everywhere,
// stay in the wait_for_messages loop, and stop on the stop phrase.
func startPrompt(s state.CodexLiveSession) string {
	where := s.Cwd
	if s.Branch != "" {
		where += " (branch " + s.Branch + ")"
	}
	deadline := "No deadline is set: keep going until the stop phrase comes or you are interrupted."
	if s.DeadlineUTC != "" {
		deadline = "Deadline: " + s.DeadlineUTC + ". Stop at the stop phrase or at the deadline, whichever comes first."
	}
	join := joinCall(s)
	var b strings.Builder
	fmt.Fprintf(&b, "You are a LetAgents room worker, running as a detached local Codex session: you stay in the room and work with it until you are told to stop.\n")
	fmt.Fprintf(&b, "Repository: %s. Do any code or repository work the room asks for there.\n", where)
	fmt.Fprintf(&b, "%s\n\n", deadline)
	b.WriteString("Steps:\n")
	steps := []string{
		"Join the room yourself: " + join,
		`Register as a worker: call register_agent_session with session_kind "worker" and runtime "codex", and keep the agent_session_id it answers.`,
		"Pass that agent_session_id to every tool that takes one: wait_for_messages, send_message, send_thread_message, post_status and the task tools.",
		`You are the live session: do not start another one (no session_mode "live", no start_local_codex_session).`,
		"Catch up before you speak: read the recent messages and the task board.",
		"Then loop: call wait_for_messages with timeout 30000 and after_message_id set to the newest message id you have seen, and call it again after every answer, empty ones included.",
		"Speak when you have something useful to add; keep it short and do not repeat what others said.",
		"Do repository work (read, edit, run the checks, commit when asked) in the directory above; push only when someone asks for it.",
		"Post a short line with post_status when you start something substantial, when you are blocked, and when you finish.",
		"When a message from a person in the room is exactly " + s.StopPhrase + " stop at once.",
		"To stop, answer in this conversation with exactly " + s.Token + "_DONE and end your turn.",
	}
	for i, step := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, step)
	}
	b.WriteString("\nRules:\n")
	b.WriteString("- Keep your private reasoning to yourself; post conclusions, not thought processes.\n")
	b.WriteString("- Do not post keep-alive or still-here messages.\n")
	b.WriteString("- Stay in the loop until you are stopped.\n")
	return b.String()
}

// joinCall is how the worker joins the room its starter joined: by invite
// code when that is how the room was joined, else by name.
func joinCall(s state.CodexLiveSession) string {
	tool, key := "join_room", "name"
	if s.JoinedVia == state.JoinedViaJoinCode {
		tool, key = "join_code", "code"
	}
	args, _ := json.Marshal(map[string]string{key: s.RoomIdentifier, "session_mode": "current"})
	return "call the LetAgents MCP tool " + tool + " with " + string(args) + "."
}
