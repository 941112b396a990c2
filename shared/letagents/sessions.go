package letagents

import "time"

// AgentSessionPrefix starts an agent session's wire id, "as_N".
const AgentSessionPrefix = "as_"

// Session kinds. A worker is an agent doing work in the room: it shows in
// the roster and may write to the board. A controller (an MCP client that
// only watches) does not.
const (
	SessionWorker     = "worker"
	SessionController = "controller"
)

// Machine-readable codes of the errors about agent sessions, sent as the
// error answer's "code" (Error.Code).
const (
	// CodeAgentSessionInvalid: the session credentials are wrong; the
	// client should forget the session.
	CodeAgentSessionInvalid = "AGENT_SESSION_INVALID"
	// CodeAgentSessionEnded: the session has ended; the client should
	// register a new one.
	CodeAgentSessionEnded = "AGENT_SESSION_ENDED"
	// CodeWorkerSessionRequired: an agent write names no worker session.
	CodeWorkerSessionRequired = "WORKER_SESSION_REQUIRED"
	// CodeDisplayNameExhausted: every display name tried is taken by a
	// live agent of the room.
	CodeDisplayNameExhausted = "agent_session_display_name_exhausted"
	// CodeAgentSessionRequired: the action is an agent session's own
	// (taking its unread messages) and the request names none.
	CodeAgentSessionRequired = "AGENT_SESSION_REQUIRED"
)

// PresenceIdle is the presence status of an agent with nothing to do, and
// of one that never said.
const PresenceIdle = "idle"

// Presence statuses an agent reports.
var PresenceStatuses = []string{PresenceIdle, "working", "reviewing", "blocked"}

// DefaultParticipantPage and MaxParticipantPage bound ?limit of a room's
// participants list.
const (
	DefaultParticipantPage = 100
	MaxParticipantPage     = 500
)

// The live roster (GET presence) lists the workers messages reach now,
// then up to MaxRecentlyOffline that were reached within RecentlyOffline,
// as the original's does.
const (
	RecentlyOffline    = 15 * time.Minute
	MaxRecentlyOffline = 20
	// DefaultPresencePage and MaxPresencePage bound ?limit of the roster.
	DefaultPresencePage = 50
	MaxPresencePage     = 500
)

// MaxPresenceText bounds a presence status text.
const MaxPresenceText = 500

// AgentSession is one agent registered in one room by its owner.
type AgentSession struct {
	ID             int64
	RoomID         string
	Kind           string
	Runtime        string
	AgentKey       string // the agent's canonical key, "<login>/<name>"
	InstanceID     string
	OwnerAccountID int64
	DisplayName    string
	OwnerLabel     string
	IDELabel       string
	ActorLabel     string // "<display> | <owner>'s agent | <ide>", unique among the room's live workers
	RepoBranch     string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	LastSeenAt     time.Time
	EndedAt        time.Time // zero while live
	Presence       Presence
	// Liveness, as the store last read it.
	LastDisconnectedAt   time.Time
	LastNativeActivityAt time.Time
	Native               NativeActivity // the latest native activity reported
	OpenConnections      int            // unexpired delivery connections
	// LastHookAt is when its runtime's hooks (letagents hook) last took
	// its unread messages; zero when never.
	LastHookAt time.Time
}

// NativeActivity is what a worker's runtime reports it is doing outside
// the room (a Codex turn, say): shown in the roster, never in the chat.
type NativeActivity struct {
	At     time.Time
	Status string // working, idle or blocked
	Method string // the runtime's event, such as item/started
	Text   string // a short line, such as "running go test ./..."
}

// MaxNativeText bounds a native activity's text, in bytes.
const MaxNativeText = 300

// Presence is what an agent says it is doing.
type Presence struct {
	Status    string
	Text      string
	UpdatedAt time.Time // zero until first reported
}

// Live reports whether the session has not ended.
func (s AgentSession) Live() bool { return s.EndedAt.IsZero() }

// Liveness windows (see docs/api.md): a parked long-poll holds a delivery
// connection, renewed every DeliveryHeartbeat, which lapses DeliveryLease
// after its last renewal; after a poll ends the agent stays reachable for
// ReconnectGrace, the time it takes to issue the next one.
const (
	DeliveryHeartbeat = 30 * time.Second
	DeliveryLease     = 90 * time.Second
	ReconnectGrace    = 10 * time.Second
)

// Reachable reports whether messages can reach the session's agent now:
// a delivery connection is open, or one closed within the grace.
func (s AgentSession) Reachable(now time.Time) bool {
	if !s.Live() {
		return false
	}
	return s.OpenConnections > 0 || (!s.LastDisconnectedAt.IsZero() && now.Sub(s.LastDisconnectedAt) < ReconnectGrace)
}

// HookGrace is how long after its hooks last ran a worker with no
// delivery connection counts as reached by them: hooks run at every
// prompt and tool call, so an agent at work runs them far more often.
const HookGrace = 5 * time.Minute

// How messages reach a session's agent now (AgentSession.Reach).
const (
	ReachLive = "live" // a delivery connection: a parked wait or an open stream
	ReachHook = "hook" // its runtime's hooks, which ran within HookGrace
)

// Reach is how messages reach the session's agent now: ReachLive while it
// is Reachable, else ReachHook when its hooks ran within HookGrace, else
// "" (they do not).
func (s AgentSession) Reach(now time.Time) string {
	switch {
	case s.Reachable(now):
		return ReachLive
	case s.Live() && !s.LastHookAt.IsZero() && now.Sub(s.LastHookAt) < HookGrace:
		return ReachHook
	}
	return ""
}

// Delivered reports whether messages ever reached the session through a
// delivery connection (a poll or stream with its credentials).
func (s AgentSession) Delivered() bool {
	return s.OpenConnections > 0 || !s.LastDisconnectedAt.IsZero()
}

// ActivityState is the session's activity as the original's roster shows
// it: offline unless messages reach it now (by either Reach), away when
// it says it is idle (or never said), else active.
func (s AgentSession) ActivityState(now time.Time) string {
	switch {
	case s.Reach(now) == "":
		return "offline"
	case s.Presence.Status == "" || s.Presence.Status == "idle":
		return "away"
	}
	return "active"
}

// OnLiveRoster reports whether a worker belongs on the live roster: messages
// reach it now (by either Reach), or did within RecentlyOffline
// (MaxRecentlyOffline of those at most, which the lister enforces).
func (s AgentSession) OnLiveRoster(now time.Time) bool {
	return s.Kind == SessionWorker && (s.Reach(now) != "" ||
		(s.Delivered() || !s.LastHookAt.IsZero()) && now.Sub(s.LastSeenAt) <= RecentlyOffline)
}
