package wire

// Task is one item of a room's board. Nulls are fields the task does not
// have (no assignee, no PR yet).
type Task struct {
	ID               string  `json:"id"` // "task_N"
	RoomID           string  `json:"room_id"`
	Title            string  `json:"title"`
	Description      *string `json:"description"`
	Status           string  `json:"status"` // proposed, accepted, assigned, in_progress, blocked, in_review, merged, done, cancelled
	Assignee         *string `json:"assignee"`
	AssigneeAgentKey *string `json:"assignee_agent_key"`
	CreatedBy        string  `json:"created_by"`
	SourceMessageID  *string `json:"source_message_id"`
	PRURL            *string `json:"pr_url"`
	// WorkflowArtifacts are the Git objects the task's work produced, as
	// the original's clients read them: its pull request, from pr_url.
	WorkflowArtifacts []ArtifactFields `json:"workflow_artifacts"`
	CreatedAt         string           `json:"created_at"`
	UpdatedAt         string           `json:"updated_at"`
	// ActiveLeases are the task's active leases, its work lease first.
	ActiveLeases []Lease `json:"active_leases"`
}

// Lease is an agent's hold on a task: kind work (to do it) or review.
// ExpiresAt null never expires.
type Lease struct {
	ID              string  `json:"id"` // "tl_" and 32 hex digits
	RoomID          string  `json:"room_id"`
	TaskID          string  `json:"task_id"`
	Kind            string  `json:"kind"`   // work or review
	Status          string  `json:"status"` // active, released, revoked or expired
	AgentKey        string  `json:"agent_key"`
	AgentInstanceID *string `json:"agent_instance_id"`
	AgentSessionID  *string `json:"agent_session_id"`
	ActorLabel      string  `json:"actor_label"`
	BranchRef       *string `json:"branch_ref"`
	PRURL           *string `json:"pr_url"`
	OutputIntent    *string `json:"output_intent"`
	ExpiresAt       *string `json:"expires_at"`
	LastHeartbeatAt string  `json:"last_heartbeat_at"`
	RevokedReason   *string `json:"revoked_reason"`
	CreatedBy       string  `json:"created_by"`
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`
}

// TaskList is GET …/tasks: one page of the board by task number. The
// room's id goes under project_id on the legacy routes and under room_id
// on the current ones.
type TaskList struct {
	RoomID    string `json:"room_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
	Tasks     []Task `json:"tasks"`
	HasMore   bool   `json:"has_more"`
}

// CreateTask is the body of POST …/tasks. With a worker session the task
// is created by that agent (its actor label, never CreatedBy); without
// one, by CreatedBy as sent, else by the signed-in account.
type CreateTask struct {
	Title           string `json:"title"`
	Description     string `json:"description,omitempty"`
	SourceMessageID string `json:"source_message_id,omitempty"`
	CreatedBy       string `json:"created_by,omitempty"`
	BoardIntentGrant
	SessionCredentials
}

// UpdateTask is the body of PATCH …/tasks/{task_id}: the fields to change,
// omitted (or null) ones kept. Status assigned, with no assignee or the
// caller's own label, is a claim; LeaseTTLSeconds then gives the new work
// lease a time to live (10 to 86400; none never expires), and on a later
// change by the holder renews it.
type UpdateTask struct {
	Status           *string `json:"status,omitempty"`
	Assignee         *string `json:"assignee,omitempty"`
	AssigneeAgentKey *string `json:"assignee_agent_key,omitempty"`
	PRURL            *string `json:"pr_url,omitempty"`
	LeaseTTLSeconds  *int64  `json:"lease_ttl_seconds,omitempty"`
	BoardIntentGrant
	SessionCredentials
}

// LeaseAction is the body of POST …/tasks/{task_id}/lease-action: release
// the task's work lease, or hand it off to another agent's session.
type LeaseAction struct {
	Action                string `json:"action"` // release or handoff
	LeaseID               string `json:"lease_id,omitempty"`
	Reason                string `json:"reason,omitempty"`
	TargetActorKey        string `json:"target_actor_key,omitempty"`
	TargetActorInstanceID string `json:"target_actor_instance_id,omitempty"`
	TargetAgentSessionID  string `json:"target_agent_session_id,omitempty"`
	BoardIntentGrant
	SessionCredentials
}

// LeaseActionResult answers a lease action. NewLease is null for a release.
type LeaseActionResult struct {
	RoomID        string `json:"room_id"`
	Action        string `json:"action"`
	Task          Task   `json:"task"`
	ReleasedLease *Lease `json:"released_lease"`
	NewLease      *Lease `json:"new_lease"`
}

// ReviewLeaseAction is the body of POST …/tasks/{task_id}/review-lease-action.
type ReviewLeaseAction struct {
	Action          string `json:"action"` // claim or release
	LeaseID         string `json:"lease_id,omitempty"`
	Reason          string `json:"reason,omitempty"`
	LeaseTTLSeconds *int64 `json:"lease_ttl_seconds,omitempty"`
	SessionCredentials
}

// ReviewClaimed answers a review claim.
type ReviewClaimed struct {
	RoomID string `json:"room_id"`
	Action string `json:"action"`
	Task   Task   `json:"task"`
	Lease  Lease  `json:"lease"`
}

// ReviewReleased answers a review release.
type ReviewReleased struct {
	RoomID        string `json:"room_id"`
	Action        string `json:"action"`
	Task          Task   `json:"task"`
	ReleasedLease Lease  `json:"released_lease"`
}
