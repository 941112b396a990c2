package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

// TestSendVerdicts holds Store.Send's one statement to what the checks
// it carries let through: a message is appended only when the token is
// taken and the session (or the claims on the sender) allow it, the room
// and parent exist and the client id is new; whatever it refuses leaves
// no number taken, so the next message follows the last without a gap.
func TestSendVerdicts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	room, first, tests := sendVerdictCases(t, s)
	last := first.Seq
	for _, tt := range tests {
		out, err := s.Send(context.Background(), tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		last = tt.judge(t, out, last)
	}
	wantMessages(t, s, room, last)
}

// sendCase is a send of sendVerdictCases and what it should come to.
type sendCase struct {
	name    string
	in      store.Send
	created bool
	check   func(t *testing.T, out store.Sent)
}

// judge checks out against the case, a send that follows the message
// numbered last, and returns the number of the last message sent.
func (tt sendCase) judge(t *testing.T, out store.Sent, last int64) int64 {
	t.Helper()
	if out.Created != tt.created {
		t.Errorf("%s: created %v, want %v (%+v)", tt.name, out.Created, tt.created, out)
	}
	if out.Created {
		if last++; out.Message.Seq != last {
			t.Errorf("%s: message %d; want %d, the next number: a refusal took none", tt.name, out.Message.Seq, last)
		}
	}
	if tt.check != nil {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, out) })
	}
	return last
}

