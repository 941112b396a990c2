// Package hook is `letagents hook`: what an agent runtime's hooks (Claude
// Code's, Codex's, Gemini CLI's) run so that the room reaches the agent
// between its calls of wait_for_messages. Each run reads the hook's JSON
// on stdin, takes the agent session's unread messages from the server in
// one request (POST /rooms/{room}/messages/unread, which marks them
// surfaced), and prints them in the form the runtime adds to the agent's
// context. Install writes the runtimes' hook configuration.
//
// A hook must never break the agent it serves: a run that cannot find its
// session or reach the server prints nothing and says why on stderr. It
// never guesses its session: only one saved under its own runtime key is
// its own, as another agent's would take that agent's messages.
package hook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/mcp/identity"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// kind is what a hook event is for.
type kind int

const (
	onStart  kind = iota + 1 // the session starts or resumes
	onPrompt                 // a person submits a prompt
	onTool                   // a tool call finished
	onStop                   // the agent is about to stop
)

// events are the hook events a run answers, by the names the runtimes
// give them (compared in lower case, without '-' and '_'); the first name
// of each is the one an answer states when the input names none.
var events = []struct {
	names []string
	kind  kind
}{
	{[]string{"SessionStart"}, onStart},
	{[]string{"UserPromptSubmit", "BeforeAgent"}, onPrompt},
	{[]string{"PostToolUse", "AfterTool"}, onTool},
	{[]string{"Stop", "AfterAgent"}, onStop},
}

// IsEvent reports whether name is an event a run answers, by any of its
// names (in any case, with or without '-' and '_').
func IsEvent(name string) bool {
	_, _, ok := lookup(name)
	return ok
}

// lookup finds an event by any of its names: its kind and its name as
// spelled in the table.
func lookup(name string) (kind, string, bool) {
	key := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))
	for _, e := range events {
		for _, n := range e.names {
			if strings.ToLower(n) == key {
				return e.kind, n, true
			}
		}
	}
	return 0, "", false
}

// EventNames lists every event name a run answers.
func EventNames() []string {
	var out []string
	for _, e := range events {
		out = append(out, e.names...)
	}
	return out
}

// Input is what a run reads of the JSON a hook is given on stdin (the
// fields the runtimes share); anything else there is ignored.
type Input struct {
	SessionID     string `json:"session_id"`
	HookEventName string `json:"hook_event_name"`
}

// maxInput bounds the hook input read: a PostToolUse input carries the
// tool's whole answer, which a run does not need.
const maxInput = 64 << 20

// Config is what a run needs besides its input.
type Config struct {
	// APIURL is the API as the hook's environment names it
	// (LETAGENTS_API_URL), "" when it does not: then the API the session
	// was registered with, as saved, else DefaultAPIURL.
	APIURL, DefaultAPIURL string
	// Token is LETAGENTS_TOKEN, winning over the state file's sign-in.
	Token string
	// StatePath is the state file the MCP server saved the sessions in.
	StatePath string
	// Getenv reads the runtime's environment (the runtime key).
	Getenv func(string) string
	// ClientProcess is identity.ProcessKey of the process that ran the
	// hook (the runtime), "" when unknown: the key of a runtime whose MCP
	// servers know no session id (Gemini CLI).
	ClientProcess string
	// Filter and Limit are the take's (letagents.UnreadFilter; 0 is
	// the server's default).
	Filter letagents.UnreadFilter
	Limit  int
	// Timeout bounds the whole run, from reading the input to the
	// answer; default DefaultTimeout.
	Timeout time.Duration
	// Logger writes to stderr: stdout is the runtime's.
	Logger *slog.Logger
}

// DefaultTimeout bounds a whole run. The runtime holds the agent's tool
// call (or prompt) until the hook exits, so a slow or gone server must
// cost it less than a second, the process's start included; messages a
// run gives up on stay unread for the next one.
const DefaultTimeout = 700 * time.Millisecond

// answerMargin is what a run keeps of its time, out of what it gives the
// server to commit a take, for the answer's way back and its print.
const answerMargin = 100 * time.Millisecond

// ErrUnknownEvent is a run's only error: the event is none a run answers
// (a configuration mistake, not a passing failure).
var ErrUnknownEvent = errors.New("unknown hook event")

