// Package rooms owns the room-id rules shared by the LetAgents server and
// MCP client, so both sides agree on what names the same room.
package rooms

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzNormalize(f *testing.F) {
	seeds := []string{
		"git@github.com:BrosInCode/LetAgents.git",
		"https://GitHub.com/Owner/Repo/",
		"ssh://git@github.com/o/r.git",
		"https://GitLab.com/Group/Proj",
		"feh7-ywh4-zyt3",
		"  my team room ",
		"example.com/A/B",
		"git-room:github.com:o/r:branch:Y29kZXg",
		"git-room:github.com:O/R:branch:RmVhdHVyZS9DYXBz",
		"git-room:github.com:a@b.c:x/r:branch:bWFpbg",
		"GIT-ROOM:github.com:o/r:branch:Y29kZXg",
		"https://https://github.com/o/r",
		"ssh://https://git@github.com/o/r",
		"r.git.git",
		"r/.git/",
		"a / /",
		"a//b",
		"/",
		"..",
		"a@b.c:d@e.f:g",
		"x@a.b:/abs",
		"GİTHUB.COM/o/r.GİT",
		"Bitbuc\u212Aet.org/Team",
		"a\x00b",
		"\xff",
		"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Normalize(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Normalize(%q) error = %v, want it to wrap ErrInvalid", in, err)
			}
			if got != "" {
				t.Fatalf("Normalize(%q) = %q with error %v, want empty id", in, got, err)
			}
			return
		}
		if len(got) > MaxIDLength {
			t.Fatalf("Normalize(%q) = %q, %d bytes, want <= %d", in, got, len(got), MaxIDLength)
		}
		if n := strings.Count(got, "/") + 1; n > MaxSegments {
			t.Fatalf("Normalize(%q) = %q, %d segments, want <= %d", in, got, n, MaxSegments)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Normalize(%q) = %q, want valid UTF-8", in, got)
		}
		again, err := Normalize(got)
		if err != nil || again != got {
			t.Fatalf("Normalize(Normalize(%q)) = %q, %v; want %q, nil", in, again, err, got)
		}
		// The classifiers must not panic on any canonical id either.
		_ = KindOf(got)
		_ = DisplayName(got)
	})
}