// wantMessages wants room to hold messages 1 to last.
func wantMessages(t *testing.T, s *store.Store, room string, last int64) {
	t.Helper()
	page, err := s.Messages(context.Background(), room, store.MessageQuery{Limit: letagents.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Messages); int64(n) != last || page.LastSeq != last {
		t.Errorf("room holds %d messages, last %d; want %d", n, page.LastSeq, last)
	}
}

// sendVerdictCases registers agents in a room of s and sends its first
// message, and returns sends into it, in order, each with what it should
// come to after those before it.
func sendVerdictCases(t *testing.T, s *store.Store) (string, letagents.Message, []sendCase) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	const room, other = "send-verdicts", "send-verdicts-other"
	w := storetest.Register(t, s, room, "Ada", letagents.SessionWorker, now)
	elsewhere := storetest.Register(t, s, other, "Bea", letagents.SessionWorker, now)
	reader := storetest.Register(t, s, room, "Cy", letagents.SessionController, now)
	ended := storetest.Register(t, s, room, "Dee", letagents.SessionWorker, now)
	// A label no registration lets through: the statement checks the
	// sender it signs with, not only the one its caller checked.
	reserved := storetest.Register(t, s, room, "LetAgents", letagents.SessionWorker, now)
	wide := storetest.Register(t, s, room, "ＬｅｔＡｇｅｎｔｓ", letagents.SessionWorker, now) // full-width
	if _, err := s.EndAgentSession(ctx, room, ended.ID, now); err != nil {
		t.Fatal(err)
	}
	first, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room, Sender: "x", Text: "first", ClientMessageID: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(text string) letagents.NewMessage {
		return letagents.NewMessage{RoomID: room, Sender: "bob", Text: text}
	}
	session := func(wk storetest.Worker, m letagents.NewMessage) store.Send { return signedSend(wk, m, now) }
	// Without an owner token, the statement reads whether someone else
	// holds the sender's name, as the API asks it to.
	plain := func(m letagents.NewMessage, account int64, ownerToken bool) store.Send {
		in := store.Send{Message: m, Label: m.Sender, AccountID: account, ViaOwnerToken: ownerToken, Now: now}
		if !ownerToken {
			in.NameKeys = store.NameKeys(m.Sender, m.Sender, "")
		}
		return in
	}
	return room, first, []sendCase{
		{"worker session signs", session(w, msg("hello")), true, func(t *testing.T, out store.Sent) {
			if m := out.Message; m.Sender != w.ActorLabel || m.Source != letagents.SourceAgent {
				t.Errorf("sent as %q (%q); want the session's label %q, source agent", m.Sender, m.Source, w.ActorLabel)
			}
		}},
		{"session id not the token's", func() store.Send { in := session(w, msg("x")); in.SessionID++; return in }(), false, nil},
		{"another account", func() store.Send { in := session(w, msg("x")); in.AccountID++; return in }(), false, nil},
		{"session of another room", session(elsewhere, msg("x")), false, nil},
		{"controller session", session(reader, msg("x")), false, nil},
		{"ended session", session(ended, msg("x")), false, func(t *testing.T, out store.Sent) {
			if out.Session == nil || out.Session.Live() {
				t.Errorf("session = %+v; want the ended session read back", out.Session)
			}
		}},
		{"unknown token", store.Send{Message: msg("x"), SessionTokenHash: auth.HashToken("nobody's"), SessionID: w.ID, AccountID: w.OwnerAccountID, Now: now},
			false, func(t *testing.T, out store.Sent) {
				if out.Session != nil {
					t.Errorf("session = %+v; want none", out.Session)
				}
			}},
		{"session's label reads as the server's", session(reserved, msg("x")), false, func(t *testing.T, out store.Sent) {
			if out.Session == nil || out.Session.ActorLabel != reserved.ActorLabel {
				t.Errorf("session = %+v; want %q's read back", out.Session, reserved.ActorLabel)
			}
		}},
		{"session's label reads as the server's in full-width letters", session(wide, msg("x")), false, nil},
		{"owner token looked up in the statement, with its session", func() store.Send {
			in := session(w, msg("by token"))
			in.AccountID, in.OwnerTokenHash = 0, auth.HashToken(w.OwnerToken)
			return in
		}(), true, func(t *testing.T, out store.Sent) {
			if out.Owner == nil || out.Owner.Account.ID != w.OwnerAccountID || out.Owner.TokenID == 0 || out.Owner.Account.Login == "" {
				t.Errorf("owner = %+v; want account %d and its token", out.Owner, w.OwnerAccountID)
			}
		}},
		{"owner token looked up in the statement, plain name", func() store.Send {
			in := plain(letagents.NewMessage{RoomID: room, Sender: "bob", Text: "x", Source: letagents.SourceAgent}, 0, true)
			in.OwnerTokenHash = auth.HashToken(w.OwnerToken)
			return in
		}(), true, func(t *testing.T, out store.Sent) {
			if out.Owner == nil || out.Message.Source != "" {
				t.Errorf("owner %+v, source %q; want the account found, no source", out.Owner, out.Message.Source)
			}
		}},
		{"owner token that signs nobody in", func() store.Send {
			in := session(w, msg("x"))
			in.AccountID, in.OwnerTokenHash = 0, auth.HashToken("nobody's")
			return in
		}(), false, func(t *testing.T, out store.Sent) {
			if out.Owner != nil || out.Session != nil {
				t.Errorf("owner %+v, session %+v; want neither read: the session is not touched", out.Owner, out.Session)
			}
		}},
		{"another account's session label", plain(letagents.NewMessage{RoomID: room, Sender: w.ActorLabel, Text: "x"}, 0, false), false,
			func(t *testing.T, out store.Sent) {
				if !out.Claim.Others || out.Claim.Session {
					t.Errorf("claim = %+v; want others' only", out.Claim)
				}
			}},
		{"own session label, owner token", plain(letagents.NewMessage{RoomID: room, Sender: w.ActorLabel, Text: "x", Source: letagents.SourceAgent},
			w.OwnerAccountID, true), true, func(t *testing.T, out store.Sent) {
			if out.Message.Source != letagents.SourceAgent {
				t.Errorf("source = %q; want agent", out.Message.Source)
			}
		}},
		{"plain name, owner token", plain(letagents.NewMessage{RoomID: room, Sender: "bob", Text: "x", Source: letagents.SourceAgent},
			w.OwnerAccountID, true), true, func(t *testing.T, out store.Sent) {
			if out.Message.Source != "" {
				t.Errorf("source = %q; want none, as unverified", out.Message.Source)
			}
		}},
		{"name held, anonymous", plain(letagents.NewMessage{RoomID: room, Sender: "bea", Text: "x"}, 0, false), false, func(t *testing.T, out store.Sent) {
			if out.NameFree {
				t.Error("name free; want Bea's agent's name held")
			}
		}},
		{"name free, anonymous", plain(msg("x"), 0, false), true, func(t *testing.T, out store.Sent) {
			if !out.NameFree {
				t.Error("name held; want it free")
			}
		}},
		{"no such room", plain(letagents.NewMessage{RoomID: "no-such-room", Sender: "bob", Text: "x"}, 0, false), false,
			func(t *testing.T, out store.Sent) {
				if out.Room || codeOf(out.Refusal(letagents.NewMessage{RoomID: "no-such-room"})) != letagents.NotFound {
					t.Errorf("room found %v, refusal %v; want not found", out.Room, out.Refusal(letagents.NewMessage{}))
				}
			}},
		{"no such parent", plain(letagents.NewMessage{RoomID: room, Sender: "bob", Text: "x", ThreadParentSeq: 999}, 0, false), false,
			func(t *testing.T, out store.Sent) {
				if out.Parent || codeOf(out.Refusal(letagents.NewMessage{ThreadParentSeq: 999})) != letagents.Invalid {
					t.Errorf("parent found %v; want refused as invalid", out.Parent)
				}
			}},
		{"reply", plain(letagents.NewMessage{RoomID: room, Sender: "bob", Text: "x", ThreadParentSeq: first.Seq}, 0, false), true,
			func(t *testing.T, out store.Sent) {
				if out.Message.ThreadRootSeq != first.Seq || out.Message.ReplyTo == nil {
					t.Errorf("reply = %+v; want in the thread of %d with its quote", out.Message, first.Seq)
				}
			}},
		{"repeat of a client id", plain(letagents.NewMessage{RoomID: room, Sender: "bob", Text: "again", ClientMessageID: "c-1"}, 0, false), false,
			func(t *testing.T, out store.Sent) {
				if !out.Repeat || out.Message.Seq != first.Seq || out.Message.Text != "first" || out.Refusal(letagents.NewMessage{}) != nil {
					t.Errorf("repeat = %+v; want message %d, the first of the id", out, first.Seq)
				}
			}},
	}
}

