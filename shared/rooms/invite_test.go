// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"testing"
	"testing/iotest"

	"github.com/letagents/letagents-go/shared/letagents"
)

var inviteShape = regexp.MustCompile(`^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$`)

func TestNewInviteCode(t *testing.T) {
	t.Parallel()
	const n = 1000
	seen := make(map[string]bool, n)
	for range n {
		code, err := NewInviteCode()
		if err != nil {
			t.Fatalf("NewInviteCode() error = %v, want nil", err)
		}
		if !inviteShape.MatchString(code) {
			t.Fatalf("NewInviteCode() = %q, want shape XXXX-XXXX-XXXX over A-Z0-9", code)
		}
		if !IsInviteCode(code) {
			t.Fatalf("IsInviteCode(%q) = false, want true", code)
		}
		if got, err := Normalize(code); err != nil || got != code {
			t.Fatalf("Normalize(%q) = %q, %v; want %q, nil", code, got, err, code)
		}
		if KindOf(code) != letagents.RoomInvite {
			t.Fatalf("KindOf(%q) = %v, want %v", code, KindOf(code), letagents.RoomInvite)
		}
		if seen[code] {
			t.Fatalf("NewInviteCode() returned %q twice in %d codes", code, n)
		}
		seen[code] = true
	}
}

func TestNewInviteCodeSampling(t *testing.T) {
	t.Parallel()
	// Every read fills a 24-byte buffer; bytes >= 252 must be skipped and
	// the rest mapped by b % 36.
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{
			name: "all accepted",
			in:   seq(0, 24),
			want: "ABCD-EFGH-IJKL",
		},
		{
			name: "modulo wraps",
			in:   append([]byte{36, 37, 38, 39, 72, 73, 74, 75, 251, 250, 215, 216}, make([]byte, 12)...),
			want: "ABCD-ABCD-989A",
		},
		{
			name: "biased bytes rejected",
			in:   append([]byte{252, 253, 254, 255, 0, 255, 1, 2, 3, 252, 4, 5, 6, 7, 8, 9, 10, 11}, make([]byte, 6)...),
			want: "ABCD-EFGH-IJKL",
		},
		{
			name: "second read after a rejected batch",
			in:   append(bytes.Repeat([]byte{255}, 24), seq(0, 24)...),
			want: "ABCD-EFGH-IJKL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newInviteCode(bytes.NewReader(tt.in))
			if err != nil {
				t.Fatalf("newInviteCode() error = %v, want nil", err)
			}
			if got != tt.want {
				t.Fatalf("newInviteCode() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewInviteCodeReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name string
		in   []byte
	}{
		{"immediately", nil},
		{"after a rejected batch", bytes.Repeat([]byte{255}, 24)},
		{"short read", seq(0, 5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := io.MultiReader(bytes.NewReader(tt.in), iotest.ErrReader(boom))
			got, err := newInviteCode(r)
			if err == nil {
				t.Fatalf("newInviteCode() = %q, want error", got)
			}
			if !errors.Is(err, boom) {
				t.Errorf("newInviteCode() error = %v, want it to wrap %v", err, boom)
			}
			if got != "" {
				t.Errorf("newInviteCode() code = %q on error, want empty", got)
			}
		})
	}
}

func TestInviteAlphabetUniform(t *testing.T) {
	t.Parallel()
	// Uniformity holds only if every character is hit by the same number
	// of accepted byte values.
	counts := make(map[byte]int)
	for b := range inviteLimit {
		counts[inviteAlphabet[b%len(inviteAlphabet)]]++
	}
	if got, want := len(counts), 36; got != want {
		t.Fatalf("alphabet has %d distinct characters, want %d", got, want)
	}
	for c, n := range counts {
		if n != inviteLimit/36 {
			t.Errorf("character %q is drawn by %d byte values, want %d", c, n, inviteLimit/36)
		}
	}
	if got, want := inviteLimit, 252; got != want {
		t.Errorf("inviteLimit = %d, want %d", got, want)
	}
}

func TestIsInviteCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"FEH7-YWH4-ZYT3", true},
		{"feh7-ywh4-zyt3", true},
		{"FeH7-yWh4-ZyT3", true},
		{"ABCD-EFGH", true},
		{"0000-0000", true},
		{"ABCD", false},
		{"ABCD-", false},
		{"ABCD-EFG", false},
		{"ABCD-EFGH-", false},
		{"ABCD-EFGH-IJK", false},
		{"ABCD-EFGH-IJKLM", false},
		{"ABCD-EFGH-IJKL-MNOP", false},
		{"ABCDEFGHI", false},
		{"ABCD_EFGH", false},
		{"ABCD--EFG", false},
		{"-ABCD-EFG", false},
		{"ABÇD-EFGH", false},
		{"ABCD-EF H", false},
		{" ABCD-EFGH", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := IsInviteCode(tt.in); got != tt.want {
				t.Errorf("IsInviteCode(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// seq returns the bytes from, from+1, ..., from+n-1.
func seq(from, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(from + i)
	}
	return b
}

func TestNamedRoomOf(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"TEAM-CHAT", "team-chat"},
		{"team-chat", "team-chat"},
		{"Demo-Room", "demo-room"},
		{"1234-5678", "1234-5678"},
		{"FEH7-YWH4-ZYT3", "feh7-ywh4-zyt3"},
	}
	for _, tt := range tests {
		if got := NamedRoomOf(tt.in); got != tt.want {
			t.Errorf("NamedRoomOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMayBeNamed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"team-chat", true},
		{"DEMO-ROOM", true},
		{"1234-5678", true},
		{"FEH7-YWH4-ZYT3", false}, // a minted code's shape
		{"feh7-ywh4-zyt3", false},
		{"team-chat-room", false}, // not invite-shaped at all
		{"github.com/o/r", false},
	}
	for _, tt := range tests {
		if got := MayBeNamed(tt.in); got != tt.want {
			t.Errorf("MayBeNamed(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
