package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/github/githubtest"
)

// The scripted hour of one agent. An agent in a room of roomSize agents
// signs in once (before the hour: a machine signs in once, not hourly),
// then, within the hour, joins the room and registers its agent session
// (as a session that starts every hour would: an upper bound), reads the
// room, and from then on listens: it calls wait_for_messages with its
// cursor and no timeout (the tool's default, 30 s), the way the server's
// instructions ask, and between two waits does whatever of its hour is
// due (hourly below, spread evenly, each agent at its own phase). The
// MCP server's own traffic comes with it: the presence it posts before
// and after every wait and after every send, the watcher that follows
// the room for resource notifications, its reads of the tail.
//
// This is an agent that listens whenever it is not acting: the most
// waiting, and so the most polls and presence posts, an agent can do. An
// agent busy coding between its waits makes fewer.
var hourly = []struct {
	tool    string
	perHour int
}{
	{"send_message", 6},
	{"send_thread_message", 6},
	{"post_status", 2},
	{"post_reasoning", 12},
	{"read_messages", 2},
	{"get_board", 3},
	{"add_task", 1},
	{"publish_room_artifact", 1},
	{"get_room_artifacts", 1},
}

// defaultWait is wait_for_messages' timeout when the agent gives none
// (mcp/server's default, which it keeps to itself; the tool's description
// states it).
const defaultWait = 30 * time.Second

// step is one action of an agent's hour, at a time into the hour.
type step struct {
	at   time.Duration
	tool string
}

// schedule spreads each hourly action evenly over the hour, offset by
// phase (0 to 1) of its interval, in time order.
func schedule(phase float64) []step {
	var out []step
	for _, a := range hourly {
		every := time.Hour / time.Duration(a.perHour)
		for i := range a.perHour {
			out = append(out, step{at: time.Duration(float64(every)*phase) + time.Duration(i)*every, tool: a.tool})
		}
	}
	slices.SortStableFunc(out, func(a, b step) int { return int(a.at - b.at) })
	return out
}

// clock maps simulated time onto the wall clock, speed times faster.
type clock struct {
	start time.Time
	speed int
}

// now is how far into the simulated hour we are.
func (c clock) now() time.Duration { return time.Since(c.start) * time.Duration(c.speed) }

// scaled is a simulated duration on the wall clock.
func (c clock) scaled(d time.Duration) time.Duration { return d / time.Duration(c.speed) }

// agent is one MCP server of the repository's letagents binary, run in
// process, and the MCP client that drives it as an agent's runtime does.
type agent struct {
	name   string
	srv    *server.Server
	c      *client.Client
	cursor string
	// session is its agent session id, sent with its calls as the tools ask.
	session string
	// lastMsg is a message id to reply to in a thread.
	lastMsg string
	tasks   int
}

// agentEnv is how an agent is configured: the API, and the poll base
// (empty: the API's) that long-polls and event streams go to.
type agentEnv struct {
	apiURL, pollURL string
	dir             string // a directory of its own, outside any repository
	log             io.Writer
	// tokens are the agents' owner tokens (LETAGENTS_TOKEN), by name: an
	// agent without one starts signed out.
	tokens map[string]string
}

// stateFile is where an agent keeps its state (LETAGENTS_STATE_PATH).
func (env agentEnv) stateFile(name string) string {
	return filepath.Join(env.dir, name, "mcp-state.json")
}

// startAgent starts an MCP server named name and completes the MCP
// handshake with it, then starts its auto-join as the binary does.
func startAgent(ctx context.Context, name string, env agentEnv) (*agent, error) {
	dir := filepath.Join(env.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	vars := map[string]string{
		"LETAGENTS_API_URL": env.apiURL, "LETAGENTS_POLL_URL": env.pollURL, "LETAGENTS_TOKEN": env.tokens[name],
		"LETAGENTS_STATE_PATH": env.stateFile(name), "LETAGENTS_AGENT_NAME": name,
		"LETAGENTS_AGENT_INSTANCE_ID": name + "-instance", "HOME": dir,
	}
	logger := slog.New(slog.NewTextHandler(env.log, &slog.HandlerOptions{Level: slog.LevelWarn})).With("agent", name)
	cfg, err := server.LoadConfig(func(k string) string { return vars[k] }, dir, logger)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		srv.Close()
		return nil, err
	}
	a := &agent{name: name, srv: srv, c: c}
	if err := c.Start(ctx); err != nil {
		a.close()
		return nil, err
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "letagents-costmodel", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		a.close()
		return nil, err
	}
	srv.AutoJoin(ctx) // outside any repository: it stays in the lobby
	return a, nil
}

// close ends the client and the server (its watcher's stream with it).
func (a *agent) close() {
	_ = a.c.Close()
	a.srv.Close()
}

// call calls a tool and decodes its JSON answer into out (nil: ignored);
// an error answer is an error.
func (a *agent) call(ctx context.Context, tool string, args map[string]any, out any) error {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", a.name, tool, err)
	}
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		e := &toolError{agent: a.name, tool: tool, text: text}
		_ = json.Unmarshal([]byte(text), &e.answer)
		return e
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			return fmt.Errorf("%s: %s answered %q: %w", a.name, tool, text, err)
		}
	}
	return nil
}

// toolError is a tool's error answer, with the HTTP status of the
// API's refusal when it gives one.
type toolError struct {
	agent, tool, text string
	answer            struct {
		Status int `json:"status"`
	}
}

