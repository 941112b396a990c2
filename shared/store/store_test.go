package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/store"
)

func newStore(t testing.TB) *store.Store {
	t.Helper()
	return store.New(pgtest.New(t).Pool)
}

func codeOf(err error) letagents.ErrorKind {
	var e *letagents.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func TestConcurrentSendersGetConsecutiveNumbers(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	s := store.New(d.Pool)
	ctx := context.Background()
	room, _, err := s.EnsureRoom(ctx, "racing senders")
	if err != nil {
		t.Fatal(err)
	}
	// Every sender waits for the room's counter, held here, before any
	// of them takes a number. Each has a Store of its own, as each Lambda
	// instance has: one Store never lets two sends wait for a room's row in
	// the database (turns), so it would never race them there.
	release := d.HoldLock(t, `SELECT 1 FROM rooms WHERE id = $1 FOR UPDATE`, room.ID)
	const senders = 50
	seqs := make([]int64, senders)
	errs := make([]error, senders)
	d.Race(t, senders, release, func(i int) {
		m, _, err := store.New(d.Pool).SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: fmt.Sprintf("agent-%d", i), Text: "hello"})
		seqs[i], errs[i] = m.Seq, err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sender %d: %v", i, err)
		}
	}
	slices.Sort(seqs)
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("sorted numbers = %v, want 1..%d without gaps or repeats", seqs, senders)
		}
	}
	page, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: letagents.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != senders || page.LastSeq != senders || page.HasMore {
		t.Errorf("read back %d messages, last_seq %d, has_more %v; want %d, %d, false", len(page.Messages), page.LastSeq, page.HasMore, senders, senders)
	}
}

func TestEnsureRoom(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	branch, err := rooms.BranchRoomID("github.com/o/r", "Feature/Caps")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id       string
		kind     letagents.RoomKind
		parent   string
		wantName string
	}{
		{"my room", letagents.RoomNamed, "", rooms.DisplayName("my room")},
		{"github.com/a/b", letagents.RoomRepo, "", rooms.DisplayName("github.com/a/b")},
		{branch, letagents.RoomBranch, "github.com/o/r", "Branch: Feature/Caps"},
	}
	for _, tt := range tests {
		r, created, err := s.EnsureRoom(ctx, tt.id)
		if err != nil || !created {
			t.Fatalf("EnsureRoom(%q) first = created %v, %v", tt.id, created, err)
		}
		if r.ID != tt.id || r.Kind != tt.kind || r.ParentID != tt.parent || r.DisplayName != tt.wantName || r.CreatedAt.IsZero() {
			t.Errorf("EnsureRoom(%q) = %+v, want kind %s parent %q name %q", tt.id, r, tt.kind, tt.parent, tt.wantName)
		}
		again, created, err := s.EnsureRoom(ctx, tt.id)
		if err != nil || created || again != r {
			t.Errorf("EnsureRoom(%q) again = %+v, created %v, %v; want the same room, not created", tt.id, again, created, err)
		}
	}
	parent, err := s.Room(ctx, "github.com/o/r")
	if err != nil || parent.Kind != letagents.RoomRepo {
		t.Errorf("branch room's repo room = %+v, %v; want it created as a repo room", parent, err)
	}
}

