package letagents

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The board's rules: who may move a task where, who may claim, review,
// release or hand off its leases, and what each change does to them. They
// are functions of plain values (the task as read under its lock, with its
// active leases, and who asks for what), so every rule is tested by a
// table here; the store loads, calls them and writes what they decide.

// Actor is who acts on the board, as the API verified them: an agent
// through its worker session, or a person.
type Actor struct {
	Label      string // an agent's actor label, or a person's name
	AgentKey   string // the agent's canonical key; "" for a person
	InstanceID string // the agent instance, "" when it named none
	SessionID  int64  // the agent session, 0 for a person
	// Admin: the signed-in account behind the request administers the room.
	Admin bool
}

// IsAgent reports whether the actor is an agent rather than a person.
func (a Actor) IsAgent() bool { return a.AgentKey != "" }

// Holds reports whether the actor holds lease l: the same agent, and the
// same instance when the lease recorded one.
func (a Actor) Holds(l Lease) bool {
	return a.IsAgent() && l.AgentKey == a.AgentKey && (l.InstanceID == "" || l.InstanceID == a.InstanceID)
}

// TaskChange is a change to a task other than a claim.
type TaskChange struct {
	Status TaskStatus // the status to move to; "" keeps it
	// Assignee and AssigneeAgentKey may only repeat what the task has (or
	// be empty when the change reopens it): a task changes hands through a
	// claim or a lease handoff, never by editing its assignee.
	Assignee, AssigneeAgentKey *string
	PRURL                      *string       // "" clears it
	LeaseTTL                   time.Duration // >0: the holder's work lease now lives this long past each heartbeat
	Actor                      Actor
}

// Check refuses a change no task could take, before any task is read:
// status assigned (a claim's) or no status at all.
func (c TaskChange) Check() error {
	if c.Status == TaskAssigned {
		return Errorf(Invalid, "status assigned is a claim: claim the task with the claiming agent's session")
	}
	if c.Status != "" && !c.Status.Valid() {
		_, err := ParseTaskStatus(string(c.Status))
		return err
	}
	return nil
}

// TaskUpdate is what an allowed TaskChange does, for the store to write.
type TaskUpdate struct {
	Status TaskStatus // the task's status after the change
	PRURL  string     // the task's PR URL after the change
	// Moved: the status changes, which a status line announces.
	Moved bool
	// ClearAssignee: the task is reopened (back to accepted) and nobody's.
	ClearAssignee bool
	// EndLeases are the active leases the change ends (done, cancelled and
	// accepted end them all).
	EndLeases []LeaseEnd
	// Renew, when not nil, is the heartbeat of the actor's work lease: a
	// change by the holder renews it.
	Renew *LeaseRenewal
	// PRLease, when not "", is the id of a work lease held by someone
	// other than the actor (an admin edited the task) whose PR URL follows
	// the task's new one.
	PRLease string
}

// LeaseEnd is an active lease to end, and how.
type LeaseEnd struct {
	Lease  Lease
	How    string // LeaseReleased or LeaseRevoked
	Reason string // the revoked_reason; "" unless revoked
}

// LeaseRenewal is a holder's heartbeat on its lease: it lives TTL past
// now (never expires when TTL is 0) and carries PRURL.
type LeaseRenewal struct {
	LeaseID string
	TTL     time.Duration
	PRURL   string
}