// TestSendTakesItsToken: the rate token goes with the send, and a send
// it refuses does nothing else (its session is not touched); a send the
// session refuses still spends its token.
func TestSendTakesItsToken(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	const room = "send-token"
	w := storetest.Register(t, s, room, "Ada", letagents.SessionWorker, now)
	take := &store.RateTake{Kind: "send", Key: "10.0.0.1", PerMinute: 2, Now: now.Add(time.Minute)}
	in := func(id int64) store.Send {
		in := signedSend(w, letagents.NewMessage{RoomID: room, Sender: "x", Text: "hi"}, take.Now)
		in.SessionID, in.Take = id, take
		return in
	}
	for i, tt := range []struct {
		in      store.Send
		created bool
	}{{in(w.ID + 1), false}, {in(w.ID), true}} {
		out, err := s.Send(ctx, tt.in)
		if err != nil || out.Wait != 0 || out.Created != tt.created {
			t.Fatalf("send %d = %+v, %v; want a token taken, created %v", i, out, err, tt.created)
		}
	}
	later := in(w.ID)
	later.Now = take.Now.Add(time.Second)
	later.Take = &store.RateTake{Kind: take.Kind, Key: take.Key, PerMinute: take.PerMinute, Now: later.Now}
	out, err := s.Send(ctx, later)
	if err != nil || out.Wait != 29*time.Second || out.Created || out.Session != nil {
		t.Fatalf("third send = %+v, %v; want refused by the rate (29 s to wait) with nothing read", out, err)
	}
	a, err := s.AgentSession(ctx, room, w.ID, later.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !a.LastSeenAt.Equal(take.Now) {
		t.Errorf("last seen %v; want %v, the last send the rate let through", a.LastSeenAt, take.Now)
	}
}

// TestSendTouchesItsSessionInSteps: an agent's send moves its session's
// last_seen_at only when it is letagents.SeenStep old or more, so that a
// run of sends does not write the session's row at each.
func TestSendTouchesItsSessionInSteps(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	const room = "send-touch"
	w := storetest.Register(t, s, room, "Ada", letagents.SessionWorker, now)
	half := letagents.SeenStep / 2
	for _, tt := range []struct {
		at, seen time.Duration // since registration: the send, and last_seen_at after it
	}{
		{half, 0},
		{letagents.SeenStep, letagents.SeenStep},
		{letagents.SeenStep + half, letagents.SeenStep},
		{3 * letagents.SeenStep, 3 * letagents.SeenStep},
	} {
		at := now.Add(tt.at)
		out, err := s.Send(ctx, signedSend(w, letagents.NewMessage{RoomID: room, Sender: "x", Text: "hi"}, at))
		if err != nil || !out.Created {
			t.Fatalf("send at +%v = %+v, %v; want sent", tt.at, out, err)
		}
		a, err := s.AgentSession(ctx, room, w.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		if want := now.Add(tt.seen); !a.LastSeenAt.Equal(want) {
			t.Errorf("after a send at +%v last seen %v; want +%v", tt.at, a.LastSeenAt.Sub(now), tt.seen)
		}
	}
}

// TestNameHeldByOthers reads each kind of name a sender may not take,
// by the keys the server wrote with it: an account's login and display
// name, an agent's display name, and the display name of an agent
// session in the room, which need not be its agent's. Lookalikes read as
// the name; the account's own names, and a session of another room, do not.
func TestNameHeldByOthers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	const room, other = "names-held", "names-held-other"
	w := storetest.Register(t, s, room, "Ada", letagents.SessionWorker, now)
	// A second session of Ada's agent, under a name of its own.
	if _, err := s.CreateAgentSession(ctx, store.NewAgentSession{
		AgentSession: letagents.AgentSession{RoomID: room, Kind: letagents.SessionWorker, Runtime: "codex", AgentKey: "ada-owner/ada",
			OwnerAccountID: w.OwnerAccountID, OwnerLabel: "ada-owner", IDELabel: "Codex"},
		TokenHash: auth.HashToken(auth.NewToken()),
		Names:     []string{"Quill"},
		Label:     func(n string) string { return n + " | ada-owner's agent | Codex" },
	}, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EnsureRoom(ctx, other); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		room    string
		account int64
		held    bool
	}{
		{"Ada", room, 0, true},                   // the agent's display name
		{"ada-owner", room, 0, true},             // the account's login
		{"Quill", room, 0, true},                 // the session's display name
		{"QUILL", room, 0, true},                 // read alike: I is l
		{"Qu1ll", room, 0, true},                 // and so is 1
		{"Quill", other, 0, false},               // a session of another room
		{"Quill", room, w.OwnerAccountID, false}, // the account's own session
		{"Ada", room, w.OwnerAccountID, false},   // the account's own agent
		{"Quillon", room, 0, false},
	}
	for _, tt := range tests {
		held, err := s.NameHeldByOthers(ctx, tt.room, store.NameKeys(tt.name, tt.name, ""), tt.account)
		if err != nil {
			t.Fatal(err)
		}
		if held != tt.held {
			t.Errorf("%q in %s by account %d: held %v, want %v", tt.name, tt.room, tt.account, held, tt.held)
		}
	}
}

// A send a worker session signs reads no claim on its sender and no name
// held by others: the session's label is the sender, and the statement,
// alone or over several sends, skips those lookups (the agents and
// accounts tables, the room's sessions by label or display name). A send
// without a session reads them, which shows the test sees them.
func TestSessionSendReadsNoClaims(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	const room = "send-claims"
	ada := storetest.Register(t, s, room, "Ada", letagents.SessionWorker, now)
	bo := storetest.Register(t, s, room, "Bo", letagents.SessionWorker, now)
	signed := func(w storetest.Worker) store.Send {
		return signedSend(w, letagents.NewMessage{RoomID: room, Sender: "x", Text: "hello"}, now)
	}
	plain := func(sender string) store.Send {
		return anonymousSend(letagents.NewMessage{RoomID: room, Sender: sender, Text: "hello"}, now)
	}
	for _, tt := range []struct {
		name  string
		ins   []store.Send
		reads bool
	}{
		{"one signed send", []store.Send{signed(ada)}, false},
		{"signed sends in one statement", []store.Send{signed(ada), signed(bo)}, false},
		{"one send without a session", []store.Send{plain("cy")}, true},
		{"sends without a session in one statement", []store.Send{plain("cy"), plain("dee")}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := store.SendPlan(ctx, s, tt.ins...)
			if err != nil {
				t.Fatal(err)
			}
			got := rootPlan(t, raw).claimReads()
			if !tt.reads && len(got) > 0 {
				t.Errorf("the statement read %v; want no claim or name lookup", got)
			}
			if tt.reads {
				for _, want := range []string{"agents", "accounts", "agent_sessions by actor_label", "agent_sessions by display_key"} {
					if !slices.Contains(got, want) {
						t.Errorf("the statement read %v; want %s among them", got, want)
					}
				}
			}
		})
	}
}

