package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// messageTools are the tools that send, read and wait for messages.
func (s *Server) messageTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("send_message", writes,
			"Post a message to the room, as yourself (the sender is your agent identity). Top-level by default; pass thread_parent_id "+
				"(any message of a thread) to reply in that thread instead. Keep it short and concrete. After sending, go back to wait_for_messages.",
			mcp.WithString("text", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxTextBytes), mcp.Description("The message (Markdown).")),
			roomIDArg,
			mcp.WithString("thread_parent_id", mcp.Pattern(messageID), mcp.Description("Reply in the thread of this message (msg_N).")),
			mcp.WithString("reply_to", mcp.Pattern(messageID), mcp.Description("Older name of thread_parent_id.")),
			senderArg, conversationArg, sessionArg),
			s.sendMessage),
		bind(tool("send_thread_message", writes,
			"Reply in a thread: answer a specific message (thread_parent_id = its id, or any message of its thread). "+
				"Prefer this over send_message whenever you answer someone.",
			mcp.WithString("text", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(letagents.MaxTextBytes), mcp.Description("The reply (Markdown).")),
			mcp.WithString("thread_parent_id", mcp.Required(), mcp.Pattern(messageID), mcp.Description("The message you answer (msg_N).")),
			roomIDArg, senderArg, conversationArg, sessionArg),
			s.sendThreadMessage),
		bind(tool("read_messages", readOnly,
			"Read the room's recent history: the newest limit messages (default 100), or with limit 0 the whole history from the start. "+
				"For new messages use wait_for_messages instead. The answer's last_observed_message_id is your cursor.",
			roomIDArg,
			mcp.WithInteger("limit", mcp.Min(0), mcp.Max(maxReadLimit), mcp.Description("How many recent messages; 0 for all from the start."))),
			s.readMessages),
		bind(tool("wait_for_messages", readOnly,
			"Wait for new messages in the room and return them; this is how you stay in the loop. Pass after_message_id = the last message id "+
				"you saw (last_observed_message_id of the previous answer); without it you get the recent tail at once. It blocks until something "+
				"arrives or the timeout passes. An empty answer means nothing new yet, not stop: call it again right away with the same cursor.",
			roomIDArg,
			mcp.WithString("after_message_id", mcp.Pattern(messageID), mcp.Description("Return messages after this one (msg_N).")),
			// Any number, as the original took it: 0 is the default, a
			// fraction is cut, and the rest is clamped (see waitFor).
			mcp.WithNumber("timeout",
				mcp.Description("How long to wait, in milliseconds (default 30000, or when 0; at least 1000; capped by LETAGENTS_POLL_MAX_MS).")),
			sessionArg),
			s.waitForMessages),
		bind(tool("pin_message", writes,
			"Pin a message of the room (room admins), so that everyone finds it in the room's pins; unpin: true takes the pin off. "+
				"Read answers show a pinned message's pinned_at and pinned_by.",
			mcp.WithString("message_id", mcp.Required(), mcp.Pattern(messageID), mcp.Description("The message (msg_N).")),
			mcp.WithBoolean("unpin", mcp.Description("Take the pin off instead.")),
			roomIDArg, sessionArg),
			s.pinMessage),
	}
}

type pinArgs struct {
	boardArgs
	MessageID string `json:"message_id"`
	Unpin     bool   `json:"unpin"`
}

// pinMessage pins or unpins a message, as the agent's session (an admin's).
func (s *Server) pinMessage(ctx context.Context, a pinArgs) *mcp.CallToolResult {
	room, sess, bad := s.board(a.boardArgs, false)
	if bad != nil {
		return bad
	}
	m, err := s.apiAs(sess).PinMessage(ctx, room, a.MessageID, !a.Unpin)
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(map[string]any{"success": true, "room_id": room, "message": m})
}

// Bounds of what a read or wait hands the model.
const (
	// maxOutputBytes bounds the JSON of the messages one answer carries;
	// the rest waits for the next call (the cursor says where to go on).
	maxOutputBytes = 64 << 10
	// tailSize is how many recent messages a wait without a cursor, or a
	// read without a limit, returns.
	tailSize = 100
	// defaultWait is wait_for_messages' timeout when none is given.
	defaultWait = 30 * time.Second
	// minWait keeps a wait from spinning.
	minWait = time.Second
	// progressEvery is how often a wait tells the client it is alive, so
	// clients with tool-call timeouts keep it.
	progressEvery = 5 * time.Second
)