// DecideTaskUpdate decides a change to task t, read under its lock with
// its active leases:
//
//   - a status change must be in the transition table (Invalid otherwise);
//     done, cancelled and accepted end the task's active leases (accepted
//     also clears the assignee), released by their holder or as finished
//     work, revoked otherwise;
//   - the assignee may not be edited (Invalid);
//   - once the task has an active work lease, nobody but its holder may
//     change it (Conflict coordination_wrong_actor), except a
//     reviewer holding an active review lease, who may change the status
//     only (coordination_review_decision_only otherwise), a room admin,
//     and a room admin's agent moving it to an admin-only status;
//   - only the holder may set the lease's time to live (Invalid);
//   - merged needs an active review lease of an agent other than the work
//     holder (coordination_board_review_required);
//   - a change by the holder is a heartbeat: it renews its lease.
//
// Who may ask for which status (admins for admin-only ones) is the API's
// to check; a claim (status assigned) is ClaimWork.
func DecideTaskUpdate(t Task, c TaskChange) (TaskUpdate, error) {
	if err := c.Check(); err != nil {
		return TaskUpdate{}, err
	}
	u := TaskUpdate{Status: t.Status, PRURL: t.PRURL, Moved: c.Status != "" && c.Status != t.Status}
	if u.Moved {
		if err := CheckTransition(t.Status, c.Status); err != nil {
			return TaskUpdate{}, err
		}
		u.Status = c.Status
	}
	u.ClearAssignee = u.Moved && u.Status == TaskAccepted
	if err := checkAssignee(t, c, u.ClearAssignee); err != nil {
		return TaskUpdate{}, err
	}
	work, held := t.WorkLease()
	holder := held && c.Actor.Holds(work)
	// A room admin acting as a person governs held tasks; an admin's
	// agent only as far as the admin-only statuses.
	adminOverride := c.Actor.Admin && (!c.Actor.IsAgent() || (u.Moved && u.Status.AdminOnly()))
	if held && !holder && !adminOverride {
		if !holdsReview(t, c.Actor) {
			return TaskUpdate{}, Coordination(CodeWrongActor,
				"%s is held by %s: only the holder of its work lease can change it (ask them to release or hand it off)", t.ID(), work.ActorLabel)
		}
		if c.PRURL != nil || c.LeaseTTL > 0 {
			return TaskUpdate{}, Coordination(CodeReviewDecisionOnly,
				"A reviewer of %s can only change its status (request changes with blocked, or move it on)", t.ID())
		}
	}
	if c.LeaseTTL > 0 && !holder {
		return TaskUpdate{}, Errorf(Invalid, "lease_ttl_seconds renews the work lease of its holder; this caller holds none on %s", t.ID())
	}
	if u.Moved && u.Status == TaskMerged && !reviewedByOther(t) {
		return TaskUpdate{}, Coordination(CodeReviewRequired,
			"Merging %s needs an active review lease held by an agent other than the one that did the work (claim_task_review)", t.ID())
	}
	if c.PRURL != nil {
		u.PRURL = *c.PRURL
	}
	switch {
	case u.Moved && (u.Status == TaskDone || u.Status == TaskCancelled || u.Status == TaskAccepted):
		for _, l := range t.ActiveLeases {
			// Finishing a task ends its leases as finished work; anything
			// else taken from under their holders is a revocation.
			end := LeaseEnd{Lease: l, How: LeaseReleased}
			if !c.Actor.Holds(l) && u.Status != TaskDone {
				end.How, end.Reason = LeaseRevoked, "task moved to "+string(u.Status)
			}
			u.EndLeases = append(u.EndLeases, end)
		}
	case holder:
		r := LeaseRenewal{LeaseID: work.ID, TTL: work.TTL, PRURL: work.PRURL}
		if c.LeaseTTL > 0 {
			r.TTL = c.LeaseTTL
		}
		if c.PRURL != nil {
			r.PRURL = *c.PRURL
		}
		u.Renew = &r
	case held && c.PRURL != nil:
		u.PRLease = work.ID
	}
	return u, nil
}

// checkAssignee refuses an edit of t's assignee: a change may repeat it,
// or (reopening) empty it.
func checkAssignee(t Task, c TaskChange, reopening bool) error {
	for _, f := range []struct {
		name      string
		give, has *string
	}{{"assignee", c.Assignee, &t.Assignee}, {"assignee_agent_key", c.AssigneeAgentKey, &t.AssigneeAgentKey}} {
		if f.give != nil && *f.give != *f.has && !(reopening && *f.give == "") {
			return Errorf(Invalid,
				"%s cannot be edited: an agent takes a task by claiming it (status assigned), and a held task changes hands by a lease handoff", f.name)
		}
	}
	return nil
}

