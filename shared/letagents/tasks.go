package letagents

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// TaskStatus is where a task stands on the room's board.
type TaskStatus string

// Task statuses, as stored and on the wire.
const (
	TaskProposed   TaskStatus = "proposed"    // suggested; a room admin must accept it
	TaskAccepted   TaskStatus = "accepted"    // open to be claimed
	TaskAssigned   TaskStatus = "assigned"    // claimed: an agent holds its work lease
	TaskInProgress TaskStatus = "in_progress" // its holder is working on it
	TaskBlocked    TaskStatus = "blocked"     // waiting on something (or changes were requested)
	TaskInReview   TaskStatus = "in_review"   // ready for a reviewer
	TaskMerged     TaskStatus = "merged"      // its change landed; closeout work may remain
	TaskDone       TaskStatus = "done"
	TaskCancelled  TaskStatus = "cancelled"
)

// TaskStatuses lists every status, in board order.
var TaskStatuses = []TaskStatus{TaskProposed, TaskAccepted, TaskAssigned, TaskInProgress, TaskBlocked, TaskInReview,
	TaskMerged, TaskDone, TaskCancelled}

// taskTransitions is the board's transition table: from each status, the
// statuses a task may move to.
var taskTransitions = map[TaskStatus][]TaskStatus{
	TaskProposed:   {TaskAccepted, TaskCancelled},
	TaskAccepted:   {TaskAssigned, TaskCancelled},
	TaskAssigned:   {TaskInProgress, TaskInReview, TaskCancelled},
	TaskInProgress: {TaskBlocked, TaskInReview, TaskDone, TaskCancelled},
	TaskBlocked:    {TaskInProgress, TaskInReview, TaskCancelled},
	TaskInReview:   {TaskMerged, TaskInProgress, TaskBlocked, TaskDone, TaskCancelled},
	TaskMerged:     {TaskDone, TaskAccepted},
	TaskDone:       {TaskAccepted},
	TaskCancelled:  {TaskAccepted},
}

// ParseTaskStatus reads a status; Invalid unless it is one of the nine.
func ParseTaskStatus(s string) (TaskStatus, error) {
	st := TaskStatus(s)
	if !st.Valid() {
		names := make([]string, len(TaskStatuses))
		for i, v := range TaskStatuses {
			names[i] = string(v)
		}
		return "", Errorf(Invalid, "status must be one of %s", strings.Join(names, ", "))
	}
	return st, nil
}

// Valid reports whether s is one of the nine statuses.
func (s TaskStatus) Valid() bool { return slices.Contains(TaskStatuses, s) }

// Next lists the statuses a task in s may move to.
func (s TaskStatus) Next() []TaskStatus { return slices.Clone(taskTransitions[s]) }

// Open reports whether a task in s is still on the board's open list:
// anything but done and cancelled (merged is open: closeout work remains).
func (s TaskStatus) Open() bool { return s.Valid() && s != TaskDone && s != TaskCancelled }

// AdminOnly reports whether only a room admin may move a task to s:
// accepting, cancelling, merging and closing are the room's decisions.
func (s TaskStatus) AdminOnly() bool {
	return s == TaskAccepted || s == TaskCancelled || s == TaskMerged || s == TaskDone
}

// Held reports whether a task in s is someone's work in hand: the statuses
// an active work lease goes with, and that releasing it undoes.
func (s TaskStatus) Held() bool {
	return s == TaskAssigned || s == TaskInProgress || s == TaskBlocked || s == TaskInReview
}

// Closing reports whether moving a task to s closes it (a board intent of
// kind task_close rather than task_update).
func (s TaskStatus) Closing() bool { return s == TaskDone || s == TaskCancelled || s == TaskMerged }

// CanTransition reports whether the table lets a task move from one status
// to another. Staying put is not a transition.
func CanTransition(from, to TaskStatus) bool { return slices.Contains(taskTransitions[from], to) }

// CheckTransition is CanTransition as an error: Invalid, naming the
// statuses the task may move to.
func CheckTransition(from, to TaskStatus) error {
	if CanTransition(from, to) {
		return nil
	}
	next := taskTransitions[from]
	allowed := make([]string, len(next))
	for i, v := range next {
		allowed[i] = string(v)
	}
	list := strings.Join(allowed, ", ")
	if list == "" {
		list = "none"
	}
	return Errorf(Invalid, "Invalid transition: %s → %s. Allowed: %s", from, to, list)
}

// Lease kinds and statuses, as stored and on the wire.
const (
	LeaseWork   = "work"
	LeaseReview = "review"

	LeaseActive   = "active"
	LeaseReleased = "released" // given up by its holder
	LeaseRevoked  = "revoked"  // ended by a room admin
	LeaseExpired  = "expired"  // its time ran out
)

// Lease actions, as a request's "action" names them: a lease action (and
// a task_lease_action intent's payload) releases or hands off the work
// lease; a review-lease action claims or releases a review lease.
const (
	LeaseActionClaim   = "claim"
	LeaseActionRelease = "release"
	LeaseActionHandoff = "handoff"
)

// TaskPrefix starts a task's wire id, "task_N".
const TaskPrefix = "task_"

