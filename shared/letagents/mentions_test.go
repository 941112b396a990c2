package letagents

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMentions(t *testing.T) {
	t.Parallel()
	many := ""
	for i := range MaxMentions + 5 {
		many += " @a" + strings.Repeat("x", i)
	}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"none", "no names here", nil},
		{"one", "@Builder can you look?", []string{"builder"}},
		{"sentence end", "ask @Reviewer.", []string{"reviewer"}},
		{"punctuation", "(@calm-otter, @Bold_Fox!)", []string{"calm-otter", "bold_fox"}},
		{"repeated", "@Builder @builder @BUILDER", []string{"builder"}},
		{"order kept", "@b then @a then @b", []string{"b", "a"}},
		{"e-mail", "write to ann@example.com", nil},
		{"double at", "@@bob", nil},
		{"bare at", "@ nobody, @.", nil},
		{"inline code", "run `@Builder` then @Reviewer", []string{"reviewer"}},
		{"fenced code", "see\n```\n@Builder\n```\n@Reviewer", []string{"reviewer"}},
		{"label", "@[Builder  |  ann's agent | Claude] please", []string{"builder | ann's agent | claude"}},
		{"unclosed label", "@[Builder no end", []string{}},
		{"label too long", "@[" + strings.Repeat("x", maxBracketMention+1) + "]", []string{}},
		{"start of line", "line one\n@Builder", []string{"builder"}},
		{"non-ASCII name", "@Bäcker and @[Bäcker]", []string{"bäcker"}},
		{"bounded", many, nil},
	}
	for _, tt := range tests {
		got := ParseMentions(tt.text)
		if tt.name == "bounded" {
			if len(got) != MaxMentions {
				t.Errorf("%s: %d mentions, want at most %d", tt.name, len(got), MaxMentions)
			}
			continue
		}
		if len(got) != 0 || len(tt.want) != 0 {
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: ParseMentions(%q) = %q, want %q", tt.name, tt.text, got, tt.want)
			}
		}
	}
}

func TestMentionName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ display, want string }{
		{"Builder", "builder"},
		{"Calm Otter", "calmotter"},
		{"calm-otter", "calm-otter"},
		{"Dr. Who.", "dr.who"},
		{"---", ""},
		{"日本", ""},
		{"R2 D2!", "r2d2"},
	} {
		if got := MentionName(tt.display); got != tt.want {
			t.Errorf("MentionName(%q) = %q, want %q", tt.display, got, tt.want)
		}
	}
}

func TestParseUnreadFilter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in      string
		want    UnreadFilter
		invalid bool
	}{{"", UnreadAll, false}, {"all", UnreadAll, false}, {"addressed", UnreadAddressed, false}, {"mentions", "", true}} {
		got, err := ParseUnreadFilter(tt.in)
		if got != tt.want || (err != nil) != tt.invalid || err != nil && !IsKind(err, Invalid) {
			t.Errorf("ParseUnreadFilter(%q) = %q, %v; want %q, invalid %v", tt.in, got, err, tt.want, tt.invalid)
		}
	}
}
