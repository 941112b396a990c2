package letagents

import "time"

// Via is how a message was surfaced to an agent: shown to it, as opposed
// to merely sent to its room.
type Via string

// The ways a message reaches an agent, as deliveries record them.
const (
	ViaWait   Via = "wait"   // a long-poll answered it (wait_for_messages)
	ViaRead   Via = "read"   // a read of the timeline answered it
	ViaStream Via = "stream" // an event stream carried it
	ViaHook   Via = "hook"   // a runtime hook injected it into the agent's context
)

// AgentRef names an agent session where a message refers to it: the
// agents it mentions, has been seen by, or not yet.
type AgentRef struct {
	SessionID   int64
	DisplayName string
	ActorLabel  string
}

// Delivery is a message surfaced to an agent session: when, and how. A
// message counts as surfaced to a session once, the first time.
type Delivery struct {
	AgentRef
	Seq        int64
	SurfacedAt time.Time
	Via        Via
	// Latency is from the message's send to its surfacing.
	Latency time.Duration
}

// UnreadAfter is how long a message may wait before a live worker that
// has not surfaced it counts as not having read it (the page's unread_by).
const UnreadAfter = 2 * time.Minute

// LatencyWindow is how far back the deliveries a participant's delivery
// latency is computed over reach.
const LatencyWindow = 24 * time.Hour

// Latency summarises a session's send→surfaced latencies: how many
// deliveries, and their median and 99th percentile.
type Latency struct {
	Count    int
	P50, P99 time.Duration
}

// UnreadFilter says which unread messages an agent takes (TakeUnread).
type UnreadFilter string

// Unread filters.
const (
	// UnreadAll: every message of the room but the agent's own.
	UnreadAll UnreadFilter = "all"
	// UnreadAddressed: the messages that @mention the agent, and the
	// replies in threads it wrote in.
	UnreadAddressed UnreadFilter = "addressed"
)

// ParseUnreadFilter reads a filter; "" is UnreadAll.
func ParseUnreadFilter(s string) (UnreadFilter, error) {
	switch f := UnreadFilter(s); f {
	case "":
		return UnreadAll, nil
	case UnreadAll, UnreadAddressed:
		return f, nil
	}
	return "", Errorf(Invalid, "filter must be %s or %s", UnreadAll, UnreadAddressed)
}

// Bounds of one take of unread messages.
const (
	DefaultUnreadLimit = 10
	MaxUnreadLimit     = 50
	// MaxUnreadWithin bounds a take's answer_within: a caller that
	// waits longer needs no bound.
	MaxUnreadWithin = time.Minute
	// UnreadScan bounds how far back a take looks past the session's
	// cursor: an agent away for longer takes the newest UnreadScan
	// messages' share and skips the rest.
	UnreadScan = 1000
)

// Addressed says why a message is addressed to an agent: it mentions the
// agent, or replies in a thread the agent wrote in.
type Addressed string

// Reasons a message is addressed to an agent ("" for none).
const (
	AddressedMention Addressed = "mention"
	AddressedThread  Addressed = "thread"
)

// UnreadMessage is a message taken as unread, and how it concerns the
// taker.
type UnreadMessage struct {
	Message
	Addressed Addressed
	// Asked: a person (not an agent, not the server) addressed it to the
	// taker, by a mention, a thread reply or an inline agent prompt.
	Asked bool
}

// Unread is one take of a session's unread messages.
type Unread struct {
	Messages []UnreadMessage
	// HasMore says more unread messages follow these (the next take
	// gets them).
	HasMore bool
	// Asked says a person asked the taker something among all its unread
	// messages, taken or not.
	Asked bool
	// Cursor is the session's delivery cursor after the take.
	Cursor int64
}

// CodeUnreadTooLate answers a take that could not be answered within the
// time its caller gave (answer_within_ms): nothing was taken.
const CodeUnreadTooLate = "UNREAD_TOO_LATE"
