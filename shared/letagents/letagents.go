// Package letagents holds the domain types of the service (rooms, messages),
// their wire identifiers and limits, and the one error type every layer
// speaks. It depends on nothing but the standard library.
package letagents

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Limits on what a client may send or ask for. They are part of the public
// contract: docs/limits.md lists them and tests pin them.
const (
	// MaxTextBytes is the largest message text accepted (413 above it): a
	// log or a diff fits. It is at least every text the original's 1 MB
	// request body can carry.
	MaxTextBytes = 1 << 20
	// MaxSenderBytes is the largest sender label accepted (400 above it),
	// and so of every label that names an agent (assignee, created_by):
	// far beyond any real name, and small enough that the status lines
	// that quote labels stay far below MaxTextBytes.
	MaxSenderBytes = 16 << 10
	// MaxClientMessageIDBytes is the largest client_message_id accepted
	// (400 above it).
	MaxClientMessageIDBytes = 200
	// MaxBodyBytes bounds any JSON request body (413 above it); it leaves
	// room for a MaxTextBytes text with its quotes and line ends escaped.
	// Behind Lambda the gateway's event carries the body escaped once
	// more: even at twice its size it fits the 6 MB a function may be sent.
	MaxBodyBytes = 2 << 20
	// MaxPageBytes bounds the JSON of the items of one list answer (a page
	// of messages, of tasks): a page that would pass it is cut at an item,
	// never below one, and says so with has_more. One item alone, its
	// fields bounded on the way in, fits within it; and a page answered
	// through Lambda as base64 (4/3 of its size) stays under the 6 MB a
	// function may answer.
	MaxPageBytes = 4 << 20
	// DefaultPageSize is the number of messages a read returns without ?limit.
	DefaultPageSize = 200
	// MaxPageSize is the largest ?limit a read takes (a larger one reads
	// as it).
	MaxPageSize = 500
	// MaxPins is how many pinned messages a room holds: a list short
	// enough to show whole above the timeline.
	MaxPins = 50
	// DefaultPollTimeout is how long a long-poll waits without ?timeout.
	DefaultPollTimeout = 30 * time.Second
	// DefaultPollMax is the default of LETAGENTS_POLL_MAX_MS, the clamp on ?timeout.
	DefaultPollMax = 180 * time.Second
	// MaxHostedWait caps a wait_for_messages on the hosted MCP endpoint:
	// under a load balancer's idle timeout (an ALB's is 60 s), for a
	// client that asked for no progress notifications, whose wait sends
	// nothing until it answers.
	MaxHostedWait = 50 * time.Second
	// HostedSessionIdle is how long a hosted MCP session (/mcp) lasts
	// unused: a client that comes back later starts another.
	HostedSessionIdle = 7 * 24 * time.Hour
	// HostedEventRetention is how long the hosted MCP endpoint keeps the
	// events of a session's streams for a client to resume with
	// Last-Event-ID: a dropped connection is resumed at once, and a stream
	// older than this is not resumable.
	HostedEventRetention = time.Hour
	// MinPollMax and MaxPollMax bound LETAGENTS_POLL_MAX_MS itself.
	MinPollMax = time.Second
	MaxPollMax = 24 * time.Hour
	// StreamHeartbeat is how often an event stream sends a comment line
	// (": heartbeat"), as the original does: well inside the idle timeout
	// of every proxy between an agent and the server (CloudFront's 30 s
	// origin read timeout is the shortest of the usual ones; nginx and an
	// ALB wait 60 s), so none of them cuts a quiet stream.
	StreamHeartbeat = 15 * time.Second
	// AccessRecheck is how often an open event stream checks again that
	// its caller may still read the room, when nothing known changed
	// (a change that is known, such as a sign-out, makes it check at
	// once). A check reads what a new request's gate reads, GitHub's
	// cached answers included, so a stream sees a change on GitHub's
	// side at most this long (plus a heartbeat) after a new request does.
	AccessRecheck = time.Minute
	// SeenStep is how far behind an agent session's last_seen_at may
	// be after a send of its agent: a send touches it only when it is
	// that old or more, so that an agent's run of sends does not write
	// its session's row each time (measured: about a tenth of such a
	// send's CPU). Everything that reads it (presence, liveness, the
	// roster) counts in seconds or minutes.
	SeenStep = time.Second
	// DefaultStreamMax is the default of LETAGENTS_STREAM_MAX, the most
	// event streams one server process holds open; DefaultRoomStreamMax
	// of LETAGENTS_STREAM_ROOM_MAX, the most of one room. A stream costs
	// about what a parked long-poll does (see the benchmark).
	DefaultStreamMax     = 10000
	DefaultRoomStreamMax = 1000
	// MaxTokenBytes bounds a token a client presents (an agent session's
	// token, an intent's approval token, a device sign-in's request id):
	// the server's own are far shorter, so a longer one is refused unread.
	MaxTokenBytes = 256
)

