package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
)

func reasonOf(err error) string {
	var e *letagents.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// newIntent is a task_create intent of agent for title, in room.
func newIntent(t *testing.T, room, agent, action string, payload any) store.NewBoardIntent {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	h, err := letagents.PayloadHash(payload)
	if err != nil {
		t.Fatal(err)
	}
	return store.NewBoardIntent{RoomID: room, Action: action, Payload: b, PayloadHash: h, ProposerActorLabel: agent + " | agent",
		ProposerAgentKey: agent}
}

func tokenHash(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func TestBoardSettings(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "settings")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.BoardSettings(ctx, room.ID)
	if err != nil || b.ManagerMode != letagents.ManagerOptional || b.IntentTTL != letagents.DefaultIntentTTL || b.RequireWorkerSessions {
		t.Fatalf("defaults = %+v, %v; want manager_optional, the default TTL and no worker sessions required in a named room", b, err)
	}
	now := time.Now()
	set := func(c store.BoardSettingsChange) letagents.BoardSettings {
		t.Helper()
		b, err := s.SetBoardSettings(ctx, room.ID, c, now)
		if err != nil {
			t.Fatalf("set %+v: %v", c, err)
		}
		return b
	}
	yes, no := true, false
	tests := []struct {
		name   string
		change store.BoardSettingsChange
		want   letagents.BoardSettings
	}{
		{"mode", store.BoardSettingsChange{ManagerMode: letagents.IntentRequired},
			letagents.BoardSettings{RoomID: room.ID, ManagerMode: letagents.IntentRequired, IntentTTL: letagents.DefaultIntentTTL}},
		{"TTL only keeps the mode", store.BoardSettingsChange{IntentTTL: 5 * time.Minute},
			letagents.BoardSettings{RoomID: room.ID, ManagerMode: letagents.IntentRequired, IntentTTL: 5 * time.Minute}},
		{"worker sessions on", store.BoardSettingsChange{RequireWorkerSessions: &yes},
			letagents.BoardSettings{RoomID: room.ID, ManagerMode: letagents.IntentRequired, IntentTTL: 5 * time.Minute, RequireWorkerSessions: true}},
		{"mode only keeps them", store.BoardSettingsChange{ManagerMode: letagents.ManagerOff},
			letagents.BoardSettings{RoomID: room.ID, ManagerMode: letagents.ManagerOff, IntentTTL: 5 * time.Minute, RequireWorkerSessions: true}},
		{"worker sessions off", store.BoardSettingsChange{RequireWorkerSessions: &no},
			letagents.BoardSettings{RoomID: room.ID, ManagerMode: letagents.ManagerOff, IntentTTL: 5 * time.Minute}},
	}
	for _, tt := range tests {
		if got := set(tt.change); got != tt.want {
			t.Errorf("%s: set = %+v, want %+v", tt.name, got, tt.want)
		}
		if got, err := s.BoardSettings(ctx, room.ID); err != nil || got != tt.want {
			t.Errorf("%s: read back = %+v, %v, want %+v", tt.name, got, err, tt.want)
		}
	}
	// A repo room asks for worker sessions until its admin says otherwise.
	repo, _, err := s.EnsureRoom(ctx, "github.com/acme/settings")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.BoardSettings(ctx, repo.ID); err != nil || !b.RequireWorkerSessions {
		t.Errorf("repo room defaults = %+v, %v; want worker sessions required", b, err)
	}
	if b, err := s.SetBoardSettings(ctx, repo.ID, store.BoardSettingsChange{ManagerMode: letagents.ManagerOff}, now); err != nil || !b.RequireWorkerSessions {
		t.Errorf("repo room after a mode change = %+v, %v; want worker sessions still required", b, err)
	}
	if b, err := s.SetBoardSettings(ctx, repo.ID, store.BoardSettingsChange{RequireWorkerSessions: &no}, now); err != nil || b.RequireWorkerSessions {
		t.Errorf("repo room turned off = %+v, %v", b, err)
	}

	if _, err := s.SetBoardSettings(ctx, room.ID, store.BoardSettingsChange{ManagerMode: "anarchy"}, now); codeOf(err) != letagents.Invalid {
		t.Errorf("bad mode: %v, want invalid", err)
	}
	if _, err := s.BoardSettings(ctx, "nowhere"); codeOf(err) != letagents.NotFound {
		t.Errorf("settings of a missing room: %v, want not found", err)
	}
	if _, err := s.SetBoardSettings(ctx, "nowhere", store.BoardSettingsChange{ManagerMode: letagents.ManagerOff}, now); codeOf(err) != letagents.NotFound {
		t.Errorf("setting a missing room: %v, want not found", err)
	}
}

func TestBoardIntentLifecycle(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "intents")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	create := letagents.NewTaskCreatePayload("Fix the build", "", "")
	n := newIntent(t, room.ID, "ann/builder", letagents.IntentTaskCreate, create)

	first, created, err := s.CreateBoardIntent(ctx, n, now)
	if err != nil || !created {
		t.Fatalf("create = %v, created %v", err, created)
	}
	if first.Status != letagents.IntentPending || !first.ExpiresAt.Equal(now.Add(letagents.DefaultIntentTTL)) ||
		string(first.Payload) != `{"title":"Fix the build","description":null,"source_message_id":null}` {
		t.Errorf("created intent = %+v", first)
	}
	again, created, err := s.CreateBoardIntent(ctx, n, now.Add(time.Minute))
	if err != nil || created || again.ID != first.ID {
		t.Errorf("the same intent again = %d (created %v, %v), want the pending %d", again.ID, created, err, first.ID)
	}
	other := n
	other.ProposerAgentKey = "bob/helper"
	if o, created, err := s.CreateBoardIntent(ctx, other, now); err != nil || !created || o.ID == first.ID {
		t.Errorf("another agent's identical intent = %d (created %v, %v), want a new one", o.ID, created, err)
	}

	// Approve once: the token's hash is kept and the clock restarts.
	later := now.Add(10 * time.Minute)
	approved, err := s.DecideBoardIntent(ctx, room.ID, first.ID, store.BoardDecision{Approve: true, DecidedBy: "ann", TokenHash: tokenHash("t1")}, later)
	if err != nil || approved.Status != letagents.IntentApproved || approved.DecidedBy != "ann" || !approved.DecidedAt.Equal(later) ||
		!approved.ExpiresAt.Equal(later.Add(letagents.DefaultIntentTTL)) {
		t.Fatalf("approve = %+v, %v", approved, err)
	}
	_, err = s.DecideBoardIntent(ctx, room.ID, first.ID, store.BoardDecision{Approve: true, DecidedBy: "ann", TokenHash: tokenHash("t2")}, later)
	if codeOf(err) != letagents.Conflict || reasonOf(err) != letagents.CodeIntentNotPending {
		t.Errorf("approving twice: %v, want conflict %s", err, letagents.CodeIntentNotPending)
	}
	if _, err := s.DecideBoardIntent(ctx, room.ID, 999, store.BoardDecision{}, later); codeOf(err) != letagents.NotFound {
		t.Errorf("deciding a missing intent: %v, want not found", err)
	}
	if _, err := s.DecideBoardIntent(ctx, "elsewhere", first.ID, store.BoardDecision{}, later); codeOf(err) != letagents.NotFound {
		t.Errorf("deciding another room's intent: %v, want not found", err)
	}

	// With the intent approved, the same agent may ask again: a new one.
	if n2, created, err := s.CreateBoardIntent(ctx, n, later); err != nil || !created || n2.ID == first.ID {
		t.Errorf("after approval, the same intent = %d (created %v, %v), want a new pending one", n2.ID, created, err)
	}

	use := store.BoardIntentUse{TokenHash: tokenHash("t1"), Action: letagents.IntentTaskCreate, PayloadHash: n.PayloadHash, AgentKey: "ann/builder"}
	changed := letagents.NewTaskCreatePayload("Fix the build!", "", "")
	changedHash, _ := letagents.PayloadHash(changed)
	for _, c := range []struct {
		name   string
		edit   func(u *store.BoardIntentUse)
		code   letagents.ErrorKind
		reason string
	}{
		{"wrong token", func(u *store.BoardIntentUse) { u.TokenHash = tokenHash("nope") }, letagents.Unauthorized, letagents.CodeApprovalToken},
		{"other action", func(u *store.BoardIntentUse) { u.Action = letagents.IntentTaskClaim }, letagents.Forbidden, letagents.CodeIntentMismatch},
		{"changed payload", func(u *store.BoardIntentUse) { u.PayloadHash = changedHash }, letagents.Forbidden, letagents.CodeIntentMismatch},
		{"other agent", func(u *store.BoardIntentUse) { u.AgentKey = "bob/helper" }, letagents.Forbidden, letagents.CodeIntentMismatch},
	} {
		u := use
		c.edit(&u)
		if _, err := s.UseBoardIntent(ctx, room.ID, first.ID, u, later); codeOf(err) != c.code || reasonOf(err) != c.reason {
			t.Errorf("%s: %v, want %s %s", c.name, err, c.code, c.reason)
		}
	}
	if _, err := s.UseBoardIntent(ctx, "elsewhere", first.ID, use, later); reasonOf(err) != letagents.CodeIntentRequired {
		t.Errorf("using it in another room: %v, want %s", err, letagents.CodeIntentRequired)
	}
	used, err := s.UseBoardIntent(ctx, room.ID, first.ID, use, later)
	if err != nil || used.Status != letagents.IntentUsed || !used.UsedAt.Equal(later) {
		t.Fatalf("use = %+v, %v", used, err)
	}
	if _, err := s.UseBoardIntent(ctx, room.ID, first.ID, use, later); codeOf(err) != letagents.Forbidden || reasonOf(err) != letagents.CodeIntentUsed {
		t.Errorf("second use: %v, want %s", err, letagents.CodeIntentUsed)
	}
	if _, err := s.DecideBoardIntent(ctx, room.ID, first.ID, store.BoardDecision{Approve: false, DecidedBy: "ann"}, later); reasonOf(err) != letagents.CodeIntentNotPending {
		t.Errorf("denying a used intent: %v, want %s", err, letagents.CodeIntentNotPending)
	}
}

