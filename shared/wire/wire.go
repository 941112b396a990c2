// Package wire holds the JSON shapes of the HTTP API, requests and
// answers, shared by the server (shared/api) and its Go client (mcp/), so
// the two cannot drift apart. Keys are snake_case as existing LetAgents
// clients expect; ids carry their prefixes ("msg_12", "acct_3"); times are
// RFC 3339 UTC with milliseconds. Nothing here has behaviour.
package wire

import "encoding/json"

// Error is every error answer: {"error": "..."} and, for errors a client
// branches on, a machine-readable code. Some errors add keys of their own
// (auth_required: message, room_id, device_flow_url).
type Error struct {
	Error   string `json:"error"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	RoomID  string `json:"room_id,omitempty"`
	// DeviceFlowURL is where to start signing in, on auth_required.
	DeviceFlowURL string `json:"device_flow_url,omitempty"`
	// Interval is the device flow's poll interval, on "Polling too quickly".
	Interval int `json:"interval,omitempty"`
}

// Project is a room as the legacy /projects routes return it.
type Project struct {
	ID          string  `json:"id"`
	Code        *string `json:"code"`
	Name        *string `json:"name"`
	DisplayName string  `json:"display_name"`
	CreatedAt   string  `json:"created_at"`
}

// Join is a room as POST /rooms/{room}/join returns it.
type Join struct {
	RoomID        string   `json:"room_id"`
	Name          *string  `json:"name"`
	DisplayName   string   `json:"display_name"`
	Code          *string  `json:"code"`
	CreatedAt     string   `json:"created_at"`
	Role          string   `json:"role"` // admin, participant or anonymous
	Authenticated bool     `json:"authenticated"`
	GitRoom       *GitRoom `json:"git_room,omitempty"`
}

// GitRoom says which repository and ref a Git Room stands for.
type GitRoom struct {
	Provider   string     `json:"provider"`
	Host       string     `json:"host"`
	Repository Repository `json:"repository"`
	Ref        Ref        `json:"ref"`
}

// Repository of a Git Room.
type Repository struct {
	ID    *string `json:"id"`
	Owner string  `json:"owner"`
	Name  string  `json:"name"`
}

// Ref of a Git Room: the default branch, or a named branch.
type Ref struct {
	Type string  `json:"type"` // default_branch or branch
	Name *string `json:"name"`
}

// RoomList is GET /projects: rooms of the signed-in account.
type RoomList struct {
	Projects []ListedRoom `json:"projects"`
}

// ListedRoom is a room of a RoomList.
type ListedRoom struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
}

// RenameRoom is the body of PATCH /rooms/{room}.
type RenameRoom struct {
	DisplayName string `json:"display_name"`
}

// Resolved says what a room id names: an invite room by its code, or
// any other room by its name.
type Resolved struct {
	Type string  `json:"type"` // invite or room
	Code *string `json:"code,omitempty"`
	Name *string `json:"name,omitempty"`
}

// APIResolve is GET /api/rooms/resolve/{room}: the Resolved fields, and
// for a room its canonical id.
type APIResolve struct {
	Resolved
	CanonicalRoomID *string `json:"canonical_room_id,omitempty"`
}

// Resolve is GET /rooms/resolve/{room}: the id as given, as normalised,
// what it names and, for a room, its canonical id.
type Resolve struct {
	Input           string   `json:"input"`
	Normalized      string   `json:"normalized"`
	Resolved        Resolved `json:"resolved"`
	CanonicalRoomID *string  `json:"canonical_room_id,omitempty"`
}

// Access is GET /projects/{id}/access.
type Access struct {
	ProjectID     string         `json:"project_id"`
	RoomType      string         `json:"room_type"` // invite or discoverable
	Authenticated bool           `json:"authenticated"`
	Role          string         `json:"role"`
	Account       *AccessAccount `json:"account"`
}

// AccessAccount is the caller's account in an Access answer.
type AccessAccount struct {
	ID       string `json:"id"`
	Login    string `json:"login"`
	Provider string `json:"provider"`
}

// SendMessage is the body of POST …/messages. ThreadParentID and ReplyTo
// both name the message replied to (the first as this service and new
// clients spell it, the second as older ones do); the reply joins that
// message's thread.
type SendMessage struct {
	Sender         string  `json:"sender"`
	Text           string  `json:"text"`
	ThreadParentID *string `json:"thread_parent_id,omitempty"`
	ReplyTo        *string `json:"reply_to,omitempty"`
	// AgentPromptKind, inline or auto, marks the message as an instruction
	// to the room's agents (see Message); auto allows an empty text.
	AgentPromptKind string `json:"agent_prompt_kind,omitempty"`
	// ClientMessageID, chosen by the client (at most 200 bytes), makes the
	// send safe to repeat: a second send of it to the same room answers
	// the first message with 200 instead of posting another.
	ClientMessageID string `json:"client_message_id,omitempty"`
	// With a worker session's credentials the message is sent as that
	// session: its actor label replaces sender.
	SessionCredentials
}

// SessionCredentials prove a request comes from a registered agent
// session. They ride in the body, or in the headers SessionIDHeader and
// SessionTokenHeader (long-polls), always with the owner's token.
type SessionCredentials struct {
	AgentSessionID    string `json:"agent_session_id,omitempty"`
	AgentSessionToken string `json:"agent_session_token,omitempty"`
}

// Headers that carry session credentials.
const (
	SessionIDHeader    = "X-LetAgents-Agent-Session-Id"
	SessionTokenHeader = "X-LetAgents-Agent-Session-Token"
)

// VouchedAddressHeader carries, on a request of the hosted MCP endpoint
// to the API, the address of the agent it acts for, sealed with the
// service's key (auth.Service.VouchAddress): the API's per-address limits
// then count each hosted agent by its own address, not the endpoint's.
// Without the key no client can make one, and the API ignores a value it
// cannot open.
const VouchedAddressHeader = "X-LetAgents-Vouched-Address"

// CredentialHeader is the response header by which the API says it did not
// use the request's Authorization header and served the request as an
// anonymous one: CredentialIgnored followed by the reason, "unknown" (a
// token the server does not know: never issued, or revoked) or "scheme"
// (not a single "Bearer <token>"). Routes only a signed-in caller may use
// answer 401 TOKEN_INVALID as well.
const (
	CredentialHeader  = "X-LetAgents-Credential"
	CredentialIgnored = "ignored; reason="
)

// RegisterSession is the body of POST /rooms/{room}/agent-sessions.
type RegisterSession struct {
	ActorKey                 string `json:"actor_key"` // the agent's canonical key, "<login>/<name>"
	DisplayName              string `json:"display_name,omitempty"`
	RequestedBaseDisplayName string `json:"requested_base_display_name,omitempty"`
	IDELabel                 string `json:"ide_label,omitempty"`
	// ActorLabel, as older clients send it, gives the IDE when IDELabel
	// does not.
	ActorLabel      string `json:"actor_label,omitempty"`
	AgentInstanceID string `json:"agent_instance_id,omitempty"`
	SessionKind     string `json:"session_kind,omitempty"` // worker (default) or controller
	Runtime         string `json:"runtime,omitempty"`
	RepoBranch      string `json:"repo_branch,omitempty"`
}

// AgentSession is a registered session. SessionToken is in the answer to
// its registration only.
type AgentSession struct {
	SessionID       string  `json:"session_id"`
	SessionToken    string  `json:"session_token,omitempty"`
	RoomID          string  `json:"room_id"`
	SessionKind     string  `json:"session_kind"`
	Runtime         string  `json:"runtime"`
	ActorLabel      string  `json:"actor_label"`
	AgentKey        string  `json:"agent_key"`
	AgentInstanceID *string `json:"agent_instance_id"`
	DisplayName     string  `json:"display_name"`
	OwnerAccountID  string  `json:"owner_account_id"`
	OwnerLabel      string  `json:"owner_label"`
	IDELabel        string  `json:"ide_label"`
	RepoBranch      *string `json:"repo_branch"`
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`
	LastSeenAt      string  `json:"last_seen_at"`
	EndedAt         *string `json:"ended_at"`
}

