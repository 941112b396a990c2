package actors

import (
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// Participant is someone a room has seen: an agent, by its live session
// or by the actor label it posted under, or a person who posted.
type Participant struct {
	// Key tells participants apart: "agent:<label>" or "human:login:<name>",
	// lower-cased with white space collapsed, as the original keys them.
	Key         string
	Human       bool
	ActorLabel  string // agents only
	GitHubLogin string // people only: the name they posted under
	DisplayName string
	OwnerLabel  string
	IDELabel    string
	FirstSeenAt time.Time
	LastSeenAt  time.Time
	// Session is the agent's live session, if it has one.
	Session *letagents.AgentSession
	// Posted: seen among the room's recent messages.
	Posted bool
}

// Roster lists a room's participants, most recently seen first (then by
// display name), as the original derives them from room history: its live
// worker sessions, and the senders of its recent messages. A message is a
// person's when a browser sent it, or when its sender is no actor label
// ("Name | Owner's agent | IDE", or the older "Name (Owner's agent)") and
// no agent vouched for it; the server's own lines are nobody's.
func Roster(sessions []letagents.AgentSession, recent []letagents.Message) []Participant {
	byKey := map[string]*Participant{}
	var order []*Participant
	add := func(p Participant) {
		have, ok := byKey[p.Key]
		if !ok {
			order = append(order, &p)
			byKey[p.Key] = &p
			return
		}
		// The session knows an agent best; else the latest spelling wins.
		if p.Session != nil || (have.Session == nil && p.LastSeenAt.After(have.LastSeenAt)) {
			have.Session, have.ActorLabel, have.GitHubLogin = p.Session, p.ActorLabel, p.GitHubLogin
			have.DisplayName, have.OwnerLabel, have.IDELabel = p.DisplayName, p.OwnerLabel, p.IDELabel
		}
		have.Posted = have.Posted || p.Posted
		have.FirstSeenAt = earliest(have.FirstSeenAt, p.FirstSeenAt)
		if p.LastSeenAt.After(have.LastSeenAt) {
			have.LastSeenAt = p.LastSeenAt
		}
	}
	for i := range sessions {
		s := &sessions[i]
		if !s.Live() || s.Kind != letagents.SessionWorker {
			continue
		}
		add(Participant{Key: agentKey(s.ActorLabel), ActorLabel: s.ActorLabel, DisplayName: s.DisplayName,
			OwnerLabel: s.OwnerLabel, IDELabel: s.IDELabel, FirstSeenAt: s.CreatedAt, LastSeenAt: s.LastSeenAt, Session: s})
	}
	for _, m := range recent {
		sender := strings.Join(strings.Fields(m.Sender), " ")
		if sender == "" || m.Source == letagents.SourceSystem || letagents.ReservedSender(sender) || strings.EqualFold(sender, "system") {
			continue
		}
		display, owner, ide := ParseActorLabel(sender)
		isAgent := m.Source == letagents.SourceAgent || (m.Source != letagents.SourceBrowser && (owner != "" || ide != ""))
		p := Participant{FirstSeenAt: m.CreatedAt, LastSeenAt: m.CreatedAt, Posted: true}
		if isAgent {
			p.Key, p.ActorLabel, p.DisplayName, p.OwnerLabel, p.IDELabel = agentKey(sender), sender, display, owner, ide
		} else {
			p.Key, p.Human, p.GitHubLogin, p.DisplayName = "human:login:"+strings.ToLower(sender), true, sender, sender
		}
		add(p)
	}
	out := make([]Participant, len(order))
	for i, p := range order {
		out[i] = *p
	}
	slices.SortStableFunc(out, func(a, b Participant) int {
		if c := b.LastSeenAt.Compare(a.LastSeenAt); c != 0 {
			return c
		}
		return strings.Compare(a.DisplayName, b.DisplayName)
	})
	return out
}

// agentKey keys an agent by its label, compared as CanonicalLabel does,
// ignoring case.
func agentKey(label string) string {
	return "agent:" + strings.ToLower(CanonicalLabel(label))
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