// RoomKind says how a room came to be and so which rules apply to it.
type RoomKind string

// Room kinds, as stored.
const (
	RoomInvite RoomKind = "invite" // ad-hoc room whose id is a random invite code
	RoomNamed  RoomKind = "named"  // any other name, created on first join
	RoomRepo   RoomKind = "repo"   // a repo locator host/owner/repo (default branch)
	RoomBranch RoomKind = "branch" // a branch Git Room, child of its repo room
)

// Room is a chat timeline that agents and humans share. Its db tags name
// the columns the store reads it from (by name).
type Room struct {
	ID          string    `db:"id"`
	Kind        RoomKind  `db:"kind"`
	DisplayName string    `db:"display_name"`
	ParentID    string    `db:"parent_room_id"` // the repo room of a branch room, else ""
	LastSeq     int64     `db:"last_seq"`       // number of the newest message, 0 when empty
	CreatedAt   time.Time `db:"created_at"`
}

// Bounds of a room's display name, in characters, as a rename sets it.
const (
	MinRoomDisplayName = 2
	MaxRoomDisplayName = 64
)

// RoomDisplayName checks the display name a room is renamed to: white
// space collapsed, MinRoomDisplayName to MaxRoomDisplayName characters,
// no control characters.
func RoomDisplayName(s string) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	switch n := len([]rune(s)); {
	case n == 0:
		return "", Errorf(Invalid, "display_name is required")
	case n < MinRoomDisplayName || n > MaxRoomDisplayName:
		return "", Errorf(Invalid, "display_name must be between %d and %d characters", MinRoomDisplayName, MaxRoomDisplayName)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", Errorf(Invalid, "display_name must not contain control characters")
	}
	return s, nil
}

// Message is one entry of a room's timeline. Seq is the room's gap-free
// message number, the cursor every reader pages by.
type Message struct {
	RoomID          string
	Seq             int64
	Sender          string
	Text            string
	Source          string // SourceAgent, SourceBrowser, SourceSystem or "" (unverified)
	PromptKind      PromptKind
	ThreadParentSeq int64 // the message this one replies to; 0 for a top-level message
	ThreadRootSeq   int64 // the top-level message of its thread; 0 for a top-level message
	CreatedAt       time.Time
	// ReplyTo quotes the parent of a reply (set by reads, not by sends).
	ReplyTo *Quote
	// Thread summarises the replies of a top-level message that has some.
	Thread *ThreadSummary
	// Mentions are the agent sessions its @mentions named when it was
	// sent (ParseMentions).
	Mentions []AgentRef
	// SeenBy and UnreadBy are its receipts, read only on request
	// (store.Receipts): the sessions it was surfaced to, and the live
	// workers that have not surfaced it UnreadAfter after it was sent.
	SeenBy   []Delivery
	UnreadBy []AgentRef
	// PinnedAt and PinnedBy say when a room admin pinned it, and who
	// (the account's login); zero when it is not pinned.
	PinnedAt time.Time
	PinnedBy string
	// GitHubEvent is the GitHub event a status line of the server's
	// announces (GitHubLineClientIDPrefix); 0 for every other message.
	GitHubEvent int64
}

// QuoteMaxChars bounds the quoted text of a reply's parent, so a page of
// replies to long messages stays small.
const QuoteMaxChars = 500

// Quote is the message a reply answers, its text cut to QuoteMaxChars.
type Quote struct {
	Seq       int64
	Sender    string
	Text      string
	Truncated bool
	Source    string
	CreatedAt time.Time
}

// ThreadSummary counts a thread's replies.
type ThreadSummary struct {
	ReplyCount     int
	LatestReplySeq int64
	LatestReplyAt  time.Time
}

// Message sources: what the server verified about who wrote a message.
// Clients tell the server's own lines by SourceSystem, never by sender or
// text, which anyone could copy.
const (
	// SourceAgent: an owner token, or a worker session, that owns the sender.
	SourceAgent = "agent"
	// SourceBrowser: a signed-in person in the web page.
	SourceBrowser = "browser"
	// SourceSystem: the server itself (task board and liveness notices);
	// such lines are always sent as SystemSender.
	SourceSystem = "system"
)

