package auth

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/seal"
	"github.com/letagents/letagents-go/shared/store"
)

// The local owner, asked for, is granted only where nobody can sign in
// and every room is open: a service assembled around the configuration
// check (config.Config refuses the others) still never grants it.
func TestLocalOwnerOnlyWithoutSignIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t).Pool)
	sealer, err := seal.NewKeyFile(filepath.Join(t.TempDir(), "token.key"))
	if err != nil {
		t.Fatal(err)
	}
	app := github.New(github.Config{ClientID: "id", ClientSecret: "secret"})
	tests := []struct {
		name  string
		cfg   Config
		local bool
	}{
		{"sign-in off, rooms open", Config{LocalOwner: true}, true},
		{"not asked for", Config{}, false},
		{"repo rooms follow GitHub", Config{LocalOwner: true, RepoAccess: true}, false},
		{"sign-in on", Config{LocalOwner: true, GitHub: app, Sealer: sealer}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(st, tt.cfg)
			who, err := s.Identify(ctx, Credential{})
			if err != nil {
				t.Fatal(err)
			}
			if s.LocalOwner() != tt.local || who.SignedIn() != tt.local || (who.Via == ViaLocal) != tt.local || who.AgentOwner() != tt.local {
				t.Fatalf("LocalOwner() %v, a caller with no credential %+v; want the local owner: %v", s.LocalOwner(), who, tt.local)
			}
			if !tt.local {
				return
			}
			if who.Account.Login != letagents.LocalOwnerLogin || who.Account.Provider != letagents.ProviderLocal {
				t.Errorf("the local owner is %+v; want login %q, provider %q", who.Account, letagents.LocalOwnerLogin, letagents.ProviderLocal)
			}
			role, err := s.Role(ctx, who, letagents.Room{ID: "github.com/acme/app", Kind: letagents.RoomRepo}, Access{}, false)
			if err != nil || role != letagents.RoleAdmin {
				t.Errorf("the local owner's role in a repo room: %q (%v); want admin", role, err)
			}
			// One account, however many services ask.
			again, err := New(st, tt.cfg).Identify(ctx, Credential{Ignored: IgnoredUnknown})
			if err != nil || again.Account.ID != who.Account.ID || again.Ignored != IgnoredUnknown {
				t.Errorf("a second service's local owner: %+v (%v); want account %d, the unknown token still noted", again, err, who.Account.ID)
			}
		})
	}
}
