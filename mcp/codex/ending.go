package codex

import (
	"context"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/wire"
)

// Sessions ends a worker's agent session; *apiclient.Client is one.
type Sessions interface {
	DisconnectSession(ctx context.Context, roomID string, creds wire.SessionCredentials) (wire.Disconnected, error)
}

// Room is where a live session's progress and ending are posted.
type Room struct {
	Activity Activity
	// Reasoning is nil to post no reasoning, only native activity.
	Reasoning Reasoning
	// Sessions is nil to leave the worker's agent session open.
	Sessions Sessions
}

// outcome is how a live session ended, as the room and the state file
// are told.
type outcome struct {
	presence  string // idle or blocked
	reason    string // one line for the room
	status    string // the live session's: completed, interrupted or failed
	lastError string // for a failure: the turn's error or the exit status
	method    string // the native activity reported last
}

// Outcomes of the endings that do not depend on what Codex said.
var (
	stoppedOutcome = outcome{presence: idle, reason: "Codex worker stopped (stop_local_codex_session).", status: StatusInterrupted,
		method: "turn/interrupted"}
	starterGoneOutcome = outcome{presence: idle, reason: "Codex worker stopped: the MCP server that started it exited.",
		status: StatusInterrupted, method: "native_harness.exit"}
)

// turnOutcome is the outcome of a turn that ended with status and err
// (the turn's error message, "" for none).
func turnOutcome(status, err string) outcome {
	switch status {
	case "completed":
		return outcome{presence: idle, reason: "Codex worker finished its turn.", status: StatusCompleted, method: "turn/completed"}
	case "interrupted":
		return outcome{presence: idle, reason: "Codex worker was stopped (turn interrupted).", status: StatusInterrupted, method: "turn/completed"}
	}
	if err == "" {
		err = "turn failed"
	}
	return outcome{presence: blocked, reason: "Codex worker is blocked: " + err, status: StatusFailed, lastError: err, method: "turn/completed"}
}

// exitOutcome is the outcome of an app-server that went away: exitErr is
// how its process ended, when known.
func exitOutcome(exitErr error) outcome {
	why := "the codex app-server went away"
	if exitErr != nil {
		why = "the codex app-server exited (" + exitErr.Error() + ")"
	}
	return outcome{presence: blocked, reason: "Codex worker is blocked: " + why + ".", status: StatusFailed, lastError: why,
		method: "native_harness.exit"}
}

// ender tells a room that a live session ended, once: claim makes sure
// only one of the processes that can see an ending (the worker's bridge,
// the starter) posts it.
type ender struct {
	room  Room
	state state.Store
	clock Clock
	log   *slog.Logger
}

// claim marks the live session id ended with o, unless someone did
// already (ok false). A status already final stays: a failure is not
// turned into a stop by the clean-up that follows it. A session no bridge
// bound is bound to its worker now, if one registered: the ending is
// posted as that worker, and its agent session ended.
func (e ender) claim(ctx context.Context, id string, o outcome) (live state.CodexLiveSession, agent state.AgentSession, ok bool, err error) {
	err = e.state.Update(ctx, func(st *state.State) error {
		l, found := st.CodexLiveSessions[id]
		if !found || l.EndedAt != "" {
			return nil
		}
		if l.AgentSessionID == "" {
			l.AgentSessionID = pickWorker(l, st.AgentSessions)
		}
		now := stamp(e.clock.Now())
		l.EndedAt, l.UpdatedAt = now, now
		if !terminal(l.Status) {
			l.Status, l.LastError = o.status, o.lastError
		} else if l.LastError == "" && l.Status == o.status {
			l.LastError = o.lastError
		}
		st.CodexLiveSessions[id] = l
		live, agent, ok = l, st.AgentSessions[l.AgentSessionID], true
		return nil
	})
	return live, agent, ok, err
}

