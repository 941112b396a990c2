package letagents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Board intents name the board action they ask leave for.
const (
	IntentTaskCreate  = "task_create"
	IntentTaskClaim   = "task_claim"
	IntentTaskClose   = "task_close"
	IntentTaskUpdate  = "task_update"
	IntentLeaseAction = "task_lease_action"
)

// MaxIntentReasonBytes bounds the reason a board intent gives its approver.
const MaxIntentReasonBytes = 2000

// Board manager modes (a room's board setting manager_mode).
const (
	ManagerOff      = "off"              // agents act on the board freely
	ManagerOptional = "manager_optional" // intents may be registered; none is required
	IntentRequired  = "intent_required"  // agents' board actions need an approved intent
)

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
