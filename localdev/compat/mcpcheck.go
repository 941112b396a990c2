package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/auth"
)

// Bounds of the MCP scenarios: a tool call, the long-poll a waiting
// agent is given (the other agent has already sent by then), the wait
// for a notification of a message, and how often a message is sent
// again meanwhile.
const (
	toolTimeout   = 60 * time.Second
	waitMillis    = 5000
	noticeTimeout = 60 * time.Second
	noticeResend  = 3 * time.Second
)

// mcpTarget is a server the original's MCP client is pointed at, with the
// owner tokens of its two agents.
type mcpTarget struct {
	name, url string
	tokens    [2]string
}

// scenario drives one or two agents through a use of the service.
type scenario struct {
	name string
	// stale: the agents are given a LETAGENTS_TOKEN no server issued.
	stale bool
	run   func(ctx context.Context, s *scenarioRun)
}

var scenarios = []scenario{
	{name: "two-agent chat", run: chatScenario},
	{name: "board round", run: boardScenario},
	{name: "stale token", stale: true, run: staleScenario},
	{name: "resource notifications", run: resourceScenario},
}

// outcome is one scenario against the anchor and against us: the steps
// of each and how they went.
type outcome struct {
	scenario     string
	anchor, ours []stepResult
}

type stepResult struct {
	name string
	err  error
}

// passes: we pass a scenario when every step that worked against the
// anchor works against us; steps the anchor refuses too are only
// reported (they show what the scenario asks beyond the original).
func (o outcome) passes() bool {
	ours := map[string]error{}
	for _, s := range o.ours {
		ours[s.name] = s.err
	}
	for _, s := range o.anchor {
		if err, ran := ours[s.name]; s.err == nil && (!ran || err != nil) {
			return false
		}
	}
	return true
}

// runScenarios runs every scenario against the anchor, then against us,
// with fresh agents (and local state) each time.
func runScenarios(ctx context.Context, anchorDir, work string, anchor, ours mcpTarget) []outcome {
	var outs []outcome
	for _, sc := range scenarios {
		o := outcome{scenario: sc.name}
		for _, t := range []mcpTarget{anchor, ours} {
			sr := &scenarioRun{ctx: ctx, anchorDir: anchorDir, work: work, target: t, scenario: sc}
			sc.run(ctx, sr)
			sr.close()
			if t == anchor {
				o.anchor = sr.steps
			} else {
				o.ours = sr.steps
			}
		}
		outs = append(outs, o)
	}
	return outs
}

func printScenarios(w io.Writer, outs []outcome) {
	fmt.Fprintln(w, "| scenario | anchor: steps ok | ours: steps ok | ours |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	for _, o := range outs {
		verdict := "pass"
		if !o.passes() {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", o.scenario, okCount(o.anchor), okCount(o.ours), verdict)
	}
	for _, o := range outs {
		for _, side := range []struct {
			name  string
			steps []stepResult
		}{{"anchor", o.anchor}, {"ours", o.ours}} {
			for _, s := range side.steps {
				if s.err != nil {
					fmt.Fprintf(w, "  %s / %s / %s: %v\n", o.scenario, side.name, s.name, s.err)
				}
			}
		}
	}
}

func okCount(steps []stepResult) string {
	ok := 0
	for _, s := range steps {
		if s.err == nil {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d", ok, len(steps))
}

// scenarioRun is one scenario against one server: its agents and steps.
type scenarioRun struct {
	ctx       context.Context
	anchorDir string
	work      string
	target    mcpTarget
	scenario  scenario
	agents    []*agent
	steps     []stepResult
	// room is the room setUp made.
	room string
}

// step runs and records one step; it reports whether the step passed.
func (r *scenarioRun) step(name string, f func() error) bool {
	err := f()
	r.steps = append(r.steps, stepResult{name: name, err: err})
	return err == nil
}

func (r *scenarioRun) close() {
	for _, a := range r.agents {
		a.close()
	}
}

// agent is one MCP client process: the original's dist/mcp/server.js.
type agent struct {
	name      string
	c         *client.Client
	stderr    *os.File
	tools     map[string]bool
	sessionID string
	// notes has the server's notifications, in order; those that find
	// it full are dropped (no scenario waits on that many).
	notes chan mcp.JSONRPCNotification
}

// spawn starts agent i (0 or 1) of the scenario in a directory of its own
// (no git remote, no .letagents.json: nothing to join by itself), with its
// own local state file.
func (r *scenarioRun) spawn(i int) (*agent, error) {
	name := []string{"alpha", "beta"}[i]
	dir := filepath.Join(r.work, "mcp", slug(r.scenario.name), r.target.name, name)
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		return nil, fmt.Errorf("agent directory: %w", err)
	}
	token, agentName := r.target.tokens[i], "compat-"+name
	if r.scenario.stale {
		// Anonymous, it may not send under a name an account's agent holds
		// on ours (docs/api.md, Who may send as whom): the other scenarios
		// register compat-alpha and compat-beta.
		token, agentName = "stale-"+auth.NewToken(), "stale-"+name
	}
	env := childEnv(filepath.Join(dir, "home"),
		"LETAGENTS_API_URL="+r.target.url,
		"LETAGENTS_STATE_PATH="+filepath.Join(dir, "state.json"),
		"LETAGENTS_TOKEN="+token,
		"LETAGENTS_AGENT_NAME="+agentName,
		"GIT_CONFIG_NOSYSTEM=1")
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, fmt.Errorf("agent log: %w", err)
	}
	server := filepath.Join(r.anchorDir, "dist", "mcp", "server.js")
	c, err := client.NewStdioMCPClientWithOptions("node", env, []string{server},
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir, cmd.Stderr = env, dir, stderr
			return cmd, nil
		}))
	if err != nil {
		stderr.Close()
		return nil, fmt.Errorf("start %s: %w", server, err)
	}
	a := &agent{name: name, c: c, stderr: stderr, tools: map[string]bool{}, notes: make(chan mcp.JSONRPCNotification, 256)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case a.notes <- n:
		default:
		}
	})
	r.agents = append(r.agents, a)
	ctx, cancel := context.WithTimeout(r.ctx, toolTimeout)
	defer cancel()
	// Start hands the transport the notification handlers; the stdio
	// constructor started the process but left them out.
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("agent %s: start: %w", name, err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "letagents-compat", Version: "0.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, fmt.Errorf("agent %s: initialize: %w (log %s)", name, err, stderr.Name())
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("agent %s: tools/list: %w", name, err)
	}
	for _, tl := range tools.Tools {
		a.tools[tl.Name] = true
	}
	return a, nil
}

