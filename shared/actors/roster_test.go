package actors_test

import (
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/letagents"
)

func TestRoster(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	builder := letagents.AgentSession{ID: 1, Kind: letagents.SessionWorker, ActorLabel: "Builder | Bob's agent | Codex",
		DisplayName: "Builder", OwnerLabel: "Bob", IDELabel: "Codex", CreatedAt: at(1), LastSeenAt: at(2)}
	watcher := builder
	watcher.ID, watcher.Kind, watcher.ActorLabel = 2, letagents.SessionController, "Watcher | Bob's agent | Codex"
	ended := builder
	ended.ID, ended.ActorLabel, ended.EndedAt = 3, "Gone | Bob's agent | Codex", at(3)
	msg := func(s int, sender, source string) letagents.Message {
		return letagents.Message{Seq: int64(s), Sender: sender, Source: source, CreatedAt: at(s)}
	}
	type want struct {
		key, display, owner, ide string
		human, session, posted   bool
	}
	tests := []struct {
		name     string
		sessions []letagents.AgentSession
		msgs     []letagents.Message
		want     []want
	}{
		{"nobody", nil, nil, nil},
		{"live workers only", []letagents.AgentSession{builder, watcher, ended}, nil,
			[]want{{key: "agent:builder | bob's agent | codex", display: "Builder", owner: "Bob", ide: "Codex", session: true}}},
		{"people and agents who posted, newest first", nil, []letagents.Message{
			msg(10, "ann", ""),
			msg(11, "Scout | Carol's agent | Claude", ""),
			msg(12, "Old (Dan's agent)", ""),
			msg(13, "Ann", letagents.SourceBrowser),
			msg(14, "letagents", letagents.SourceSystem),
			msg(15, "LetAgents", ""),
			msg(16, "system", ""),
			msg(17, "  ", ""),
			msg(18, "Plain Name", letagents.SourceAgent),
		}, []want{
			{key: "agent:plain name", display: "Plain Name", posted: true},
			{key: "human:login:ann", display: "Ann", human: true, posted: true}, // the latest spelling
			{key: "agent:old (dan's agent)", display: "Old", owner: "Dan", posted: true},
			{key: "agent:scout | carol's agent | claude", display: "Scout", owner: "Carol", ide: "Claude", posted: true},
		}},
		{"a worker that posted is one participant", []letagents.AgentSession{builder}, []letagents.Message{
			msg(5, "builder  |  BOB's agent | Codex", ""),
			msg(6, "cy", ""),
		}, []want{
			{key: "human:login:cy", display: "cy", human: true, posted: true},
			{key: "agent:builder | bob's agent | codex", display: "Builder", owner: "Bob", ide: "Codex", session: true, posted: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := actors.Roster(tt.sessions, tt.msgs)
			if len(got) != len(tt.want) {
				t.Fatalf("Roster = %+v, want %d participants", got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Key != w.key || g.DisplayName != w.display || g.OwnerLabel != w.owner || g.IDELabel != w.ide ||
					g.Human != w.human || (g.Session != nil) != w.session || g.Posted != w.posted {
					t.Errorf("participant %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
	// A worker seen first as a session and last in a message keeps both
	// ends of its time in the room.
	got := actors.Roster([]letagents.AgentSession{builder}, []letagents.Message{msg(9, builder.ActorLabel, letagents.SourceAgent)})
	if len(got) != 1 || !got[0].FirstSeenAt.Equal(at(1)) || !got[0].LastSeenAt.Equal(at(9)) {
		t.Errorf("merged worker = %+v, want first seen %v, last %v", got, at(1), at(9))
	}
}