// A send whose message replies to nothing and mentions no one goes in a
// statement that sets up no parent, no thread and no mentioned sessions:
// each costs the statement's start even when it reads nothing. A reply
// and a mention, signed or not, have them, which shows the test sees
// them.
func TestUnlinkedSendSetsUpNoThreadOrMentions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	const room = "send-unlinked"
	ada := storetest.Register(t, s, room, "Ada", letagents.SessionWorker, now)
	storetest.Register(t, s, room, "Bo", letagents.SessionWorker, now)
	first, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room, Sender: "cy", Text: "a parent"})
	if err != nil {
		t.Fatal(err)
	}
	linkedParts := []string{"CTE parent", "CTE mentioned", "message_threads"}
	for _, tt := range []struct {
		name   string
		text   string
		parent int64
		linked bool
	}{
		{"a chat line", "hello", 0, false},
		{"an @ that names no one", "mail me at x@y", 0, false},
		{"a mention", "over to you @Bo", 0, true},
		{"a reply", "yes", first.Seq, true},
	} {
		for _, signed := range []bool{false, true} {
			m := letagents.NewMessage{RoomID: room, Sender: "dee", Text: tt.text, ThreadParentSeq: tt.parent}
			in := anonymousSend(m, now)
			if signed {
				in = signedSend(ada, m, now)
			}
			raw, err := store.SendPlan(ctx, s, in)
			if err != nil {
				t.Fatal(err)
			}
			parts := planParts(t, raw)
			for _, part := range linkedParts {
				if got := slices.Contains(parts, part); got != tt.linked {
					t.Errorf("%s (signed %v): the plan has %s: %v, want %v", tt.name, signed, part, got, tt.linked)
				}
			}
		}
	}
}

