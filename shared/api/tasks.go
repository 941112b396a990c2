package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// The task board. Who may do what (the rules are letagents'):
//
//   - Anyone who may use the room reads the board.
//   - Anyone creates tasks. An agent's task (worker session) is created
//     by its actor label and stays proposed until a room admin accepts
//     it. A person's task is created by created_by as sent (signed in,
//     by default their account's name) and starts accepted when they are a
//     trusted creator: signed in and either a room admin or in a browser
//     session; otherwise (an owner token without a session, which is how
//     agents call, or nobody signed in) it is proposed too.
//   - Claiming (status assigned) takes a worker session. Moving a task to
//     accepted, cancelled, merged or done takes a signed-in room admin
//     (401 without an account, 403 otherwise). Any other change takes a
//     worker session, or a room admin acting as a person. Once a task is
//     held, the store lets only its work lease holder change it.
//   - Lease actions take the holder's worker session, or a room admin
//     (whose release is a revocation).
//   - A board whose setting require_worker_sessions is off (invite and
//     named rooms by default) also serves callers without a worker
//     session, as LetAgents 0.11 did: they create, claim and move tasks
//     and set PR URLs under the name they send (created_by, a claim's
//     assignee, checked as a message's sender is), a claim taking no
//     lease; and a task created under a name already heard in the room
//     starts accepted.
//
// Every agent's creation, change and lease action first passes
// authorizeBoardAction with its payload as the letagents builders make it.
// A refusal of a write to a task that does not exist is that 404.

func toTask(t letagents.Task) wire.Task {
	j := wire.Task{ID: t.ID(), RoomID: t.RoomID, Title: t.Title, Description: optText(t.Description), Status: string(t.Status),
		Assignee: optText(t.Assignee), AssigneeAgentKey: optText(t.AssigneeAgentKey), CreatedBy: t.CreatedBy,
		SourceMessageID: optText(t.SourceMessageID), PRURL: optText(t.PRURL), CreatedAt: letagents.FormatTime(t.CreatedAt),
		UpdatedAt: letagents.FormatTime(t.UpdatedAt), ActiveLeases: make([]wire.Lease, len(t.ActiveLeases)),
		WorkflowArtifacts: []wire.ArtifactFields{}}
	for i, l := range t.ActiveLeases {
		j.ActiveLeases[i] = toLease(l)
	}
	for _, a := range t.WorkflowArtifacts() {
		j.WorkflowArtifacts = append(j.WorkflowArtifacts, wire.ArtifactFields{Provider: a.Provider, Kind: a.Kind, ID: a.ID,
			Number: a.Number, Title: a.Title, URL: a.URL, Ref: a.Ref, State: a.State})
	}
	return j
}

func toLease(l letagents.Lease) wire.Lease {
	j := wire.Lease{ID: l.ID, RoomID: l.RoomID, TaskID: letagents.TaskID(l.TaskSeq), Kind: l.Kind, Status: l.Status, AgentKey: l.AgentKey,
		AgentInstanceID: optText(l.InstanceID), ActorLabel: l.ActorLabel, BranchRef: optText(l.BranchRef), PRURL: optText(l.PRURL),
		OutputIntent: optText(l.OutputIntent), ExpiresAt: optTime(l.ExpiresAt), LastHeartbeatAt: letagents.FormatTime(l.LastHeartbeatAt),
		RevokedReason: optText(l.RevokedReason), CreatedBy: l.CreatedBy, CreatedAt: letagents.FormatTime(l.CreatedAt),
		UpdatedAt: letagents.FormatTime(l.UpdatedAt)}
	if l.SessionID != 0 {
		id := letagents.WireID(letagents.AgentSessionPrefix, l.SessionID)
		j.AgentSessionID = &id
	}
	return j
}

func toLeasePtr(l letagents.Lease) *wire.Lease {
	j := toLease(l)
	return &j
}

