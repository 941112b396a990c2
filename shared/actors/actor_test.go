package actors

import (
	"slices"
	"testing"
)

func TestActorLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		display, owner, ide string
		want                string
	}{
		{"RiverValley", "Ada Lovelace", "Codex", "RiverValley | Ada Lovelace's agent | Codex"},
		{"RiverValley", "James", "Claude", "RiverValley | James' agent | Claude"},
		{"RiverValley", "JAMES", "Claude", "RiverValley | JAMES' agent | Claude"},
		{"RiverValley", "Chris Jones", "Agent", "RiverValley | Chris Jones' agent | Agent"},
		{"RiverValley", "owner", "Agent", "RiverValley | owner's agent | Agent"},
		{"River", "Ada", "", "River | Ada's agent"},
		{"River", "", "Codex", "River | Codex"},
		{"River", "", "", "River"},
		{" River ", " Ada ", " Codex ", "River | Ada's agent | Codex"},
	}
	for _, tt := range tests {
		if got := ActorLabel(tt.display, tt.owner, tt.ide); got != tt.want {
			t.Errorf("ActorLabel(%q, %q, %q) = %q; want %q", tt.display, tt.owner, tt.ide, got, tt.want)
		}
	}
}

func TestParseActorLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		label               string
		display, owner, ide string
	}{
		{"RiverValley | Ada Lovelace's agent | Codex", "RiverValley", "Ada Lovelace", "Codex"},
		{"RiverValley | James' agent | Claude", "RiverValley", "James", "Claude"},
		{"River | Ada's agent", "River", "Ada", ""},
		{"River | Codex", "River", "", "Codex"},
		{"River 2 | Ada's agent | Codex", "River 2", "Ada", "Codex"},
		{"codex (Ada's agent)", "codex", "Ada", ""},
		{"Builder Bot (James' agent)", "Builder Bot", "James", ""},
		{"RiverValley", "RiverValley", "", ""},
		{"  RiverValley  ", "RiverValley", "", ""},
		{"letagents", "letagents", "", ""},
		{"Bob (the builder)", "Bob (the builder)", "", ""},
		{"(Ada's agent)", "(Ada's agent)", "", ""},
		{"", "", "", ""},
	}
	for _, tt := range tests {
		d, o, i := ParseActorLabel(tt.label)
		if d != tt.display || o != tt.owner || i != tt.ide {
			t.Errorf("ParseActorLabel(%q) = %q, %q, %q; want %q, %q, %q", tt.label, d, o, i, tt.display, tt.owner, tt.ide)
		}
	}
}

func TestParseActorLabelRoundTrip(t *testing.T) {
	t.Parallel()
	for _, display := range []string{"RiverValley", "Builder Bot", "codex-2"} {
		for _, owner := range []string{"Ada Lovelace", "James", "CHRIS", "owner", "Ada's", ""} {
			for _, ide := range []string{"Codex", "Claude", "My Own IDE", ""} {
				label := ActorLabel(display, owner, ide)
				d, o, i := ParseActorLabel(label)
				if d != display || o != owner || i != ide {
					t.Errorf("ParseActorLabel(%q) = %q, %q, %q; want %q, %q, %q", label, d, o, i, display, owner, ide)
				}
			}
		}
	}
}

func TestSessionNames(t *testing.T) {
	t.Parallel()
	code1, _ := Codename("ann/claude")
	code2, _ := Codename("ann/claude:1")
	tests := []struct {
		requested, ide string
		want           []string
	}{
		{"Builder", "Codex", []string{"Builder", "Builder 1", "Builder 2"}},
		{"  Big   Builder ", "Codex", []string{"Big Builder", "Big Builder 1", "Big Builder 2"}},
		{"claude", "Claude", []string{code1, code2}},
		{"", "Codex", []string{code1, code2}},
		{"Codex agent", "Codex", []string{code1, code2}},
		{"my-ide", "My IDE", []string{code1, code2}},
	}
	for _, tt := range tests {
		got := SessionNames(tt.requested, "ann/claude", tt.ide, len(tt.want))
		if !slices.Equal(got, tt.want) {
			t.Errorf("SessionNames(%q, ide %q) = %q, want %q", tt.requested, tt.ide, got, tt.want)
		}
	}
	if code1 == code2 {
		t.Error("a key and its second slot share a codename")
	}
}

func TestCanonicalLabel(t *testing.T) {
	t.Parallel()
	tests := []struct{ label, want string }{
		{"Builder | Ann's agent | Codex", "Builder | Ann's agent | Codex"},
		{"  Builder  |  Ann's agent |\tCodex ", "Builder | Ann's agent | Codex"},
		{"Builder\u200b | Ann's\u2060 agent | Codex\ufeff", "Builder | Ann's agent | Codex"},
		{"Build\u00ader", "Builder"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := CanonicalLabel(tt.label); got != tt.want {
			t.Errorf("CanonicalLabel(%q) = %q, want %q", tt.label, got, tt.want)
		}
	}
}