func (a *agent) close() {
	_ = a.c.Close()
	a.stderr.Close()
}

// call runs a tool and returns its text. A tool marked as an error, or
// answering {"success": false}, is an error.
func (a *agent) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", a.name, tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s %s: %s", a.name, tool, cut(text.String()))
	}
	var status struct {
		Success *bool `json:"success"`
		Error   any   `json:"error"`
	}
	if json.Unmarshal([]byte(text.String()), &status) == nil && status.Success != nil && !*status.Success {
		return "", fmt.Errorf("%s %s: %s", a.name, tool, cut(fmt.Sprint(status.Error)))
	}
	return text.String(), nil
}

// withSession adds the agent's registered session, when it has one.
func (a *agent) withSession(args map[string]any) map[string]any {
	if a.sessionID != "" {
		args["agent_session_id"] = a.sessionID
	}
	return args
}

// registerSession registers a worker session when the client has the
// tool (0.12 clients write only through one); older clients need none.
func (r *scenarioRun) registerSession(a *agent) {
	if !a.tools["register_agent_session"] {
		return
	}
	r.step(a.name+" register_agent_session", func() error {
		text, err := a.call(r.ctx, "register_agent_session", map[string]any{})
		if err != nil {
			return err
		}
		a.sessionID, err = field(text, "agent_session_id")
		return err
	})
}

// setUp starts n agents, has the first create a room and the others join
// it by code. It reports whether every agent is in the room.
func (r *scenarioRun) setUp(n int) bool {
	for i := range n {
		if !r.step(fmt.Sprintf("start agent %d", i+1), func() error { _, err := r.spawn(i); return err }) {
			return false
		}
	}
	var code string
	if !r.step("alpha create_room", func() error {
		text, err := r.agents[0].call(r.ctx, "create_room", map[string]any{})
		if err != nil {
			return err
		}
		if r.room, err = field(text, "room_id"); err != nil {
			return err
		}
		code, err = field(text, "code")
		return err
	}) {
		return false
	}
	for _, a := range r.agents[1:] {
		if !r.step(a.name+" join_code", func() error {
			_, err := a.call(r.ctx, "join_code", map[string]any{"code": code})
			return err
		}) {
			return false
		}
	}
	return true
}