// Disconnected is the answer to a session's disconnect.
type Disconnected struct {
	RoomID          string          `json:"room_id"`
	AgentSession    AgentSession    `json:"agent_session"`
	DeliverySession DeliverySession `json:"delivery_session"`
}

// DeliverySession says whether messages reach a session's agent.
type DeliverySession struct {
	Connected          bool    `json:"connected"`
	Reachable          bool    `json:"reachable"`
	OpenConnections    int     `json:"active_connection_count"`
	LastDisconnectedAt *string `json:"last_disconnected_at"`
}

// PresenceUpdate is the body of POST /rooms/{room}/presence.
type PresenceUpdate struct {
	Status     string `json:"status"` // idle, working, reviewing or blocked (trimmed, any case)
	StatusText string `json:"status_text,omitempty"`
	SessionCredentials
}

// Participant is an agent of a room's roster: its session, what it says
// it is doing, and whether messages reach it.
type Participant struct {
	SessionID       string  `json:"session_id"`
	ActorLabel      string  `json:"actor_label"`
	DisplayName     string  `json:"display_name"`
	AgentKey        string  `json:"agent_key"`
	OwnerLabel      string  `json:"owner_label"`
	IDELabel        string  `json:"ide_label"`
	SessionKind     string  `json:"session_kind"`
	Runtime         string  `json:"runtime"`
	Status          string  `json:"status"`
	StatusText      *string `json:"status_text"`
	StatusUpdatedAt *string `json:"status_updated_at"`
	Connected       bool    `json:"connected"` // reachable: a delivery connection is open, or closed moments ago
	LastSeenAt      string  `json:"last_seen_at"`
	// NativeActivity is what the worker's runtime last reported doing
	// outside the room; omitted until it reported any.
	NativeActivity *NativeState `json:"native_activity,omitempty"`
}

