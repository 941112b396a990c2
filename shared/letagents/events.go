package letagents

import "time"

// EventRetention is how long a room's log keeps an event other than a
// message (a task, reasoning, pin or rename change); the liveness sweeper
// prunes older ones. Message events stay for good: a stream resumes after
// any message. A stream that resumes from before a pruned event still gets
// every message and every change since the retention began; it only does
// not replay the older change, so an item changed only then shows as the
// reader last saw it. A week is longer than a browser tab or a laptop
// sleeps over a long weekend; an EventSource otherwise reconnects within
// seconds, and a page loaded afresh reads every item as it is.
const EventRetention = 7 * 24 * time.Hour

// GitHubRedelivery is how far back GitHub redelivers a webhook delivery
// (a redelivery asked for in the App's or the hook's settings, or by its
// API): three days, as GitHub documents.
const GitHubRedelivery = 3 * 24 * time.Hour

// GitHubDeliveryRetention is how long the record of a webhook delivery
// (X-GitHub-Delivery, and what became of it) is kept, so that a repeat is
// known for a duplicate: as long as the events it logged stay
// (EventRetention), and never less than GitHubRedelivery. The liveness
// sweeper prunes older ones; GitHub redelivering one after that is
// refused by GitHub itself.
const GitHubDeliveryRetention = max(EventRetention, GitHubRedelivery)

// EventKind is what a room event changed: the kind of the item it names.
// A new kind of live change is a new kind here, written by the store's
// one event helper and read by the one feed (store.RoomEvents).
type EventKind string

// The kinds of room events.
const (
	// EventMessage is a message sent; its item is the message.
	EventMessage EventKind = "message"
	// EventTask is a change to a task or its leases; its item is the task.
	EventTask EventKind = "task"
	// EventReasoning is a change to a reasoning session; its item is the
	// session and, when the change appended one, its update.
	EventReasoning EventKind = "reasoning"
	// EventPin is a message pinned or unpinned; its item is the message.
	EventPin EventKind = "pin"
	// EventRoom is a room renamed; its item is the room.
	EventRoom EventKind = "room"
	// EventPresence is a worker session that joined, ended, or changed
	// what the roster shows of it (presence status or text, native
	// activity's status or text); its item is the session. Heartbeats
	// that move only its times log none.
	EventPresence EventKind = "presence"
	// EventGitHub is a change on GitHub the room heard of through a
	// webhook; its item is the GitHubEvent, which a repo room and the room
	// of its branch both name.
	EventGitHub EventKind = "github"
)

// RoomEvent is one event of a room's log with its item as it is now:
// exactly one of Message, Task, Reasoning, Room, Session and GitHub is
// set, as Kind says.
type RoomEvent struct {
	Seq       int64 // its number in the room's event sequence
	Kind      EventKind
	Message   *Message
	Task      *Task
	Reasoning *ReasoningChange
	Room      *Room
	Session   *AgentSession // a worker session, live or ended
	GitHub    *GitHubEvent
}

// EventPage is the events of a room after a cursor, oldest first. Last
// is the cursor to read on from; HasMore says more follow at once.
type EventPage struct {
	Events  []RoomEvent
	Last    int64
	HasMore bool
}

// EventStart is where a reader of a room's events starts: Cursor, the
// event to read after, and Seq, the number of the newest message at or
// before it (the msg_N a stream says it starts at).
type EventStart struct {
	Cursor int64
	Seq    int64
}
