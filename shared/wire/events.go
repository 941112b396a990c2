package wire

// The names of the live events a room's event stream (…/messages/stream)
// sends: this list is their one home. The room page imports them from
// /js/events.js, which shared/api generates from Events (a test holds the
// file to it), and mcp/apiclient uses these constants.
const (
	// EventMessage is a new message, with the Message as its data and its
	// msg_N id as the event id. It goes out with no event: line, the
	// default type, as the original sends it.
	EventMessage = "message"
	// EventTaskUpdate carries a Task as GET …/tasks/{id} gives it: the
	// task or its leases changed.
	EventTaskUpdate = "task_update"
	// EventReasoningUpdate carries a ReasoningEvent: a session changed.
	EventReasoningUpdate = "reasoning_update"
	// EventReasoningRemove carries a ReasoningRemoved: a session closed.
	EventReasoningRemove = "reasoning_remove"
	// EventMessageUpdate carries a Message, as reads give it, that
	// changed after it was sent: a room admin pinned or unpinned it. It
	// has no id, so a client's last event id stays the last message.
	EventMessageUpdate = "message_update"
	// EventRoomUpdate carries a RoomUpdate: the room was renamed.
	EventRoomUpdate = "room_update"
	// EventPresenceUpdate carries a Presence, the worker's entry as GET
	// …/presence gives it: a worker joined, or what the roster shows of it
	// changed (its status or text, its native activity's status or text).
	// Whether an entry is listed and how fresh it is also move with time
	// alone (freshness, activity_state), which no event announces.
	EventPresenceUpdate = "presence_update"
	// EventPresenceRemove carries a PresenceRemoved: a worker's session
	// ended, and it leaves the roster.
	EventPresenceRemove = "presence_remove"
	// EventGitHub carries a GitHubEvent, as GET /rooms/{room}/events lists
	// it: a change on GitHub the room heard of (in a repo room, every one
	// of its repository; in a branch room, those on its branch). A status
	// line (a message of source system) announces it as well.
	EventGitHub = "github_event"
	// EventAccessRevoked is the last event of an event stream whose caller
	// may no longer read the room; the server ends the stream after it.
	// Its data is the error a new request would get ({"error", "code",
	// ...}) with the HTTP status of that error and the reason, one of the
	// Revoked constants. A client that does not know the event ignores
	// it, reconnects and gets that error.
	EventAccessRevoked = "access_revoked"
	// EventHeartbeat replaces the ": heartbeat" comment of a stream opened
	// with ?heartbeat=event, carrying a Heartbeat: a browser's EventSource
	// never shows comments, so only an event lets a page tell a quiet
	// stream from a dead one. Other clients keep the comment, as the
	// original sends it.
	EventHeartbeat = "heartbeat"
)

// Events lists every live event name, in the order above.
var Events = []string{EventMessage, EventTaskUpdate, EventReasoningUpdate, EventReasoningRemove, EventMessageUpdate, EventRoomUpdate,
	EventPresenceUpdate, EventPresenceRemove, EventGitHub, EventAccessRevoked, EventHeartbeat}

// Heartbeat is the data of a heartbeat event: how often they come, so
// that a client knows how long a silence means the stream is dead. The
// first comes as the stream opens.
type Heartbeat struct {
	EveryMS int64 `json:"every_ms"`
}

// RoomUpdate is the data of a room_update event: the room's id and its
// display name as GET /rooms/{room}/info gives them.
type RoomUpdate struct {
	RoomID      string `json:"room_id"`
	DisplayName string `json:"display_name"`
}

// PresenceRemoved is the data of a presence_remove event: the room, and
// the ended session by its id and its actor label.
type PresenceRemoved struct {
	RoomID         string `json:"room_id"`
	AgentSessionID string `json:"agent_session_id"`
	ActorLabel     string `json:"actor_label"`
}