// SystemSender is the sender of the lines the server itself posts to a
// room, kept for clients that predate SourceSystem. No client may send
// as it, nor as anything that reads like it (see ReservedSender).
const SystemSender = "letagents"

// SystemMessage is a line the server posts to a room in its own name.
func SystemMessage(roomID, text string) NewMessage {
	return NewMessage{RoomID: roomID, Sender: SystemSender, Source: SourceSystem, Text: text}
}

// ReservedSender reports whether a sender, or the display part of an
// actor label ("letagents | …", "letagents (…)"), reads as the server's
// own name. It ignores case, spaces, punctuation and invisible characters
// and folds full-width letters and the common Cyrillic and Greek
// lookalikes, so "LetAgents", " let-agents " and "lеtagents" (a Cyrillic
// е) are all reserved: a reader must not take any of them for the server.
func ReservedSender(sender string) bool {
	display := sender
	if i := strings.IndexAny(sender, "|("); i >= 0 {
		display = sender[:i]
	}
	return NameKey(sender) == SystemSender || NameKey(display) == SystemSender
}

// NotReserved refuses, as Invalid, a name (of the field named) that an
// agent would send under and that ReservedSender reserves.
func NotReserved(field, name string) error {
	if ReservedSender(name) {
		return Errorf(Invalid, "%s %q is reserved for the server's own lines; choose another name", field, name)
	}
	return nil
}

// lookalikes maps letters that render like the letters of SystemSender,
// or like another's (i, I, l and 1; o and 0), to one of them. i joins l
// because I, which is i in upper case, reads as l: ALICE, AIice and alice
// must be one name.
var lookalikes = map[rune]rune{
	'I': 'l', 'i': 'l', '1': 'l', 'ӏ': 'l', 'Ӏ': 'l', 'ι': 'l', 'ǀ': 'l', 'І': 'l', 'і': 'l',
	'0': 'o', 'O': 'o', 'о': 'o', 'О': 'o', 'ο': 'o', 'Ο': 'o',
	'е': 'e', 'Е': 'e', 'ε': 'e', 'ё': 'e',
	'т': 't', 'Т': 't', 'τ': 't',
	'а': 'a', 'А': 'a', 'α': 'a', 'Α': 'a',
	'ɡ': 'g', 'ԍ': 'g', 'ց': 'g',
	'п': 'n', 'ո': 'n', 'η': 'n', 'Ν': 'n',
	'ѕ': 's', 'Ѕ': 's',
}

func lookalike(r rune) rune {
	if l, ok := lookalikes[r]; ok {
		return l
	}
	return r
}

// NameKey is what two names that read alike have in common: the name
// reduced to lower-case letters and digits, full-width letters and the
// lookalikes folded (so it is no name to show: "Alice" is "allce"). Names with equal keys are one claim: the server's
// own (ReservedSender), a person's, an agent's.
func NameKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 0xff01 <= r && r <= 0xff5e { // full-width ASCII
			r -= 0xfee0
		}
		// Before and after lower-casing: I is l, and so is the lower case
		// of a capital that only the map knows (Greek Ι, Cyrillic Ё).
		r = lookalike(unicode.ToLower(lookalike(r)))
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// PromptKind marks a message that carries an instruction to the agents
// of its room, as the original's clients read it: their MCP client adds
// the room's standing prompt to it.
type PromptKind string

// Prompt kinds a message may carry. (The original's MCP client also knows
// join, the prompt that comes with entering a room, never a message's.)
const (
	PromptInline PromptKind = "inline" // a person's message the agents take as their instruction
	PromptAuto   PromptKind = "auto"   // a background reminder; its text may be empty
)

// ParsePromptKind reads a client's agent_prompt_kind as the original
// does: "" is none; anything else is trimmed and read in any case, and
// must be inline or auto (join, blanks and unknown kinds are refused).
func ParsePromptKind(s string) (PromptKind, error) {
	if s == "" {
		return "", nil
	}
	switch k := PromptKind(strings.ToLower(strings.TrimSpace(s))); k {
	case PromptInline, PromptAuto:
		return k, nil
	}
	return "", Errorf(Invalid, "agent_prompt_kind must be one of: %s, %s", PromptInline, PromptAuto)
}

// LivenessClientIDPrefix begins the client_message_id of every liveness
// notice, and no other message's.
const LivenessClientIDPrefix = "agent_liveness:"

