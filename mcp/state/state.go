// Package state owns the MCP client's state file (by default
// ~/.letagents/mcp-state.json): the sign-in token, a device sign-in in
// progress, each agent's resolved identity, and the rooms it has joined.
// Several letagents processes on one machine share the file, so every
// change goes through [File.Update], which locks, re-reads, applies and
// atomically replaces it. The format is the original LetAgents client's,
// and keys this package does not know are carried over untouched.
package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/letagents/letagents-go/shared/letagents"
)

// PathEnv names the environment variable that overrides [DefaultPath].
const PathEnv = "LETAGENTS_STATE_PATH"

// DefaultPath returns where the state file lives: the value of
// LETAGENTS_STATE_PATH if set and non-empty, otherwise
// ~/.letagents/mcp-state.json under the user's home directory. getenv is
// passed in so that only main reads the environment.
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv(PathEnv); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home directory for state file: %w", err)
	}
	return filepath.Join(home, ".letagents", "mcp-state.json"), nil
}

// State is the decoded state file. Timestamps are RFC 3339 strings, kept
// as text so that values written by other clients round-trip exactly.
type State struct {
	// Auth is the signed-in account's token; nil when signed out or when
	// the stored token has expired.
	Auth *Auth `json:"auth,omitempty"`
	// PendingDeviceAuth is a device sign-in waiting for the user to enter
	// its code; nil when none is pending or it has expired.
	PendingDeviceAuth *PendingDeviceAuth `json:"pending_device_auth,omitempty"`
	// AgentIdentities holds each agent's identity, keyed by runtime key.
	AgentIdentities map[string]Identity `json:"agent_identities,omitempty"`
	// CurrentRoom is the id of the room messages go to by default.
	CurrentRoom string `json:"current_room,omitempty"`
	// RoomSessions holds the rooms joined, keyed by room id.
	RoomSessions map[string]RoomSession `json:"room_sessions,omitempty"`
	// AgentSessions holds the agent sessions registered from this
	// machine, keyed by session id, so an agent that restarts goes on as
	// the same session instead of leaving a silent one behind.
	AgentSessions map[string]AgentSession `json:"agent_sessions,omitempty"`
	// CodexLiveSessions holds the live Codex sessions started from this
	// machine, keyed by session id; CurrentCodexLiveSessions names each
	// room's current one.
	CodexLiveSessions        map[string]CodexLiveSession `json:"codex_live_sessions,omitempty"`
	CurrentCodexLiveSessions map[string]string           `json:"current_codex_live_session_ids,omitempty"`
	// ResourceSubscriptions are a hosted MCP session's subscriptions to
	// rooms' messages resources (resources/subscribe), kept with the
	// session so that whichever task holds its stream sends the updates.
	ResourceSubscriptions []ResourceSubscription `json:"resource_subscriptions,omitempty"`
}

// ResourceSubscription is a hosted session's subscription to a room's
// messages resource: its URI as the client wrote it, and the room's
// latest message id when it was taken, after which every message is
// announced.
type ResourceSubscription struct {
	URI   string `json:"uri"`
	After string `json:"after,omitempty"`
}

// CodexLiveSession is a detached Codex worker running for a room in a
// codex app-server (see package codex, which owns its statuses).
type CodexLiveSession struct {
	SessionID       string `json:"session_id"`
	RoomID          string `json:"room_id"`
	RoomIdentifier  string `json:"room_identifier"` // what the worker is told to join
	RoomCode        string `json:"room_code,omitempty"`
	RoomDisplayName string `json:"room_display_name,omitempty"`
	JoinedVia       string `json:"joined_via"`
	Cwd             string `json:"cwd"`
	Branch          string `json:"branch,omitempty"`
	StopPhrase      string `json:"stop_phrase"`
	MaxMinutes      int    `json:"max_minutes"`
	DeadlineUTC     string `json:"deadline_utc,omitempty"`
	// Token marks the worker's closing line (<token>_DONE).
	Token    string `json:"token"`
	ThreadID string `json:"thread_id"`
	TurnID   string `json:"turn_id"`
	// ServerURL is the app-server's WebSocket address; ServerPID its
	// process (and process group) when LaunchedServer says this machine
	// spawned it.
	ServerURL      string `json:"server_url"`
	ServerPID      int    `json:"server_pid,omitempty"`
	LaunchedServer bool   `json:"launched_server"`
	CodexBin       string `json:"codex_bin"`
	Status         string `json:"status"`
	LastError      string `json:"last_error,omitempty"`
	// AgentSessionID is the worker's agent session, once it registered
	// and the bridge bound to it.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	// ReasoningSessionID is the room's reasoning session the bridge
	// streams into, so that whoever ends the session can close it.
	ReasoningSessionID string `json:"reasoning_session_id,omitempty"`
	// EndedAt is set by whoever told the room the session ended (the
	// worker's bridge or the starter): the room is told once.
	EndedAt string `json:"ended_at,omitempty"`
	// ToldAt is when the room had been told of the end: a stop ends the
	// app-server (and the bridge in it) only then.
	ToldAt    string `json:"told_at,omitempty"`
	StartedAt string `json:"started_at"`
	UpdatedAt string `json:"updated_at"`
}