// Participants is GET /rooms/{room}/participants.
type Participants struct {
	RoomID       string            `json:"room_id"`
	Participants []RoomParticipant `json:"participants"`
	HiddenCount  int               `json:"hidden_count"`
}

// RoomParticipant is someone a room has seen, as the original lists
// them: a person who posted, or an agent (its live session, or the actor
// label it posted under). The fields from SessionID on are an agent's
// live session, null (Connected false) without one.
type RoomParticipant struct {
	RoomID              string   `json:"room_id"`
	ParticipantKey      string   `json:"participant_key"`
	Kind                string   `json:"kind"` // human or agent
	ActorLabel          *string  `json:"actor_label"`
	AgentKey            *string  `json:"agent_key"`
	GitHubLogin         *string  `json:"github_login"`
	DisplayName         string   `json:"display_name"`
	OwnerLabel          *string  `json:"owner_label"`
	IDELabel            *string  `json:"ide_label"`
	HiddenAt            *string  `json:"hidden_at"`
	HiddenBy            *string  `json:"hidden_by"`
	LastSeenAt          string   `json:"last_seen_at"`
	LastRoomActivityAt  *string  `json:"last_room_activity_at"`
	LastLiveHeartbeatAt *string  `json:"last_live_heartbeat_at"`
	ActivityState       *string  `json:"activity_state"` // agents: active, away or offline; null for people
	SourceFlags         []string `json:"source_flags"`   // of delivery, hook, presence, messages
	CreatedAt           string   `json:"created_at"`
	UpdatedAt           string   `json:"updated_at"`
	SessionID           *string  `json:"session_id"`
	SessionKind         *string  `json:"session_kind"`
	Runtime             *string  `json:"runtime"`
	Status              *string  `json:"status"`
	StatusText          *string  `json:"status_text"`
	StatusUpdatedAt     *string  `json:"status_updated_at"`
	Connected           bool     `json:"connected"`
	// DeliveryLatency is an agent session's send→surfaced latency over
	// the last 24 hours; null when nothing reached it in that time.
	DeliveryLatency *DeliveryLatency `json:"delivery_latency"`
	// NativeActivity is what the agent's runtime last reported doing
	// outside the room (a live Codex worker's turn); omitted until any.
	NativeActivity *NativeState `json:"native_activity,omitempty"`
	// ReachedBy is how messages reach an agent now: "live" (a parked
	// wait or an open stream: Connected), "hook" (its runtime's hooks
	// took its unread messages within the last few minutes); left out
	// when neither, and for people. Not in the original.
	ReachedBy string `json:"reached_by,omitempty"`
}

