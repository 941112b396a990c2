package api

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// sessionNameTries bounds the display names a registration tries.
const sessionNameTries = 25

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := letagents.FormatTime(t)
	return &s
}

func toSession(a letagents.AgentSession) wire.AgentSession {
	return wire.AgentSession{SessionID: letagents.WireID(letagents.AgentSessionPrefix, a.ID), RoomID: a.RoomID, SessionKind: a.Kind,
		Runtime: a.Runtime, ActorLabel: a.ActorLabel, AgentKey: a.AgentKey, AgentInstanceID: optText(a.InstanceID), DisplayName: a.DisplayName,
		OwnerAccountID: letagents.WireID(letagents.AccountPrefix, a.OwnerAccountID), OwnerLabel: a.OwnerLabel, IDELabel: a.IDELabel,
		RepoBranch: optText(a.RepoBranch), CreatedAt: letagents.FormatTime(a.CreatedAt), UpdatedAt: letagents.FormatTime(a.UpdatedAt),
		LastSeenAt: letagents.FormatTime(a.LastSeenAt), EndedAt: optTime(a.EndedAt)}
}

func toParticipant(a letagents.AgentSession, now time.Time) wire.Participant {
	return wire.Participant{SessionID: letagents.WireID(letagents.AgentSessionPrefix, a.ID), ActorLabel: a.ActorLabel,
		DisplayName: a.DisplayName, AgentKey: a.AgentKey, OwnerLabel: a.OwnerLabel, IDELabel: a.IDELabel, SessionKind: a.Kind,
		Runtime: a.Runtime, Status: a.Presence.Status, StatusText: optText(a.Presence.Text), StatusUpdatedAt: optTime(a.Presence.UpdatedAt),
		Connected: a.Reachable(now), LastSeenAt: letagents.FormatTime(a.LastSeenAt), NativeActivity: toNative(a.Native)}
}

// toNative is a session's latest native activity as the roster shows it;
// nil when its runtime reported none.
func toNative(n letagents.NativeActivity) *wire.NativeState {
	if n.At.IsZero() {
		return nil
	}
	return &wire.NativeState{Status: n.Status, Method: n.Method, Text: optText(n.Text), ObservedAt: letagents.FormatTime(n.At)}
}

// toRoomParticipant is p as the participants list shows it. An agent's
// activity: active while messages reach it (away when it says it is
// idle), offline otherwise, as the original derives it.
func toRoomParticipant(roomID string, p actors.Participant, now time.Time) wire.RoomParticipant {
	seen := letagents.FormatTime(p.LastSeenAt)
	j := wire.RoomParticipant{RoomID: roomID, ParticipantKey: p.Key, Kind: "agent", ActorLabel: optText(p.ActorLabel),
		GitHubLogin: optText(p.GitHubLogin), DisplayName: p.DisplayName, OwnerLabel: optText(p.OwnerLabel), IDELabel: optText(p.IDELabel),
		LastSeenAt: seen, LastRoomActivityAt: &seen, SourceFlags: []string{}, CreatedAt: letagents.FormatTime(p.FirstSeenAt), UpdatedAt: seen}
	if p.Human {
		j.Kind = "human"
		j.SourceFlags = append(j.SourceFlags, "messages")
		return j
	}
	state := "offline"
	if a := p.Session; a != nil {
		j.AgentKey, j.SessionKind, j.Runtime = &a.AgentKey, &a.Kind, &a.Runtime
		j.SessionID = optText(letagents.WireID(letagents.AgentSessionPrefix, a.ID))
		j.Status, j.StatusText, j.StatusUpdatedAt = &a.Presence.Status, optText(a.Presence.Text), optTime(a.Presence.UpdatedAt)
		j.NativeActivity = toNative(a.Native)
		j.Connected, j.ReachedBy = a.Reachable(now), a.Reach(now)
		if j.Connected {
			j.SourceFlags = append(j.SourceFlags, "delivery")
			j.LastLiveHeartbeatAt = &seen
		}
		if !a.LastHookAt.IsZero() {
			j.SourceFlags = append(j.SourceFlags, "hook")
		}
		if j.ReachedBy != "" {
			state = "active"
			if a.Presence.Status == letagents.PresenceIdle {
				state = "away"
			}
		}
		j.SourceFlags = append(j.SourceFlags, "presence")
	}
	if p.Posted {
		j.SourceFlags = append(j.SourceFlags, "messages")
	}
	j.ActivityState = &state
	return j
}

