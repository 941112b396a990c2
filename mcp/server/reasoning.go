package server

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// maxEventsPage bounds get_room_events' limit, as 0.12.9's tool does.
const maxEventsPage = 100

// reasoningTools are the tools of an agent's visible reasoning trace and
// of the room's GitHub events.
func (s *Server) reasoningTools() []mcpserver.ServerTool {
	text := func(name, description string) mcp.ToolOption {
		return mcp.WithString(name, mcp.MaxLength(letagents.MaxReasoningTextBytes), mcp.Description(description))
	}
	filter := func(name, description string) mcp.ToolOption {
		return mcp.WithString(name, mcp.MaxLength(maxIgnored), mcp.Description(description))
	}
	return []mcpserver.ServerTool{
		bind(tool("post_reasoning", writes,
			"Update your reasoning trace in the room, replaced in place rather than posted to the chat: what you are after, what you are "+
				"checking, your hypothesis, blockers, the next step. Fields you leave out keep their last value. A milestone is also posted "+
				"to the room's history, for something durable that changed.",
			mcp.WithString("summary", mcp.Required(), mcp.MaxLength(letagents.MaxReasoningTextBytes),
				mcp.Description("Your reasoning now, in a line or two; the room shows it.")),
			text(letagents.ReasoningGoal, "What you are trying to achieve right now."),
			text(letagents.ReasoningChecking, "What you are verifying or inspecting."),
			text(letagents.ReasoningHypothesis, "Your working theory or approach."),
			text(letagents.ReasoningBlocker, "What blocks you, if anything."),
			text(letagents.ReasoningNextAction, "Your next step."),
			text(letagents.ReasoningMilestone, "A durable milestone, also posted to the room as a message."),
			mcp.WithNumber(letagents.ReasoningConfidence, mcp.Min(0), mcp.Max(1), mcp.Description("How sure you are, from 0 to 1.")),
			mcp.WithString(letagents.ReasoningStatus, mcp.Enum(letagents.PresenceStatuses...), mcp.Description("Your presence, set along with it.")),
			roomIDArg, sessionArg,
			mcp.WithString("conversation_id", mcp.MaxLength(maxIgnored), mcp.Description("Ignored: your agent session is who writes."))),
			s.postReasoning),
		bind(tool("get_room_events", readOnly,
			"Read the GitHub events of the room's repository (pull requests, reviews, comments on pull requests, completed checks, "+
				"pushes to the default branch), newest first, without parsing chat messages. They come from the repository's GitHub webhook.",
			filter("event_type", "Only this kind: pull_request, pull_request_review, issue_comment, check_run, check_suite, push."),
			filter("object_id", "Only this GitHub object (a pull request or issue number)."),
			filter("actor", "Only events by this GitHub login."),
			filter("since", "Only events after this time (RFC 3339)."),
			filter("until", "Only events before this time (RFC 3339)."),
			filter("after", "Page on after this event id."),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(maxEventsPage), mcp.Description("At most this many (default 50).")),
			roomIDArg),
			s.getRoomEvents),
	}
}

type reasoningArgs struct {
	RoomID         string   `json:"room_id"`
	AgentSessionID string   `json:"agent_session_id"`
	ConversationID string   `json:"conversation_id"`
	Summary        string   `json:"summary"`
	Goal           string   `json:"goal"`
	Checking       string   `json:"checking"`
	Hypothesis     string   `json:"hypothesis"`
	Blocker        string   `json:"blocker"`
	NextAction     string   `json:"next_action"`
	Milestone      string   `json:"milestone"`
	Confidence     *float64 `json:"confidence"`
	Status         string   `json:"status"`
}

// postReasoning writes to this agent's open reasoning session in the
// room (its newest), or opens one, as 0.12.9's tool does; then posts the
// milestone, if any, and sets the presence.
func (s *Server) postReasoning(ctx context.Context, a reasoningArgs) *mcp.CallToolResult {
	room, sess, bad := s.roomSession(a.RoomID, a.AgentSessionID, true)
	if bad != nil {
		return bad
	}
	snap := wire.ReasoningSnapshot{Summary: strings.TrimSpace(a.Summary), Goal: strings.TrimSpace(a.Goal), Checking: strings.TrimSpace(a.Checking),
		Hypothesis: strings.TrimSpace(a.Hypothesis), Blocker: strings.TrimSpace(a.Blocker), NextAction: strings.TrimSpace(a.NextAction),
		Milestone: strings.TrimSpace(a.Milestone), Status: a.Status, Confidence: a.Confidence}
	if snap.Summary == "" {
		return fail("summary is required", "Say in a line what you are thinking now.")
	}
	api := s.apiAs(sess)
	open, err := api.ReasoningSessions(ctx, room, apiclient.ReasoningQuery{ActorLabel: sess.ActorLabel})
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	var out wire.ReasoningWritten
	if len(open.Sessions) > 0 {
		out, err = api.AddReasoningUpdate(ctx, room, open.Sessions[0].ID, wire.AddReasoningUpdate{ActorLabel: sess.ActorLabel, ReasoningSnapshot: snap})
	} else {
		out, err = api.CreateReasoningSession(ctx, room, wire.CreateReasoningSession{ActorLabel: sess.ActorLabel, AgentKey: sess.AgentKey,
			ReasoningSnapshot: snap})
	}
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	var milestoneID *string
	if snap.Milestone != "" {
		msg, err := api.Send(ctx, room, wire.SendMessage{Sender: sess.ActorLabel, Text: snap.Milestone})
		if err != nil {
			return s.apiFailure(ctx, err)
		}
		milestoneID = &msg.ID
		s.touch(ctx, room)
	}
	if snap.Status != "" {
		text := snap.Summary
		if len(text) > letagents.MaxPresenceText {
			text = "" // the status alone, rather than a presence the server refuses
		}
		s.syncPresence(ctx, sess, snap.Status, text)
	} else {
		s.syncPresence(ctx, sess, "", "")
	}
	return result(map[string]any{"success": true, "room_id": out.RoomID, "session": out.Session, "update": out.Update,
		"milestone_message_id": milestoneID, "agent_identity": s.identityJSON(s.whoAmI(ctx))})
}

type roomEventsArgs struct {
	RoomID    string `json:"room_id"`
	EventType string `json:"event_type"`
	ObjectID  string `json:"object_id"`
	Actor     string `json:"actor"`
	Since     string `json:"since"`
	Until     string `json:"until"`
	After     string `json:"after"`
	Limit     int    `json:"limit"`
}

func (s *Server) getRoomEvents(ctx context.Context, a roomEventsArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	ev, err := s.api.RoomEvents(ctx, room, apiclient.RoomEventsQuery{EventType: a.EventType, ObjectID: a.ObjectID, Actor: a.Actor,
		Since: a.Since, Until: a.Until, After: a.After, Limit: a.Limit})
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "events": ev.Events, "has_more": ev.HasMore})
}
