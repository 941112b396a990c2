package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

// The hook the task board calls is tested here, inside the package, so
// that it does not wait for the task routes: intents are registered and
// decided through the same store calls and payload checks the intent
// routes use (those routes have their tests over HTTP).

type hookClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *hookClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *hookClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// hookEnv is a server on a private schema with a room and two worker
// sessions of different agents of one owner.
type hookEnv struct {
	db         *pgtest.DB
	s          *server
	clock      *hookClock
	room       string
	ann, other letagents.AgentSession
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	st := store.New(db.Pool)
	clock := &hookClock{now: time.Now().Truncate(time.Millisecond)}
	h := &hookEnv{db: db, s: &server{Deps: Deps{Store: st, Now: clock.Now, Logger: slog.New(slog.DiscardHandler)}}, clock: clock, room: "hooks"}
	if _, _, err := st.EnsureRoom(ctx, h.room); err != nil {
		t.Fatal(err)
	}
	acct, _, err := st.SignIn(ctx, store.SignIn{Account: letagents.Account{Provider: "github", ProviderUserID: "1", Login: "ann", DisplayName: "Ann"},
		GitHubToken: []byte("sealed"), OwnerTokenHash: auth.HashToken(auth.NewToken()), Now: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	session := func(key, name string) letagents.AgentSession {
		t.Helper()
		a, err := st.CreateAgentSession(ctx, store.NewAgentSession{
			AgentSession: letagents.AgentSession{RoomID: h.room, Kind: letagents.SessionWorker, Runtime: "codex", AgentKey: key,
				OwnerAccountID: acct.ID, OwnerLabel: "Ann", IDELabel: "Codex"},
			TokenHash: auth.HashToken(auth.NewToken()), Names: []string{name},
			Label: func(n string) string { return n + " | Ann's agent | Codex" }}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	h.ann, h.other = session("ann/builder", "Builder"), session("ann/reviewer", "Reviewer")
	return h
}

func (h *hookEnv) setMode(t *testing.T, mode string) {
	t.Helper()
	if _, err := h.s.Store.SetBoardSettings(context.Background(), h.room, store.BoardSettingsChange{ManagerMode: mode}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
}

// propose registers an intent as POST …/board-intents does, from the
// payload's JSON as a client sends it.
func (h *hookEnv) propose(t *testing.T, by letagents.AgentSession, action, rawPayload string) letagents.BoardIntent {
	t.Helper()
	p, err := canonicalPayload(action, json.RawMessage(rawPayload))
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := json.Marshal(p)
	hash, _ := letagents.PayloadHash(p)
	i, _, err := h.s.Store.CreateBoardIntent(context.Background(), store.NewBoardIntent{RoomID: h.room, Action: action, Payload: canon,
		PayloadHash: hash, ProposerSessionID: by.ID, ProposerActorLabel: by.ActorLabel, ProposerAgentKey: by.AgentKey}, h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// approve approves an intent as POST …/approve does and returns the grant
// its answer makes possible.
func (h *hookEnv) approve(t *testing.T, i letagents.BoardIntent) boardGrant {
	t.Helper()
	token := auth.NewToken()
	if _, err := h.s.Store.DecideBoardIntent(context.Background(), h.room, i.ID,
		store.BoardDecision{Approve: true, DecidedBy: "ann", TokenHash: auth.HashToken(token)}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return boardGrant{IntentID: letagents.WireID(letagents.IntentPrefix, i.ID), ApprovalToken: token}
}

func (h *hookEnv) authorize(agent letagents.AgentSession, action string, payload any, g boardGrant) error {
	r := httptest.NewRequest(http.MethodPost, "/rooms/hooks/tasks", nil)
	return h.s.authorizeBoardAction(r, h.room, agent, action, payload, g)
}

// refusal checks err is a client error of the code and reason.
func refusal(t *testing.T, what string, err error, code letagents.ErrorKind, reason string) {
	t.Helper()
	var e *letagents.Error
	if !errors.As(err, &e) || e.Kind != code || e.Code != reason {
		t.Errorf("%s: %v, want %s with code %s", what, err, code, reason)
	}
}

func TestAuthorizeBoardActionModes(t *testing.T) {
	t.Parallel()
	h := newHookEnv(t)
	create := letagents.NewTaskCreatePayload("Fix the build", "", "")
	for _, mode := range []string{"", letagents.ManagerOff, letagents.ManagerOptional} {
		if mode != "" {
			h.setMode(t, mode)
		}
		if err := h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{}); err != nil {
			t.Errorf("mode %q without an intent: %v, want allowed", mode, err)
		}
	}
	h.setMode(t, letagents.IntentRequired)
	refusal(t, "intent_required without an intent", h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{}),
		letagents.Forbidden, letagents.CodeIntentRequired)
	if err := h.authorize(letagents.AgentSession{}, letagents.IntentTaskCreate, create, boardGrant{}); err != nil {
		t.Errorf("a human under intent_required: %v, want allowed", err)
	}
	if err := h.authorize(h.ann, "task_delete", create, boardGrant{}); err == nil || letagents.IsKind(err, letagents.Forbidden) {
		t.Errorf("an unknown action: %v, want an internal error (a bug in the caller)", err)
	}
}

func TestAuthorizeBoardActionConsumesOnce(t *testing.T) {
	t.Parallel()
	h := newHookEnv(t)
	h.setMode(t, letagents.IntentRequired)
	// The client's JSON, untrimmed and with nulls left out, matches the
	// payload the action builds.
	i := h.propose(t, h.ann, letagents.IntentTaskCreate, `{"title": "  Fix the build "}`)
	g := h.approve(t, i)
	create := letagents.NewTaskCreatePayload("Fix the build", "", "")

	changed := letagents.NewTaskCreatePayload("Fix the build today", "", "")
	refusal(t, "a changed payload", h.authorize(h.ann, letagents.IntentTaskCreate, changed, g), letagents.Forbidden, letagents.CodeIntentMismatch)
	refusal(t, "another action", h.authorize(h.ann, letagents.IntentTaskUpdate, create, g), letagents.Forbidden, letagents.CodeIntentMismatch)
	refusal(t, "another agent", h.authorize(h.other, letagents.IntentTaskCreate, create, g), letagents.Forbidden, letagents.CodeIntentMismatch)
	refusal(t, "a wrong token", h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{IntentID: g.IntentID, ApprovalToken: auth.NewToken()}),
		letagents.Unauthorized, letagents.CodeApprovalToken)
	refusal(t, "no token", h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{IntentID: g.IntentID}),
		letagents.Unauthorized, letagents.CodeApprovalToken)
	refusal(t, "a token without an intent", h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{ApprovalToken: g.ApprovalToken}),
		letagents.Forbidden, letagents.CodeIntentRequired)
	refusal(t, "a bad intent id", h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{IntentID: "intent-1", ApprovalToken: g.ApprovalToken}),
		letagents.Forbidden, letagents.CodeIntentRequired)
	refusal(t, "a missing intent", h.authorize(h.ann, letagents.IntentTaskCreate, create, boardGrant{IntentID: "bi_999", ApprovalToken: g.ApprovalToken}),
		letagents.Forbidden, letagents.CodeIntentRequired)

	// None of those spent it: the matching action uses it, once.
	if err := h.authorize(h.ann, letagents.IntentTaskCreate, create, g); err != nil {
		t.Fatalf("the approved action: %v", err)
	}
	refusal(t, "a second use", h.authorize(h.ann, letagents.IntentTaskCreate, create, g), letagents.Forbidden, letagents.CodeIntentUsed)
	got, err := h.s.Store.BoardIntent(context.Background(), h.room, i.ID, h.clock.Now())
	if err != nil || got.Status != letagents.IntentUsed || !got.UsedAt.Equal(h.clock.Now()) {
		t.Errorf("after use: %+v, %v; want used now", got, err)
	}
}

func TestAuthorizeBoardActionRefusesUndecidedDeniedAndExpired(t *testing.T) {
	t.Parallel()
	h := newHookEnv(t)
	h.setMode(t, letagents.IntentRequired)
	claim := letagents.NewTaskMutationPayload("task_1", "assigned", h.ann.ActorLabel, h.ann.AgentKey, "")
	raw, _ := json.Marshal(claim)

	pending := h.propose(t, h.ann, letagents.IntentTaskClaim, string(raw))
	pg := boardGrant{IntentID: letagents.WireID(letagents.IntentPrefix, pending.ID), ApprovalToken: auth.NewToken()}
	refusal(t, "a pending intent", h.authorize(h.ann, letagents.IntentTaskClaim, claim, pg), letagents.Forbidden, letagents.CodeIntentNotApproved)

	if _, err := h.s.Store.DecideBoardIntent(context.Background(), h.room, pending.ID, store.BoardDecision{DecidedBy: "ann"}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	refusal(t, "a denied intent", h.authorize(h.ann, letagents.IntentTaskClaim, claim, pg), letagents.Forbidden, letagents.CodeIntentNotApproved)

	release := letagents.NewLeaseActionPayload("task_1", "release", "", "", "")
	g := h.approve(t, h.propose(t, h.ann, letagents.IntentLeaseAction, `{"task_id": "task_1", "action": "release"}`))
	h.clock.Advance(letagents.DefaultIntentTTL + time.Second)
	refusal(t, "an expired approval", h.authorize(h.ann, letagents.IntentLeaseAction, release, g), letagents.Forbidden, letagents.CodeIntentExpired)
}

// Without intent_required a named intent is still checked and consumed.
func TestAuthorizeBoardActionOptionalGrant(t *testing.T) {
	t.Parallel()
	h := newHookEnv(t)
	update := letagents.NewTaskMutationPayload("task_2", "in_progress", "", "", "")
	g := h.approve(t, h.propose(t, h.ann, letagents.IntentTaskUpdate, `{"task_id": "task_2", "status": "in_progress", "pr_url": ""}`))
	refusal(t, "a wrong token under manager_optional", h.authorize(h.ann, letagents.IntentTaskUpdate, update,
		boardGrant{IntentID: g.IntentID, ApprovalToken: "nope"}), letagents.Unauthorized, letagents.CodeApprovalToken)
	if err := h.authorize(h.ann, letagents.IntentTaskUpdate, update, g); err != nil {
		t.Fatalf("a right grant under manager_optional: %v", err)
	}
	refusal(t, "reusing it", h.authorize(h.ann, letagents.IntentTaskUpdate, update, g), letagents.Forbidden, letagents.CodeIntentUsed)
	if err := h.authorize(h.ann, letagents.IntentTaskUpdate, update, boardGrant{}); err != nil {
		t.Errorf("no grant under manager_optional: %v", err)
	}
}

// 20 actions race for one approval: exactly one gets through.
func TestAuthorizeBoardActionRace(t *testing.T) {
	t.Parallel()
	h := newHookEnv(t)
	h.setMode(t, letagents.IntentRequired)
	closeTask := letagents.NewTaskMutationPayload("task_3", "done", "", "", "")
	g := h.approve(t, h.propose(t, h.ann, letagents.IntentTaskClose, `{"task_id": "task_3", "status": "done"}`))
	const racers = 20
	errs := make([]error, racers)
	release := h.db.HoldLock(t, `SELECT 1 FROM board_intents WHERE room_id = $1 FOR UPDATE`, h.room)
	h.db.Race(t, racers, release, func(i int) {
		errs[i] = h.authorize(h.ann, letagents.IntentTaskClose, closeTask, g)
	})
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		refusal(t, "a losing racer", err, letagents.Forbidden, letagents.CodeIntentUsed)
	}
	if wins != 1 {
		t.Errorf("%d of %d racers used the approval, want exactly 1", wins, racers)
	}
}

// The payload the intent routes store hashes as the builders' payload
// does, however the client spelled it.
func TestCanonicalPayloadMatchesBuilders(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		action, raw string
		built       any
	}{
		{letagents.IntentTaskCreate, `{"title": " A ", "description": "  ", "source_message_id": null}`, letagents.NewTaskCreatePayload("A", "", "")},
		{letagents.IntentTaskCreate, `{"source_message_id": "msg_4", "description": "why", "title": "A"}`, letagents.NewTaskCreatePayload("A", "why", "msg_4")},
		{letagents.IntentTaskClaim, `{"task_id": "task_9", "status": "assigned", "assignee": "B | Ann's agent | Codex", "assignee_agent_key": "ann/b"}`,
			letagents.NewTaskMutationPayload("task_9", "assigned", "B | Ann's agent | Codex", "ann/b", "")},
		{letagents.IntentTaskClose, `{"task_id": "task_9", "status": "done", "assignee": null, "pr_url": ""}`,
			letagents.NewTaskMutationPayload("task_9", "done", "", "", "")},
		{letagents.IntentLeaseAction, `{"task_id": "task_9", "action": "handoff", "target_actor_key": "ann/c", "target_agent_session_id": "as_3"}`,
			letagents.NewLeaseActionPayload("task_9", "handoff", "", "ann/c", "as_3")},
	} {
		p, err := canonicalPayload(c.action, json.RawMessage(c.raw))
		if err != nil {
			t.Errorf("%s %s: %v", c.action, c.raw, err)
			continue
		}
		got, _ := letagents.PayloadHash(p)
		want, _ := letagents.PayloadHash(c.built)
		if got != want {
			gj, _ := json.Marshal(p)
			wj, _ := json.Marshal(c.built)
			t.Errorf("%s %s: canonical %s, builder %s", c.action, c.raw, gj, wj)
		}
	}
}
