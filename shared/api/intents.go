package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// Board intents: an agent registers the exact board action it means to
// take, a room admin approves or denies it, and an approval's one-time
// token lets the action through. A room's manager_mode says whether its
// agents' board actions need one (intent_required) or not (off,
// manager_optional).

func toIntent(i letagents.BoardIntent) wire.BoardIntent {
	j := wire.BoardIntent{ID: letagents.WireID(letagents.IntentPrefix, i.ID), RoomID: i.RoomID, Action: i.Action,
		Payload: json.RawMessage(i.Payload), PayloadHash: i.PayloadHash, Status: i.Status,
		ProposerActorLabel: i.ProposerActorLabel, ProposerAgentKey: i.ProposerAgentKey,
		DecidedAt: optTime(i.DecidedAt), UsedAt: optTime(i.UsedAt), ExpiresAt: letagents.FormatTime(i.ExpiresAt),
		CreatedAt: letagents.FormatTime(i.CreatedAt)}
	if i.ProposerSessionID != 0 {
		id := letagents.WireID(letagents.AgentSessionPrefix, i.ProposerSessionID)
		j.ProposerSessionID = &id
	}
	if i.Reason != "" {
		j.Reason = &i.Reason
	}
	if i.DecidedBy != "" {
		j.DecidedBy = &i.DecidedBy
	}
	return j
}

func toSettings(b letagents.BoardSettings) wire.BoardSettings {
	return wire.BoardSettings{RoomID: b.RoomID, ManagerMode: b.ManagerMode, IntentTTLSeconds: int(b.IntentTTL / time.Second),
		RequireWorkerSessions: b.RequireWorkerSessions}
}

// canonicalPayload checks that raw is a payload of the action's shape and
// rebuilds it as the 0.12.11 client builds it, so its hash is the one the
// action will have.
func canonicalPayload(action string, raw json.RawMessage) (any, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, letagents.Errorf(letagents.Invalid, "payload is required: the JSON object the %s action will send", action)
	} else if t[0] != '{' {
		return nil, letagents.Errorf(letagents.Invalid, "payload must be a JSON object")
	}
	switch action {
	case letagents.IntentTaskCreate:
		var p letagents.TaskCreatePayload
		if err := decodePayload(action, raw, &p); err != nil {
			return nil, err
		}
		c := letagents.NewTaskCreatePayload(p.Title, bodyText(p.Description), bodyText(p.SourceMessageID))
		if c.Title == "" {
			return nil, letagents.Errorf(letagents.Invalid, "payload.title is required for task_create")
		}
		return c, nil
	case letagents.IntentTaskClaim, letagents.IntentTaskClose, letagents.IntentTaskUpdate:
		var p letagents.TaskMutationPayload
		if err := decodePayload(action, raw, &p); err != nil {
			return nil, err
		}
		c := letagents.NewTaskMutationPayload(strings.TrimSpace(p.TaskID), bodyText(p.Status), bodyText(p.Assignee),
			bodyText(p.AssigneeAgentKey), bodyText(p.PRURL))
		if _, ok := letagents.ParseWireID(letagents.TaskPrefix, c.TaskID); !ok {
			return nil, letagents.Errorf(letagents.Invalid, "payload.task_id must be a task id like task_7")
		}
		return c, nil
	case letagents.IntentLeaseAction:
		var p letagents.LeaseActionPayload
		if err := decodePayload(action, raw, &p); err != nil {
			return nil, err
		}
		c := letagents.NewLeaseActionPayload(strings.TrimSpace(p.TaskID), strings.TrimSpace(p.Action), bodyText(p.LeaseID),
			bodyText(p.TargetActorKey), bodyText(p.TargetAgentSessionID))
		if _, ok := letagents.ParseWireID(letagents.TaskPrefix, c.TaskID); !ok {
			return nil, letagents.Errorf(letagents.Invalid, "payload.task_id must be a task id like task_7")
		}
		if c.Action != letagents.LeaseActionRelease && c.Action != letagents.LeaseActionHandoff {
			return nil, letagents.Errorf(letagents.Invalid, "payload.action must be release or handoff")
		}
		return c, nil
	}
	return nil, letagents.Errorf(letagents.Invalid, "action must be one of %s", strings.Join(letagents.IntentActions, ", "))
}

