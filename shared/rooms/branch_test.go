// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
)

func TestBranchRoomID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		locator, branch, want string
	}{
		{"github.com/O/R", "codex", "git-room:github.com:o/r:branch:Y29kZXg"},
		{"github.com/o/r", "master", "git-room:github.com:o/r:branch:bWFzdGVy"},
		{"github.com/o/r", "Feature/Caps", "git-room:github.com:o/r:branch:RmVhdHVyZS9DYXBz"},
		{"https://GitHub.com/O/R.git", "codex", "git-room:github.com:o/r:branch:Y29kZXg"},
		{"git@github.com:O/R.git", "codex", "git-room:github.com:o/r:branch:Y29kZXg"},
		{"ssh://git@github.com/O/R", "codex", "git-room:github.com:o/r:branch:Y29kZXg"},
		{" github.com/BrosInCode/LetAgents/ ", "main", "git-room:github.com:brosincode/letagents:branch:bWFpbg"},
	}
	for _, tt := range tests {
		t.Run(tt.locator+"@"+tt.branch, func(t *testing.T) {
			t.Parallel()
			got, err := BranchRoomID(tt.locator, tt.branch)
			if err != nil {
				t.Fatalf("BranchRoomID(%q, %q) error = %v, want %q", tt.locator, tt.branch, err, tt.want)
			}
			if got != tt.want {
				t.Fatalf("BranchRoomID(%q, %q) = %q, want %q", tt.locator, tt.branch, got, tt.want)
			}
		})
	}
}

func TestBranchRoomIDRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, locator, branch, wantMsg string
	}{
		{"gitlab", "gitlab.com/o/r", "main", "not a github.com owner/repo locator"},
		{"other host", "example.com/o/r", "main", "not a github.com owner/repo locator"},
		{"owner only", "github.com/o", "main", "not a github.com owner/repo locator"},
		{"host only", "github.com", "main", "not a github.com owner/repo locator"},
		{"lookalike host", "github.com.evil.com/o/r", "main", "not a github.com owner/repo locator"},
		{"named room", "my team room", "main", "not a github.com owner/repo locator"},
		{"branch room as locator", "git-room:github.com:o/r:branch:bWFpbg", "main", "not a github.com owner/repo locator"},
		{"subpath", "github.com/o/r/x", "main", "room id has more than 3 path segments"},
		{"empty locator", "", "main", "room id is empty"},
		{"control in locator", "github.com/o/r\x00", "main", "room id contains a control character"},
		{"empty branch", "github.com/o/r", "", "branch name is empty"},
		{"long branch", "github.com/o/r", strings.Repeat("b", 256), "branch name is longer than 255 bytes"},
		{"long unicode branch", "github.com/o/r", strings.Repeat("é", 128), "branch name is longer than 255 bytes"},
		{"invalid utf8 branch", "github.com/o/r", "main\xff", "branch name is not valid UTF-8"},
		{"id too long", "github.com/" + strings.Repeat("o", 200) + "/" + strings.Repeat("r", 200), strings.Repeat("b", 255), "room id is longer than 512 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := BranchRoomID(tt.locator, tt.branch)
			if err == nil {
				t.Fatalf("BranchRoomID(%q, %q) = %q, want error %q", tt.locator, tt.branch, got, tt.wantMsg)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("BranchRoomID(%q, %q) error = %v, want it to wrap ErrInvalid", tt.locator, tt.branch, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("BranchRoomID(%q, %q) error = %q, want it to contain %q", tt.locator, tt.branch, err, tt.wantMsg)
			}
		})
	}
}

func TestBranchRoundTrip(t *testing.T) {
	t.Parallel()
	branches := []string{
		"main",
		"master",
		"codex",
		"Feature/Caps",
		"feature/caps",
		"FEATURE/CAPS",
		"feature/deep/nested/path",
		"trailing/",
		"/leading",
		"dots..and.git",
		"release-1.2.3",
		"with space",
		" padded ",
		"a:branch:b",
		":branch:",
		"git-room:github.com:o/r:branch:x",
		"ünïcødé",
		"日本語/ブランチ",
		"emoji-🚀",
		"İstanbul",
		"tab\there",
		"a",
		"-",
		"_",
		"=",
		"+/+/",
		strings.Repeat("x", 255),
		strings.Repeat("é", 127),
	}
	seen := make(map[string]string, len(branches))
	for _, branch := range branches {
		t.Run(branch, func(t *testing.T) {
			t.Parallel()
			id, err := BranchRoomID("github.com/Owner/Repo", branch)
			if err != nil {
				t.Fatalf("BranchRoomID(%q) error = %v, want nil", branch, err)
			}
			locator, got, ok := ParseBranchRoom(id)
			if !ok || locator != "github.com/owner/repo" || got != branch {
				t.Fatalf("ParseBranchRoom(%q) = %q, %q, %v; want %q, %q, true", id, locator, got, ok, "github.com/owner/repo", branch)
			}
			if n, err := Normalize(id); err != nil || n != id {
				t.Fatalf("Normalize(%q) = %q, %v; want %q, nil", id, n, err, id)
			}
			if k := KindOf(id); k != letagents.RoomBranch {
				t.Errorf("KindOf(%q) = %v, want %v", id, k, letagents.RoomBranch)
			}
			if name, want := DisplayName(id), "Branch: "+branch; name != want {
				t.Errorf("DisplayName(%q) = %q, want %q", id, name, want)
			}
		})
		// Distinct branches, including ones differing only in case, must
		// get distinct rooms.
		id, err := BranchRoomID("github.com/o/r", branch)
		if err != nil {
			t.Fatalf("BranchRoomID(%q) error = %v, want nil", branch, err)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("BranchRoomID for %q and %q both = %q, want distinct", prev, branch, id)
		}
		seen[id] = branch
	}
}

func TestParseBranchRoomAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, wantLocator, wantBranch string
	}{
		{"git-room:github.com:o/r:branch:Y29kZXg", "github.com/o/r", "codex"},
		{"git-room:github.com:O/R:branch:Y29kZXg", "github.com/o/r", "codex"},
		{"git-room:github.com:o/r:branch:RmVhdHVyZS9DYXBz", "github.com/o/r", "Feature/Caps"},
		{"git-room:github.com:o/r:branch:x:branch:Y29kZXg", "github.com/o/r:branch:x", "codex"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			locator, branch, ok := ParseBranchRoom(tt.id)
			if !ok || locator != tt.wantLocator || branch != tt.wantBranch {
				t.Fatalf("ParseBranchRoom(%q) = %q, %q, %v; want %q, %q, true", tt.id, locator, branch, ok, tt.wantLocator, tt.wantBranch)
			}
		})
	}
}

func TestParseBranchRoomRejects(t *testing.T) {
	t.Parallel()
	enc := func(b string) string { return base64.RawURLEncoding.EncodeToString([]byte(b)) }
	tests := []struct {
		name, id string
	}{
		{"not canonical", "not/canonical"},
		{"garbage", "%%%"},
		{"empty", ""},
		{"prefix only", "git-room:"},
		{"no branch part", "git-room:github.com:o/r"},
		{"empty enc", "git-room:github.com:o/r:branch:"},
		{"padded", "git-room:github.com:o/r:branch:Y29kZXg="},
		{"padded twice", "git-room:github.com:o/r:branch:bWFpbg=="},
		{"percent enc", "git-room:github.com:o/r:branch:%%%"},
		{"std alphabet", "git-room:github.com:o/r:branch:" + base64.RawStdEncoding.EncodeToString([]byte("\xfb\xff"))},
		{"stray low bits", "git-room:github.com:o/r:branch:Y29kZXh"},
		{"impossible length", "git-room:github.com:o/r:branch:Y"},
		{"enc with space", "git-room:github.com:o/r:branch:Y29k ZXg"},
		{"invalid utf8 branch", "git-room:github.com:o/r:branch:" + enc("\xff")},
		{"branch too long", "git-room:github.com:o/r:branch:" + enc(strings.Repeat("b", 256))},
		{"upper prefix", "GIT-ROOM:github.com:o/r:branch:Y29kZXg"},
		{"upper host", "git-room:GitHub.com:o/r:branch:Y29kZXg"},
		{"other host", "git-room:gitlab.com:o/r:branch:Y29kZXg"},
		{"leading space", " git-room:github.com:o/r:branch:Y29kZXg"},
		{"trailing space", "git-room:github.com:o/r:branch:Y29kZXg "},
		{"owner only", "git-room:github.com:o:branch:Y29kZXg"},
		{"empty owner", "git-room:github.com:/r:branch:Y29kZXg"},
		{"empty repo", "git-room:github.com:o/:branch:Y29kZXg"},
		{"extra segment", "git-room:github.com:o/r/x:branch:Y29kZXg"},
		{"repo with .git", "git-room:github.com:o/r.git:branch:Y29kZXg"},
		{"dot owner", "git-room:github.com:./r:branch:Y29kZXg"},
		{"control in owner", "git-room:github.com:o\x00/r:branch:Y29kZXg"},
		{"wrong separator", "git-room:github.com:o/r:tag:Y29kZXg"},
		{"upper separator", "git-room:github.com:o/r:BRANCH:Y29kZXg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if locator, branch, ok := ParseBranchRoom(tt.id); ok || locator != "" || branch != "" {
				t.Fatalf("ParseBranchRoom(%q) = %q, %q, %v; want \"\", \"\", false", tt.id, locator, branch, ok)
			}
		})
	}
}