// sessionID is the id of a participant's live session, 0 for none.
func sessionID(p actors.Participant) int64 {
	if p.Session == nil {
		return 0
	}
	return p.Session.ID
}

func toDelivery(a letagents.AgentSession, now time.Time) wire.DeliverySession {
	return wire.DeliverySession{Connected: a.OpenConnections > 0, Reachable: a.Reachable(now), OpenConnections: a.OpenConnections,
		LastDisconnectedAt: optTime(a.LastDisconnectedAt)}
}

// registerSession registers an agent of the caller's in a room. The agent
// (actor_key) must be in the caller's agents directory; its display name
// is made unique among the room's live workers.
func (s *server) registerSession(w http.ResponseWriter, r *http.Request, c call) error {
	who := identity(r)
	if !who.SignedIn() {
		return who.NotSignedIn("Agent session registration requires authenticated owner context.")
	}
	var req wire.RegisterSession
	if err := decode(w, r, &req); err != nil {
		return err
	}
	n, err := s.newSession(r, who, c.room, req)
	if err != nil {
		return err
	}
	token := auth.NewToken()
	n.TokenHash = auth.HashToken(token)
	a, err := s.Store.CreateAgentSession(r.Context(), n, s.now())
	if err != nil {
		return err
	}
	j := toSession(a)
	j.SessionToken = token
	writeJSON(w, http.StatusCreated, j)
	return nil
}

// newSession checks a registration and fills in what the server decides.
func (s *server) newSession(r *http.Request, who auth.Identity, roomID string, req wire.RegisterSession) (store.NewAgentSession, error) {
	var n store.NewAgentSession
	key := strings.TrimSpace(req.ActorKey)
	if key == "" {
		return n, letagents.Errorf(letagents.Invalid, "actor_key is required")
	}
	agents, err := s.Store.AgentsOf(r.Context(), who.Account.ID)
	if err != nil {
		return n, err
	}
	i := slices.IndexFunc(agents, func(a letagents.Agent) bool { return a.CanonicalKey == key })
	if i < 0 {
		return n, letagents.Errorf(letagents.Forbidden, "actor_key is not owned by this account (register the agent with POST /agents first)")
	}
	agent := agents[i]
	// As the original reads them: a kind other than worker is a
	// controller; the IDE is ide_label, else the IDE of actor_label, else
	// Agent; the runtime, in lower case, defaults to the IDE.
	kind := letagents.SessionController
	if k := strings.ToLower(strings.TrimSpace(req.SessionKind)); k == "" || k == letagents.SessionWorker {
		kind = letagents.SessionWorker
	}
	var fields [5]string
	for i, f := range []struct{ name, value string }{{"display_name", req.DisplayName}, {"requested_base_display_name", req.RequestedBaseDisplayName},
		{"ide_label", req.IDELabel}, {"runtime", req.Runtime}, {"repo_branch", req.RepoBranch}} {
		if fields[i], err = letagents.Label(f.name, f.value, ""); err != nil {
			return n, err
		}
	}
	display, base, ide, runtime, branch := fields[0], fields[1], fields[2], fields[3], fields[4]
	if base == "" {
		base = display // none: a codename (actors.SessionNames), never the directory's name
	}
	if err := letagents.NotReserved("display_name", base); err != nil {
		return n, err
	}
	if ide == "" {
		_, _, ide = actors.ParseActorLabel(req.ActorLabel)
		if ide, err = letagents.Label("actor_label", ide, "Agent"); err != nil {
			return n, err
		}
	}
	if runtime == "" {
		runtime = ide
	}
	runtime = strings.ToLower(runtime)
	instance, err := letagents.Label("agent_instance_id", req.AgentInstanceID, "")
	if err != nil {
		return n, err
	}
	n.AgentSession = letagents.AgentSession{RoomID: roomID, Kind: kind, Runtime: runtime, AgentKey: key, InstanceID: instance,
		OwnerAccountID: who.Account.ID, OwnerLabel: agent.OwnerLabel, IDELabel: ide, RepoBranch: branch}
	n.Names = actors.SessionNames(base, key, ide, sessionNameTries)
	n.Label = func(name string) string { return actors.ActorLabel(name, agent.OwnerLabel, ide) }
	return n, nil
}

