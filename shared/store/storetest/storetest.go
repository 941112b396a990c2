// Package storetest makes the rows tests stand on but do not test: a
// signed-in owner with a worker session of one of its agents, and the
// long-polls that session held. Tests of the sweeper, the local runner and
// the Lambda functions share it instead of each spelling the rows out.
package storetest

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
)

// Worker is a registered agent session with its credentials.
type Worker struct {
	letagents.AgentSession
	Token      string // the session's token
	OwnerToken string // its owner's token
}

// Register signs in a fresh owner ("<name>-owner", lower case), adds its
// agent name to the directory and registers a session of kind under the
// display name name in room (created if need be), all at now.
func Register(t testing.TB, st *store.Store, room, name, kind string, now time.Time) Worker {
	t.Helper()
	ctx := context.Background()
	if _, _, err := st.EnsureRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	w := Worker{Token: auth.NewToken(), OwnerToken: auth.NewToken()}
	login := strings.ToLower(name) + "-owner"
	acct, _, err := st.SignIn(ctx, store.SignIn{
		Account:     letagents.Account{Provider: "github", ProviderUserID: rand.Text(), Login: login, DisplayName: login},
		GitHubToken: []byte("sealed"), OwnerTokenHash: auth.HashToken(w.OwnerToken), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	agent, _, err := st.UpsertAgent(ctx, letagents.Agent{OwnerAccountID: acct.ID, Name: strings.ToLower(name),
		CanonicalKey: login + "/" + strings.ToLower(name), DisplayName: name, OwnerLogin: login, OwnerLabel: login}, now)
	if err != nil {
		t.Fatal(err)
	}
	w.AgentSession, err = st.CreateAgentSession(ctx, store.NewAgentSession{
		AgentSession: letagents.AgentSession{RoomID: room, Kind: kind, Runtime: "codex", AgentKey: agent.CanonicalKey,
			OwnerAccountID: acct.ID, OwnerLabel: login, IDELabel: "Codex"},
		TokenHash: auth.HashToken(w.Token),
		Names:     []string{name},
		Label:     func(n string) string { return n + " | " + login + "'s agent | Codex" },
	}, now)
	if err != nil {
		t.Fatalf("register %s in %s: %v", name, room, err)
	}
	return w
}

// Poll records a long-poll of a session held from open to close; a zero
// close leaves it parked, its lease running to open+DeliveryLease.
func Poll(t testing.TB, st *store.Store, roomID string, sessionID int64, open, close time.Time) {
	t.Helper()
	ctx := context.Background()
	d, err := st.OpenDelivery(ctx, roomID, sessionID, open, open.Add(letagents.DeliveryLease))
	if err != nil {
		t.Fatal(err)
	}
	if !close.IsZero() {
		if err := st.CloseDelivery(ctx, d.ID, close); err != nil {
			t.Fatal(err)
		}
	}
}