// AgentSession is a registered agent session and its credentials. A
// session belongs to one agent (RuntimeKey) in one room.
type AgentSession struct {
	SessionID    string `json:"session_id"`
	SessionToken string `json:"session_token"`
	RoomID       string `json:"room_id"`
	SessionKind  string `json:"session_kind,omitempty"`
	Runtime      string `json:"runtime,omitempty"`
	ActorLabel   string `json:"actor_label"`
	AgentKey     string `json:"agent_key"`
	DisplayName  string `json:"display_name,omitempty"`
	RuntimeKey   string `json:"runtime_key"`
	CreatedAt    string `json:"created_at,omitempty"`
	// APIURL is the API the session was registered with (the MCP
	// server's LETAGENTS_API_URL), so that the agent's hooks reach the
	// same server without being configured a second time.
	APIURL string `json:"api_url,omitempty"`
}

// AuthSourceDeviceFlow is the [Auth.Source] of a token obtained by the
// device sign-in flow.
const AuthSourceDeviceFlow = "device_flow"

// Auth is a stored API token.
type Auth struct {
	Token string `json:"token"`
	// ExpiresAt is empty for a token that does not expire.
	ExpiresAt string   `json:"expires_at,omitempty"`
	Account   *Account `json:"account,omitempty"`
	StoredAt  string   `json:"stored_at"`
	// Source says how the token was obtained, such as AuthSourceDeviceFlow.
	Source string `json:"source"`
}

// Account is the account a token belongs to, as the API described it.
type Account struct {
	ID          string `json:"id,omitempty"`
	Login       string `json:"login"`
	DisplayName string `json:"display_name,omitempty"`
	AvatarURL   string `json:"avatar_url,omitempty"`
}

// PendingDeviceAuth is a device sign-in the user has not yet completed,
// kept so that a later call (or another process) can resume polling.
type PendingDeviceAuth struct {
	RequestID       string `json:"request_id"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	IntervalSeconds int    `json:"interval_seconds"`
	ExpiresAt       string `json:"expires_at"`
	StartedAt       string `json:"started_at"`
	// SuggestedRoomID is the room to join once sign-in completes.
	SuggestedRoomID string `json:"suggested_room_id,omitempty"`
}

// Identity is how one agent runtime presents itself in rooms.
type Identity struct {
	Name             string `json:"name"`
	DisplayName      string `json:"display_name"`
	OwnerLabel       string `json:"owner_label"`
	OwnerAttribution string `json:"owner_attribution"`
	IDELabel         string `json:"ide_label"`
	ActorLabel       string `json:"actor_label"`
	CanonicalKey     string `json:"canonical_key"`
	RuntimeKey       string `json:"runtime_key"`
	Source           string `json:"source"`
	ResolvedAt       string `json:"resolved_at"`
}

// How a room was joined, for [RoomSession.JoinedVia].
const (
	JoinedViaConfig    = "config"
	JoinedViaGitRemote = "git-remote"
	JoinedViaJoinCode  = "join_code"
	JoinedViaJoinRoom  = "join_room"
)

// RoomSession is a room this machine's agents have joined.
type RoomSession struct {
	RoomID      string `json:"room_id"`
	ProjectID   string `json:"project_id,omitempty"`
	Code        string `json:"code,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	// JoinedVia is one of the JoinedVia constants.
	JoinedVia  string `json:"joined_via,omitempty"`
	JoinedAt   string `json:"joined_at,omitempty"`
	LastSeenAt string `json:"last_seen_at,omitempty"`
	// LastMessageID is the newest message read ("msg_N"); see
	// [State.AdvanceLastMessage].
	LastMessageID string `json:"last_message_id,omitempty"`
}

// AdvanceLastMessage records msgID as the newest message read in roomID,
// but only if it is newer than the one recorded, so that a slow reader
// finishing late never moves the cursor backwards. Ids are compared by the
// number in "msg_N"; a msgID that is not of that form is ignored, and a
// recorded id that is not counts as older than any valid one. A room with
// no session gets one holding just its id and the cursor, because losing
// the cursor would mean delivering messages twice.
func (s *State) AdvanceLastMessage(roomID, msgID string) {
	n, ok := messageNumber(msgID)
	if !ok || roomID == "" {
		return
	}
	rs := s.RoomSessions[roomID]
	if cur, ok := messageNumber(rs.LastMessageID); ok && n <= cur {
		return
	}
	if s.RoomSessions == nil {
		s.RoomSessions = make(map[string]RoomSession)
	}
	if rs.RoomID == "" {
		rs.RoomID = roomID
	}
	rs.LastMessageID = msgID
	s.RoomSessions[roomID] = rs
}

// messageNumber returns N from a message id "msg_N".
func messageNumber(id string) (uint64, bool) {
	digits, ok := strings.CutPrefix(id, letagents.MessagePrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}