// disconnectSession ends a session: its own credentials, or a room admin.
func (s *server) disconnectSession(w http.ResponseWriter, r *http.Request, c call) error {
	sid, ok := letagents.ParseWireID(letagents.AgentSessionPrefix, c.ps["session_id"])
	if !ok {
		return letagents.Errorf(letagents.NotFound, "Agent session not found")
	}
	var creds wire.SessionCredentials
	if r.ContentLength != 0 {
		if err := decode(w, r, &creds); err != nil {
			return err
		}
	}
	self, err := s.agentSession(r, c.room, creds, false)
	if err != nil {
		return err
	}
	switch {
	case self != nil && self.ID != sid:
		return letagents.Errorf(letagents.Forbidden, "Worker sessions can only disconnect themselves.")
	case self == nil:
		_, role, err := s.roleIn(r, c)
		if err == nil {
			err = requireAdmin(identity(r), role)
		}
		if err != nil {
			return err
		}
	}
	ended, err := s.Store.EndAgentSession(r.Context(), c.room, sid, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Disconnected{RoomID: c.room, AgentSession: toSession(ended), DeliverySession: toDelivery(ended, s.now())})
	return nil
}

// postPresence records what a worker session says it is doing.
func (s *server) postPresence(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.PresenceUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	status := strings.ToLower(strings.TrimSpace(req.Status))
	if !slices.Contains(letagents.PresenceStatuses, status) {
		return letagents.Errorf(letagents.Invalid, "status must be one of %s", strings.Join(letagents.PresenceStatuses, ", "))
	}
	text, err := letagents.Label("status_text", req.StatusText, "")
	if err == nil && len(req.StatusText) > letagents.MaxPresenceText {
		err = letagents.Errorf(letagents.Invalid, "status_text is longer than %d bytes", letagents.MaxPresenceText)
	}
	if err != nil {
		return err
	}
	a, err := s.requireWorker(r, c.room, req.SessionCredentials)
	if err != nil {
		return err
	}
	now := s.now()
	a, err = s.Store.SetPresence(r.Context(), c.room, a.ID, letagents.Presence{Status: status, Text: text, UpdatedAt: now})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPresence(a, now))
	return nil
}

// toPresence is a as the live roster shows it.
func toPresence(a letagents.AgentSession, now time.Time) wire.Presence {
	j := wire.Presence{RoomID: a.RoomID, ActorLabel: a.ActorLabel, AgentKey: a.AgentKey, AgentInstanceID: optText(a.InstanceID),
		AgentSessionID: letagents.WireID(letagents.AgentSessionPrefix, a.ID), SessionKind: a.Kind, Runtime: a.Runtime,
		DisplayName: a.DisplayName, OwnerLabel: a.OwnerLabel, IDELabel: a.IDELabel, Status: cmp.Or(a.Presence.Status, "idle"),
		StatusText: optText(a.Presence.Text), LastHeartbeatAt: letagents.FormatTime(a.LastSeenAt),
		CreatedAt: letagents.FormatTime(a.CreatedAt), UpdatedAt: letagents.FormatTime(a.UpdatedAt), Freshness: "stale",
		ActivityState: a.ActivityState(now), SourceFlags: []string{}, ReachedBy: a.Reach(now)}
	if j.ReachedBy != "" {
		j.Freshness = "active"
	}
	if a.Delivered() {
		j.SourceFlags = append(j.SourceFlags, "delivery")
	}
	if !a.LastHookAt.IsZero() {
		j.SourceFlags = append(j.SourceFlags, "hook")
	}
	if !a.Presence.UpdatedAt.IsZero() {
		j.SourceFlags = append(j.SourceFlags, "presence")
	}
	j.NativeActivity = toNative(a.Native)
	return j
}

// roster lists the live workers of the room, which must exist.
func (s *server) roster(r *http.Request, c call) ([]wire.Participant, error) {
	if _, err := s.Store.Room(r.Context(), c.room); err != nil {
		return nil, err
	}
	now := s.now()
	list, err := s.Store.AgentSessions(r.Context(), c.room, letagents.SessionWorker, now)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Participant, len(list))
	for i, a := range list {
		out[i] = toParticipant(a, now)
	}
	return out, nil
}

