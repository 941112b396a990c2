package actors

import (
	"strconv"
	"strings"
	"unicode"
)

const labelSep = " | "

// ActorLabel formats the label an agent signs its messages and tasks with:
// "<display> | <owner>'s agent | <ide>", or "<owner>' agent" when the owner
// label ends in "s" ("James' agent"). An empty owner or ide drops that
// part, so ActorLabel("River", "", "") is just "River".
func ActorLabel(display, owner, ide string) string {
	parts := []string{strings.TrimSpace(display)}
	if owner = strings.TrimSpace(owner); owner != "" {
		parts = append(parts, ownerAttribution(owner))
	}
	if ide = strings.TrimSpace(ide); ide != "" {
		parts = append(parts, ide)
	}
	return strings.Join(parts, labelSep)
}

// ownerAttribution is the middle part of an actor label.
func ownerAttribution(owner string) string {
	if strings.HasSuffix(owner, "s") || strings.HasSuffix(owner, "S") {
		return owner + "' agent"
	}
	return owner + "'s agent"
}

// ParseActorLabel splits an actor label into its parts. It reads the
// current form "<display> | <owner>'s agent | <ide>" (either part after the
// display may be missing), the legacy form "<display> (<owner>'s agent)",
// and anything else as a bare display name with owner and ide "". display
// is the label's primary part, the one to show where space is short.
func ParseActorLabel(label string) (display, owner, ide string) {
	label = strings.TrimSpace(label)
	if strings.Contains(label, labelSep) {
		parts := strings.Split(label, labelSep)
		display = strings.TrimSpace(parts[0])
		for _, p := range parts[1:] {
			p = strings.TrimSpace(p)
			if o, ok := parseAttribution(p); ok && owner == "" {
				owner = o
			} else if ide == "" {
				ide = p
			}
		}
		return display, owner, ide
	}
	if head, ok := strings.CutSuffix(label, ")"); ok {
		if i := strings.LastIndex(head, " ("); i > 0 {
			if o, ok := parseAttribution(head[i+2:]); ok {
				return strings.TrimSpace(head[:i]), o, ""
			}
		}
	}
	return label, "", ""
}

// CanonicalLabel is the form two labels are compared in to tell whether
// they name the same agent: invisible characters (zero-width spaces and
// the like) dropped and runs of spaces made one, so that neither can make
// a copy of another's label that reads the same yet compares unequal.
// Comparisons also ignore case.
func CanonicalLabel(label string) string {
	visible := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, label)
	return strings.Join(strings.Fields(visible), " ")
}

// parseAttribution reads "<owner>'s agent" or "<owner>' agent".
func parseAttribution(s string) (owner string, ok bool) {
	for _, suffix := range []string{"'s agent", "' agent"} {
		if o, found := strings.CutSuffix(s, suffix); found && strings.TrimSpace(o) != "" {
			return strings.TrimSpace(o), true
		}
	}
	return "", false
}

// genericWords are names that say what an agent runs on, not who it is:
// a room full of "claude"s would tell nobody apart.
var genericWords = map[string]bool{"antigravity": true, "codex": true, "agent": true, "worker": true, "local": true,
	"claude": true, "cursor": true, "cline": true, "roo": true, "gemini": true}

// Generic reports whether a requested display name is empty or made only
// of generic words (or of the words of the agent's IDE label).
func Generic(name, ideLabel string) bool {
	ide := map[string]bool{}
	for _, w := range words(ideLabel) {
		ide[w] = true
	}
	for _, w := range words(name) {
		if !genericWords[w] && !ide[w] {
			return false
		}
	}
	return true
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
}

// SessionNames are the display names a session in a room tries, in order,
// until one is free among the room's live agents: the requested name, then
// "<name> 1", "<name> 2", …; a generic name instead gets the codename of
// the agent's key, then of "<key>:1", "<key>:2", …, as the original
// numbers them.
func SessionNames(requested, agentKey, ideLabel string, n int) []string {
	requested = strings.Join(strings.Fields(requested), " ")
	out := make([]string, 0, n)
	generic := Generic(requested, ideLabel)
	for k := 0; len(out) < n; k++ {
		switch {
		case generic && k == 0:
			display, _ := Codename(agentKey)
			out = append(out, display)
		case generic:
			display, _ := Codename(agentKey + ":" + strconv.Itoa(k))
			out = append(out, display)
		case k == 0:
			out = append(out, requested)
		default:
			out = append(out, requested+" "+strconv.Itoa(k))
		}
	}
	return out
}
