// Package codex runs live Codex sessions for LetAgents rooms: a detached
// `codex app-server` whose worker thread joins a room and stays in its
// loop, started, inspected and stopped from the MCP tools, and the bridge
// that streams that worker's progress (reasoning summaries, native
// activity) into the room. It speaks the app-server's JSON-RPC 2.0 over
// WebSocket and keeps its sessions in the MCP state file.
package codex