// participants lists who the room has seen (actors.Roster): its live
// workers, and the people and agents among the senders of its recent
// messages; ?limit bounds the list.
func (s *server) participants(w http.ResponseWriter, r *http.Request, c call) error {
	limit := queryLimit(r.URL.Query(), letagents.DefaultParticipantPage, letagents.MaxParticipantPage)
	// As many recent messages as the original reads: four per participant
	// asked for, 100 to 200.
	page, err := s.Store.Messages(r.Context(), c.room, store.MessageQuery{Before: store.BeforeLatest, Limit: min(max(4*limit, 100), 200)})
	if err != nil {
		return err
	}
	now := s.now()
	sessions, err := s.Store.AgentSessions(r.Context(), c.room, letagents.SessionWorker, now)
	if err != nil {
		return err
	}
	roster := actors.Roster(sessions, page.Messages)
	roster = roster[:min(len(roster), limit)]
	var ids []int64
	for _, p := range roster {
		if id := sessionID(p); id != 0 {
			ids = append(ids, id)
		}
	}
	latencies, err := s.Store.DeliveryLatencies(r.Context(), ids, now.Add(-letagents.LatencyWindow))
	if err != nil {
		return err
	}
	j := wire.Participants{RoomID: c.room, Participants: make([]wire.RoomParticipant, 0, len(roster))}
	for _, p := range roster {
		rp := toRoomParticipant(c.room, p, now)
		if l, ok := latencies[sessionID(p)]; ok {
			rp.DeliveryLatency = &wire.DeliveryLatency{Count: l.Count, P50MS: l.P50.Milliseconds(), P99MS: l.P99.Milliseconds()}
		}
		j.Participants = append(j.Participants, rp)
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// presence is the room's live roster (letagents.AgentSession.OnLiveRoster):
// the workers messages reach first (live or by their hooks), then those
// reached most recently; ?limit bounds it.
func (s *server) presence(w http.ResponseWriter, r *http.Request, c call) error {
	if _, err := s.Store.Room(r.Context(), c.room); err != nil {
		return err
	}
	now := s.now()
	list, err := s.Store.AgentSessions(r.Context(), c.room, letagents.SessionWorker, now)
	if err != nil {
		return err
	}
	list = slices.DeleteFunc(list, func(a letagents.AgentSession) bool { return !a.OnLiveRoster(now) })
	slices.SortStableFunc(list, func(a, b letagents.AgentSession) int {
		if ra, rb := a.Reach(now) != "", b.Reach(now) != ""; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Or(b.LastSeenAt.Compare(a.LastSeenAt), cmp.Compare(a.DisplayName, b.DisplayName))
	})
	limit := queryLimit(r.URL.Query(), letagents.DefaultPresencePage, letagents.MaxPresencePage)
	j := wire.PresenceList{RoomID: c.room, Presence: []wire.Presence{}}
	offline := 0
	for _, a := range list {
		if len(j.Presence) == limit {
			break
		}
		if a.Reach(now) == "" {
			if offline == letagents.MaxRecentlyOffline {
				break
			}
			offline++
		}
		j.Presence = append(j.Presence, toPresence(a, now))
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// nativeActivity records that a worker's runtime is busy outside the room
// (a Codex turn, say): the liveness sweeper does not call it offline then.
func (s *server) nativeActivity(w http.ResponseWriter, r *http.Request, c call) error {
	var req wire.NativeActivity
	if err := decode(w, r, &req); err != nil {
		return err
	}
	a, err := s.requireWorker(r, c.room, req.SessionCredentials)
	if err != nil {
		return err
	}
	if c.ps["session_id"] != letagents.WireID(letagents.AgentSessionPrefix, a.ID) {
		return letagents.Errorf(letagents.Forbidden, "Workers can only report their own activity.")
	}
	now := s.now()
	at, err := time.Parse(time.RFC3339Nano, req.ObservedAt)
	if err != nil || req.Sequence < 1 || strings.TrimSpace(req.Method) == "" || len(req.Method) > 160 || len(req.Status) > 32 ||
		at.Before(now.Add(-10*time.Minute)) || at.After(now.Add(5*time.Second)) {
		return letagents.Errorf(letagents.Invalid, "observed_at (within the last 10 minutes), positive integer sequence, and native method are required.")
	}
	if len(req.Text) > letagents.MaxNativeText {
		return letagents.Errorf(letagents.Invalid, "text is at most %d bytes.", letagents.MaxNativeText)
	}
	native := letagents.NativeActivity{At: at, Status: cmp.Or(req.Status, "working"), Method: req.Method, Text: strings.TrimSpace(req.Text)}
	if err := s.Store.RecordNativeActivity(r.Context(), c.room, a.ID, native); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"room_id": c.room, "axis": "execution_activity", "agent_session_id": letagents.WireID(letagents.AgentSessionPrefix, a.ID),
		"observed_at": letagents.FormatTime(at), "sequence": req.Sequence})
	return nil
}

// agentSession verifies the session credentials a request carries (in the
// body, else in the headers): nil when it carries none. Credentials count
// only with the owner's token (or for the local owner), for a live session
// of this room that the owner registered. worker refuses controller
// sessions. Without the owner's credential the refusal is the caller's
// (NOT_AUTHENTICATED, TOKEN_INVALID), never AGENT_SESSION_INVALID: the
// session may be fine, and clients forget a session on that code.
func (s *server) agentSession(r *http.Request, roomID string, creds wire.SessionCredentials, worker bool) (*letagents.AgentSession, error) {
	creds, given := sessionCredentials(r, creds)
	if !given {
		return nil, nil
	}
	who := identity(r)
	if err := precheckSession(who, creds); err != nil {
		return nil, err
	}
	a, err := s.Store.AgentSessionByToken(r.Context(), auth.HashToken(creds.AgentSessionToken), s.now())
	switch {
	case letagents.IsKind(err, letagents.Unauthorized):
		return nil, invalidSession()
	case err != nil:
		return nil, err
	}
	return checkSession(who, creds, &a, roomID, worker)
}

// sessionCredentials are a request's session credentials: the body's
// (creds), else its headers'; given is false when it has none.
func sessionCredentials(r *http.Request, creds wire.SessionCredentials) (_ wire.SessionCredentials, given bool) {
	if creds.AgentSessionID == "" && creds.AgentSessionToken == "" {
		creds.AgentSessionID, creds.AgentSessionToken = r.Header.Get(wire.SessionIDHeader), r.Header.Get(wire.SessionTokenHeader)
	}
	return creds, creds.AgentSessionID != "" || creds.AgentSessionToken != ""
}

// precheckSession refuses, before any lookup, session credentials that
// can sign no session in for who.
func precheckSession(who auth.Identity, creds wire.SessionCredentials) error {
	if !who.AgentOwner() {
		return who.NotSignedIn("Agent session credentials count only with their owner's token (Authorization: Bearer); sign in again.")
	}
	if creds.AgentSessionID == "" || creds.AgentSessionToken == "" || len(creds.AgentSessionToken) > letagents.MaxTokenBytes {
		return invalidSession()
	}
	return nil
}

func invalidSession() error {
	return &letagents.Error{Kind: letagents.Unauthorized, Code: letagents.CodeAgentSessionInvalid, Message: "Invalid agent session credentials."}
}

// checkSession judges the session a's token found (nil: none) for who in
// the room, with creds: the id must be a's and a its owner's, in the room,
// live, and a worker's when worker.
func checkSession(who auth.Identity, creds wire.SessionCredentials, a *letagents.AgentSession, roomID string, worker bool) (*letagents.AgentSession, error) {
	switch {
	case a == nil, creds.AgentSessionID != letagents.WireID(letagents.AgentSessionPrefix, a.ID) || a.OwnerAccountID != who.Account.ID:
		return nil, invalidSession()
	case a.RoomID != roomID:
		return nil, letagents.Errorf(letagents.Forbidden, "This agent session belongs to another room.")
	case !a.Live():
		return nil, &letagents.Error{Kind: letagents.Unauthorized, Code: letagents.CodeAgentSessionEnded,
			Message: "This agent session has ended; register a new one (register_agent_session)."}
	case worker && a.Kind != letagents.SessionWorker:
		return nil, &letagents.Error{Kind: letagents.Forbidden, Code: letagents.CodeWorkerSessionRequired, Message: "Worker session is required for agent write actions."}
	}
	return a, nil
}

// requireWorker is agentSession for actions only a worker may take.
func (s *server) requireWorker(r *http.Request, roomID string, creds wire.SessionCredentials) (letagents.AgentSession, error) {
	a, err := s.agentSession(r, roomID, creds, true)
	if err != nil {
		return letagents.AgentSession{}, err
	}
	if a == nil {
		return letagents.AgentSession{}, letagents.WorkerSessionRequired()
	}
	return *a, nil
}
