package actors

import "strings"

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

// parseAttribution reads "<owner>'s agent" or "<owner>' agent".
func parseAttribution(s string) (owner string, ok bool) {
	for _, suffix := range []string{"'s agent", "' agent"} {
		if o, found := strings.CutSuffix(s, suffix); found && strings.TrimSpace(o) != "" {
			return strings.TrimSpace(o), true
		}
	}
	return "", false
}
