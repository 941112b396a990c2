package wire

import "encoding/json"

// ReasoningSession is an agent's reasoning trace in a room. Its
// latest_payload is the merge of every snapshot written to it, with
// exactly the fields some write gave (a field given as null is null).
type ReasoningSession struct {
	ID              string          `json:"id"` // "rs_" and 32 hex digits
	RoomID          string          `json:"room_id"`
	TaskID          *string         `json:"task_id"`
	AnchorMessageID *string         `json:"anchor_message_id"`
	ActorLabel      string          `json:"actor_label"`
	AgentKey        *string         `json:"agent_key"`
	Status          *string         `json:"status"` // idle, working, reviewing or blocked
	Summary         string          `json:"summary"`
	LatestPayload   json.RawMessage `json:"latest_payload"`
	CreatedAt       string          `json:"created_at"`
	UpdatedAt       string          `json:"updated_at"`
	ClosedAt        *string         `json:"closed_at"` // null while open
}

// ReasoningUpdate is one snapshot written to a session: payload as
// written; status the session's after it.
type ReasoningUpdate struct {
	ID         string          `json:"id"` // "ru_" and 32 hex digits
	RoomID     string          `json:"room_id"`
	SessionID  string          `json:"session_id"`
	ActorLabel string          `json:"actor_label"`
	Status     *string         `json:"status"`
	Summary    string          `json:"summary"`
	Milestone  *string         `json:"milestone"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  string          `json:"created_at"`
}

// ReasoningSnapshot is what a reasoning write says, as a client sends
// it: a field left out keeps the session's value. (The server reads the
// body leniently, as the original does: letagents.ReasoningFields.)
type ReasoningSnapshot struct {
	Summary    string   `json:"summary"`
	Goal       string   `json:"goal,omitempty"`
	Checking   string   `json:"checking,omitempty"`
	Hypothesis string   `json:"hypothesis,omitempty"`
	Blocker    string   `json:"blocker,omitempty"`
	NextAction string   `json:"next_action,omitempty"`
	Milestone  string   `json:"milestone,omitempty"`
	Status     string   `json:"status,omitempty"` // idle, working, reviewing or blocked
	Confidence *float64 `json:"confidence,omitempty"`
}

// CreateReasoningSession is the body of POST /rooms/{room}/reasoning-sessions.
// With a worker session's credentials (required with an owner token) the
// session is that agent's: its actor label and key, never the body's.
type CreateReasoningSession struct {
	ActorLabel      string `json:"actor_label,omitempty"`
	AgentKey        string `json:"agent_key,omitempty"`
	TaskID          string `json:"task_id,omitempty"`
	AnchorMessageID string `json:"anchor_message_id,omitempty"`
	ReasoningSnapshot
	SessionCredentials
}

// AddReasoningUpdate is the body of POST
// …/reasoning-sessions/{session_id}/updates. ActorLabel, or the worker
// session, is who writes it (default: the session's actor).
type AddReasoningUpdate struct {
	ActorLabel string `json:"actor_label,omitempty"`
	ReasoningSnapshot
	SessionCredentials
}

// ChangeReasoningSession is the body of PATCH
// …/reasoning-sessions/{session_id}: at least one field. A field points to
// its new value; "" clears it (closed_at "" reopens the session).
type ChangeReasoningSession struct {
	TaskID          *string `json:"task_id,omitempty"`
	AnchorMessageID *string `json:"anchor_message_id,omitempty"`
	ClosedAt        *string `json:"closed_at,omitempty"` // RFC 3339
	SessionCredentials
}

// ReasoningSessions is GET /rooms/{room}/reasoning and
// …/reasoning-sessions. HasMore is set only when the sessions' JSON
// passed the page bound and the list was cut.
type ReasoningSessions struct {
	RoomID   string             `json:"room_id"`
	Sessions []ReasoningSession `json:"sessions"`
	HasMore  bool               `json:"has_more,omitempty"`
}

// ReasoningSessionDetail is GET …/reasoning-sessions/{session_id}: the
// session and its first updates, oldest first (HasMore as in
// ReasoningSessions).
type ReasoningSessionDetail struct {
	RoomID  string            `json:"room_id"`
	Session ReasoningSession  `json:"session"`
	Updates []ReasoningUpdate `json:"updates"`
	HasMore bool              `json:"has_more,omitempty"`
}

// ReasoningWritten answers a write that appended a snapshot (201): the
// session after it and the update.
type ReasoningWritten struct {
	RoomID  string           `json:"room_id"`
	Session ReasoningSession `json:"session"`
	Update  ReasoningUpdate  `json:"update"`
}

// ReasoningSessionChanged answers PATCH …/reasoning-sessions/{session_id}.
type ReasoningSessionChanged struct {
	RoomID  string           `json:"room_id"`
	Session ReasoningSession `json:"session"`
}

// ReasoningEvent is the data of a reasoning_update event: the session as
// it is and, when the change appended a snapshot, that update (else null).
type ReasoningEvent struct {
	RoomID  string           `json:"room_id"`
	Session ReasoningSession `json:"session"`
	Update  *ReasoningUpdate `json:"update"`
}

// ReasoningRemoved is the data of a reasoning_remove event.
type ReasoningRemoved struct {
	RoomID    string `json:"room_id"`
	SessionID string `json:"session_id"`
}

// RoomEvents is GET /rooms/{room}/events: the GitHub events of the room's
// repository (GitHubRoomID, a branch room's repo room), from webhooks,
// newest first.
type RoomEvents struct {
	RoomID       string        `json:"room_id"`
	GitHubRoomID string        `json:"github_room_id"`
	Events       []GitHubEvent `json:"events"`
	HasMore      bool          `json:"has_more"`
}

// GitHubEvent is one change on GitHub a repo room heard of, as the
// original lists it, and the data of a github_event: its id (ghe_N, the
// ?after of the next page), the kind (event_type: pull_request,
// pull_request_review, issue_comment, check_run, check_suite, push) and
// GitHub's action, the object (a PR's number, a check's id, a pushed
// commit) with its URL, title and state, who did it, and the branch it
// happened on ("" for none; the original has no such field).
type GitHubEvent struct {
	ID           string          `json:"id"`
	RoomID       string          `json:"room_id"`
	EventType    string          `json:"event_type"`
	Action       string          `json:"action"`
	ObjectID     *string         `json:"github_object_id"`
	ObjectURL    *string         `json:"github_object_url"`
	Title        *string         `json:"title"`
	State        *string         `json:"state"`
	ActorLogin   *string         `json:"actor_login"`
	Branch       *string         `json:"branch"`
	Metadata     json.RawMessage `json:"metadata"`
	LinkedTaskID *string         `json:"linked_task_id"`
	CreatedAt    string          `json:"created_at"`
}

// WebhookAnswer is the 202 of POST /webhooks/github: {"ok": true} with
// what became of the delivery (status: processed, ignored; reason, why it
// was ignored), the event it logged, and duplicate, for a delivery taken
// before (its status then is what the first became).
type WebhookAnswer struct {
	OK        bool   `json:"ok"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Status    string `json:"status,omitempty"`
	Reason    string `json:"reason,omitempty"`
	EventID   string `json:"event_id,omitempty"`
	// LeaseCheck is the conclusion of the letagents-lease check the
	// delivery wrote (success, failure), or "error" when GitHub did not
	// take it; absent when it wrote none.
	LeaseCheck string `json:"lease_check,omitempty"`
}