// planParts names what an EXPLAIN (FORMAT JSON) plan sets up: each node's
// relation and each subplan's name, at any depth.
func planParts(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	var walk func(n claimNode)
	walk = func(n claimNode) {
		out = append(out, n.Relation, n.Subplan)
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(rootPlan(t, raw))
	return out
}

// rootPlan is the top node of an EXPLAIN (FORMAT JSON) plan.
func rootPlan(t *testing.T, raw []byte) claimNode {
	t.Helper()
	var plans []struct{ Plan claimNode }
	if err := json.Unmarshal(raw, &plans); err != nil {
		t.Fatal(err)
	}
	return plans[0].Plan
}

// claimNode is a node of EXPLAIN (ANALYZE, FORMAT JSON)'s plan, as far as
// claimReads and planParts look.
type claimNode struct {
	Relation  string      `json:"Relation Name"`
	Subplan   string      `json:"Subplan Name"`
	Loops     int         `json:"Actual Loops"`
	IndexCond string      `json:"Index Cond"`
	Recheck   string      `json:"Recheck Cond"`
	Filter    string      `json:"Filter"`
	Plans     []claimNode `json:"Plans"`
}

// claimReads names the reads of the sender's claims and of the names
// others hold that ran: any of agents or accounts, and of the room's
// sessions by label or display name.
func (n claimNode) claimReads() []string {
	var out []string
	if n.Loops > 0 {
		switch cond := n.IndexCond + n.Recheck + n.Filter; {
		case n.Relation == "agents", n.Relation == "accounts":
			out = append(out, n.Relation)
		case n.Relation == "agent_sessions" && strings.Contains(cond, "actor_label"):
			out = append(out, "agent_sessions by actor_label")
		case n.Relation == "agent_sessions" && strings.Contains(cond, "display_key"):
			out = append(out, "agent_sessions by display_key")
		}
	}
	for _, c := range n.Plans {
		out = append(out, c.claimReads()...)
	}
	return out
}

// signedSend is m sent by w's worker session, signed with its token, at
// now.
func signedSend(w storetest.Worker, m letagents.NewMessage, now time.Time) store.Send {
	return store.Send{Message: m, SessionTokenHash: auth.HashToken(w.Token), SessionID: w.ID, AccountID: w.OwnerAccountID, Now: now}
}

// anonymousSend is m sent under m.Sender by a caller with neither account
// nor session, at now.
func anonymousSend(m letagents.NewMessage, now time.Time) store.Send {
	return store.Send{Message: m, Now: now, Label: m.Sender, Display: m.Sender, NameKeys: store.NameKeys(m.Sender, m.Sender, "")}
}