// holdsReview reports whether a holds an active review lease on t.
func holdsReview(t Task, a Actor) bool {
	for _, l := range t.ActiveLeases {
		if l.Kind == LeaseReview && a.Holds(l) {
			return true
		}
	}
	return false
}

// reviewedByOther reports whether t has an active review lease of an
// agent other than its work holder.
func reviewedByOther(t Task) bool {
	work, held := t.WorkLease()
	for _, l := range t.ActiveLeases {
		if l.Kind == LeaseReview && (!held || l.AgentKey != work.AgentKey) {
			return true
		}
	}
	return false
}

// Claim is an agent taking a task, to work on it or to review it.
type Claim struct {
	Actor Actor
	TTL   time.Duration // the lease's time to live; 0 never expires
	PRURL *string       // a work claim may set the task's PR URL
	// ByName: a work claim without a worker session, on a board that
	// serves such callers (SessionlessBoard). The task goes to the
	// actor's label and nobody gets a lease: a lease is an agent's, held
	// through its session.
	ByName bool
}

// CheckClaimer refuses, before any task is read, a claimer that is not
// an agent, since only an agent session holds leases, unless it claims
// work by name; and a claim by name that sets a lease's time to live.
// kind is LeaseWork or LeaseReview.
func CheckClaimer(c Claim, kind string) error {
	switch {
	case kind == LeaseWork && c.ByName && c.TTL > 0:
		return Errorf(Invalid, "lease_ttl_seconds sets the time to live of a work lease, which a claim without a worker session does not take")
	case kind == LeaseWork && c.ByName, c.Actor.IsAgent() && !c.ByName:
		return nil
	case kind == LeaseReview:
		return Errorf(Invalid, "only an agent session can review a task")
	}
	return Errorf(Invalid, "only an agent session can claim a task")
}

// ClaimWork decides a claim of t's work and returns the work lease it
// creates: t must be accepted (the transition table's Invalid otherwise,
// with a hint for a proposed task) and not held (Conflict
// coordination_wrong_actor). The lease's PR URL is the claim's, or else
// the task's; the task takes it too. A claim by name creates no lease:
// the zero Lease, with its PR URL.
func ClaimWork(t Task, c Claim) (Lease, error) {
	if err := CheckClaimer(c, LeaseWork); err != nil {
		return Lease{}, err
	}
	if t.Status.Held() {
		return Lease{}, Coordination(CodeWrongActor, "%s is already claimed by %s", t.ID(), t.Assignee)
	}
	if err := CheckTransition(t.Status, TaskAssigned); err != nil {
		if t.Status == TaskProposed {
			return Lease{}, Errorf(Invalid, "%v (%s is proposed: a room admin must accept it before it can be claimed)", err, t.ID())
		}
		return Lease{}, err
	}
	if work, held := t.WorkLease(); held {
		// Only an accepted task gets here, and accepting ends leases: a
		// lease left over would be a bug, but still not a second holder.
		return Lease{}, Coordination(CodeWrongActor, "%s is already claimed by %s", t.ID(), work.ActorLabel)
	}
	prURL := t.PRURL
	if c.PRURL != nil {
		prURL = *c.PRURL
	}
	if c.ByName {
		return Lease{PRURL: prURL}, nil
	}
	return Lease{RoomID: t.RoomID, TaskSeq: t.Seq, Kind: LeaseWork, AgentKey: c.Actor.AgentKey, InstanceID: c.Actor.InstanceID,
		SessionID: c.Actor.SessionID, ActorLabel: c.Actor.Label, BranchRef: BranchRef(t.Seq, c.Actor.AgentKey), PRURL: prURL,
		OutputIntent: t.Title, TTL: c.TTL, CreatedBy: c.Actor.Label}, nil
}

// BranchRef is the branch a claimer of task seq is expected to work on by
// default, named as the original names it: letagents/task_N/ and the
// agent's key as a branch name segment (lower case, each run of other
// characters than a-z 0-9 . _ - one dash, at most 64 bytes, "agent" when
// nothing is left).
func BranchRef(seq int64, agentKey string) string {
	slug := strings.Trim(branchUnsafe().ReplaceAllString(strings.ToLower(strings.TrimSpace(agentKey)), "-"), "-")
	if slug = slug[:min(len(slug), 64)]; slug == "" {
		slug = "agent"
	}
	return "letagents/" + TaskID(seq) + "/" + slug
}

