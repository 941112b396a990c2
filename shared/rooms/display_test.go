// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"strings"
	"testing"
)

func TestDisplayNameWordLists(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		words []string
	}{
		{"adjectives", adjectives[:]},
		{"nouns", nouns[:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, want := len(tt.words), 60; got != want {
				t.Fatalf("len(%s) = %d, want %d", tt.name, got, want)
			}
			seen := make(map[string]bool, len(tt.words))
			for _, w := range tt.words {
				if w == "" || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
					t.Errorf("%s has %q, want a non-empty lower-case ASCII word", tt.name, w)
				}
				if seen[w] {
					t.Errorf("%s has %q twice, want distinct words", tt.name, w)
				}
				seen[w] = true
			}
		})
	}
}

func TestDisplayName(t *testing.T) {
	t.Parallel()
	adj := make(map[string]bool, len(adjectives))
	for _, w := range adjectives {
		adj[w] = true
	}
	noun := make(map[string]bool, len(nouns))
	for _, w := range nouns {
		noun[w] = true
	}
	ids := []string{
		"my team room",
		"Lobby",
		"lobby",
		"FEH7-YWH4-ZYT3",
		"github.com/o/r",
		"gitlab.com/Group/Proj",
		"example.com/A/B",
		"git-room:github.com:o/r:branch:", // not a branch room
		"",
		"日本語",
	}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			got := DisplayName(id)
			if again := DisplayName(id); again != got {
				t.Fatalf("DisplayName(%q) = %q then %q, want deterministic", id, got, again)
			}
			a, n, ok := strings.Cut(got, "-")
			if !ok || !adj[a] || !noun[n] {
				t.Fatalf("DisplayName(%q) = %q, want adjective-noun from the word lists", id, got)
			}
		})
	}
}

// TestDisplayNameStable pins a few names: the server and old clients must
// keep deriving the same name, so a change here is a breaking change.
func TestDisplayNameStable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, want string
	}{
		{"my team room", "granite-chisel"},
		{"github.com/brosincode/letagents", "silent-kiln"},
		{"FEH7-YWH4-ZYT3", "early-pine"},
		{"git-room:github.com:o/r:branch:RmVhdHVyZS9DYXBz", "Branch: Feature/Caps"},
		{"git-room:github.com:o/r:branch:Y29kZXg", "Branch: codex"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			if got := DisplayName(tt.id); got != tt.want {
				t.Errorf("DisplayName(%q) = %q, want %q", tt.id, got, tt.want)
			}
		})
	}
}

func TestDisplayNameBranch(t *testing.T) {
	t.Parallel()
	id, err := BranchRoomID("github.com/o/r", "Feature/Caps")
	if err != nil {
		t.Fatalf("BranchRoomID error = %v, want nil", err)
	}
	if got, want := DisplayName(id), "Branch: Feature/Caps"; got != want {
		t.Errorf("DisplayName(%q) = %q, want %q", id, got, want)
	}
}