func TestBoardIntentRefusals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "refusals")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	intent := func(title string) (letagents.BoardIntent, store.BoardIntentUse) {
		t.Helper()
		n := newIntent(t, room.ID, "ann/builder", letagents.IntentTaskCreate, letagents.NewTaskCreatePayload(title, "", ""))
		i, _, err := s.CreateBoardIntent(ctx, n, now)
		if err != nil {
			t.Fatal(err)
		}
		return i, store.BoardIntentUse{TokenHash: tokenHash(title), Action: n.Action, PayloadHash: n.PayloadHash, AgentKey: n.ProposerAgentKey}
	}
	pending, usePending := intent("pending")
	if _, err := s.UseBoardIntent(ctx, room.ID, pending.ID, usePending, now); reasonOf(err) != letagents.CodeIntentNotApproved {
		t.Errorf("using a pending intent: %v, want %s", err, letagents.CodeIntentNotApproved)
	}
	denied, useDenied := intent("denied")
	d, err := s.DecideBoardIntent(ctx, room.ID, denied.ID, store.BoardDecision{DecidedBy: "ann"}, now)
	if err != nil || d.Status != letagents.IntentDenied {
		t.Fatalf("deny = %+v, %v", d, err)
	}
	if _, err := s.UseBoardIntent(ctx, room.ID, denied.ID, useDenied, now); reasonOf(err) != letagents.CodeIntentNotApproved {
		t.Errorf("using a denied intent: %v, want %s", err, letagents.CodeIntentNotApproved)
	}
	if _, err := s.DecideBoardIntent(ctx, room.ID, denied.ID, store.BoardDecision{Approve: true, TokenHash: tokenHash("x")}, now); reasonOf(err) != letagents.CodeIntentNotPending {
		t.Errorf("approving a denied intent: %v, want %s", err, letagents.CodeIntentNotPending)
	}

	// Time runs out for a pending intent (no decision) and an approved one
	// (no use): both are expired, lazily.
	stale, _ := intent("stale")
	approved, useApproved := intent("approved")
	if _, err := s.DecideBoardIntent(ctx, room.ID, approved.ID, store.BoardDecision{Approve: true, TokenHash: useApproved.TokenHash}, now); err != nil {
		t.Fatal(err)
	}
	after := now.Add(letagents.DefaultIntentTTL)
	if _, err := s.DecideBoardIntent(ctx, room.ID, stale.ID, store.BoardDecision{Approve: true, TokenHash: tokenHash("y")}, after); reasonOf(err) != letagents.CodeIntentExpired {
		t.Errorf("approving an expired intent: %v, want %s", err, letagents.CodeIntentExpired)
	}
	if _, err := s.UseBoardIntent(ctx, room.ID, approved.ID, useApproved, after); reasonOf(err) != letagents.CodeIntentExpired {
		t.Errorf("using an expired approval: %v, want %s", err, letagents.CodeIntentExpired)
	}
	list, err := s.BoardIntents(ctx, room.ID, letagents.IntentExpired, 10, after)
	if err != nil || len(list) != 3 || list[0].ID != approved.ID || list[1].ID != stale.ID || list[2].ID != pending.ID {
		t.Errorf("expired intents = %v, %v; want approved, stale, pending (newest first)", list, err)
	}
	all, err := s.BoardIntents(ctx, room.ID, "", 2, after)
	if err != nil || len(all) != 2 || all[0].ID <= all[1].ID {
		t.Errorf("limit 2 = %v, %v", all, err)
	}
	// An expired pending intent no longer blocks registering it again.
	n := newIntent(t, room.ID, "ann/builder", letagents.IntentTaskCreate, letagents.NewTaskCreatePayload("stale", "", ""))
	if again, created, err := s.CreateBoardIntent(ctx, n, after); err != nil || !created || again.ID == stale.ID {
		t.Errorf("registering an expired intent again = %d (created %v, %v), want a new one", again.ID, created, err)
	}
	if _, err := s.UseBoardIntent(ctx, room.ID, 999, usePending, now); codeOf(err) != letagents.Forbidden || reasonOf(err) != letagents.CodeIntentRequired {
		t.Errorf("using a missing intent: %v, want %s", err, letagents.CodeIntentRequired)
	}
}