// DeliveryLatency summarises how soon messages reach an agent: over Count
// deliveries, the median and the 99th percentile, in milliseconds.
type DeliveryLatency struct {
	Count int   `json:"count"`
	P50MS int64 `json:"p50_ms"`
	P99MS int64 `json:"p99_ms"`
}

// Presence is a worker on a room's live roster, in the original's shape:
// who it is, what it says it is doing, and whether messages reach it
// (freshness active, else stale; activity_state active, away or offline;
// source_flags delivery when messages ever reached it through a poll or
// stream, presence when it has said what it is doing).
type Presence struct {
	RoomID          string   `json:"room_id"`
	ActorLabel      string   `json:"actor_label"`
	AgentKey        string   `json:"agent_key"`
	AgentInstanceID *string  `json:"agent_instance_id"`
	AgentSessionID  string   `json:"agent_session_id"`
	SessionKind     string   `json:"session_kind"`
	Runtime         string   `json:"runtime"`
	DisplayName     string   `json:"display_name"`
	OwnerLabel      string   `json:"owner_label"`
	IDELabel        string   `json:"ide_label"`
	Status          string   `json:"status"`
	StatusText      *string  `json:"status_text"`
	LastHeartbeatAt string   `json:"last_heartbeat_at"`
	CreatedAt       string   `json:"created_at"`
	UpdatedAt       string   `json:"updated_at"`
	Freshness       string   `json:"freshness"`
	ActivityState   string   `json:"activity_state"`
	SourceFlags     []string `json:"source_flags"`
	// NativeActivity is nil until the runtime reported any.
	NativeActivity *NativeState `json:"native_activity"`
	// ReachedBy is how messages reach the worker now: "live" or "hook"
	// (as RoomParticipant's); left out when neither. Not in the original.
	ReachedBy string `json:"reached_by,omitempty"`
}

// PresenceList is GET /rooms/{room}/presence: the live roster.
type PresenceList struct {
	RoomID   string     `json:"room_id"`
	Presence []Presence `json:"presence"`
}

// NativeActivity is the body of POST …/agent-sessions/{id}/native-activity:
// the agent's runtime reporting that it is busy outside the room.
type NativeActivity struct {
	ObservedAt string `json:"observed_at"`
	Sequence   int64  `json:"sequence"`
	Method     string `json:"method"`
	Status     string `json:"status,omitempty"`
	// Text is a short line saying what the runtime does, shown in the
	// roster (an extension; the original sends none).
	Text string `json:"text,omitempty"`
	SessionCredentials
}

// NativeState is a roster entry's latest native activity: what the
// worker's runtime (a Codex turn) last reported doing outside the room.
type NativeState struct {
	Status     string  `json:"status"`
	Method     string  `json:"method"`
	Text       *string `json:"text"`
	ObservedAt string  `json:"observed_at"`
}