// optText is a string on the wire: null when empty.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// bodyText reads an optional body field, "" when absent.
func bodyText(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// taskBody reads the task id of the path, then decodes the JSON body into v.
func taskBody(w http.ResponseWriter, r *http.Request, c call, v any) (int64, error) {
	seq, err := taskSeq(c.ps)
	if err == nil {
		err = decode(w, r, v)
	}
	return seq, err
}

// taskSeq reads the task id of the path; anything but task_N is a task
// that does not exist.
func taskSeq(ps params) (int64, error) {
	seq, ok := letagents.ParseTaskID(ps["task_id"])
	if !ok {
		return 0, letagents.Errorf(letagents.NotFound, "Task not found")
	}
	return seq, nil
}

// taskQuery reads ?status, ?open, ?after and ?limit of a board listing.
func taskQuery(v url.Values) (store.TaskQuery, error) {
	q := store.TaskQuery{Limit: queryLimit(v, letagents.DefaultTaskPage, letagents.MaxTaskPage)}
	// As the original reads them: an after that is no task id is no
	// cursor, and open is on only when it says so.
	if n, err := letagents.ParseTaskCursor(v.Get("after")); err == nil {
		q.After = n
	}
	if s := v.Get("status"); s != "" {
		st, err := letagents.ParseTaskStatus(s)
		if err != nil {
			return q, err
		}
		q.Status = st
	}
	q.Open = v.Get("open") == "true" || v.Get("open") == "1"
	return q, nil
}

// boardCaller works out who acts on the board: the verified worker
// session the request carries (nil for none), the Actor the store judges
// by, and the caller as the board's rules see it (which also makes sure
// the room exists).
func (s *server) boardCaller(r *http.Request, c call, creds wire.SessionCredentials) (*letagents.AgentSession, store.Actor, letagents.BoardCaller, error) {
	var bc letagents.BoardCaller
	sess, err := s.agentSession(r, c.room, creds, true)
	if err != nil {
		return nil, store.Actor{}, bc, err
	}
	_, role, err := s.roleIn(r, c)
	if err != nil {
		return nil, store.Actor{}, bc, err
	}
	who := identity(r)
	bc = letagents.BoardCaller{Worker: sess != nil, SignedIn: who.SignedIn(), Admin: who.SignedIn() && role == letagents.RoleAdmin,
		Browser: who.Via == auth.ViaSession}
	actor := store.Actor{Label: boardAccountName(who.Account), Admin: bc.Admin}
	if sess != nil {
		actor.Label, actor.AgentKey, actor.InstanceID, actor.SessionID = sess.ActorLabel, sess.AgentKey, sess.InstanceID, sess.ID
		return sess, actor, bc, nil
	}
	b, err := s.Store.BoardSettings(r.Context(), c.room)
	if err != nil {
		return nil, store.Actor{}, bc, err
	}
	bc.Sessionless = letagents.SessionlessBoard(b.RequireWorkerSessions, b.ManagerMode)
	return nil, actor, bc, nil
}

// writer is the name a board write without a worker session is signed
// with (letagents.WriterName), one the caller gave checked as a message's
// sender is; "" when there is none.
func (s *server) writer(r *http.Request, c call, bc letagents.BoardCaller, field, given string) (string, error) {
	name, isGiven := letagents.WriterName(bc, given, boardAccountName(identity(r).Account))
	if !isGiven {
		return name, nil
	}
	name, err := letagents.ActorName(field, name)
	if err == nil {
		_, err = s.nameSource(r, c.room, field, name)
	}
	return name, err
}

// refuse answers err, a refusal of a write to task seq, unless the task
// does not exist: whoever may use the room learns that first (404), as
// LetAgents answers it before it asks who writes.
func (s *server) refuse(r *http.Request, c call, seq int64, err error) error {
	if !letagents.IsKind(err, letagents.Forbidden) && !letagents.IsKind(err, letagents.Unauthorized) {
		return err
	}
	if _, terr := s.Store.Task(r.Context(), c.room, seq, s.now()); letagents.IsKind(terr, letagents.NotFound) {
		return terr
	}
	return err
}

// boardAccountName is what a person's board entries are signed with.
func boardAccountName(a letagents.Account) string {
	if a.DisplayName != "" {
		return a.DisplayName
	}
	return a.Login
}

func grantOf(g wire.BoardIntentGrant) boardGrant {
	return boardGrant{IntentID: g.BoardIntentID, ApprovalToken: g.BoardApprovalToken}
}

func (s *server) listTasks(w http.ResponseWriter, r *http.Request, c call) error {
	q, err := taskQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.Store.Tasks(r.Context(), c.room, q, s.now())
	if err != nil {
		return err
	}
	tasks := make([]wire.Task, len(page.Tasks))
	for i, t := range page.Tasks {
		tasks[i] = toTask(t)
	}
	// Descriptions may be as long as messages: cut the page the same way.
	items, cut, err := withinPage(tasks)
	if err != nil {
		return err
	}
	defer items.release()
	j := wire.TaskList{HasMore: page.HasMore || cut}
	if strings.HasPrefix(r.URL.Path, "/projects/") {
		j.ProjectID = c.room
	} else {
		j.RoomID = c.room
	}
	writeJSONList(w, http.StatusOK, j, "tasks", items)
	return nil
}

func (s *server) getTask(w http.ResponseWriter, r *http.Request, c call) error {
	seq, err := taskSeq(c.ps)
	if err != nil {
		return err
	}
	t, err := s.Store.Task(r.Context(), c.room, seq, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTask(t))
	return nil
}

func (s *server) createTask(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.CreateTask
	if err := decode(w, r, &req); err != nil {
		return err
	}
	n, err := newTask(c.room, req)
	if err != nil {
		return err
	}
	sess, actor, bc, err := s.boardCaller(r, c, req.SessionCredentials)
	if err != nil {
		return err
	}
	n.CreatedByAccountID = identity(r).Account.ID
	if sess != nil {
		n.CreatedBy, n.CreatedBySessionID = actor.Label, sess.ID
		payload := letagents.NewTaskCreatePayload(req.Title, req.Description, req.SourceMessageID)
		if err := s.authorizeBoardAction(r, c.room, *sess, letagents.IntentTaskCreate, payload, grantOf(req.BoardIntentGrant)); err != nil {
			return err
		}
	} else if err := s.personsTask(r, c, bc, req.CreatedBy, &n); err != nil {
		return err
	}
	t, err := s.Store.CreateTask(r.Context(), n, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toTask(t))
	return nil
}

// personsTask signs n, a task created without a worker session, and
// decides whether it starts accepted (letagents.AcceptsNewTask).
func (s *server) personsTask(r *http.Request, c call, bc letagents.BoardCaller, createdBy string, n *store.NewTask) error {
	by, err := s.writer(r, c, bc, "created_by", createdBy)
	switch {
	case err != nil:
		return err
	case by == "":
		return letagents.Errorf(letagents.Invalid, "title and created_by are required")
	}
	posted := false
	if bc.Sessionless && !letagents.AcceptsNewTask(bc, by, false) {
		if posted, err = s.Store.HasSent(r.Context(), c.room, by); err != nil {
			return err
		}
	}
	n.CreatedBy, n.Accepted = by, letagents.AcceptsNewTask(bc, by, posted)
	return nil
}

// newTask checks what a creation asks for.
func newTask(roomID string, req wire.CreateTask) (store.NewTask, error) {
	n := store.NewTask{RoomID: roomID}
	if strings.TrimSpace(req.Title) == "" {
		return n, letagents.Errorf(letagents.Invalid, "title and created_by are required")
	}
	var err error
	if n.Title, err = letagents.TaskTitle(req.Title); err != nil {
		return n, err
	}
	if n.Description, err = letagents.TaskDescription(req.Description); err != nil {
		return n, err
	}
	if src := strings.TrimSpace(req.SourceMessageID); src != "" {
		seq, err := letagents.ParseMessageID(src)
		if err != nil || seq == 0 {
			return n, letagents.Errorf(letagents.Invalid, "source_message_id must be a message id like msg_42")
		}
		n.SourceMessageID = letagents.MessageID(seq)
	}
	return n, nil
}

func (s *server) updateTask(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.UpdateTask
	seq, err := taskBody(w, r, c, &req)
	if err != nil {
		return err
	}
	var status letagents.TaskStatus
	if req.Status != nil && *req.Status != "" {
		if status, err = letagents.ParseTaskStatus(*req.Status); err != nil {
			return err
		}
	}
	var prURL *string
	if req.PRURL != nil {
		v, err := letagents.PRURL(*req.PRURL)
		if err != nil {
			return err
		}
		prURL = &v
	}
	ttl, err := letagents.LeaseTTL(req.LeaseTTLSeconds)
	if err != nil {
		return err
	}
	sess, actor, bc, err := s.boardCaller(r, c, req.SessionCredentials)
	if err == nil {
		err = letagents.CheckTaskChange(bc, status)
	}
	if err != nil {
		return s.refuse(r, c, seq, err)
	}
	payload := letagents.NewTaskMutationPayload(letagents.TaskID(seq), bodyText(req.Status), bodyText(req.Assignee), bodyText(req.AssigneeAgentKey), bodyText(req.PRURL))
	grant := grantOf(req.BoardIntentGrant)
	now := s.now()

	if status == letagents.TaskAssigned {
		// A claim: the caller takes the task for itself.
		claim := store.Claim{Actor: actor, TTL: ttl, PRURL: prURL}
		if sess != nil {
			if err := claimSelf(*sess, req); err != nil {
				return err
			}
			if err := s.authorizeBoardAction(r, c.room, *sess, letagents.IntentTaskClaim, payload, grant); err != nil {
				return s.refuse(r, c, seq, err)
			}
		} else {
			// A claim by name, which CheckTaskChange lets through only on a
			// sessionless board. Any assignee_agent_key is left aside: no
			// session vouches for it.
			if claim.Actor.Label, err = s.writer(r, c, bc, "assignee", bodyText(req.Assignee)); err != nil {
				return err
			}
			if claim.Actor.Label == "" {
				return letagents.Errorf(letagents.Invalid, "assignee is required to claim a task without a worker session")
			}
			claim.ByName = true
		}
		t, _, err := s.Store.ClaimTask(r.Context(), c.room, seq, claim, now)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, toTask(t))
		return nil
	}

	if sess != nil {
		kind := letagents.IntentTaskUpdate
		if status.Closing() {
			kind = letagents.IntentTaskClose
		}
		if err := s.authorizeBoardAction(r, c.room, *sess, kind, payload, grant); err != nil {
			return s.refuse(r, c, seq, err)
		}
	}
	t, err := s.Store.UpdateTask(r.Context(), c.room, seq, store.TaskChange{Status: status, Assignee: req.Assignee,
		AssigneeAgentKey: req.AssigneeAgentKey, PRURL: prURL, LeaseTTL: ttl, Actor: actor}, now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTask(t))
	return nil
}

