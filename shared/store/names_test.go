package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

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