// An invite-shaped id names the invite room of that code, else the named
// room of its lower-case form: joining never mints an invite room, and
// names such as team-chat are rooms like any other.
func TestInviteShapedIDs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	invite, err := s.CreateInviteRoom(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, want string
		kind     letagents.RoomKind
		created  bool
	}{
		{"TEAM-CHAT", "team-chat", letagents.RoomNamed, true},
		{"team-chat", "team-chat", letagents.RoomNamed, false},
		{"Demo-Room", "demo-room", letagents.RoomNamed, true},
		{"1234-5678", "1234-5678", letagents.RoomNamed, true},
		{"1234-5678", "1234-5678", letagents.RoomNamed, false},
		{invite.ID, invite.ID, letagents.RoomInvite, false},
		{strings.ToLower(invite.ID), invite.ID, letagents.RoomInvite, false},
	}
	for _, tt := range tests {
		r, created, err := s.EnsureRoom(ctx, tt.id)
		if err != nil || r.ID != tt.want || r.Kind != tt.kind || created != tt.created {
			t.Errorf("EnsureRoom(%q) = %s %s created %v, %v; want %s %s created %v", tt.id, r.ID, r.Kind, created, err, tt.want, tt.kind, tt.created)
		}
		if got, invite, err := s.RoomID(ctx, tt.id); err != nil || got != tt.want || invite != (tt.kind == letagents.RoomInvite) {
			t.Errorf("RoomID(%q) = %q, invite %v, %v; want %q", tt.id, got, invite, err, tt.want)
		}
	}
	// A three-group id is the shape of a minted code: without its invite
	// room it is a mistyped or stale code, never a new named room.
	if r, _, err := s.EnsureRoom(ctx, "ABCD-EFGH-IJKL"); !letagents.IsKind(err, letagents.NotFound) {
		t.Errorf("EnsureRoom of an unknown three-group code = %+v, %v; want NotFound", r, err)
	}
	if got, invite, err := s.RoomID(ctx, "abcd-efgh-ijkl"); err != nil || got != "ABCD-EFGH-IJKL" || invite {
		t.Errorf("RoomID of an unknown three-group code = %q, invite %v, %v; want the code itself", got, invite, err)
	}
	if got, invite, err := s.RoomID(ctx, "WXYZ-WXYZ"); err != nil || got != "wxyz-wxyz" || invite {
		t.Errorf("RoomID(no such room) = %q, invite %v, %v; want the named room it would open", got, invite, err)
	}
	if got, invite, err := s.RoomID(ctx, "github.com/a/b"); err != nil || got != "github.com/a/b" || invite {
		t.Errorf("RoomID(repo id) = %q, invite %v, %v; want it as it is", got, invite, err)
	}
	var e *letagents.Error
	if _, err := s.Room(ctx, "nowhere"); !errors.As(err, &e) || e.Kind != letagents.NotFound || e.Code != "ROOM_NOT_FOUND" {
		t.Errorf("Room(nowhere) = %#v, want not found with reason ROOM_NOT_FOUND", err)
	}
}

func TestCreateInviteRoom(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	r, err := s.CreateInviteRoom(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rooms.IsInviteCode(r.ID) || r.Kind != letagents.RoomInvite || r.DisplayName != rooms.DisplayName(r.ID) {
		t.Errorf("CreateInviteRoom = %+v", r)
	}
	joined, created, err := s.EnsureRoom(ctx, r.ID)
	if err != nil || created || joined.ID != r.ID {
		t.Errorf("EnsureRoom(existing code) = %+v, %v, %v", joined, created, err)
	}
}

func TestMessagesPaging(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, _ := s.EnsureRoom(ctx, "paging")
	empty, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10})
	if err != nil || len(empty.Messages) != 0 || empty.HasMore || empty.LastSeq != 0 {
		t.Fatalf("empty room page = %+v, %v", empty, err)
	}
	for i := 1; i <= 7; i++ {
		if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// HasMore answers a forward read, HasOlder a backward one.
	tests := []struct {
		name              string
		q                 store.MessageQuery
		want              []int64
		hasMore, hasOlder bool
	}{
		{"first page", store.MessageQuery{Limit: 3}, []int64{1, 2, 3}, true, false},
		{"middle", store.MessageQuery{After: 3, Limit: 3}, []int64{4, 5, 6}, true, false},
		{"last", store.MessageQuery{After: 6, Limit: 3}, []int64{7}, false, false},
		{"past the end", store.MessageQuery{After: 7, Limit: 3}, nil, false, false},
		{"far past the end", store.MessageQuery{After: 99, Limit: 3}, nil, false, false},
		{"latest", store.MessageQuery{Before: store.BeforeLatest, Limit: 3}, []int64{5, 6, 7}, false, true},
		{"before 5", store.MessageQuery{Before: 5, Limit: 3}, []int64{2, 3, 4}, false, true},
		{"before 3", store.MessageQuery{Before: 3, Limit: 3}, []int64{1, 2}, false, false},
	}
	for _, tt := range tests {
		page, err := s.Messages(ctx, room.ID, tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []int64
		for _, m := range page.Messages {
			got = append(got, m.Seq)
			if m.RoomID != room.ID || m.Sender != "a" || m.Text != fmt.Sprint(m.Seq) || m.CreatedAt.IsZero() {
				t.Errorf("%s: message %+v has wrong fields", tt.name, m)
			}
		}
		if !slices.Equal(got, tt.want) || page.HasMore != tt.hasMore || page.HasOlder != tt.hasOlder || page.LastSeq != 7 {
			t.Errorf("%s: got %v more=%v older=%v last=%d; want %v more=%v older=%v last=7",
				tt.name, got, page.HasMore, page.HasOlder, page.LastSeq, tt.want, tt.hasMore, tt.hasOlder)
		}
	}
	if _, err := s.Messages(ctx, "nowhere", store.MessageQuery{Limit: 3}); codeOf(err) != letagents.NotFound {
		t.Errorf("Messages(missing room) error = %v, want not found", err)
	}
	for _, limit := range []int{0, -1, letagents.MaxPageSize + 1} {
		if _, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: limit}); codeOf(err) != letagents.Invalid {
			t.Errorf("Messages(limit %d) error = %v, want invalid", limit, err)
		}
	}
}