// Run answers one hook event (event, else the input's hook_event_name):
// it takes the session's unread messages and writes them to stdout for
// the runtime, or nothing when there are none. Stop takes them only when
// a person asked the agent something, and then keeps the agent working
// to answer. Every failure but an unknown event is logged, not returned.
func Run(ctx context.Context, cfg Config, event string, stdin io.Reader, stdout io.Writer) error {
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(cfg.Timeout, DefaultTimeout))
	defer cancel()
	in := readInput(ctx, stdin, log)
	k, name, ok := lookup(cmp.Or(event, in.HookEventName))
	if !ok {
		return fmt.Errorf("%w %q: want one of %s", ErrUnknownEvent, cmp.Or(event, in.HookEventName), strings.Join(EventNames(), ", "))
	}
	if in.HookEventName != "" {
		name = in.HookEventName // answer in the runtime's own spelling
	}
	st, err := state.Open(cfg.StatePath).Load()
	if corrupt := (*state.CorruptError)(nil); err != nil && !errors.As(err, &corrupt) {
		log.Warn("letagents hook: cannot read the state file", "path", cfg.StatePath, "error", err)
		return nil
	}
	keys := identity.HookRuntimeKeys(cfg.Getenv, in.SessionID, cfg.ClientProcess)
	sess, ok := pick(st, keys)
	if !ok {
		// A warning, not information: a hook that is set up wrong would
		// otherwise deliver nothing, every time, without a word. Sessions
		// under other keys are named but never used: they may be another
		// agent's, which would be shown that agent's messages and have
		// them recorded as seen by it.
		log.Warn("letagents hook: nothing delivered: no agent session saved under this agent's runtime keys, and another's is never used; "+
			"the agent's MCP server saves one when it registers (register_agent_session), in the same state file and under the same runtime key",
			"state", cfg.StatePath, "runtime_keys", keys, "other_keys", otherKeys(st, keys))
		return nil
	}
	token := cfg.Token
	if token == "" && st.Auth != nil {
		token = st.Auth.Token
	}
	apiURL := cmp.Or(cfg.APIURL, sess.APIURL, cfg.DefaultAPIURL)
	u, err := takeUnread(ctx, apiURL, token, sess, wire.TakeUnread{Filter: string(cfg.Filter), Limit: cfg.Limit, OnlyIfAsked: k == onStop})
	if err != nil {
		log.Warn("letagents hook: could not take the unread messages", "api", apiURL, "room", sess.RoomID, "session", sess.SessionID, "error", err)
		var serr *serverError
		if errors.As(err, &serr) && (serr.Body.Code == letagents.CodeAgentSessionEnded || serr.Body.Code == letagents.CodeAgentSessionInvalid) {
			forget(ctx, cfg.StatePath, sess.SessionID, log)
		}
		return nil
	}
	if len(u.Messages) == 0 {
		return nil
	}
	text := Context(sess, u, k == onStop)
	var out any = specificOutput{HookSpecificOutput: additionalContext{HookEventName: name, AdditionalContext: text}}
	if k == onStop {
		out = blockOutput{Decision: "block", Reason: text}
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		log.Warn("letagents hook: could not write the answer", "error", err)
	}
	return nil
}

// takeUnread takes the session's unread messages (POST
// /rooms/{room}/messages/unread, with the owner's token when there is one
// and the session's credentials), in one exchange with the server.
func takeUnread(ctx context.Context, apiURL, token string, sess state.AgentSession, q wire.TakeUnread) (wire.Unread, error) {
	var u wire.Unread
	if strings.TrimSpace(sess.RoomID) == "" {
		return u, errors.New("the saved session names no room")
	}
	path := "/rooms/" + rooms.PathOf(sess.RoomID) + "/messages/unread"
	header := [][2]string{{"User-Agent", "letagents-hook (go)"},
		{wire.SessionIDHeader, sess.SessionID}, {wire.SessionTokenHeader, sess.SessionToken}}
	if token != "" {
		header = append(header, [2]string{"Authorization", "Bearer " + token})
	}
	if d, ok := ctx.Deadline(); ok {
		// The server commits the take only if it can within the time this
		// run will still read its answer, so that a run that gives up
		// never leaves messages recorded as surfaced that it did not print.
		within := time.Until(d) - answerMargin
		if within < time.Millisecond {
			return u, errors.New("no time left to take the unread messages")
		}
		q.AnswerWithinMs = within.Milliseconds()
	}
	body, err := json.Marshal(q)
	if err != nil {
		return u, err
	}
	status, answer, err := post(ctx, strings.TrimRight(apiURL, "/")+path, header, body, nil)
	if err != nil {
		return u, fmt.Errorf("POST %s: %w", path, err)
	}
	if status < 200 || status > 299 {
		serr := &serverError{Path: path, Status: status}
		_ = json.Unmarshal(answer, &serr.Body) // a proxy's page is no JSON: the status says enough
		return u, serr
	}
	if err := json.Unmarshal(answer, &u); err != nil {
		return u, fmt.Errorf("POST %s: the answer is not the unread messages: %w", path, err)
	}
	return u, nil
}

// serverError is an answer of the server other than 2xx.
type serverError struct {
	Path   string
	Status int
	Body   wire.Error // zero when the answer was not JSON
}

func (e *serverError) Error() string {
	msg := fmt.Sprintf("POST %s: %d", e.Path, e.Status)
	if e.Body.Code != "" {
		msg += " " + e.Body.Code
	}
	if text := cmp.Or(e.Body.Message, e.Body.Error); text != "" {
		msg += ": " + text
	}
	return msg
}