// finish posts the ending of live, as agent: the summaries still held
// (pending, as many updates as maxSummary needs), the last of them
// carrying o's presence and reason, which closes the reasoning session
// (reasoningID, "" to open one), one last native activity (sequence
// seq), and the end of the worker's agent session, so that the room does
// not wait for it to come back. Posts run even when ctx is cancelled: an
// ending comes at shutdown.
func (e ender) finish(ctx context.Context, live state.CodexLiveSession, agent state.AgentSession, reasoningID string, pending []string, seq int64, o outcome) {
	ctx = context.WithoutCancel(ctx)
	defer func() {
		err := e.state.Update(ctx, func(st *state.State) error {
			if l, ok := st.CodexLiveSessions[live.SessionID]; ok {
				l.ToldAt = stamp(e.clock.Now())
				st.CodexLiveSessions[l.SessionID] = l
			}
			return nil
		})
		if err != nil {
			e.log.Info("codex live session ending: could not record it", "session", live.SessionID, "error", err)
		}
	}()
	if agent.SessionToken == "" {
		e.log.Info("codex live session ended before its worker registered", "session", live.SessionID, "reason", o.reason)
		return
	}
	creds := wire.SessionCredentials{AgentSessionID: agent.SessionID, AgentSessionToken: agent.SessionToken}
	post := func(do func(ctx context.Context) error, what string) {
		ctx, cancel := context.WithTimeout(ctx, postTimeout)
		defer cancel()
		if err := do(ctx); err != nil {
			e.log.Info("codex live session ending: "+what+" failed", "session", live.SessionID, "error", err)
		}
	}
	if r := e.room.Reasoning; r != nil {
		if reasoningID == "" {
			reasoningID = live.ReasoningSessionID
		}
		updates := pack(append(slices.Clone(pending), o.reason))
		for i, summary := range updates {
			// The summaries keep the worker's last status; the final update says how it ended.
			status := working
			if i == len(updates)-1 {
				status = o.presence
			}
			p := ReasoningPost{SessionCredentials: creds, ActorLabel: agent.ActorLabel, AgentKey: agent.AgentKey, Summary: summary, Status: status}
			post(func(ctx context.Context) error {
				if reasoningID != "" {
					if err := r.AddReasoning(ctx, live.RoomID, reasoningID, p); err == nil {
						return nil
					}
				}
				p.Goal = ReasoningGoal
				id, err := r.OpenReasoning(ctx, live.RoomID, p)
				reasoningID = id
				return err
			}, "final reasoning update")
		}
		if reasoningID != "" {
			post(func(ctx context.Context) error { return r.CloseReasoning(ctx, live.RoomID, reasoningID, creds) }, "closing the reasoning session")
		}
	}
	post(func(ctx context.Context) error {
		return e.room.Activity.ReportNativeActivity(ctx, live.RoomID, wire.NativeActivity{ObservedAt: e.clock.Now().UTC().Format(time.RFC3339Nano),
			Sequence: max(seq, 1), Method: o.method, Status: o.presence, Text: line(o.reason), SessionCredentials: creds})
	}, "final native activity")
	if s := e.room.Sessions; s != nil {
		post(func(ctx context.Context) error {
			_, err := s.DisconnectSession(ctx, live.RoomID, creds)
			return err
		}, "ending the worker's agent session")
	}
}

// pack joins parts into as few summaries of at most maxSummary
// characters as they fit in, in order (a part longer than that is
// clipped).
func pack(parts []string) []string {
	var out []string
	cur, size := "", 0
	for _, part := range parts {
		part = clip(part)
		n := utf8.RuneCountInString(part)
		if cur != "" && size+2+n <= maxSummary {
			cur, size = cur+"\n\n"+part, size+2+n
			continue
		}
		if cur != "" {
			out = append(out, cur)
		}
		cur, size = part, n
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// clip bounds a reasoning summary to maxSummary characters.
func clip(summary string) string {
	if r := []rune(summary); len(r) > maxSummary {
		return string(r[:maxSummary-1]) + "…"
	}
	return summary
}