// An approval is used exactly once however many actions race for it, and
// the same intent registered at once by many requests is one intent.
func TestBoardIntentRaces(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "races")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	const racers = 20
	n := newIntent(t, room.ID, "ann/builder", letagents.IntentLeaseAction, letagents.NewLeaseActionPayload("task_1", "release", "", "", ""))
	ids := make([]int64, racers)
	news := make([]bool, racers)
	errs := make([]error, racers)
	// The insert's foreign key check waits for the room, held here, or
	// for the first insert of the same pending intent: so every racer has
	// looked for a twin and found none before any of them inserts.
	release := d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room.ID)
	d.Race(t, racers, release, func(i int) {
		r, created, err := s.CreateBoardIntent(ctx, n, now)
		ids[i], news[i], errs[i] = r.ID, created, err
	})
	createdCount := 0
	for i := range racers {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("registration %d = %d, %v; want all %d", i, ids[i], errs[i], ids[0])
		}
		if news[i] {
			createdCount++
		}
	}
	if createdCount != 1 {
		t.Errorf("%d registrations created the intent, want 1", createdCount)
	}

	if _, err := s.DecideBoardIntent(ctx, room.ID, ids[0], store.BoardDecision{Approve: true, TokenHash: tokenHash("race")}, now); err != nil {
		t.Fatal(err)
	}
	use := store.BoardIntentUse{TokenHash: tokenHash("race"), Action: n.Action, PayloadHash: n.PayloadHash, AgentKey: n.ProposerAgentKey}
	release = d.HoldLock(t, `SELECT 1 FROM board_intents WHERE id = $1 FOR UPDATE`, ids[0])
	d.Race(t, racers, release, func(i int) { _, errs[i] = s.UseBoardIntent(ctx, room.ID, ids[0], use, now) })
	var wins int
	var refused bytes.Buffer
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case reasonOf(err) != letagents.CodeIntentUsed:
			fmt.Fprintf(&refused, "%v; ", err)
		}
	}
	if wins != 1 || refused.Len() > 0 {
		t.Errorf("%d of %d uses succeeded (want 1); other refusals: %s", wins, racers, refused.String())
	}
}