func (e *toolError) Error() string {
	return fmt.Sprintf("%s: %s answered an error: %s", e.agent, e.tool, e.text)
}

// signIn signs the agent in with GitHub's device flow, the user approving
// on the fake GitHub as login, and returns the owner token it saved. The
// service lets an address start 10 sign-ins a minute: a start refused for
// it is tried again after a pause, as a person would.
func (a *agent) signIn(ctx context.Context, gh *githubtest.Server, login, stateFile string) (string, error) {
	var started struct {
		UserCode string `json:"user_code"`
	}
	for {
		err := a.call(ctx, "start_device_auth", nil, &started)
		if err == nil {
			break
		}
		if te, ok := errors.AsType[*toolError](err); !ok || te.answer.Status != http.StatusTooManyRequests {
			return "", err
		}
		if err := pause(ctx, signInRetry); err != nil {
			return "", err
		}
	}
	gh.ApproveDevice(started.UserCode, login)
	for {
		var polled struct {
			Status   string `json:"status"`
			Interval int    `json:"interval"`
		}
		if err := a.call(ctx, "poll_device_auth", map[string]any{"auto_join": false}, &polled); err != nil {
			return "", err
		}
		switch polled.Status {
		case "authorized":
			st, err := state.Open(stateFile).Load()
			if err != nil {
				return "", err
			}
			if st.Auth == nil || st.Auth.Token == "" {
				return "", fmt.Errorf("%s: signed in, but no token saved in %s", a.name, stateFile)
			}
			return st.Auth.Token, nil
		case "pending", "slow_down":
			// The device flow's own pace: polling sooner is refused.
			if err := pause(ctx, time.Duration(max(polled.Interval, 1))*time.Second); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("%s: poll_device_auth: %s", a.name, polled.Status)
		}
	}
}

// signInRetry is the pause before starting a sign-in again that the
// service's per-address limit refused.
const signInRetry = 5 * time.Second

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// begin is the start of the agent's hour: join, register, read.
func (a *agent) begin(ctx context.Context, room string) error {
	if err := a.call(ctx, "join_room", map[string]any{"name": room}, nil); err != nil {
		return err
	}
	var reg struct {
		SessionID string `json:"agent_session_id"`
	}
	if err := a.call(ctx, "register_agent_session", map[string]any{"runtime": "costmodel"}, &reg); err != nil {
		return err
	}
	a.session = reg.SessionID
	return a.act(ctx, "read_messages")
}

// messages is what read_messages and wait_for_messages answer.
type messages struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
	LastObservedMessageID string `json:"last_observed_message_id"`
}

// see moves the cursor past what an answer showed.
func (a *agent) see(m messages) {
	if m.LastObservedMessageID != "" {
		a.cursor = m.LastObservedMessageID
	}
	if n := len(m.Messages); n > 0 {
		a.lastMsg = m.Messages[n-1].ID
	}
}

// act calls one scheduled tool with the arguments an agent would give.
func (a *agent) act(ctx context.Context, tool string) error {
	args := map[string]any{}
	sess := func() { args["agent_session_id"] = a.session }
	switch tool {
	case "send_message":
		sess()
		args["text"] = "progress from " + a.name + ": the parser handles the new cases; tests next"
	case "send_thread_message":
		if a.lastMsg == "" {
			return a.act(ctx, "send_message")
		}
		sess()
		args["text"], args["thread_parent_id"] = "on it: "+a.name+" takes this one", a.lastMsg
	case "post_status":
		sess()
		args["status"] = "working on the parser"
	case "post_reasoning":
		sess()
		args["summary"], args["checking"] = "tracing why the parser drops the last token", "the tokenizer's end-of-input path"
	case "read_messages":
		var m messages
		if err := a.call(ctx, tool, nil, &m); err != nil {
			return err
		}
		a.see(m)
		return nil
	case "get_board":
		sess()
	case "add_task":
		sess()
		a.tasks++
		args["title"] = fmt.Sprintf("%s: follow-up %d", a.name, a.tasks)
	case "publish_room_artifact":
		sess()
		args["artifact"] = map[string]any{"kind": "pull_request", "url": "https://github.com/acme/app/pull/" + strconv.Itoa(a.tasks+1)}
	case "get_room_artifacts":
	default:
		return fmt.Errorf("no script for %s", tool)
	}
	return a.call(ctx, tool, args, nil)
}

// wait is one wait_for_messages with the cursor and the default timeout,
// scaled to the wall clock.
func (a *agent) wait(ctx context.Context, clk clock) error {
	args := map[string]any{"agent_session_id": a.session, "timeout": clk.scaled(defaultWait).Milliseconds()}
	if a.cursor != "" {
		args["after_message_id"] = a.cursor
	}
	var m messages
	if err := a.call(ctx, "wait_for_messages", args, &m); err != nil {
		return err
	}
	a.see(m)
	return nil
}

// hour runs the agent's hour from its start: due actions, then a wait,
// until length (an hour, or less for a warm-up) is over.
func (a *agent) hour(ctx context.Context, clk clock, length time.Duration, room string, phase float64) error {
	if err := a.begin(ctx, room); err != nil {
		return err
	}
	steps := schedule(phase)
	for clk.now() < length {
		for len(steps) > 0 && steps[0].at <= clk.now() {
			if err := a.act(ctx, steps[0].tool); err != nil {
				return err
			}
			steps = steps[1:]
		}
		if err := a.wait(ctx, clk); err != nil {
			return err
		}
	}
	return nil
}