// chatScenario: alpha and beta in one room; beta waits for alpha's line,
// answers, and alpha reads both.
func chatScenario(ctx context.Context, r *scenarioRun) {
	if !r.setUp(2) {
		return
	}
	alpha, beta := r.agents[0], r.agents[1]
	r.registerSession(alpha)
	r.registerSession(beta)
	hello, reply := "hello from alpha "+auth.NewToken()[:8], "hello from beta "+auth.NewToken()[:8]
	r.step("alpha send_message", func() error {
		_, err := alpha.call(ctx, "send_message", alpha.withSession(map[string]any{"text": hello}))
		return err
	})
	r.step("beta wait_for_messages sees alpha", func() error {
		text, err := beta.call(ctx, "wait_for_messages", beta.withSession(map[string]any{"timeout": waitMillis}))
		return contains(text, err, hello)
	})
	r.step("beta send_message", func() error {
		_, err := beta.call(ctx, "send_message", beta.withSession(map[string]any{"text": reply}))
		return err
	})
	r.step("alpha read_messages sees both", func() error {
		text, err := alpha.call(ctx, "read_messages", map[string]any{})
		if err := contains(text, err, hello); err != nil {
			return err
		}
		return contains(text, nil, reply)
	})
}

// boardScenario: alpha adds a task and accepts it, beta claims it, starts
// it and submits it for review; alpha sees it in review on the board.
func boardScenario(ctx context.Context, r *scenarioRun) {
	if !r.setUp(2) {
		return
	}
	alpha, beta := r.agents[0], r.agents[1]
	r.registerSession(alpha)
	r.registerSession(beta)
	var task string
	if !r.step("alpha add_task", func() error {
		text, err := alpha.call(ctx, "add_task", alpha.withSession(map[string]any{"title": "compat board round", "description": "added by the compat check"}))
		if err != nil {
			return err
		}
		task, err = field(text, "task.id")
		return err
	}) {
		return
	}
	r.step("alpha update_task accepted", func() error {
		_, err := alpha.call(ctx, "update_task", alpha.withSession(map[string]any{"task_id": task, "status": "accepted"}))
		return err
	})
	r.step("beta claim_task", func() error {
		_, err := beta.call(ctx, "claim_task", beta.withSession(map[string]any{"task_id": task}))
		return err
	})
	r.step("beta update_task in_progress", func() error {
		_, err := beta.call(ctx, "update_task", beta.withSession(map[string]any{"task_id": task, "status": "in_progress"}))
		return err
	})
	r.step("beta complete_task", func() error {
		_, err := beta.call(ctx, "complete_task", beta.withSession(map[string]any{"task_id": task, "pr_url": "https://github.com/compat/repo/pull/1"}))
		return err
	})
	r.step("alpha get_board shows it in review", func() error {
		text, err := alpha.call(ctx, "get_board", map[string]any{})
		return contains(text, err, `"status": "in_review"`)
	})
}

// staleScenario: an agent whose LETAGENTS_TOKEN no server issued still
// opens a room and reads it, as an anonymous client; what needs an
// account (a worker session, on 0.12 clients) is expected to fail on the
// anchor as well.
func staleScenario(ctx context.Context, r *scenarioRun) {
	if !r.setUp(2) {
		return
	}
	alpha, beta := r.agents[0], r.agents[1]
	r.registerSession(alpha)
	text := "stale but present " + auth.NewToken()[:8]
	r.step("alpha send_message", func() error {
		_, err := alpha.call(ctx, "send_message", alpha.withSession(map[string]any{"text": text}))
		return err
	})
	r.step("beta read_messages", func() error {
		_, err := beta.call(ctx, "read_messages", map[string]any{})
		return err
	})
	r.step("beta wait_for_messages returns", func() error {
		_, err := beta.call(ctx, "wait_for_messages", map[string]any{"timeout": 1000, "after_message_id": "msg_1"})
		return err
	})
	r.step("beta get_board", func() error {
		_, err := beta.call(ctx, "get_board", map[string]any{})
		return err
	})
}

