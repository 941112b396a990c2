package identity

import (
	"strconv"
	"strings"
)

// What reaches whom, as recorded from the real clients (testdata/clients,
// `make record-clients`):
//
//   - Claude Code gives its MCP servers and its hooks CLAUDE_CODE_SESSION_ID,
//     the hook input's session_id: both key "claude:<id>".
//   - Codex gives its MCP servers only a whitelist of variables (no session
//     id) and its hooks none; each tools/call carries _meta.threadId, the
//     hook input's session_id: the MCP server keys the sessions it registers
//     "codex:<threadId>" (MetaRuntimeKey), a hook "codex:<session_id>".
//   - Gemini CLI gives its MCP servers GEMINI_CLI=1 and nothing per session,
//     its hooks GEMINI_SESSION_ID, and runs both as children of the one
//     process of the agent: both key ProcessKey of that process.

// ProcessKey is the runtime key of the agent whose client is process pid,
// for clients that run one agent per process: "process:<pid>", with the
// process's start time where the system tells it (Linux), so that a pid
// used again later is another key. "" for no pid.
func ProcessKey(pid int) string {
	if pid <= 1 {
		return ""
	}
	key := "process:" + strconv.Itoa(pid)
	if start := processStart(pid); start != "" {
		key += "@" + start
	}
	return key
}

// MetaRuntimeKey is the runtime key a tool call's _meta names: Codex's
// threadId (the session_id its hooks are given), as "codex:<threadId>";
// false when it names none.
func MetaRuntimeKey(meta map[string]any) (string, bool) {
	if id, _ := meta["threadId"].(string); strings.TrimSpace(id) != "" {
		return "codex:" + strings.TrimSpace(id), true
	}
	return "", false
}

// HookRuntimeKeys are the keys an agent's MCP server may have saved its
// sessions under, as a hook of that agent can tell: the environment's
// (EnvRuntimeKey), the hook input's session id as Claude Code, Codex and
// Gemini CLI key it, and clientProcess (ProcessKey of the hook's parent,
// the client that runs it). Each names this agent alone: a key another
// agent's server uses is never among them.
func HookRuntimeKeys(getenv func(string) string, sessionID, clientProcess string) []string {
	var keys []string
	add := func(k string) {
		for _, have := range keys {
			if have == k {
				return
			}
		}
		keys = append(keys, k)
	}
	if getenv != nil {
		if k, ok := EnvRuntimeKey(getenv); ok {
			add(k)
		}
	}
	if id := strings.TrimSpace(sessionID); id != "" {
		for _, prefix := range []string{"claude:", "codex:", "gemini:"} {
			add(prefix + id)
		}
	}
	if clientProcess != "" {
		add(clientProcess)
	}
	return keys
}