// branchUnsafe is compiled on first use, as pullRequestPaths is.
var branchUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9._-]+`) })

// ClaimReview decides a claim to review t and returns the review lease it
// creates: t must be in_review or blocked (Conflict
// coordination_invalid_task_status), and the agent holding its work lease
// may not review it (coordination_self_review). That an agent reviews a
// task once at a time is the store's unique index to enforce.
func ClaimReview(t Task, c Claim) (Lease, error) {
	if err := CheckClaimer(c, LeaseReview); err != nil {
		return Lease{}, err
	}
	if t.Status != TaskInReview && t.Status != TaskBlocked {
		return Lease{}, Coordination(CodeInvalidTaskStatus, "%s is %s: only a task in_review or blocked can be reviewed", t.ID(), t.Status)
	}
	work, held := t.WorkLease()
	if held && work.AgentKey == c.Actor.AgentKey {
		return Lease{}, Coordination(CodeSelfReview, "%s holds the work lease of %s: an agent never reviews its own work", c.Actor.Label, t.ID())
	}
	return Lease{RoomID: t.RoomID, TaskSeq: t.Seq, Kind: LeaseReview, AgentKey: c.Actor.AgentKey, InstanceID: c.Actor.InstanceID,
		SessionID: c.Actor.SessionID, ActorLabel: c.Actor.Label, BranchRef: work.BranchRef, PRURL: t.PRURL,
		OutputIntent: "Review " + t.ID() + ": " + t.Title, TTL: c.TTL, CreatedBy: c.Actor.Label}, nil
}

// LeaseRelease asks to end a lease. LeaseID, when given, must name the
// active lease meant (a stale reference is a Conflict).
type LeaseRelease struct {
	Actor   Actor
	LeaseID string
	Reason  string
}

// ReleaseWork decides the end of t's work lease: released by its holder,
// revoked by a room admin. Conflicts: coordination_missing_lease when
// there is no active work lease, coordination_stale_lease_reference when
// LeaseID is not it; Forbidden (coordination_lease_holder_required) for
// anyone else.
func ReleaseWork(t Task, r LeaseRelease) (LeaseEnd, error) {
	return endWork(t, r, "revoked by a room admin")
}

// HandOffWork decides the end of t's work lease in a handoff: as
// ReleaseWork, and t must be in hand (Conflict
// coordination_invalid_task_status otherwise). The receiving session is
// HandoffTarget's to pick.
func HandOffWork(t Task, r LeaseRelease) (LeaseEnd, error) {
	end, err := endWork(t, r, "handed off by a room admin")
	if err != nil {
		return end, err
	}
	if !t.Status.Held() {
		return LeaseEnd{}, Coordination(CodeInvalidTaskStatus,
			"%s is %s: only a task that is assigned, in_progress, blocked or in_review can be handed off", t.ID(), t.Status)
	}
	return end, nil
}

// endWork finds t's active work lease and how r's actor may end it; an
// admin's revocation without a reason of its own gives revoked.
func endWork(t Task, r LeaseRelease, revoked string) (LeaseEnd, error) {
	work, held := t.WorkLease()
	switch {
	case !held:
		return LeaseEnd{}, Coordination(CodeMissingLease, "%s has no active work lease", t.ID())
	case r.LeaseID != "" && r.LeaseID != work.ID:
		return LeaseEnd{}, Coordination(CodeStaleLease, "lease %s is not the active work lease of %s (that is %s)", r.LeaseID, t.ID(), work.ID)
	case r.Actor.Holds(work):
		return LeaseEnd{Lease: work, How: LeaseReleased}, nil
	case r.Actor.Admin:
		return LeaseEnd{Lease: work, How: LeaseRevoked, Reason: cmp.Or(r.Reason, revoked)}, nil
	}
	return LeaseEnd{}, &Error{Kind: Forbidden, Code: CodeLeaseHolderRequired,
		Message: fmt.Sprintf("Only the holder of the work lease of %s (%s) or a room admin can release or hand it off", t.ID(), work.ActorLabel)}
}

// HandoffTarget picks the session a handoff to agent key goes to from
// candidates, the agent's live worker sessions in the room (only the one
// numbered sessionID, when that is not 0): exactly one, and reachable now.
// Conflicts: coordination_target_session_required when there is none or
// more than one, coordination_target_session_unreachable.
func HandoffTarget(key string, sessionID int64, candidates []AgentSession, now time.Time) (AgentSession, error) {
	switch {
	case len(candidates) == 0 && sessionID != 0:
		return AgentSession{}, Coordination(CodeTargetSessionRequired,
			"%s is not a live worker session of %s in this room", WireID(AgentSessionPrefix, sessionID), key)
	case len(candidates) == 0:
		return AgentSession{}, Coordination(CodeTargetSessionRequired,
			"%s has no live worker session in this room to hand the task to", key)
	case len(candidates) > 1:
		return AgentSession{}, Coordination(CodeTargetSessionRequired,
			"%s has %d live worker sessions in this room: name one with target_agent_session_id", key, len(candidates))
	case !candidates[0].Reachable(now):
		return AgentSession{}, Coordination(CodeTargetUnreachable,
			"%s (%s) is not reachable now: its messages have no open delivery connection, so it would not learn of the handoff",
			candidates[0].ActorLabel, WireID(AgentSessionPrefix, candidates[0].ID))
	}
	return candidates[0], nil
}

// ReleaseReview decides the end of a review lease of t: the actor's own
// (released), or, for a room admin, the one LeaseID names (revoked).
// Conflicts: coordination_missing_lease when there is none to end,
// coordination_stale_lease_reference when LeaseID names no active review
// lease of t; Invalid when an admin names none while others review;
// Forbidden (coordination_lease_holder_required) for anyone else.
func ReleaseReview(t Task, r LeaseRelease) (LeaseEnd, error) {
	var target *Lease
	reviews := 0
	for i, l := range t.ActiveLeases {
		if l.Kind != LeaseReview {
			continue
		}
		reviews++
		if (r.LeaseID != "" && l.ID == r.LeaseID) || (r.LeaseID == "" && r.Actor.Holds(l)) {
			target = &t.ActiveLeases[i]
		}
	}
	switch {
	case target == nil && r.LeaseID != "" && reviews > 0:
		return LeaseEnd{}, Coordination(CodeStaleLease, "lease %s is not an active review lease of %s", r.LeaseID, t.ID())
	case target == nil && r.LeaseID == "" && r.Actor.Admin && reviews > 0:
		return LeaseEnd{}, Errorf(Invalid, "lease_id is required to revoke another agent's review lease")
	case target == nil && r.Actor.IsAgent():
		return LeaseEnd{}, Coordination(CodeMissingLease, "%s holds no active review lease on %s", r.Actor.Label, t.ID())
	case target == nil:
		return LeaseEnd{}, Coordination(CodeMissingLease, "%s has no active review lease to release", t.ID())
	case r.Actor.Holds(*target):
		return LeaseEnd{Lease: *target, How: LeaseReleased}, nil
	case r.Actor.Admin:
		return LeaseEnd{Lease: *target, How: LeaseRevoked, Reason: cmp.Or(r.Reason, "revoked by a room admin")}, nil
	}
	return LeaseEnd{}, &Error{Kind: Forbidden, Code: CodeLeaseHolderRequired,
		Message: fmt.Sprintf("Only the holder of review lease %s (%s) or a room admin can release it", target.ID, target.ActorLabel)}
}

// Board writes without a worker session. A worker session signs an
// agent's board writes with its actor label, and the server checks the
// rest (leases, intents) against it. The LetAgents clients that predate
// sessions (0.11, and any caller with no owner token) send the name they
// act under in the body instead: created_by, assignee. A room's board
// setting require_worker_sessions says whether its board serves them.

// DefaultRequireWorkerSessions is a room's require_worker_sessions until
// an admin sets it: repo and branch rooms ask agents for worker sessions;
// invite and named rooms serve the older clients, as LetAgents did.
func DefaultRequireWorkerSessions(kind RoomKind) bool {
	return kind != RoomInvite && kind != RoomNamed
}

// SessionlessBoard reports whether a room's board lets callers without a
// worker session create, claim and move tasks: require_worker_sessions is
// off and the manager mode does not require intents, which only a session
// can register (so that mode asks for sessions whatever the setting).
func SessionlessBoard(requireWorkerSessions bool, managerMode string) bool {
	return !requireWorkerSessions && managerMode != IntentRequired
}

// BoardCaller is who asks for a board write, as the API verified them.
type BoardCaller struct {
	Worker   bool // a live worker session of the room vouches for the caller
	SignedIn bool // an account is behind the request
	Admin    bool // that account administers the room
	Browser  bool // signed in through the browser: a person at the web UI
	// Sessionless: the room's board serves callers without a worker
	// session (SessionlessBoard).
	Sessionless bool
}

// CheckAdmin refuses a caller who is not a signed-in room admin:
// Unauthorized when nobody is signed in, Forbidden otherwise.
func (c BoardCaller) CheckAdmin() error {
	switch {
	case !c.SignedIn:
		return AuthenticationRequired()
	case !c.Admin:
		return AdminRequired()
	}
	return nil
}

// CheckTaskChange decides, before the task is read, whether c may move a
// task to status ("" for no move; TaskAssigned is a claim):
//
//   - an admin-only status takes a signed-in room admin (CheckAdmin);
//   - a worker may make any other change, and so may anyone on a
//     sessionless board;
//   - otherwise a claim takes a worker session, and any other change a
//     room admin or a worker session (Unauthorized first when nobody is
//     signed in; Forbidden WORKER_SESSION_REQUIRED).
func CheckTaskChange(c BoardCaller, status TaskStatus) error {
	switch {
	case status.AdminOnly():
		return c.CheckAdmin()
	case c.Worker, c.Sessionless:
		return nil
	case status == TaskAssigned:
		return WorkerSessionRequired()
	case c.Admin:
		return nil
	case !c.SignedIn:
		return AuthenticationRequired()
	}
	return WorkerSessionRequired()
}

// WriterName picks the name a board write without a worker session is
// signed with: the name the caller gives (created_by, a claim's
// assignee), as the original keeps it and older clients send it; when it
// gives none, the signed-in account's name. given reports that the name
// is the caller's own choice, to be checked as a message's sender is. ""
// when there is neither.
func WriterName(c BoardCaller, given, account string) (name string, isGiven bool) {
	given = strings.TrimSpace(given)
	if given == "" && c.SignedIn {
		return account, false
	}
	return given, given != ""
}

// ActorName checks a name given for a board write without a worker
// session (field names it): white space collapsed, 1 to MaxSenderBytes
// bytes, no control characters, and not the server's (NotReserved).
func ActorName(field, name string) (string, error) {
	name = strings.Join(strings.Fields(name), " ")
	switch {
	case name == "":
		return "", Errorf(Invalid, "%s is required", field)
	case len(name) > MaxSenderBytes:
		return "", Errorf(Invalid, "%s is longer than %d bytes", field, MaxSenderBytes)
	case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", Errorf(Invalid, "%s must not contain control characters", field)
	}
	return name, NotReserved(field, name)
}

// AcceptsNewTask reports whether a task created without a worker session
// starts accepted rather than proposed: created by a signed-in room admin
// or a person at the web UI, or, on a sessionless board, under a name
// already heard in the room (posted: a message of the room was sent under
// it), as LetAgents 0.11 trusted its agents. "human", the name of whoever
// did not give one, is nobody's in particular and never trusted.
func AcceptsNewTask(c BoardCaller, name string, posted bool) bool {
	if c.SignedIn && (c.Admin || c.Browser) {
		return true
	}
	return c.Sessionless && posted && !strings.EqualFold(strings.TrimSpace(name), "human")
}