// LeasePrefix starts a lease's id, "tl_" and 32 hex digits.
const LeasePrefix = "tl_"

// Task is one item of a room's board. Empty strings are nulls on the wire.
// Its db tags name the columns the store reads it from (by name).
type Task struct {
	RoomID             string     `db:"room_id"`
	Seq                int64      `db:"seq"`
	Title              string     `db:"title"`
	Description        string     `db:"description"`
	Status             TaskStatus `db:"status"`
	Assignee           string     `db:"assignee"` // the holder's actor label
	AssigneeAgentKey   string     `db:"assignee_agent_key"`
	CreatedBy          string     `db:"created_by"`
	CreatedByAccountID int64      `db:"created_by_account_id"`
	CreatedBySessionID int64      `db:"created_by_session_id"`
	SourceMessageID    string     `db:"source_message_id"` // "msg_N"
	PRURL              string     `db:"pr_url"`
	CreatedAt          time.Time  `db:"created_at"`
	UpdatedAt          time.Time  `db:"updated_at"`
	// ActiveLeases are the task's active leases, work lease first.
	ActiveLeases []Lease `db:"-"`
}

// ID is the task's wire id, "task_N".
func (t Task) ID() string { return TaskID(t.Seq) }

// WorkLease returns the task's active work lease, if any.
func (t Task) WorkLease() (Lease, bool) {
	for _, l := range t.ActiveLeases {
		if l.Kind == LeaseWork {
			return l, true
		}
	}
	return Lease{}, false
}

// Lease is an agent's hold on a task: to work on it, or to review it.
// Its db tags name the columns the store reads it from (by name).
type Lease struct {
	ID              string        `db:"id"`
	RoomID          string        `db:"room_id"`
	TaskSeq         int64         `db:"task_seq"`
	Kind            string        `db:"kind"`   // work or review
	Status          string        `db:"status"` // active, released, revoked or expired
	AgentKey        string        `db:"agent_key"`
	InstanceID      string        `db:"agent_instance_id"` // "" when the holder named none
	SessionID       int64         `db:"agent_session_id"`  // the agent session that holds it, 0 once that is gone
	ActorLabel      string        `db:"actor_label"`
	BranchRef       string        `db:"branch_ref"`
	PRURL           string        `db:"pr_url"`
	OutputIntent    string        `db:"output_intent"`
	ExpiresAt       time.Time     `db:"-"` // zero: never
	TTL             time.Duration `db:"-"` // zero: never expires
	LastHeartbeatAt time.Time     `db:"last_heartbeat_at"`
	RevokedReason   string        `db:"revoked_reason"`
	CreatedBy       string        `db:"created_by"`
	CreatedAt       time.Time     `db:"created_at"`
	UpdatedAt       time.Time     `db:"updated_at"`
}

// TaskPage is one page of a room's board, by task number.
type TaskPage struct {
	Tasks   []Task
	HasMore bool
}

// Limits of the board.
const (
	// MaxTaskTitleBytes bounds a one-line title: far beyond any real one,
	// and small enough that the status lines and leases that repeat it
	// stay small.
	MaxTaskTitleBytes = 16 << 10
	// MaxTaskDescriptionBytes bounds a description: like a message, it may
	// carry a log or a diff.
	MaxTaskDescriptionBytes = MaxTextBytes
	MaxPRURLBytes           = 2048
	MaxLeaseReasonBytes     = 500
	// DefaultTaskPage and MaxTaskPage bound ?limit of a board listing.
	DefaultTaskPage = 200
	MaxTaskPage     = 500
	// MinLeaseTTL and MaxLeaseTTL bound lease_ttl_seconds; without it a
	// lease never expires.
	MinLeaseTTL = 10 * time.Second
	MaxLeaseTTL = 24 * time.Hour
)

// TaskID formats a task number as its wire id, "task_N".
func TaskID(seq int64) string { return WireID(TaskPrefix, seq) }

// ParseTaskID reads a task's wire id ("task_N", N ≥ 1); ok is false for
// anything else, which the routes answer as "Task not found".
func ParseTaskID(s string) (int64, bool) { return ParseWireID(TaskPrefix, s) }

// ParseTaskCursor reads ?after of a board listing: "task_N" (the prefix
// in any case) or N, with N ≥ 0 (task_0 is the start).
func ParseTaskCursor(s string) (int64, error) {
	n, ok := parseCursor(TaskPrefix, s)
	if !ok {
		return 0, Errorf(Invalid, "after must be a task id like task_42")
	}
	return n, nil
}

// TaskTitle checks a task's title: trimmed, required, at most
// MaxTaskTitleBytes, one line.
func TaskTitle(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", Errorf(Invalid, "title is required")
	case len(s) > MaxTaskTitleBytes:
		return "", Errorf(Invalid, "title is longer than %d bytes", MaxTaskTitleBytes)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", Errorf(Invalid, "title must be one line of text without control characters")
	}
	return s, nil
}

// TaskDescription checks a task's description (empty for none).
func TaskDescription(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case len(s) > MaxTaskDescriptionBytes:
		return "", Errorf(Invalid, "description is longer than %d bytes", MaxTaskDescriptionBytes)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return "", Errorf(Invalid, "description must be text without NUL characters")
	}
	return s, nil
}