// resourceScenario: alpha subscribes to its room's messages resource
// and reads it; beta sends; alpha is told (the original client follows
// the room's event stream and announces each message as a change of the
// resource list; a server answering resources/subscribe also sends
// resources/updated) and reads the new message in the resource.
func resourceScenario(ctx context.Context, r *scenarioRun) {
	if !r.setUp(2) {
		return
	}
	alpha, beta := r.agents[0], r.agents[1]
	r.registerSession(alpha)
	r.registerSession(beta)
	uri := "letagents://rooms/" + r.room + "/messages"
	r.step("alpha resources/templates/list has the room's messages", func() error {
		ctx, cancel := context.WithTimeout(ctx, toolTimeout)
		defer cancel()
		res, err := alpha.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			return err
		}
		var got []string
		for _, t := range res.ResourceTemplates {
			if t.URITemplate != nil && t.URITemplate.Raw() == "letagents://rooms/{room_id}/messages" {
				return nil
			}
			got = append(got, t.Name)
		}
		return fmt.Errorf("no letagents://rooms/{room_id}/messages among %q", got)
	})
	r.step("alpha resources/list", func() error {
		ctx, cancel := context.WithTimeout(ctx, toolTimeout)
		defer cancel()
		_, err := alpha.c.ListResources(ctx, mcp.ListResourcesRequest{})
		return err
	})
	subscribed := r.step("alpha resources/subscribe", func() error {
		ctx, cancel := context.WithTimeout(ctx, toolTimeout)
		defer cancel()
		return alpha.c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
	})
	r.step("alpha resources/read", func() error {
		_, err := alpha.readResource(ctx, uri)
		return err
	})
	// What came before the send is not news of it.
	for len(alpha.notes) > 0 {
		<-alpha.notes
	}
	// The original client opens its stream after create_room has
	// answered, on its own time, and tells nothing of it; a message sent
	// before the stream is up is not news on it, with either server. So
	// beta sends again at each noticeResend until alpha hears.
	var news string
	send := func() error {
		news = "resource news " + auth.NewToken()[:8]
		_, err := beta.call(ctx, "send_message", beta.withSession(map[string]any{"text": news}))
		return err
	}
	if !r.step("beta send_message", send) {
		return
	}
	var heard map[string]bool
	r.step("alpha told of the message (list_changed or updated)", func() error {
		var err error
		heard, err = alpha.awaitNews(ctx, uri, subscribed, send)
		return err
	})
	if subscribed {
		r.step("alpha resources/updated for the room", func() error {
			if !heard[mcp.MethodNotificationResourceUpdated] {
				return fmt.Errorf("heard %v, no %s for %s", heard, mcp.MethodNotificationResourceUpdated, uri)
			}
			return nil
		})
	}
	r.step("alpha resources/read has the message", func() error {
		text, err := alpha.readResource(ctx, uri)
		return contains(text, err, news)
	})
}

// awaitNews waits for a notification that the resource uri changed: a
// resources/updated for it or a change of the resource list, calling
// resend at each noticeResend meanwhile. When the agent subscribed it
// waits for the resources/updated too (a server may send both); it
// returns the methods heard.
func (a *agent) awaitNews(ctx context.Context, uri string, subscribed bool, resend func() error) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, noticeTimeout)
	defer cancel()
	again := time.NewTicker(noticeResend)
	defer again.Stop()
	heard := map[string]bool{}
	for {
		select {
		case n := <-a.notes:
			switch n.Method {
			case mcp.MethodNotificationResourceUpdated:
				if n.Params.AdditionalFields["uri"] == uri {
					heard[n.Method] = true
				}
			case mcp.MethodNotificationResourcesListChanged:
				heard[n.Method] = true
			}
			if heard[mcp.MethodNotificationResourceUpdated] || (!subscribed && len(heard) > 0) {
				return heard, nil
			}
		case <-again.C:
			if len(heard) == 0 {
				if err := resend(); err != nil {
					return heard, fmt.Errorf("send again: %w", err)
				}
			}
		case <-ctx.Done():
			if len(heard) > 0 {
				return heard, nil
			}
			return heard, fmt.Errorf("%s: no notification of %s within %v (log %s)", a.name, uri, noticeTimeout, a.stderr.Name())
		}
	}
}

// readResource reads a resource's text.
func (a *agent) readResource(ctx context.Context, uri string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	res, err := a.c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return "", fmt.Errorf("%s resources/read %s: %w", a.name, uri, err)
	}
	var text strings.Builder
	for _, c := range res.Contents {
		if tc, ok := c.(mcp.TextResourceContents); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), nil
}

// field reads a string at a dotted path of a tool's JSON answer.
func field(text, path string) (string, error) {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", fmt.Errorf("answer is not JSON: %s", cut(text))
	}
	s, ok := lookup(v, path)
	if !ok {
		return "", fmt.Errorf("answer has no %s: %s", path, cut(text))
	}
	return s, nil
}

func contains(text string, err error, want string) error {
	if err != nil {
		return err
	}
	if !strings.Contains(text, want) {
		return errors.New("answer lacks " + strconv.Quote(want) + ": " + cut(text))
	}
	return nil
}

// cut shortens a tool's answer for a report line.
func cut(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		return s[:199] + "…"
	}
	return s
}

func slug(s string) string { return strings.ReplaceAll(s, " ", "-") }