// decodePayload decodes a payload strictly: a field the action's payload
// does not have means the payload is for another action.
func decodePayload(action string, raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return letagents.Errorf(letagents.Invalid, "payload.%s must be a %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
	case err != nil && strings.HasPrefix(err.Error(), "json: unknown field "):
		return letagents.Errorf(letagents.Invalid, "payload field %s is not part of a %s payload",
			strings.TrimPrefix(err.Error(), "json: unknown field "), action)
	case err != nil:
		return letagents.Errorf(letagents.Invalid, "payload is not a %s payload: %v", action, err)
	}
	return nil
}

// registerIntent records a worker's intent to take one exact board action
// (201), or returns the same agent's identical pending one (200).
func (s *server) registerIntent(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.RegisterIntent
	if err := decode(w, r, &req); err != nil {
		return err
	}
	a, err := s.requireWorker(r, c.room, req.SessionCredentials)
	if err != nil {
		return err
	}
	if !slices.Contains(letagents.IntentActions, req.Action) {
		return letagents.Errorf(letagents.Invalid, "action must be one of %s", strings.Join(letagents.IntentActions, ", "))
	}
	payload, err := canonicalPayload(req.Action, req.Payload)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(req.Reason)
	if len(reason) > letagents.MaxIntentReasonBytes || strings.ContainsRune(reason, 0) {
		return letagents.Errorf(letagents.Invalid, "reason must be at most %d bytes of text", letagents.MaxIntentReasonBytes)
	}
	canon, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode intent payload: %w", err)
	}
	hash, err := letagents.PayloadHash(payload)
	if err != nil {
		return fmt.Errorf("hash intent payload: %w", err)
	}
	i, created, err := s.Store.CreateBoardIntent(r.Context(), store.NewBoardIntent{RoomID: c.room, Action: req.Action, Payload: canon,
		PayloadHash: hash, ProposerSessionID: a.ID, ProposerActorLabel: a.ActorLabel, ProposerAgentKey: a.AgentKey, Reason: reason}, s.now())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toIntent(i))
	return nil
}