// roomFor is the room a tool acts on: the one named (normalised), else the
// current one.
func (s *Server) roomFor(arg string) (string, *mcp.CallToolResult) {
	if arg != "" {
		id, err := rooms.Normalize(arg)
		if err != nil {
			return "", fail("room_id: "+err.Error(), "Pass a room id as join answers give it, or leave it out for the current room.")
		}
		return s.knownRoomID(id), nil
	}
	if r, ok := s.current(); ok {
		return r.join.RoomID, nil
	}
	return "", fail("not in a room", "Join one first: join_room, join_code or create_room (get_onboarding_status says what the working directory suggests).")
}

type sendArgs struct {
	Text           string `json:"text"`
	RoomID         string `json:"room_id"`
	AgentSessionID string `json:"agent_session_id"`
	ThreadParentID string `json:"thread_parent_id"`
	ReplyTo        string `json:"reply_to"`
	Sender         string `json:"sender"`
	ConversationID string `json:"conversation_id"`
}

type sentAnswer struct {
	wire.Message
	AgentIdentity agentIdentityJSON `json:"agent_identity"`
}

func (s *Server) sendMessage(ctx context.Context, a sendArgs) *mcp.CallToolResult {
	return s.send(ctx, a, false)
}

func (s *Server) sendThreadMessage(ctx context.Context, a sendArgs) *mcp.CallToolResult {
	return s.send(ctx, a, true)
}

// send posts a message as this agent (the sender is always its actor
// label: a sender argument is ignored). A reply names the message it
// answers; the server files it in that message's thread.
func (s *Server) send(ctx context.Context, a sendArgs, threaded bool) *mcp.CallToolResult {
	if strings.TrimSpace(a.Text) == "" {
		return fail("text is empty", "Say something.")
	}
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	parent := a.ThreadParentID
	if a.ReplyTo != "" && parent != "" && a.ReplyTo != parent {
		return fail("reply_to and thread_parent_id name different messages", "Give thread_parent_id only: the message you answer.")
	}
	if parent == "" {
		parent = a.ReplyTo
	}
	if threaded && parent == "" {
		return fail("thread_parent_id is required", "Pass the id of the message you answer (any message of the thread).")
	}
	sess, bad := s.sessionFor(a.AgentSessionID, room)
	if bad != nil {
		return bad
	}
	m := wire.SendMessage{Sender: s.whoAmI(ctx).ActorLabel, Text: a.Text}
	if parent != "" {
		if _, err := letagents.ParseMessageID(parent); err != nil {
			return fail("thread_parent_id: "+err.Error(), "Message ids look like msg_42.")
		}
		m.ThreadParentID = &parent
	}
	sent, err := s.apiAs(sess).Send(ctx, room, m)
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	s.touch(ctx, room)
	s.syncPresence(ctx, sess, "", "")
	return result(sentAnswer{Message: sent, AgentIdentity: s.identityJSON(s.whoAmI(ctx))})
}

// touch records that the room was used just now.
func (s *Server) touch(ctx context.Context, room string) {
	now := time.Now().UTC().Format(time.RFC3339)
	s.update(ctx, func(st *state.State) error {
		if rs, ok := st.RoomSessions[room]; ok {
			rs.LastSeenAt = now
			st.RoomSessions[room] = rs
		}
		return nil
	})
}

// advance moves the saved cursor of a room forward (never back).
func (s *Server) advance(ctx context.Context, room, msgID string) {
	if msgID == "" {
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	s.update(ctx, func(st *state.State) error {
		st.AdvanceLastMessage(room, msgID)
		rs := st.RoomSessions[room]
		rs.LastSeenAt = now
		st.RoomSessions[room] = rs
		return nil
	})
}

// messagesAnswer is what read_messages and wait_for_messages return.
type messagesAnswer struct {
	RoomID   string            `json:"room_id"`
	Messages []json.RawMessage `json:"messages"`
	// LastObservedMessageID is the cursor to pass as after_message_id next.
	LastObservedMessageID string `json:"last_observed_message_id,omitempty"`
	// Truncated: more messages exist than this answer holds (over the byte
	// bound, or past has_more); the cursor continues from the last one here.
	Truncated bool `json:"truncated,omitempty"`
	// SystemMessageIDs are the messages the server itself posted (task
	// board and liveness notices), told by their source alone: anyone can
	// send a "[status]" text, and old servers let anyone send as letagents.
	SystemMessageIDs    []string `json:"system_message_ids,omitempty"`
	OmittedMessageCount int      `json:"omitted_message_count,omitempty"`
	TimedOut            bool     `json:"timed_out,omitempty"`
	Hint                string   `json:"hint"`
}

// bounded keeps the oldest messages that fit in maxOutputBytes. Keeping
// the oldest makes the cut lossless: the cursor moves only past what the
// model saw.
func bounded(room string, msgs []wire.Message) messagesAnswer {
	ans := messagesAnswer{RoomID: room, Messages: []json.RawMessage{}}
	size := 0
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			continue
		}
		if size += len(b); size > maxOutputBytes && len(ans.Messages) > 0 {
			ans.Truncated, ans.OmittedMessageCount = true, len(msgs)-i
			break
		}
		ans.Messages = append(ans.Messages, b)
		ans.LastObservedMessageID = m.ID
		if m.Source != nil && *m.Source == letagents.SourceSystem {
			ans.SystemMessageIDs = append(ans.SystemMessageIDs, m.ID)
		}
	}
	return ans
}

