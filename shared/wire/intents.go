package wire

import "encoding/json"

// RegisterIntent is the body of POST /rooms/{room}/board-intents: a
// worker session asks leave for one exact board action. Payload is the
// JSON object the action will send, shaped by the action:
//   - task_create: {title, description|null, source_message_id|null}
//   - task_claim, task_close, task_update: {task_id, status|null,
//     assignee|null, assignee_agent_key|null, pr_url|null}
//   - task_lease_action: {task_id, action (release or handoff),
//     lease_id|null, target_actor_key|null, target_agent_session_id|null}
//
// Omitted fields count as null; the server rebuilds the payload in its
// canonical form before hashing it.
type RegisterIntent struct {
	Action  string          `json:"action"`
	Payload json.RawMessage `json:"payload"`
	Reason  string          `json:"reason,omitempty"`
	SessionCredentials
}

// BoardIntent is a registered intent. ApprovalToken is in the answer to
// its approval only: the matching action presents it, once, as
// board_approval_token together with board_intent_id.
type BoardIntent struct {
	ID                 string          `json:"id"`
	RoomID             string          `json:"room_id"`
	Action             string          `json:"action"`
	Payload            json.RawMessage `json:"payload"`
	PayloadHash        string          `json:"payload_hash"`
	Status             string          `json:"status"` // pending, approved, denied, expired or used
	ProposerSessionID  *string         `json:"proposer_session_id"`
	ProposerActorLabel string          `json:"proposer_actor_label"`
	ProposerAgentKey   string          `json:"proposer_agent_key"`
	Reason             *string         `json:"reason"`
	DecidedBy          *string         `json:"decided_by"` // the deciding admin's login
	DecidedAt          *string         `json:"decided_at"`
	UsedAt             *string         `json:"used_at"`
	ExpiresAt          string          `json:"expires_at"`
	CreatedAt          string          `json:"created_at"`
	ApprovalToken      string          `json:"approval_token,omitempty"`
}

// BoardIntents is GET /rooms/{room}/board-intents.
type BoardIntents struct {
	RoomID  string        `json:"room_id"`
	Intents []BoardIntent `json:"intents"`
}

// BoardIntentGrant is what an agent's board action (a task creation, a
// task change, a lease action) carries when it uses an approved intent.
type BoardIntentGrant struct {
	BoardIntentID      string `json:"board_intent_id,omitempty"`
	BoardApprovalToken string `json:"board_approval_token,omitempty"`
}

// BoardSettings is GET and PATCH /rooms/{room}/board-settings.
type BoardSettings struct {
	RoomID           string `json:"room_id"`
	ManagerMode      string `json:"manager_mode"` // off, manager_optional (default) or intent_required
	IntentTTLSeconds int    `json:"intent_ttl_seconds"`
	// RequireWorkerSessions: only worker sessions (and room admins) claim
	// and move tasks. Default true in repo and branch rooms, false in
	// invite and named rooms.
	RequireWorkerSessions bool `json:"require_worker_sessions"`
}

// BoardSettingsUpdate is the body of PATCH /rooms/{room}/board-settings
// (room admins): what to change.
type BoardSettingsUpdate struct {
	ManagerMode           string `json:"manager_mode,omitempty"`
	IntentTTLSeconds      *int   `json:"intent_ttl_seconds,omitempty"`
	RequireWorkerSessions *bool  `json:"require_worker_sessions,omitempty"`
}