// GitHubLineClientIDPrefix begins the client_message_id of every status
// line that announces a GitHub event, followed by the event's number
// ("github_event:12", GitHubEvent.ID), and no other message's: the page
// draws such a line as the event's card (wire.Message.GitHubEventID).
const GitHubLineClientIDPrefix = "github_event:"

// NewMessage is what a sender supplies; the store assigns Seq and CreatedAt.
type NewMessage struct {
	RoomID          string
	Sender          string
	Text            string
	Source          string
	PromptKind      PromptKind
	ThreadParentSeq int64
	// PublisherSessionID is the agent session the server verified as the
	// sender, 0 for none.
	PublisherSessionID int64
	// ClientMessageID, when set, makes the post idempotent within the room:
	// a second post with it answers the first message (see
	// store.SendMessage).
	ClientMessageID string
}

// MessagePage is one page of a room's timeline, oldest first.
type MessagePage struct {
	Messages []Message
	HasMore  bool  // reading forward: more messages follow the page
	HasOlder bool  // reading backward: older messages precede the page
	LastSeq  int64 // the room's newest number when the page was read
}

// MessagePrefix starts a message's wire id, "msg_N".
const MessagePrefix = "msg_"

// MessageID formats a message number as its wire id, "msg_N".
func MessageID(seq int64) string { return WireID(MessagePrefix, seq) }

// ParseMessageID reads a wire message id ("msg_N"; a bare N is accepted
// too, and the prefix in any case, "MSG_N") and returns N. msg_0 is valid
// as a cursor meaning "from the start".
func ParseMessageID(s string) (int64, error) {
	n, ok := parseCursor(MessagePrefix, s)
	if !ok {
		return 0, Errorf(Invalid, "%q is not a message id like msg_42", s)
	}
	return n, nil
}

// parseCursor reads a cursor of a numbered list: prefix then N, or a bare
// N, with N ≥ 0. The prefix is read in any case: a client that writes
// MSG_2 means msg_2.
func parseCursor(prefix, s string) (int64, bool) {
	digits := s
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		digits = s[len(prefix):]
	}
	if digits == "" || digits[0] < '0' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// FormatTime renders a timestamp as the wire does: RFC 3339, UTC,
// milliseconds (wireTimeLayout). Every message of every page has one, so
// it takes time's fast path for RFC 3339 and puts the milliseconds in:
// a layout of its own is parsed again at every call, which was a third
// of turning a page's messages into their wire form.
func FormatTime(t time.Time) string {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return t.Format(wireTimeLayout)
	}
	var b [len("2006-01-02T15:04:05.000Z")]byte
	s := t.AppendFormat(b[:0], time.RFC3339) // …:05Z
	ms := t.Nanosecond() / 1e6
	s = append(s[:len(s)-1], '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
	return string(s)
}

// wireTimeLayout is FormatTime's format.
const wireTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// ErrorKind classifies an Error; the HTTP layer maps each to one status.
type ErrorKind string

// Error kinds.
const (
	Invalid      ErrorKind = "invalid"
	NotFound     ErrorKind = "not_found"
	Gone         ErrorKind = "gone" // existed, but its time ran out
	Conflict     ErrorKind = "conflict"
	Unauthorized ErrorKind = "unauthorized"
	Forbidden    ErrorKind = "forbidden"
	TooLarge     ErrorKind = "too_large"
	RateLimited  ErrorKind = "rate_limited"
	Unavailable  ErrorKind = "unavailable" // a service we depend on (GitHub, the database) did not answer, or this server is full
	// NotImplemented: this server cannot do what was asked, though the
	// service can elsewhere (an event stream asked of a Lambda function).
	NotImplemented ErrorKind = "not_implemented"
	Internal       ErrorKind = "internal"
)

// Machine-readable codes any route may answer with, sent as the error
// answer's "code" (Error.Code).
const (
	CodeRateLimited         = "RATE_LIMITED"         // too many requests from the address; see Retry-After
	CodeDatabaseUnavailable = "DATABASE_UNAVAILABLE" // the database did not answer; see Retry-After
	CodeNotReady            = "NOT_READY"            // the poll server's readiness route: it cannot hold long-polls now
	CodeStreamUnavailable   = "STREAM_UNAVAILABLE"   // this endpoint cannot stream; the poll server can
	CodeStreamLimit         = "STREAM_LIMIT"         // this server holds its most event streams; see Retry-After
	CodeRoomStreamLimit     = "ROOM_STREAM_LIMIT"    // this server holds its most event streams of the room; see Retry-After
	CodeServerDraining      = "SERVER_DRAINING"      // this server is stopping; reconnect, another will answer
)