// TestMessagesPromptOnly pins how the original treats a prompt-only
// message (kind auto, blank text): reads leave it out unless they ask for
// it, pages count only what they show, and nobody replies to it.
func TestMessagesPromptOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, _ := s.EnsureRoom(ctx, "prompts")
	for _, m := range []letagents.NewMessage{
		{Text: "one"},
		{Text: " \n", PromptKind: letagents.PromptAuto},
		{Text: "three", PromptKind: letagents.PromptInline},
		{Text: "four", PromptKind: letagents.PromptAuto},
		{Text: "", PromptKind: letagents.PromptAuto},
	} {
		m.RoomID, m.Sender = room.ID, "a"
		sent, _, err := s.SendMessage(ctx, m)
		if err != nil || sent.PromptKind != m.PromptKind {
			t.Fatalf("send %+v = %+v, %v", m, sent, err)
		}
	}
	tests := []struct {
		name              string
		q                 store.MessageQuery
		want              []int64
		hasMore, hasOlder bool
	}{
		{"all", store.MessageQuery{Limit: 10}, []int64{1, 3, 4}, false, false},
		{"all, prompt-only too", store.MessageQuery{Limit: 10, IncludePromptOnly: true}, []int64{1, 2, 3, 4, 5}, false, false},
		{"first page", store.MessageQuery{Limit: 2}, []int64{1, 3}, true, false},
		{"only hidden after", store.MessageQuery{After: 4, Limit: 2}, nil, false, false},
		{"latest", store.MessageQuery{Before: store.BeforeLatest, Limit: 2}, []int64{3, 4}, false, true},
		{"latest, prompt-only too", store.MessageQuery{Before: store.BeforeLatest, Limit: 2, IncludePromptOnly: true}, []int64{4, 5}, false, true},
		{"before 3", store.MessageQuery{Before: 3, Limit: 1}, []int64{1}, false, false},
	}
	for _, tt := range tests {
		page, err := s.Messages(ctx, room.ID, tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []int64
		for _, m := range page.Messages {
			got = append(got, m.Seq)
		}
		if !slices.Equal(got, tt.want) || page.HasMore != tt.hasMore || page.HasOlder != tt.hasOlder {
			t.Errorf("%s: got %v more=%v older=%v; want %v more=%v older=%v",
				tt.name, got, page.HasMore, page.HasOlder, tt.want, tt.hasMore, tt.hasOlder)
		}
	}
	page, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10, IncludePromptOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []letagents.PromptKind{"", letagents.PromptAuto, letagents.PromptInline, letagents.PromptAuto, letagents.PromptAuto} {
		if got := page.Messages[i].PromptKind; got != want {
			t.Errorf("message %d read with kind %q, want %q", page.Messages[i].Seq, got, want)
		}
	}
	_, _, err = s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "b", Text: "re", ThreadParentSeq: 2})
	if codeOf(err) != letagents.Invalid {
		t.Errorf("reply to a prompt-only message: error %v, want invalid", err)
	}
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "b", Text: "re", ThreadParentSeq: 4}); err != nil {
		t.Errorf("reply to an auto prompt with text: %v", err)
	}
}