// Message is one message of a room's timeline.
type Message struct {
	ID        string  `json:"id"`
	RoomID    string  `json:"room_id"`
	Sender    string  `json:"sender"`
	Text      string  `json:"text"`
	Source    *string `json:"source"` // agent, browser, system (the server's own lines) or null
	Timestamp string  `json:"timestamp"`
	// AgentPromptKind is inline (a person's message the agents take as
	// their instruction), auto (a background reminder) or null. A message
	// of kind auto with no text is prompt-only: reads leave it out unless
	// asked with include_prompt_only=1.
	AgentPromptKind *string `json:"agent_prompt_kind"`
	// ThreadParentID is the message this one replies to (null for a
	// top-level message); ReplyTo quotes it.
	ThreadParentID *string `json:"thread_parent_id"`
	ReplyTo        *Quote  `json:"reply_to"`
	// ThreadRootID is the top-level message of this one's thread: its own
	// id when it is top-level.
	ThreadRootID string `json:"thread_root_id"`
	// Thread summarises the replies of a top-level message that has some.
	Thread *Thread `json:"thread"`
	// Mentions are the agent sessions its @mentions named when it was
	// sent ("@Name" by display name, "@[actor label]"); left out when none.
	Mentions []MessageAgent `json:"mentions,omitempty"`
	// SeenBy and UnreadBy are its receipts, on reads for the page
	// (render=html) only: the agents it was surfaced to, first surfacing
	// first, and the live workers that have not surfaced it two minutes
	// after it was sent. Left out when empty.
	SeenBy   []SeenBy       `json:"seen_by,omitempty"`
	UnreadBy []MessageAgent `json:"unread_by,omitempty"`
	// PinnedAt and PinnedBy say when a room admin pinned it and who (an
	// account's login); left out when it is not pinned.
	PinnedAt string `json:"pinned_at,omitempty"`
	PinnedBy string `json:"pinned_by,omitempty"`
	// GitHubEventID is the GitHub event (ghe_N, as GET …/events lists
	// it) that a status line of the server's announces; left out on
	// every other message. Not in the original.
	GitHubEventID string `json:"github_event_id,omitempty"`
}

// Pins is GET …/pins: the room's pinned messages, the most recently
// pinned first.
type Pins struct {
	RoomID   string    `json:"room_id"`
	Messages []Message `json:"messages"`
}

// MessageAgent is an agent session as a message refers to it.
type MessageAgent struct {
	AgentSessionID string `json:"agent_session_id"`
	DisplayName    string `json:"display_name"`
	ActorLabel     string `json:"actor_label"`
}

// SeenBy is a message surfaced to an agent: when, and how (wait, read,
// stream or hook).
type SeenBy struct {
	MessageAgent
	SurfacedAt string `json:"surfaced_at"`
	Via        string `json:"via"`
}

// Delivery is a message surfaced to an agent, as GET
// …/messages/{message_id}/deliveries lists it: LatencyMS is from the send.
type Delivery struct {
	SeenBy
	LatencyMS int64 `json:"latency_ms"`
}

// Deliveries is GET /rooms/{room}/messages/{message_id}/deliveries.
type Deliveries struct {
	RoomID     string         `json:"room_id"`
	MessageID  string         `json:"message_id"`
	SentAt     string         `json:"sent_at"`
	Deliveries []Delivery     `json:"deliveries"`
	UnreadBy   []MessageAgent `json:"unread_by"`
}

// TakeUnread is the body of POST /rooms/{room}/messages/unread, sent
// with an agent session's credentials (body or headers). Every field is
// optional.
type TakeUnread struct {
	// Filter is all (default) or addressed: the messages that @mention
	// the agent and the replies in threads it wrote in.
	Filter string `json:"filter,omitempty"`
	// Limit bounds the messages taken (default 10, at most 50).
	Limit int `json:"limit,omitempty"`
	// OnlyIfAsked takes nothing unless a person asked the agent something
	// among its unread messages (a Stop hook's question).
	OnlyIfAsked bool `json:"only_if_asked,omitempty"`
	// AnswerWithinMs is how long after sending the caller still reads
	// the answer (1 to 60000; 0: no bound): a take the server cannot
	// commit within it takes nothing, so that nothing is recorded as
	// surfaced to an agent whose hook had already given up.
	AnswerWithinMs int64 `json:"answer_within_ms,omitempty"`
	SessionCredentials
}

