package letagents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Board intents name the board action they ask leave for.
const (
	IntentTaskCreate  = "task_create"
	IntentTaskClaim   = "task_claim"
	IntentTaskClose   = "task_close"
	IntentTaskUpdate  = "task_update"
	IntentLeaseAction = "task_lease_action"
)

// IntentActions are every action an intent may name.
var IntentActions = []string{IntentTaskCreate, IntentTaskClaim, IntentTaskClose, IntentTaskUpdate, IntentLeaseAction}

// Board intent statuses, as stored and on the wire. An intent starts
// pending; a room admin approves or denies it; the matching action uses an
// approved one; a pending or approved intent whose time runs out is
// expired (lazily, when read).
const (
	IntentPending  = "pending"
	IntentApproved = "approved"
	IntentDenied   = "denied"
	IntentExpired  = "expired"
	IntentUsed     = "used"
)

// IntentStatuses are every status, for validating filters.
var IntentStatuses = []string{IntentPending, IntentApproved, IntentDenied, IntentExpired, IntentUsed}

// IntentPrefix starts a board intent's wire id, "bi_N".
const IntentPrefix = "bi_"

// Limits of board intents and settings.
const (
	// MaxIntentReasonBytes bounds the reason a board intent gives its
	// approver.
	MaxIntentReasonBytes = 2000
	// DefaultIntentTTL is how long a board intent waits for a decision,
	// and how long an approval may then be used, unless the room's board
	// settings say otherwise.
	DefaultIntentTTL = 15 * time.Minute
	// MinIntentTTL and MaxIntentTTL bound a room's intent_ttl_seconds.
	MinIntentTTL = time.Minute
	MaxIntentTTL = 24 * time.Hour
	// DefaultIntentPage and MaxIntentPage bound ?limit of an intent
	// listing.
	DefaultIntentPage = 50
	MaxIntentPage     = 200
)

// Machine-readable codes of the errors about board intents, sent as the
// error answer's "code" (Error.Code).
const (
	CodeIntentRequired    = "board_intent_required"     // the action needs an approved intent and names none (or none that exists)
	CodeIntentMismatch    = "board_intent_mismatch"     // the intent is for another action, payload or agent
	CodeIntentNotApproved = "board_intent_not_approved" // the intent is pending or denied
	CodeIntentExpired     = "board_intent_expired"      // its time ran out
	CodeIntentUsed        = "board_intent_used"         // its approval was already used
	CodeIntentNotPending  = "board_intent_not_pending"  // only a pending intent can be decided
	CodeApprovalToken     = "board_approval_token_invalid"
)

// Board manager modes (a room's board setting manager_mode).
const (
	ManagerOff      = "off"              // agents act on the board freely
	ManagerOptional = "manager_optional" // intents may be registered; none is required
	IntentRequired  = "intent_required"  // agents' board actions need an approved intent
)

// ManagerModes are every manager mode.
var ManagerModes = []string{ManagerOff, ManagerOptional, IntentRequired}

// BoardSettings are a room's board governance settings.
type BoardSettings struct {
	RoomID      string
	ManagerMode string // ManagerOff, ManagerOptional (default) or IntentRequired
	IntentTTL   time.Duration
	// RequireWorkerSessions: callers without a worker session may not
	// claim or move tasks (SessionlessBoard); the default depends on the
	// room's kind (DefaultRequireWorkerSessions).
	RequireWorkerSessions bool
}

// BoardIntent is an agent's request for leave to take one exact board
// action. Its db tags name the columns the store reads it from (by name).
type BoardIntent struct {
	ID          int64  `db:"id"`
	RoomID      string `db:"room_id"`
	Action      string `db:"action"`  // one of IntentActions
	Payload     []byte `db:"payload"` // canonical JSON, exactly what PayloadHash hashed
	PayloadHash string `db:"payload_hash"`
	Status      string `db:"status"` // one of IntentStatuses
	// The agent that proposed it; ProposerSessionID is 0 once the session
	// row is gone.
	ProposerSessionID  int64     `db:"proposer_session_id"`
	ProposerActorLabel string    `db:"proposer_actor_label"`
	ProposerAgentKey   string    `db:"proposer_agent_key"`
	Reason             string    `db:"reason"`
	DecidedBy          string    `db:"decided_by"` // the deciding admin's login, "" while undecided
	DecidedAt          time.Time `db:"-"`
	UsedAt             time.Time `db:"-"`
	ExpiresAt          time.Time `db:"expires_at"`
	CreatedAt          time.Time `db:"created_at"`
	// ApprovalTokenHash is the hash of the one-time approval token, nil
	// until approved: the store checks a presented token against it, and
	// no answer carries it.
	ApprovalTokenHash []byte `db:"approval_token_hash"`
}

// The payloads of board intents, built exactly as the LetAgents 0.12.11
// client builds them: an intent matches an action when the hashes of their
// payloads are equal, so field order and nulls matter.

// TaskCreatePayload is the payload of a task creation.
type TaskCreatePayload struct {
	Title           string  `json:"title"`
	Description     *string `json:"description"`
	SourceMessageID *string `json:"source_message_id"`
}

// NewTaskCreatePayload builds it: the title trimmed, empty fields null.
func NewTaskCreatePayload(title, description, sourceMessageID string) TaskCreatePayload {
	return TaskCreatePayload{Title: strings.TrimSpace(title), Description: nullable(description), SourceMessageID: nullable(sourceMessageID)}
}

// TaskMutationPayload is the payload of a change to a task (claim, close,
// update).
type TaskMutationPayload struct {
	TaskID           string  `json:"task_id"`
	Status           *string `json:"status"`
	Assignee         *string `json:"assignee"`
	AssigneeAgentKey *string `json:"assignee_agent_key"`
	PRURL            *string `json:"pr_url"`
}

// NewTaskMutationPayload builds it, empty fields null.
func NewTaskMutationPayload(taskID, status, assignee, assigneeAgentKey, prURL string) TaskMutationPayload {
	return TaskMutationPayload{TaskID: taskID, Status: nullable(status), Assignee: nullable(assignee),
		AssigneeAgentKey: nullable(assigneeAgentKey), PRURL: nullable(prURL)}
}

// LeaseActionPayload is the payload of a release or handoff of a task's
// work lease.
type LeaseActionPayload struct {
	TaskID               string  `json:"task_id"`
	Action               string  `json:"action"`
	LeaseID              *string `json:"lease_id"`
	TargetActorKey       *string `json:"target_actor_key"`
	TargetAgentSessionID *string `json:"target_agent_session_id"`
}

// NewLeaseActionPayload builds it, empty fields null.
func NewLeaseActionPayload(taskID, action, leaseID, targetActorKey, targetSessionID string) LeaseActionPayload {
	return LeaseActionPayload{TaskID: taskID, Action: action, LeaseID: nullable(leaseID), TargetActorKey: nullable(targetActorKey),
		TargetAgentSessionID: nullable(targetSessionID)}
}

// PayloadHash is the hex SHA-256 of a payload's JSON: what an intent and
// the action it allows are matched by.
func PayloadHash(payload any) (string, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func nullable(s string) *string {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	return &s
}