func TestSendMessageValidation(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, _ := s.EnsureRoom(ctx, "valid")
	other, _, _ := s.EnsureRoom(ctx, "other")
	root, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "root", Source: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: other.ID, Sender: "a", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	reply, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "b", Text: "reply", ThreadParentSeq: root.Seq})
	if err != nil || reply.ThreadParentSeq != root.Seq || reply.Seq != 2 {
		t.Fatalf("reply = %+v, %v", reply, err)
	}
	long := make([]byte, letagents.MaxTextBytes+1)
	for i := range long {
		long[i] = 'x'
	}
	tests := []struct {
		name string
		m    letagents.NewMessage
		want letagents.ErrorKind
	}{
		{"no sender", letagents.NewMessage{RoomID: room.ID, Text: "x"}, letagents.Invalid},
		{"blank text", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "  "}, letagents.Invalid},
		{"blank inline prompt", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "  ", PromptKind: letagents.PromptInline}, letagents.Invalid},
		{"unknown prompt kind", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "x", PromptKind: "join"}, letagents.Invalid},
		{"text too long", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: string(long)}, letagents.TooLarge},
		{"text at the limit", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: string(long[1:])}, ""},
		{"NUL", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "a\x00b"}, letagents.Invalid},
		{"bad source", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "x", Source: "robot"}, letagents.Invalid},
		{"parent missing", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "x", ThreadParentSeq: 99}, letagents.Invalid},
		{"parent in other room", letagents.NewMessage{RoomID: other.ID, Sender: "a", Text: "x", ThreadParentSeq: 2}, letagents.Invalid},
		{"parent is itself", letagents.NewMessage{RoomID: other.ID, Sender: "a", Text: "x", ThreadParentSeq: 2}, letagents.Invalid},
		{"room missing", letagents.NewMessage{RoomID: "nowhere", Sender: "a", Text: "x"}, letagents.NotFound},
	}
	for _, tt := range tests {
		_, _, err := s.SendMessage(ctx, tt.m)
		if codeOf(err) != tt.want || (tt.want == "" && err != nil) {
			t.Errorf("%s: error = %v, want code %q", tt.name, err, tt.want)
		}
	}
	// Refused sends take no number: the next message is still gap-free.
	next, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "after"})
	if err != nil || next.Seq != 4 {
		t.Errorf("next message = %d, %v; want 4 (refused sends must not burn numbers)", next.Seq, err)
	}
}

func TestChannelNamespacing(t *testing.T) {
	t.Parallel()
	a, b := newStore(t), newStore(t)
	if a.RoomChannel("room") == b.RoomChannel("room") {
		t.Error("two schemas share a NOTIFY channel for the same room id")
	}
	if a.RoomChannel("room") == a.RoomChannel("room2") {
		t.Error("two rooms share a channel")
	}
	if n := len(a.RoomChannel(string(make([]byte, 600)))); n > 63 {
		t.Errorf("channel name is %d bytes, PostgreSQL allows 63", n)
	}
}

func TestSendMessageClientID(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	room, _, _ := s.EnsureRoom(ctx, "idempotent")
	other, _, _ := s.EnsureRoom(ctx, "elsewhere")
	first, created, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "once", Source: "agent", ClientMessageID: "c1"})
	if err != nil || !created {
		t.Fatalf("first send: created %v, %v", created, err)
	}
	tests := []struct {
		name        string
		m           letagents.NewMessage
		wantCreated bool
		wantSeq     int64
		wantText    string
	}{
		{"repeat", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "once", Source: "agent", ClientMessageID: "c1"}, false, first.Seq, "once"},
		{"repeat with other text", letagents.NewMessage{RoomID: room.ID, Sender: "b", Text: "twice?", ClientMessageID: "c1"}, false, first.Seq, "once"},
		{"same id, other room", letagents.NewMessage{RoomID: other.ID, Sender: "a", Text: "there", ClientMessageID: "c1"}, true, 1, "there"},
		{"other id", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "new", ClientMessageID: "c2"}, true, 2, "new"},
		{"no id", letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "plain"}, true, 3, "plain"},
	}
	for _, tt := range tests {
		got, created, err := s.SendMessage(ctx, tt.m)
		if err != nil || created != tt.wantCreated || got.Seq != tt.wantSeq || got.Text != tt.wantText {
			t.Errorf("%s: seq %d %q, created %v, err %v; want seq %d %q, created %v", tt.name, got.Seq, got.Text, created, err, tt.wantSeq, tt.wantText, tt.wantCreated)
		}
	}
	if got, _, _ := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "x", Text: "x", ClientMessageID: "c1"}); got.Sender != "a" || got.Source != "agent" || !got.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("repeat answered %+v, want the original %+v", got, first)
	}
	long := strings.Repeat("x", letagents.MaxClientMessageIDBytes+1)
	if _, _, err := s.SendMessage(ctx, letagents.NewMessage{RoomID: room.ID, Sender: "a", Text: "x", ClientMessageID: long}); codeOf(err) != letagents.Invalid {
		t.Errorf("client id over the limit: %v, want Invalid", err)
	}
	page, err := s.Messages(ctx, room.ID, store.MessageQuery{Limit: 10})
	if err != nil || len(page.Messages) != 3 || page.LastSeq != 3 {
		t.Errorf("room holds %d messages, last_seq %d, %v; want 3, 3 (repeats post nothing and burn no number)", len(page.Messages), page.LastSeq, err)
	}
}