// Unread is the answer of POST /rooms/{room}/messages/unread.
type Unread struct {
	RoomID         string          `json:"room_id"`
	AgentSessionID string          `json:"agent_session_id"`
	Messages       []UnreadMessage `json:"messages"`
	// HasMore says more unread messages wait for the next take.
	HasMore bool `json:"has_more"`
	// Asked says a person asked the agent something among its unread
	// messages (taken or not).
	Asked bool `json:"asked"`
	// Cursor is the session's delivery cursor after the take (msg_N).
	Cursor string `json:"cursor"`
}

// UnreadMessage is a message taken as unread: Addressed says why it
// concerns the taker (mention, thread, or null), Asked whether a person
// asked the taker something by it.
type UnreadMessage struct {
	Message
	Addressed *string `json:"addressed"`
	Asked     bool    `json:"asked"`
}

// RenderedMessage is a message as the reads with ?render=html give it,
// for the web page: HTML is its text rendered from Markdown and sanitised
// (shared/markdown), to be inserted into a page as it is. A message whose
// HTML would make it too big to answer comes without it, as a Message.
type RenderedMessage struct {
	Message
	HTML string `json:"html"`
}

// Quote is the message a reply answers, its text cut to
// letagents.QuoteMaxChars characters.
type Quote struct {
	ID        string  `json:"id"`
	Sender    string  `json:"sender"`
	Text      string  `json:"text"`
	Source    *string `json:"source"`
	Timestamp string  `json:"timestamp"`
	Truncated bool    `json:"truncated,omitempty"`
}

// Thread is the summary of a top-level message's replies.
type Thread struct {
	RootMessageID string `json:"root_message_id"`
	ReplyCount    int    `json:"reply_count"`
	LatestReplyID string `json:"latest_reply_id"`
	LatestReplyAt string `json:"latest_reply_at"`
}

// Page is a list of messages, oldest first. The room's id goes under
// project_id on the legacy routes and under room_id on the current ones.
type Page struct {
	RoomID    string            `json:"room_id,omitempty"`
	ProjectID string            `json:"project_id,omitempty"`
	Messages  []json.RawMessage `json:"messages"`
	// HasMore says more messages lie the way the page was read: newer ones
	// after it, or, read with before, older ones before it (as the
	// original's has_more does).
	HasMore bool `json:"has_more"`
	// HasOlder, sent only on a read with before, says older messages
	// precede the page.
	HasOlder *bool `json:"has_older,omitempty"`
}

// Account is a signed-in person.
type Account struct {
	ID             string  `json:"id"`
	Provider       string  `json:"provider"`
	ProviderUserID string  `json:"provider_user_id"`
	Login          string  `json:"login"`
	DisplayName    string  `json:"display_name"`
	AvatarURL      *string `json:"avatar_url"`
}

// DeviceStartRequest is the optional body of POST /auth/device/start.
type DeviceStartRequest struct {
	RoomID string `json:"room_id,omitempty"`
}

// DeviceStart is a device sign-in just begun.
type DeviceStart struct {
	RequestID       string `json:"request_id"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int    `json:"expires_in"` // seconds
	Interval        int    `json:"interval"`   // seconds between polls
}

// DevicePoll is a device sign-in's progress: pending or slow_down (200),
// denied (403), expired (410), or authorized, when the other fields come.
type DevicePoll struct {
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	Interval  int    `json:"interval,omitempty"`
	ExpiresIn *int   `json:"expires_in,omitempty"`
}

// DeviceAuthorized hands over the owner token, shown this once.
// OAuthTokenExpiresAt is null when GitHub's token does not expire.
type DeviceAuthorized struct {
	Status              string  `json:"status"`
	LetAgentsToken      string  `json:"letagents_token"`
	OwnerTokenID        string  `json:"owner_token_id"`
	OAuthTokenExpiresAt *string `json:"oauth_token_expires_at"`
	Account             Account `json:"account"`
}

// LoginRequest is the body of POST /auth/github/login.
type LoginRequest struct {
	RedirectTo string `json:"redirect_to,omitempty"`
}

// Login is a web sign-in just begun: send the browser to AuthURL.
type Login struct {
	AuthURL    string `json:"auth_url"`
	State      string `json:"state"`
	RedirectTo string `json:"redirect_to"`
}

// Session says who is signed in, and whether anyone can sign in here:
// SignInConfigured (not in the original) is false on a server without a
// GitHub OAuth app, where the room page tells people why nobody signs in.
type Session struct {
	Authenticated    bool     `json:"authenticated"`
	Account          *Account `json:"account,omitempty"`
	SignInConfigured bool     `json:"sign_in_configured"`
	// LocalOwner: sign-in is off here and every caller without a
	// credential acts as the local owner, Account (auth.ViaLocal).
	LocalOwner bool `json:"local_owner,omitempty"`
}

// Success is an answer with nothing else to say.
type Success struct {
	Success bool `json:"success"`
}

// RegisterAgent is the body of POST /agents.
type RegisterAgent struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name,omitempty"`
	OwnerLabel  string `json:"owner_label,omitempty"`
}