// readInput reads the hook's JSON from stdin, giving up when ctx ends:
// a runtime that leaves stdin open must not hold the run past its bound.
func readInput(ctx context.Context, stdin io.Reader, log *slog.Logger) Input {
	type result struct {
		in  Input
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if err := json.NewDecoder(io.LimitReader(stdin, maxInput)).Decode(&r.in); err != nil && !errors.Is(err, io.EOF) {
			r.err = err
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.err != nil {
			log.Warn("letagents hook: the input is not the hook JSON; going on without it", "error", r.err)
		}
		return r.in
	case <-ctx.Done():
		log.Warn("letagents hook: the input did not come in time; going on without it", "error", ctx.Err())
		return Input{}
	}
}

// specificOutput adds text to the agent's context (SessionStart,
// UserPromptSubmit, PostToolUse and their Gemini CLI twins).
type specificOutput struct {
	HookSpecificOutput additionalContext `json:"hookSpecificOutput"`
}

type additionalContext struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// blockOutput keeps the agent from stopping, Reason its next instruction
// (Stop; Gemini CLI's AfterAgent reads "block" as "deny").
type blockOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// pick is the saved session a run speaks for: the newest of those saved
// under one of keys, this agent's own; none when there is none.
func pick(st state.State, keys []string) (state.AgentSession, bool) {
	var mine []state.AgentSession
	for _, a := range st.AgentSessions {
		if slices.Contains(keys, a.RuntimeKey) {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return state.AgentSession{}, false
	}
	return newest(mine), true
}

// otherKeys are the runtime keys, other than keys, that sessions are saved
// under: what tells a person why a run found none of its own.
func otherKeys(st state.State, keys []string) []string {
	var out []string
	for _, a := range st.AgentSessions {
		if !slices.Contains(keys, a.RuntimeKey) && !slices.Contains(out, a.RuntimeKey) {
			out = append(out, a.RuntimeKey)
		}
	}
	slices.Sort(out)
	return out
}

// forget removes a session the server answered as ended or invalid from
// the state file, so that no later run tries it again; the MCP server
// registers a new one when the agent next needs it.
func forget(ctx context.Context, path, sessionID string, log *slog.Logger) {
	err := state.Open(path).Update(ctx, func(st *state.State) error {
		delete(st.AgentSessions, sessionID)
		return nil
	})
	if err != nil {
		log.Warn("letagents hook: could not forget the ended session", "session", sessionID, "state", path, "error", err)
		return
	}
	log.Warn("letagents hook: the server no longer accepts this session; it is forgotten, and the agent's MCP server registers a new one",
		"session", sessionID, "state", path)
}

// newest is the session created last (ties: the greatest id).
func newest(list []state.AgentSession) state.AgentSession {
	return slices.MaxFunc(list, func(a, b state.AgentSession) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(len(a.SessionID), len(b.SessionID)), cmp.Compare(a.SessionID, b.SessionID))
	})
}

// maxQuoted bounds, in characters, each message's text a run shows: the
// agent reads the rest with read_messages.
const maxQuoted = 1000

// Context is the text a run gives the agent: the room's unread messages
// for sess, and what to do about them (answer before stopping, for stop).
func Context(sess state.AgentSession, u wire.Unread, stop bool) string {
	var b strings.Builder
	n := len(u.Messages)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	if stop {
		fmt.Fprintf(&b, "[LetAgents] Before you stop: someone in room %s asked you something. %d unread message%s for %s:\n", u.RoomID, n, plural, sess.ActorLabel)
	} else {
		fmt.Fprintf(&b, "[LetAgents] %d unread message%s in room %s for %s:\n", n, plural, u.RoomID, sess.ActorLabel)
	}
	for _, m := range u.Messages {
		fmt.Fprintf(&b, "- %s from %s", m.ID, m.Sender)
		switch src := deref(m.Source); src {
		case letagents.SourceBrowser:
			b.WriteString(" (a person)")
		case letagents.SourceSystem:
			b.WriteString(" (the server)")
		}
		switch deref(m.Addressed) {
		case string(letagents.AddressedMention):
			b.WriteString(", mentioning you")
		case string(letagents.AddressedThread):
			b.WriteString(", in your thread " + m.ThreadRootID)
		default:
			if m.ThreadParentID != nil {
				b.WriteString(", in thread " + m.ThreadRootID)
			}
		}
		b.WriteString(": " + quoted(m.Text) + "\n")
	}
	if u.HasMore {
		b.WriteString("More unread messages wait; they come with your next step, or call wait_for_messages.\n")
	}
	b.WriteString("Answer in the room with send_thread_message (thread_parent_id = the message's id); read_messages shows a message whole.")
	if stop {
		b.WriteString(" Answer the person before you stop.")
	}
	return b.String()
}

// quoted is a message's text as a run shows it: cut to maxQuoted
// characters, its lines after the first indented under the list item.
func quoted(text string) string {
	text = strings.TrimSpace(text)
	if r := []rune(text); len(r) > maxQuoted {
		text = string(r[:maxQuoted]) + "… (cut)"
	}
	return strings.ReplaceAll(text, "\n", "\n  ")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