// listIntents lists a room's intents, newest first: ?status filters,
// ?limit (default 50, at most 200) bounds.
func (s *server) listIntents(w http.ResponseWriter, r *http.Request, c call) error {
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !slices.Contains(letagents.IntentStatuses, status) {
		return letagents.Errorf(letagents.Invalid, "status must be one of %s", strings.Join(letagents.IntentStatuses, ", "))
	}
	limit := queryLimit(q, letagents.DefaultIntentPage, letagents.MaxIntentPage)
	if _, err := s.Store.Room(r.Context(), c.room); err != nil {
		return err
	}
	list, err := s.Store.BoardIntents(r.Context(), c.room, status, limit, s.now())
	if err != nil {
		return err
	}
	out := wire.BoardIntents{RoomID: c.room, Intents: make([]wire.BoardIntent, len(list))}
	for k, i := range list {
		out.Intents[k] = toIntent(i)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// approveIntent approves a pending intent (the admin gate) and answers,
// this once, the approval token the matching action must present.
func (s *server) approveIntent(w http.ResponseWriter, r *http.Request, c call) error {
	return s.decideIntent(w, r, c, true)
}

// denyIntent denies a pending intent (the admin gate).
func (s *server) denyIntent(w http.ResponseWriter, r *http.Request, c call) error {
	return s.decideIntent(w, r, c, false)
}

func (s *server) decideIntent(w http.ResponseWriter, r *http.Request, c call, approve bool) error {
	iid, ok := letagents.ParseWireID(letagents.IntentPrefix, c.ps["intent_id"])
	if !ok {
		return letagents.Errorf(letagents.NotFound, "Board intent not found")
	}
	d := store.BoardDecision{Approve: approve, DecidedBy: identity(r).Account.Login}
	var token string
	if approve {
		token = auth.NewToken()
		d.TokenHash = auth.HashToken(token)
	}
	i, err := s.Store.DecideBoardIntent(r.Context(), c.room, iid, d, s.now())
	if err != nil {
		return err
	}
	j := toIntent(i)
	j.ApprovalToken = token
	writeJSON(w, http.StatusOK, j)
	return nil
}

// boardSettings is a room's board settings.
func (s *server) boardSettings(w http.ResponseWriter, r *http.Request, c call) error {
	b, err := s.Store.BoardSettings(r.Context(), c.room)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSettings(b))
	return nil
}

// setBoardSettings changes a room's manager_mode, intent TTL and
// require_worker_sessions (the admin gate).
func (s *server) setBoardSettings(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.BoardSettingsUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	var err error
	var ttl time.Duration
	switch {
	case req.ManagerMode == "" && req.IntentTTLSeconds == nil && req.RequireWorkerSessions == nil:
		err = letagents.Errorf(letagents.Invalid, "give manager_mode, intent_ttl_seconds or require_worker_sessions to change")
	case req.ManagerMode != "" && !slices.Contains(letagents.ManagerModes, req.ManagerMode):
		err = letagents.Errorf(letagents.Invalid, "manager_mode must be one of %s", strings.Join(letagents.ManagerModes, ", "))
	case req.IntentTTLSeconds != nil:
		if n := *req.IntentTTLSeconds; n < int(letagents.MinIntentTTL/time.Second) || n > int(letagents.MaxIntentTTL/time.Second) {
			err = letagents.Errorf(letagents.Invalid, "intent_ttl_seconds must be from %d to %d",
				int(letagents.MinIntentTTL/time.Second), int(letagents.MaxIntentTTL/time.Second))
		}
		ttl = time.Duration(*req.IntentTTLSeconds) * time.Second
	}
	if err != nil {
		return err
	}
	b, err := s.Store.SetBoardSettings(r.Context(), c.room,
		store.BoardSettingsChange{ManagerMode: req.ManagerMode, IntentTTL: ttl, RequireWorkerSessions: req.RequireWorkerSessions}, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSettings(b))
	return nil
}

// boardGrant is what authorizes an agent's board action: the intent and
// its one-time approval token, when the room requires them.
type boardGrant struct {
	IntentID      string
	ApprovalToken string
}

// authorizeBoardAction lets an agent's board action (a task creation, a
// task change, a lease action) through the room's manager mode: with
// manager_mode intent_required it must carry an approved intent whose
// payload hash matches, which it consumes. Nothing is required of humans.
//
// payload is the action's payload as the letagents builders make it. In
// the other modes no intent is needed, but one that is named is checked
// and consumed all the same: a wrong one is an error, never ignored. The
// errors are Forbidden with a code (board_intent_required, _mismatch,
// _not_approved, _expired, _used), or Unauthorized (code
// board_approval_token_invalid) for a wrong or missing token.
func (s *server) authorizeBoardAction(r *http.Request, roomID string, agent letagents.AgentSession, action string, payload any, g boardGrant) error {
	if agent.ID == 0 {
		return nil // a human: managers govern agents only
	}
	if !slices.Contains(letagents.IntentActions, action) {
		return fmt.Errorf("authorize board action: unknown action %q", action)
	}
	g.IntentID, g.ApprovalToken = strings.TrimSpace(g.IntentID), strings.TrimSpace(g.ApprovalToken)
	if g.IntentID == "" && g.ApprovalToken == "" {
		b, err := s.Store.BoardSettings(r.Context(), roomID)
		if err != nil {
			return err
		}
		if b.ManagerMode != letagents.IntentRequired {
			return nil
		}
		return &letagents.Error{Kind: letagents.Forbidden, Code: letagents.CodeIntentRequired,
			Message: fmt.Sprintf("This room requires an approved board intent for %s: register one (POST /rooms/{room}/board-intents) "+
				"with this exact payload, have a room admin approve it, then repeat the action with board_intent_id and board_approval_token.", action)}
	}
	id, ok := letagents.ParseWireID(letagents.IntentPrefix, g.IntentID)
	if !ok {
		return &letagents.Error{Kind: letagents.Forbidden, Code: letagents.CodeIntentRequired,
			Message: "board_intent_id must name a board intent like bi_7 (with its board_approval_token)."}
	}
	if g.ApprovalToken == "" || len(g.ApprovalToken) > letagents.MaxTokenBytes {
		return &letagents.Error{Kind: letagents.Unauthorized, Code: letagents.CodeApprovalToken,
			Message: "board_approval_token is required with board_intent_id: the token the intent's approval answered."}
	}
	hash, err := letagents.PayloadHash(payload)
	if err != nil {
		return fmt.Errorf("authorize board action: hash payload: %w", err)
	}
	_, err = s.Store.UseBoardIntent(r.Context(), roomID, id, store.BoardIntentUse{TokenHash: auth.HashToken(g.ApprovalToken),
		Action: action, PayloadHash: hash, AgentKey: agent.AgentKey, SessionID: agent.ID}, s.now())
	return err
}