// PRURL checks a pull request URL: empty (none), or an absolute http(s) URL.
func PRURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(s) > MaxPRURLBytes ||
		strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", Errorf(Invalid, "pr_url must be an http(s) URL of at most %d bytes", MaxPRURLBytes)
	}
	return s, nil
}

// LeaseTTL reads lease_ttl_seconds: 0 for none (the lease never expires),
// else MinLeaseTTL to MaxLeaseTTL.
func LeaseTTL(seconds *int64) (time.Duration, error) {
	if seconds == nil {
		return 0, nil
	}
	d := time.Duration(*seconds) * time.Second
	if *seconds < int64(MinLeaseTTL/time.Second) || *seconds > int64(MaxLeaseTTL/time.Second) {
		return 0, Errorf(Invalid, "lease_ttl_seconds must be from %d to %d", int64(MinLeaseTTL/time.Second), int64(MaxLeaseTTL/time.Second))
	}
	return d, nil
}

// LeaseReason checks the reason given for a release, revocation or handoff.
func LeaseReason(s string) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxLeaseReasonBytes || !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return "", Errorf(Invalid, "reason must be text of at most %d bytes", MaxLeaseReasonBytes)
	}
	return s, nil
}

// statusPrefix starts every status line.
const statusPrefix = "[status] "

// TaskStatusLine is the room message announcing that a task moved to its
// current status. who is the primary label of the task's assignee ("" for
// none), named where the line is about them.
func TaskStatusLine(t Task, who string) string {
	id, title := t.ID(), t.Title
	var line string
	switch t.Status {
	case TaskAssigned:
		line = id + " is now assigned"
		if who != "" {
			line = who + " claimed " + id
		}
	case TaskInProgress:
		line = id + " is in progress"
		if who != "" {
			line = who + " started work on " + id
		}
	case TaskBlocked:
		line = id + " is blocked"
	case TaskInReview:
		line = id + " is ready for review"
	case TaskMerged:
		line = id + " has been merged"
	case TaskDone:
		line = id + " is complete"
	case TaskCancelled:
		line = id + " has been cancelled"
	case TaskAccepted:
		line = id + " is accepted and ready to be claimed"
	default:
		line = id + " is now " + string(t.Status)
	}
	return statusPrefix + line + ": " + title
}

// TaskReleasedLine announces that a task's work lease ended and the task
// is open to claim again: released by holder, revoked by an admin, or
// expired.
func TaskReleasedLine(t Task, holder, how string) string {
	var line string
	switch how {
	case LeaseRevoked:
		line = holder + "'s claim on " + t.ID() + " was revoked"
	case LeaseExpired:
		line = holder + "'s work lease on " + t.ID() + " expired"
	default:
		line = holder + " released " + t.ID()
	}
	return statusPrefix + line + "; it is open to claim again: " + t.Title
}

// TaskHandoffLine announces that a task's work passed from one agent to
// another.
func TaskHandoffLine(t Task, from, to string) string {
	return statusPrefix + from + " handed " + t.ID() + " over to " + to + ": " + t.Title
}

// Machine-readable codes of the board's conflicts, sent as an error
// answer's "code" (Error.Code).
const (
	// CodeWrongActor: the task is held (has an active work lease) by
	// another agent, who alone may claim it or change it; the original's
	// code for both.
	CodeWrongActor = "coordination_wrong_actor"
	// CodeLeaseHolderRequired: only the lease holder or a room admin may
	// release or hand off a lease (403).
	CodeLeaseHolderRequired = "coordination_lease_holder_required"
	// CodeReviewRequired: merging needs an active review lease of an agent
	// other than the work holder.
	CodeReviewRequired = "coordination_board_review_required"
	// CodeReviewDecisionOnly: a reviewer may change a task's status only.
	CodeReviewDecisionOnly = "coordination_review_decision_only"
	// CodeSelfReview: the work holder may not review its own task.
	CodeSelfReview = "coordination_self_review"
	// CodeReviewClaimed: the agent already holds a review lease on the task.
	CodeReviewClaimed = "coordination_review_claimed"
	// CodeMissingLease: there is no active lease to act on.
	CodeMissingLease = "coordination_missing_lease"
	// CodeStaleLease: the lease_id given is not the active lease.
	CodeStaleLease = "coordination_stale_lease_reference"
	// CodeTargetSessionRequired: a handoff target has no single live
	// worker session in the room.
	CodeTargetSessionRequired = "coordination_target_session_required"
	// CodeTargetUnreachable: the handoff target's session cannot be
	// reached (no open delivery connection, none closed moments ago).
	CodeTargetUnreachable = "coordination_target_session_unreachable"
	// CodeInvalidTaskStatus: the task's status does not allow the action.
	CodeInvalidTaskStatus = "coordination_invalid_task_status"
)

// Coordination returns a Conflict with a code.
func Coordination(code, format string, args ...any) *Error {
	e := Errorf(Conflict, format, args...)
	e.Code = code
	return e
}