// Agent is an agent identity of the agents directory.
type Agent struct {
	ID             string `json:"id"`
	CanonicalKey   string `json:"canonical_key"`
	Name           string `json:"name"`
	DisplayName    string `json:"display_name"`
	OwnerAccountID string `json:"owner_account_id"`
	OwnerLogin     string `json:"owner_login"`
	OwnerLabel     string `json:"owner_label"`
	CreatedAt      string `json:"created_at"`
	UpdatedAt      string `json:"updated_at"`
}

// MyAgents is GET /agents/me.
type MyAgents struct {
	Account struct {
		ID          string `json:"id"`
		Login       string `json:"login"`
		DisplayName string `json:"display_name"`
	} `json:"account"`
	Agents []Agent `json:"agents"`
}

// Health is GET /api/health. Version is this service's build (added
// here; the original answers only status and service).
type Health struct {
	Status  string `json:"status"`
	Service string `json:"service"`
	Version string `json:"version,omitempty"`
}

// ArtifactFields are what a publisher says of an artifact.
type ArtifactFields struct {
	Provider string `json:"provider,omitempty"` // github, gitlab, bitbucket or unknown (default: from the URL)
	Kind     string `json:"kind"`               // issue, branch, pull_request, merge_request, review, check_run, merge
	ID       string `json:"id,omitempty"`
	Number   int64  `json:"number,omitempty"`
	Title    string `json:"title,omitempty"`
	URL      string `json:"url,omitempty"`
	Ref      string `json:"ref,omitempty"`
	State    string `json:"state,omitempty"`
}

// PublishArtifact is the body of POST /rooms/{room}/artifacts: the
// artifact under "artifact", or its fields at the top level.
type PublishArtifact struct {
	Artifact *ArtifactFields `json:"artifact,omitempty"`
	ArtifactFields
	TaskID        string   `json:"task_id,omitempty"`
	LinkedTaskIDs []string `json:"linked_task_ids,omitempty"`
	// A worker session's publish is its task workflow's (source
	// task_workflow_artifact); invalid credentials are refused.
	SessionCredentials
}

// Artifact is a Git workflow object a room works on.
type Artifact struct {
	RoomID         string   `json:"room_id"`
	IdentityKey    string   `json:"identity_key"`
	Provider       string   `json:"provider"`
	Kind           string   `json:"kind"`
	ArtifactID     *string  `json:"artifact_id"`
	ArtifactNumber *int64   `json:"artifact_number"`
	Title          *string  `json:"title"`
	URL            *string  `json:"url"`
	Ref            *string  `json:"ref"`
	State          *string  `json:"state"`
	Source         string   `json:"source"`
	FirstSeenAt    string   `json:"first_seen_at"`
	UpdatedAt      string   `json:"updated_at"`
	LinkedTaskIDs  []string `json:"linked_task_ids"`
}

// Artifacts is GET /rooms/{room}/artifacts.
type Artifacts struct {
	RoomID    string     `json:"room_id"`
	Artifacts []Artifact `json:"artifacts"`
}

// PublishedArtifact is the answer to a publish.
type PublishedArtifact struct {
	RoomID   string   `json:"room_id"`
	Artifact Artifact `json:"artifact"`
}