// claimSelf checks that a claim's assignee, when given, is the claiming
// session itself: a task goes to another agent by a lease handoff.
func claimSelf(sess letagents.AgentSession, req wire.UpdateTask) error {
	if as := strings.TrimSpace(bodyText(req.Assignee)); as != "" && as != sess.ActorLabel && as != sess.DisplayName {
		return letagents.Errorf(letagents.Invalid,
			"A claim assigns the task to the claiming session: assignee must be omitted or be its own label %q (hand a held task to another agent with a lease handoff)",
			sess.ActorLabel)
	}
	if key := strings.TrimSpace(bodyText(req.AssigneeAgentKey)); key != "" && key != sess.AgentKey {
		return letagents.Errorf(letagents.Invalid, "A claim assigns the task to the claiming session: assignee_agent_key must be omitted or be %q", sess.AgentKey)
	}
	return nil
}

// badKey reports whether an agent key or instance id from a body could
// not be one: too long, or with control characters (NUL included, which
// PostgreSQL text cannot hold).
func badKey(s string) bool {
	return len(s) > letagents.MaxSenderBytes || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}

// leaseAction releases a task's work lease or hands it off to another
// agent's session.
func (s *server) leaseAction(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.LeaseAction
	seq, err := taskBody(w, r, c, &req)
	if err != nil {
		return err
	}
	if req.Action != letagents.LeaseActionRelease && req.Action != letagents.LeaseActionHandoff {
		return letagents.Errorf(letagents.Invalid, "action must be release or handoff")
	}
	reason, err := letagents.LeaseReason(req.Reason)
	if err != nil {
		return err
	}
	h := store.Handoff{LeaseID: strings.TrimSpace(req.LeaseID), Reason: reason, TargetKey: strings.TrimSpace(req.TargetActorKey),
		TargetInstanceID: strings.TrimSpace(req.TargetActorInstanceID)}
	if req.Action == letagents.LeaseActionHandoff {
		if h.TargetKey == "" {
			return letagents.Errorf(letagents.Invalid, "target_actor_key is required for a handoff")
		}
		if badKey(h.TargetKey) || badKey(h.TargetInstanceID) {
			return letagents.Errorf(letagents.Invalid, "target_actor_key and target_actor_instance_id must be short text without control characters")
		}
		if req.TargetAgentSessionID != "" {
			sid, ok := letagents.ParseWireID(letagents.AgentSessionPrefix, req.TargetAgentSessionID)
			if !ok {
				return letagents.Errorf(letagents.Invalid, "target_agent_session_id must be a session id like as_7")
			}
			h.TargetSessionID = sid
		}
	}
	sess, actor, bc, err := s.boardCaller(r, c, req.SessionCredentials)
	switch {
	case err != nil:
	case sess == nil:
		err = bc.CheckAdmin()
	default:
		payload := letagents.NewLeaseActionPayload(letagents.TaskID(seq), req.Action, req.LeaseID, req.TargetActorKey, req.TargetAgentSessionID)
		err = s.authorizeBoardAction(r, c.room, *sess, letagents.IntentLeaseAction, payload, grantOf(req.BoardIntentGrant))
	}
	if err != nil {
		return s.refuse(r, c, seq, err)
	}
	h.Actor = actor
	out := wire.LeaseActionResult{RoomID: c.room, Action: req.Action}
	var t letagents.Task
	var released, next letagents.Lease
	if req.Action == letagents.LeaseActionRelease {
		t, released, err = s.Store.ReleaseWorkLease(r.Context(), c.room, seq, store.LeaseRelease{Actor: actor, LeaseID: h.LeaseID, Reason: reason}, s.now())
	} else {
		t, released, next, err = s.Store.HandoffWorkLease(r.Context(), c.room, seq, h, s.now())
		out.NewLease = toLeasePtr(next)
	}
	if err != nil {
		return err
	}
	out.Task, out.ReleasedLease = toTask(t), toLeasePtr(released)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// reviewLeaseAction claims or releases a review lease.
func (s *server) reviewLeaseAction(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.ReviewLeaseAction
	seq, err := taskBody(w, r, c, &req)
	if err != nil {
		return err
	}
	if req.Action != letagents.LeaseActionClaim && req.Action != letagents.LeaseActionRelease {
		return letagents.Errorf(letagents.Invalid, "action must be claim or release")
	}
	reason, err := letagents.LeaseReason(req.Reason)
	if err != nil {
		return err
	}
	ttl, err := letagents.LeaseTTL(req.LeaseTTLSeconds)
	if err != nil {
		return err
	}
	sess, actor, bc, err := s.boardCaller(r, c, req.SessionCredentials)
	switch {
	case err != nil:
	case sess == nil && req.Action == letagents.LeaseActionClaim:
		err = letagents.WorkerSessionRequired()
	case sess == nil:
		err = bc.CheckAdmin()
	}
	if err != nil {
		return s.refuse(r, c, seq, err)
	}
	if req.Action == letagents.LeaseActionClaim {
		t, lease, err := s.Store.ClaimReview(r.Context(), c.room, seq, store.Claim{Actor: actor, TTL: ttl}, s.now())
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, wire.ReviewClaimed{RoomID: c.room, Action: req.Action, Task: toTask(t), Lease: toLease(lease)})
		return nil
	}
	t, released, err := s.Store.ReleaseReview(r.Context(), c.room, seq,
		store.LeaseRelease{Actor: actor, LeaseID: strings.TrimSpace(req.LeaseID), Reason: reason}, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.ReviewReleased{RoomID: c.room, Action: req.Action, Task: toTask(t), ReleasedLease: toLease(released)})
	return nil
}
