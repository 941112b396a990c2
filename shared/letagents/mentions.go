package letagents

import (
	"strings"
	"unicode/utf8"
)

// MaxMentions bounds the distinct @mentions of one message that are
// resolved: a message naming more names no more agents.
const MaxMentions = 20

// maxBracketMention bounds the label of an "@[…]" mention, in bytes: an
// actor label is far shorter, and a stray "@[" must not swallow a text.
const maxBracketMention = 200

// ParseMentions lists the @mentions of a message's text, each once, in
// the order they first appear and at most MaxMentions, as the keys the
// store resolves them by (see MentionName):
//
//   - "@Name" mentions the agent whose display name is Name: the key is
//     the run of letters, digits, '.', '_' and '-' after the '@', in
//     lower case and without a trailing '.' (the end of a sentence),
//     unless letters outside ASCII follow it;
//   - "@[Builder | ann's agent | Claude]" mentions the agent of that
//     actor label: the key is the label with its spaces collapsed, in
//     lower case.
//
// An '@' inside a word (an e-mail address), in inline code or in a
// fenced code block mentions nobody.
func ParseMentions(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(key string) {
		if key != "" && !seen[key] && len(out) < MaxMentions {
			seen[key] = true
			out = append(out, key)
		}
	}
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		inCode := false
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case c == '`':
				inCode = !inCode
			case c != '@' || inCode || i > 0 && (isNameByte(line[i-1]) || line[i-1] == '@'):
			case i+1 < len(line) && line[i+1] == '[':
				end := strings.IndexByte(line[i+2:], ']')
				if end < 0 || end > maxBracketMention {
					continue
				}
				add(labelKey(line[i+2 : i+2+end]))
				i += 2 + end
			default:
				j := i + 1
				for j < len(line) && isNameByte(line[j]) {
					j++
				}
				// A name that runs on into letters outside ASCII is
				// not the one its ASCII part spells: @[…] mentions it.
				if j == len(line) || line[j] < utf8.RuneSelf {
					add(MentionName(line[i+1 : j]))
				}
				i = j - 1
			}
		}
	}
	return out
}

// MentionName is the key an "@Name" mention of a display name resolves
// by: the name's letters, digits, '.', '_' and '-', in lower case, without
// trailing dots; "" when nothing is left or no letter or digit is among
// it. The store computes the same key of every session's display name
// (store.mentionNameSQL).
func MentionName(display string) string {
	var b strings.Builder
	named := false
	for i := 0; i < len(display); i++ {
		if c := display[i]; isNameByte(c) {
			b.WriteByte(c)
			named = named || c != '.' && c != '_' && c != '-'
		}
	}
	if !named {
		return ""
	}
	return strings.ToLower(strings.TrimRight(b.String(), "."))
}

// labelKey is the key of an "@[label]" mention: the label with its white
// space collapsed, in lower case, as actor labels are compared.
func labelKey(label string) string {
	if !utf8.ValidString(label) {
		return ""
	}
	return strings.ToLower(strings.Join(strings.Fields(label), " "))
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