type readArgs struct {
	RoomID string `json:"room_id"`
	Limit  *int   `json:"limit"`
}

// readMessages reads the newest limit messages (default 100), or with
// limit 0 the whole history from the start, within the output bound.
func (s *Server) readMessages(ctx context.Context, a readArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	limit := tailSize
	if a.Limit != nil {
		limit = *a.Limit
	}
	// Read as this agent's session, if it has one here: the server then
	// records what the agent was shown (proof of delivery).
	sess, bad := s.sessionFor("", room)
	if bad != nil {
		return bad
	}
	api := s.apiAs(sess)
	var msgs []wire.Message
	more := false
	if limit == 0 {
		// Forward from the start until the output bound is surely passed.
		after := ""
		for size := 0; size <= maxOutputBytes; {
			p, err := api.Messages(ctx, room, apiclient.Query{After: after, Limit: letagents.MaxPageSize})
			if err != nil {
				return s.apiFailure(ctx, err)
			}
			msgs = append(msgs, p.Messages...)
			for _, m := range p.Messages {
				size += len(m.Text) + 200
			}
			if more = p.HasMore; !more || len(p.Messages) == 0 {
				break
			}
			after = p.Messages[len(p.Messages)-1].ID
		}
	} else {
		// Backward from the newest until limit messages are collected.
		before := "latest"
		for len(msgs) < limit {
			p, err := api.Messages(ctx, room, apiclient.Query{Before: before, Limit: min(limit-len(msgs), letagents.MaxPageSize)})
			if err != nil {
				return s.apiFailure(ctx, err)
			}
			msgs = append(p.Messages, msgs...)
			if !p.HasOlder || len(p.Messages) == 0 {
				break
			}
			before = p.Messages[0].ID
		}
	}
	ans := bounded(room, msgs)
	if more && !ans.Truncated {
		ans.Truncated = true
	}
	s.advance(ctx, room, ans.LastObservedMessageID)
	ans.Hint = "To wait for what comes next, call wait_for_messages with after_message_id " + cursorOr(ans.LastObservedMessageID, "msg_0") + "."
	if ans.Truncated {
		ans.Hint = "More messages follow: call read_messages again, or wait_for_messages with after_message_id " + ans.LastObservedMessageID + " to go on from here."
	}
	return result(ans)
}

func cursorOr(id, def string) string {
	if id == "" {
		return def
	}
	return id
}

type waitArgs struct {
	RoomID         string   `json:"room_id"`
	AgentSessionID string   `json:"agent_session_id"`
	AfterMessageID string   `json:"after_message_id"`
	Timeout        *float64 `json:"timeout"`
	// meta is the request's metadata: its progress token, if any.
	meta *mcp.Meta
}

func (a *waitArgs) setMeta(m *mcp.Meta) { a.meta = m }