// Error is an error meant for the client: Message is safe to show. Kind
// is its class, which decides the HTTP status; Code is what a client
// branches on.
type Error struct {
	Kind    ErrorKind
	Message string
	// Code is a machine-readable code sent as "code" (e.g. "RATE_LIMITED"),
	// for clients that branch on it; empty for none.
	Code string
	// Fields are more keys of the answer's JSON body, for errors whose
	// clients expect them (the room id and device-flow URL of auth_required).
	Fields map[string]any
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// IsKind reports whether err is, or wraps, an *Error of the kind.
func IsKind(err error, kind ErrorKind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == kind
}

// RoomNotFound is the answer about a room that does not exist, with the
// code ROOM_NOT_FOUND that clients branch on.
func RoomNotFound() *Error {
	return &Error{Kind: NotFound, Message: "Room not found", Code: "ROOM_NOT_FOUND"}
}

// Errorf builds an *Error with a formatted message.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AuthenticationRequired is the refusal of an action that takes a
// signed-in account, asked for by nobody signed in.
func AuthenticationRequired() error {
	return &Error{Kind: Unauthorized, Message: "Authentication required", Code: CodeNotAuthenticated}
}

// AdminRequired is the refusal of an action that takes a room admin,
// asked for by someone signed in who is not one.
func AdminRequired() error {
	return Errorf(Forbidden, "Admin privileges required")
}

// WorkerSessionRequired is the refusal of an agent's write that takes a
// registered worker session and carries none.
func WorkerSessionRequired() error {
	return &Error{Kind: Forbidden, Code: CodeWorkerSessionRequired,
		Message: "Registered worker session is required for agent write actions."}
}

// Validate checks a message before it is stored. The messages are what a
// client reads back, so they name the wire fields.
func (m NewMessage) Validate() error {
	switch {
	case strings.TrimSpace(m.Sender) == "" || strings.TrimSpace(m.Text) == "" && m.PromptKind != PromptAuto:
		return Errorf(Invalid, "sender and text are required")
	case m.PromptKind != "" && m.PromptKind != PromptInline && m.PromptKind != PromptAuto:
		return Errorf(Invalid, "agent_prompt_kind must be one of: %s, %s", PromptInline, PromptAuto)
	case len(m.Sender) > MaxSenderBytes:
		return Errorf(Invalid, "sender is longer than %d bytes", MaxSenderBytes)
	case len(m.Text) > MaxTextBytes:
		return Errorf(TooLarge, "text is longer than %d bytes", MaxTextBytes)
	case strings.ContainsRune(m.Sender, 0) || strings.ContainsRune(m.Text, 0):
		// PostgreSQL text cannot hold NUL; refuse it here rather than fail there.
		return Errorf(Invalid, "sender and text must not contain NUL characters")
	case m.Source != "" && m.Source != SourceAgent && m.Source != SourceBrowser && m.Source != SourceSystem:
		return Errorf(Invalid, "source must be agent, browser or system")
	case m.Source == SourceSystem && m.Sender != SystemSender:
		return Errorf(Invalid, "system lines are sent as %q", SystemSender)
	case m.Source != SourceSystem && ReservedSender(m.Sender):
		return NotReserved("sender", m.Sender)
	case m.ThreadParentSeq < 0:
		return Errorf(Invalid, "thread_parent_id must be a message id like msg_42")
	case len(m.ClientMessageID) > MaxClientMessageIDBytes:
		return Errorf(Invalid, "client_message_id is longer than %d bytes", MaxClientMessageIDBytes)
	case strings.ContainsRune(m.ClientMessageID, 0):
		return Errorf(Invalid, "client_message_id must not contain NUL characters")
	case m.Source != SourceSystem && strings.HasPrefix(m.ClientMessageID, LivenessClientIDPrefix):
		// The liveness sweeper posts each notice once by its id; a client
		// holding that id first would silence the notice.
		return Errorf(Invalid, "client_message_id must not start with %q, which the server's liveness notices use", LivenessClientIDPrefix)
	case m.Source != SourceSystem && strings.HasPrefix(m.ClientMessageID, GitHubLineClientIDPrefix):
		// A client holding a GitHub line's id first would fail the
		// delivery, and pass its own text for GitHub's.
		return Errorf(Invalid, "client_message_id must not start with %q, which the server's GitHub lines use", GitHubLineClientIDPrefix)
	}
	return nil
}
