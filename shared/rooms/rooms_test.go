// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"errors"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
)

func TestNormalizeAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		// Examples from the design.
		{"git@github.com:BrosInCode/LetAgents.git", "github.com/brosincode/letagents"},
		{"https://GitHub.com/Owner/Repo/", "github.com/owner/repo"},
		{"ssh://git@github.com/o/r.git", "github.com/o/r"},
		{"https://GitLab.com/Group/Proj", "gitlab.com/Group/Proj"},
		{"feh7-ywh4-zyt3", "FEH7-YWH4-ZYT3"},
		{"  my team room ", "my team room"},
		{"example.com/A/B", "example.com/A/B"},

		// Schemes and clone URL forms.
		{"http://github.com/O/R", "github.com/o/r"},
		{"HTTPS://github.com/o/r.GIT", "github.com/o/r"},
		{"HtTp://GITHUB.COM/O/R", "github.com/o/r"},
		{"git@github.com:o/r", "github.com/o/r"},
		{"ssh://git@GitHub.com/O/R.git/", "github.com/o/r"},
		{"SSH://git@github.com/o/r", "github.com/o/r"},
		{"ssh://github.com/o/r", "github.com/o/r"},
		{"https://git@github.com:O/R.git", "github.com/o/r"},
		// Credentials and ports never become part of a room id.
		{"https://user:ghp_secret@github.com/O/R.git", "github.com/o/r"},
		{"https://x-access-token:t0k@gitlab.com/Group/Proj", "gitlab.com/Group/Proj"},
		{"ssh://git@github.com:22/O/R.git", "github.com/o/r"},
		{"https://github.com:443/o/r", "github.com/o/r"},
		{"http://deploy:pw@git.example.com:8080/Team/Repo", "git.example.com/Team/Repo"},
		{"https://https://github.com/o/r", "github.com/o/r"},
		{"https:// github.com/o/r", "github.com/o/r"},
		{"ssh://git@gitlab.com/Group/Proj.git", "gitlab.com/Group/Proj"},
		{"git@gitlab.com:Group/Proj.git", "gitlab.com/Group/Proj"},
		{"https://bitbucket.org/Team/Repo.git", "bitbucket.org/Team/Repo"},
		{"BitBucket.ORG/Team/Repo", "bitbucket.org/Team/Repo"},
		{"deploy@git.Example.com:Team/Repo.git", "git.Example.com/Team/Repo"},
		{"https://Example.com/A/B.git", "Example.com/A/B"},

		// Host-only and short forms.
		{"github.com", "github.com"},
		{"GitHub.com/Owner", "github.com/owner"},
		{"GitLab.com", "gitlab.com"},

		// Suffix clean-up reaches a fixed point.
		{"github.com/o/r///", "github.com/o/r"},
		{"github.com/o/r.git/", "github.com/o/r"},
		{"github.com/o/r/.git", "github.com/o/r"},
		{"r.git.git", "r"},
		{"r .git", "r"},
		{"lobby /", "lobby"},

		// Invite codes.
		{"abcd-efgh", "ABCD-EFGH"},
		{"AbC1-2dEf-gh34", "ABC1-2DEF-GH34"},
		{" feh7-ywh4-zyt3\n", "FEH7-YWH4-ZYT3"},
		{"abcd-efgh-ijkl-mnop", "abcd-efgh-ijkl-mnop"},
		{"abcd_efgh", "abcd_efgh"},

		// Named rooms keep their case and inner spacing.
		{"Lobby", "Lobby"},
		{"\tLobby\n", "Lobby"},
		{"team/a/b", "team/a/b"},
		{"team/a/b/c", "team/a/b/c"},
		{"git@gitlab.com:Group/Sub/Proj.git", "gitlab.com/Group/Sub/Proj"},
		{"https://GitLab.com/g/s1/s2/s3/p", "gitlab.com/g/s1/s2/s3/p"},
		{strings.Repeat("a/", MaxSegments-1) + "a", strings.Repeat("a/", MaxSegments-1) + "a"},
		{"a / b", "a / b"},
		{"café", "café"},
		{"日本語/部屋", "日本語/部屋"},
		{"a@b", "a@b"},
		{"me@home:x", "me@home:x"},
		{"git@host.com:/abs/path", "git@host.com:/abs/path"},
		{"...", "..."},
		{"a/.b", "a/.b"},
		{"Bitbuc\u212Aet.org/Team", "Bitbuc\u212Aet.org/Team"}, // Kelvin sign is not an ASCII k
		{"GİTHUB.COM/X", "GİTHUB.COM/X"},
		{strings.Repeat("a", MaxIDLength), strings.Repeat("a", MaxIDLength)},
		{"https://" + strings.Repeat("a", MaxIDLength), strings.Repeat("a", MaxIDLength)},

		// Branch rooms are re-derived, lower-casing owner/repo only.
		{"git-room:github.com:o/r:branch:Y29kZXg", "git-room:github.com:o/r:branch:Y29kZXg"},
		{"git-room:github.com:O/R:branch:RmVhdHVyZS9DYXBz", "git-room:github.com:o/r:branch:RmVhdHVyZS9DYXBz"},
		{"  git-room:github.com:o/r:branch:bWFzdGVy\t", "git-room:github.com:o/r:branch:bWFzdGVy"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize(%q) error = %v, want %q", tt.in, err, tt.want)
			}
			if got != tt.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := Normalize(got)
			if err != nil || again != got {
				t.Fatalf("Normalize(%q) = %q, %v; want %q, nil (idempotent)", got, again, err, got)
			}
		})
	}
}

func TestNormalizeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "room id is empty"},
		{"blank", " \t\n ", "room id is empty"},
		{"bare slash", "/", "room id is empty"},
		{"slashes", "///", "room id is empty"},
		{"scheme only", "https://", "room id is empty"},
		{"ssh user only", "ssh://git@", "room id is empty"},
		{"dot git only", ".git", "room id is empty"},
		{"double slash", "a//b", "room id has an empty path segment"},
		{"leading slash", "/a", "room id has an empty path segment"},
		{"empty owner", "github.com//r", "room id has an empty path segment"},
		{"too many segments", strings.Repeat("a/", MaxSegments) + "a", "room id has more than 24 path segments"},
		{"bitbucket subpath", "https://bitbucket.org/team/repo/src", "room id has more than 3 path segments"},
		{"repo subpath", "https://github.com/o/r/tree/main", "room id has more than 3 path segments"},
		{"scp subpath", "git@github.com:o/r/x", "room id has more than 3 path segments"},
		{"too long", strings.Repeat("a", MaxIDLength+1), "room id is longer than 512 bytes"},
		{"too long after lowering", "github.com/" + strings.Repeat("A", MaxIDLength), "room id is longer than 512 bytes"},
		{"nul", "a\x00b", "room id contains a control character"},
		{"inner tab", "a\tb", "room id contains a control character"},
		{"inner newline", "a\nb", "room id contains a control character"},
		{"del", "a\x7fb", "room id contains a control character"},
		{"c1 control", "a\u0085b", "room id contains a control character"},
		{"escape", "\x1b[31mred", "room id contains a control character"},
		{"invalid utf8", "a\xffb", "room id is not valid UTF-8"},
		{"truncated rune", "caf\xc3", "room id is not valid UTF-8"},
		{"dot", ".", `room id has a "." or ".." path segment`},
		{"dot dot", "..", `room id has a "." or ".." path segment`},
		{"dot dot inside", "a/../b", `room id has a "." or ".." path segment`},
		{"trailing dot", "a/.", `room id has a "." or ".." path segment`},
		{"branch junk", "git-room:nope", "malformed branch room id"},
		{"branch upper prefix", "GIT-ROOM:github.com:o/r:branch:Y29kZXg", "malformed branch room id"},
		{"branch empty enc", "git-room:github.com:o/r:branch:", "malformed branch room id"},
		{"branch padded", "git-room:github.com:o/r:branch:Y29kZXg=", "malformed branch room id"},
		{"branch gitlab", "git-room:gitlab.com:o/r:branch:Y29kZXg", "malformed branch room id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Normalize(tt.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %q, want error %q", tt.in, got, tt.wantMsg)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Normalize(%q) error = %v, want it to wrap ErrInvalid", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Normalize(%q) error = %q, want it to contain %q", tt.in, err, tt.wantMsg)
			}
			if got != "" {
				t.Errorf("Normalize(%q) id = %q on error, want empty", tt.in, got)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want letagents.RoomKind // as the rooms table stores it
	}{
		{"my team room", "named"},
		{"team/a/b", "named"},
		{"github.com/o", "named"},
		{"git-room:github.com:o/r:branch:", "named"},
		{"FEH7-YWH4-ZYT3", "invite"},
		{"ABCD-EFGH", "invite"},
		{"feh7-ywh4-zyt3", "invite"},
		{"github.com/o/r", "repo"},
		{"gitlab.com/Group/Proj", "repo"},
		{"example.com/A/B", "repo"},
		{"gitlab.com/Group/Sub/Proj", "repo"},
		{"team/a/b/c", "named"},
		{"git-room:github.com:o/r:branch:Y29kZXg", "branch"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			if got := KindOf(tt.id); got != tt.want {
				t.Errorf("KindOf(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestSplitRepoLocator(t *testing.T) {
	t.Parallel()
	tests := []struct{ locator, host, owner, repo string }{
		{"github.com/o/r", "github.com", "o", "r"},
		{"gitlab.com/group/sub/proj", "gitlab.com", "group/sub", "proj"},
		{"git.example.com/a/b/c/d", "git.example.com", "a/b/c", "d"},
	}
	for _, tt := range tests {
		if h, o, r := SplitRepoLocator(tt.locator); h != tt.host || o != tt.owner || r != tt.repo {
			t.Errorf("SplitRepoLocator(%q) = %q %q %q, want %q %q %q", tt.locator, h, o, r, tt.host, tt.owner, tt.repo)
		}
	}
}

func TestPathOf(t *testing.T) {
	t.Parallel()
	tests := []struct{ id, want string }{
		{"lobby", "lobby"},
		{"team chat", "team%20chat"},
		{"github.com/o/r", "github.com/o/r"},
		{"a b/c?d/e#f", "a%20b/c%3Fd/e%23f"},
		{"gitlab.com/group/sub/proj", "gitlab.com%2Fgroup%2Fsub%2Fproj"},
		{"git-room:github.com:o/r:branch:Y29kZXg", "git-room:github.com:o/r:branch:Y29kZXg"},
	}
	for _, tt := range tests {
		if got := PathOf(tt.id); got != tt.want {
			t.Errorf("PathOf(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestIsRepoLocator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want bool
	}{
		{"github.com/o/r", true},
		{"GitHub.com/O/R", true},
		{"git.example-host.co.uk/team/repo", true},
		{"10.0.0.1/o/r", true},
		{"github.com/o", false},
		{"github.com/o/r/x", false},
		{"BitBucket.org/t/r/x", false},
		{"gitlab.com/group/sub/proj", true},
		{"git.example.com/a/b/c/d", true},
		{"gitlab.com/group//proj", false},
		{"localhost/o/r", false},
		{"team/a/b", false},
		{"git@github.com/o/r", false},
		{"github.com:22/o/r", false},
		{"exa mple.com/o/r", false},
		{"github.com//r", false},
		{"github.com/o/", false},
		{"/o/r", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			if got := IsRepoLocator(tt.id); got != tt.want {
				t.Errorf("IsRepoLocator(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}