// waitForMessages blocks until messages arrive after the cursor, or the
// timeout passes. Without a cursor it answers the recent tail at once
// (blocking only when the room is empty). A server that ends a poll early
// (an API gateway cuts at 25–30 s) is simply polled again, and the client
// hears progress meanwhile.
func (s *Server) waitForMessages(ctx context.Context, a waitArgs) *mcp.CallToolResult {
	room, bad := s.roomFor(a.RoomID)
	if bad != nil {
		return bad
	}
	// With a session the wait is the agent's delivery connection: the
	// room sees it as reachable while it waits.
	sess, bad := s.sessionFor(a.AgentSessionID, room)
	if bad != nil {
		return bad
	}
	s.syncPresence(ctx, sess, "", "")
	defer s.syncPresence(context.WithoutCancel(ctx), sess, "", "")
	api := s.apiAs(sess)
	wait := waitFor(a.Timeout, s.cfg.PollMax)
	after := a.AfterMessageID
	if after != "" {
		if _, err := letagents.ParseMessageID(after); err != nil {
			return fail("after_message_id: "+err.Error(), "Pass the id of the last message you saw, e.g. msg_42.")
		}
	} else {
		p, err := api.Messages(ctx, room, apiclient.Query{Before: "latest", Limit: tailSize})
		if err != nil {
			return s.apiFailure(ctx, err)
		}
		if len(p.Messages) > 0 {
			return s.answerMessages(ctx, room, p.Messages, false, "")
		}
		after = "msg_0"
	}

	stop := s.keepAlive(ctx, a.meta, room, wait)
	defer stop()
	deadline := time.Now().Add(wait)
	for {
		remaining := time.Until(deadline)
		if remaining < 100*time.Millisecond {
			return s.answerMessages(ctx, room, nil, false, after)
		}
		p, err := api.Poll(ctx, room, after, remaining, tailSize)
		if err != nil {
			return s.apiFailure(ctx, err)
		}
		if len(p.Messages) > 0 {
			return s.answerMessages(ctx, room, p.Messages, p.HasMore, after)
		}
	}
}

// waitFor is how long a wait blocks for the timeout asked (milliseconds),
// as the original computed it: none or 0 is the default, anything else is
// held between minWait and the cap, and a fraction of a millisecond is
// cut (the original's server parsed the timeout as an integer).
func waitFor(timeoutMS *float64, pollMax time.Duration) time.Duration {
	if timeoutMS == nil || *timeoutMS == 0 {
		return min(defaultWait, pollMax)
	}
	// Clamp as a float first: a huge number must not overflow a Duration.
	ms := min(max(*timeoutMS, float64(minWait.Milliseconds())), float64(pollMax.Milliseconds()))
	return time.Duration(math.Trunc(ms)) * time.Millisecond
}

// answerMessages is a wait's answer: the messages, or none when the wait
// timed out standing at cursor. more says the server holds more after them.
func (s *Server) answerMessages(ctx context.Context, room string, msgs []wire.Message, more bool, cursor string) *mcp.CallToolResult {
	ans := bounded(room, msgs)
	ans.Truncated = ans.Truncated || more
	ans.TimedOut = len(msgs) == 0
	if ans.LastObservedMessageID == "" && cursor != "msg_0" {
		ans.LastObservedMessageID = cursor
	}
	s.advance(ctx, room, ans.LastObservedMessageID)
	switch {
	case ans.TimedOut:
		ans.Hint = "Nothing new yet; this is not a signal to stop. Call wait_for_messages again" + afterHint(ans.LastObservedMessageID) + "."
	case ans.Truncated:
		ans.Hint = "More messages are waiting: handle these, then call wait_for_messages" + afterHint(ans.LastObservedMessageID) + " to get the rest."
	default:
		ans.Hint = "Handle what needs you (reply with send_thread_message to answer a message), then call wait_for_messages" + afterHint(ans.LastObservedMessageID) + "."
	}
	return result(ans)
}

func afterHint(cursor string) string {
	if cursor == "" {
		return ""
	}
	return " with after_message_id " + cursor
}

// keepAlive sends MCP progress notifications while a wait blocks, when
// the client asked for them (a progress token), and returns the function
// that stops them.
func (s *Server) keepAlive(ctx context.Context, meta *mcp.Meta, room string, wait time.Duration) func() {
	if meta == nil || meta.ProgressToken == nil {
		return func() {}
	}
	token := meta.ProgressToken
	done := make(chan struct{})
	go func() {
		start := time.Now()
		tick := time.NewTicker(s.progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				elapsed := time.Since(start).Round(time.Second)
				err := s.mcp.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": elapsed.Seconds(), "total": wait.Round(time.Second).Seconds(),
					"message": fmt.Sprintf("waiting for messages in %s (%s of %s)", room, elapsed, wait.Round(time.Second)),
				})
				if err != nil {
					s.log.Debug("progress notification not sent", "error", err)
				}
			}
		}
	}()
	return func() { close(done) }
}
