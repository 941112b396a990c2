// Package server is the MCP server an agent runs (the letagents binary):
// the tools a model calls to join rooms, talk, wait for messages and
// publish artifacts, and the runtime behind them (who this agent is, which
// room it is in, the saved state it shares with other agents on the
// machine). It is a client of the HTTP API; every mcp-go call of the
// module lives in this package and in the binary that starts it.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/apiurl"
	"github.com/letagents/letagents-go/mcp/codex"
	"github.com/letagents/letagents-go/mcp/gitctx"
	"github.com/letagents/letagents-go/mcp/identity"
	"github.com/letagents/letagents-go/mcp/prompts"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/mcp/visibility"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// Name is what the server calls itself in the MCP handshake.
const Name = "letagents"

// Version is the version it gives there; make dist stamps the release's
// (-ldflags -X), so it is a variable.
var Version = "0.1.0"

// DefaultAPIURL is where the API is when LETAGENTS_API_URL is unset: the
// local runner's address.
const DefaultAPIURL = apiurl.Default

// Config is what the server reads from its environment, once, at start.
type Config struct {
	APIURL  string // LETAGENTS_API_URL
	PollURL string // LETAGENTS_POLL_URL: a separate base for long-polls, "" for APIURL
	// EnvToken is LETAGENTS_TOKEN: an owner token that wins over the saved one.
	EnvToken string
	// StatePath is the local state file (LETAGENTS_STATE_PATH or ~/.letagents/mcp-state.json).
	StatePath string
	// PollMax clamps wait_for_messages' timeout (LETAGENTS_POLL_MAX_MS).
	PollMax time.Duration
	// Dir is the working directory the agent runs in: its repository
	// decides the room to join.
	Dir string
	// CodexBin is the codex binary live sessions run (LETAGENTS_CODEX_BIN,
	// default codex); CodexServerURL a running app-server they use
	// instead of spawning one (LETAGENTS_CODEX_SERVER_URL).
	CodexBin       string
	CodexServerURL string
	// CodexClock times live sessions and their bridge; nil for the
	// system clock (tests move their own).
	CodexClock codex.Clock
	// Getenv reads the identity overrides (LETAGENTS_AGENT_NAME, …).
	Getenv func(string) string
	// ClientProcess is identity.ProcessKey of the process that started
	// this one (LoadConfig sets it), "" for none: see
	// identity.Inputs.ClientProcess.
	ClientProcess string
	// Logger writes to stderr: stdout carries the MCP protocol.
	Logger *slog.Logger
	// Hosted, when set, makes this the server of one hosted MCP session
	// (NewHosted): it has no machine of its own (see Hosting).
	Hosted *Hosting
}

// Hosting is what a hosted session's server has instead of a machine: its
// state kept by the host, and the bearer token of the client's current
// request as its only credential. Such a server reads no environment,
// working directory, git configuration or state file, and runs no Codex;
// the tools that need them say so and refuse (machineTools).
type Hosting struct {
	State  state.Store
	Bearer func() string
	// Instance is the session's agent instance id, the same on every
	// task that builds its server, so that its identity and the agent
	// sessions saved under it are found again there.
	Instance string
	// Vouch gives the wire.VouchedAddressHeader of the agent behind a
	// request's context, "" for none (apiclient.Config.Vouch).
	Vouch func(ctx context.Context) string
}

// LoadConfig reads the environment, naming the variable at fault.
func LoadConfig(getenv func(string) string, dir string, logger *slog.Logger) (Config, error) {
	cfg := Config{APIURL: strings.TrimRight(getenv("LETAGENTS_API_URL"), "/"), PollURL: strings.TrimRight(getenv("LETAGENTS_POLL_URL"), "/"),
		EnvToken: strings.TrimSpace(getenv("LETAGENTS_TOKEN")), PollMax: letagents.DefaultPollMax, Dir: dir, Getenv: getenv, Logger: logger,
		CodexBin: strings.TrimSpace(getenv("LETAGENTS_CODEX_BIN")), CodexServerURL: strings.TrimSpace(getenv("LETAGENTS_CODEX_SERVER_URL")),
		ClientProcess: identity.ProcessKey(os.Getppid())}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	for name, v := range map[string]string{"LETAGENTS_API_URL": cfg.APIURL, "LETAGENTS_POLL_URL": cfg.PollURL} {
		if err := apiurl.Check(v); v != "" && err != nil {
			return cfg, fmt.Errorf("%s=%q: %w", name, v, err)
		}
	}
	if v := getenv("LETAGENTS_POLL_MAX_MS"); v != "" {
		var ms int64
		if _, err := fmt.Sscan(v, &ms); err != nil || time.Duration(ms)*time.Millisecond < letagents.MinPollMax ||
			time.Duration(ms)*time.Millisecond > letagents.MaxPollMax {
			return cfg, fmt.Errorf("LETAGENTS_POLL_MAX_MS=%q: want milliseconds from %d to %d", v,
				letagents.MinPollMax.Milliseconds(), letagents.MaxPollMax.Milliseconds())
		}
		cfg.PollMax = time.Duration(ms) * time.Millisecond
	}
	if cfg.CodexServerURL != "" {
		if err := codex.CheckServerURL(cfg.CodexServerURL); err != nil {
			return cfg, fmt.Errorf("LETAGENTS_CODEX_SERVER_URL: %w", err)
		}
	}
	path, err := state.DefaultPath(getenv)
	if err != nil {
		return cfg, fmt.Errorf("find the state file (set %s): %w", state.PathEnv, err)
	}
	cfg.StatePath = path
	return cfg, nil
}

// Server is one agent's MCP server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	api     *apiclient.Client
	state   state.Store
	prompts prompts.Delivery
	mcp     *mcpserver.MCPServer
	// instance is this process's agent instance id.
	instance string
	// progressEvery is how often a blocked wait sends progress.
	progressEvery time.Duration
	// visibility asks repository hosts whether a repository is public.
	visibility visibility.Checker
	// runtimeKey is this agent's stable key (see identity.Identity): its
	// saved sessions are found by it. A Codex tool call may change it
	// (learnRuntimeKey), hence atomic.
	runtimeKey atomic.Pointer[string]
	// envKeyed: the environment named the runtime key, which a tool
	// call's _meta then does not change.
	envKeyed bool

	// ignored is what the server last said of the token this process
	// sends, when it did not accept it (see tokenIgnored); nil otherwise.
	ignored atomic.Pointer[tokenNotice]

	// subs are the resource subscriptions of the MCP sessions.
	subs subscriptions
	// life ends (endLife) when the server closes: it bounds the watcher.
	life    context.Context
	endLife context.CancelFunc
	watchMu sync.Mutex
	watch   *watcher // of the joined room; nil in the lobby or once closed

	// handlers are a hosted session's tools' handlers, by name (Hosted
	// dispatches to them); nil for a local server.
	handlers map[string]mcpserver.ToolHandlerFunc

	// codex runs live Codex sessions; bridges streams their workers'
	// progress into their rooms.
	codex   *codex.Manager
	bridges *codex.Bridges

	mu       sync.Mutex
	room     *joinedRoom // nil in the lobby
	identity identity.Identity
	sessions map[string]agentSession // registered by this process, by id
	// conversations are the names set_agent_name gave single
	// conversations, and the order they came in (the oldest goes first).
	conversations     map[string]identity.Identity
	conversationOrder []string
}

// joinedRoom is the room this process is in.
type joinedRoom struct {
	join      wire.Join
	joinedVia string
}

// New builds the server, its tools and resources. Nothing is joined yet:
// AutoJoin does that once the MCP connection is up. Close stops what a
// join starts.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := newServer(cfg)
	tools := s.tools()
	list := make([]mcp.Tool, len(tools))
	for i, t := range tools {
		list[i] = t.Tool
	}
	v, err := newValidator(list)
	if err != nil {
		return nil, err
	}
	s.mcp = mcpserver.NewMCPServer(Name, Version, append(resourceOptions(func(context.Context) *Server { return s }),
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithToolHandlerMiddleware(v.middleware),
		mcpserver.WithToolHandlerMiddleware(s.learnRuntimeKey),
		mcpserver.WithRecovery(),
		mcpserver.WithInstructions(instructions),
	)...)
	s.mcp.AddTools(tools...)
	addResources(s.mcp, s.readMessagesResource)
	return s, nil
}

// newServer builds a server without its MCP side: New adds its own, and
// a hosted session's server is served by the endpoint's (NewHosted).
func newServer(cfg Config) *Server {
	var store state.Store
	if cfg.Hosted != nil {
		store = cfg.Hosted.State
		cfg.Getenv = func(string) string { return "" } // the host's environment is not the agent's
		cfg.EnvToken, cfg.ClientProcess = "", ""
	} else {
		store = state.Open(cfg.StatePath)
	}
	instance := identity.NewInstanceUUID()
	if cfg.Hosted != nil && cfg.Hosted.Instance != "" {
		instance = cfg.Hosted.Instance
	}
	s := &Server{cfg: cfg, log: cfg.Logger, state: store, instance: instance,
		progressEvery: progressEvery, sessions: map[string]agentSession{}, conversations: map[string]identity.Identity{}}
	s.life, s.endLife = context.WithCancel(context.Background())
	key := identity.Resolve(identity.Inputs{Getenv: cfg.Getenv, InstanceUUID: s.instance, ClientProcess: cfg.ClientProcess}).RuntimeKey
	s.runtimeKey.Store(&key)
	_, s.envKeyed = identity.EnvRuntimeKey(cfg.Getenv)
	api := apiclient.Config{APIURL: cfg.APIURL, PollURL: cfg.PollURL, Token: s.token, TokenIgnored: s.tokenIgnored}
	if cfg.Hosted != nil {
		api.Vouch = cfg.Hosted.Vouch
	}
	s.api = apiclient.New(api)
	codexRoom := codex.Room{Activity: s.api, Reasoning: s.codexReasoning(), Sessions: s.api}
	s.codex = codex.NewManager(s.state, codex.Config{Bin: cfg.CodexBin, ServerURL: cfg.CodexServerURL, Room: codexRoom, Clock: cfg.CodexClock,
		Logger: cfg.Logger})
	s.bridges = codex.NewBridges(codex.BridgeConfig{State: s.state, Activity: codexRoom.Activity, Reasoning: codexRoom.Reasoning,
		Sessions: codexRoom.Sessions, Clock: cfg.CodexClock, Logger: cfg.Logger})
	return s
}

// Close ends what the server runs beside its tools: the joined room's
// watcher, the Codex bridge's streams, and the codex app-servers it
// spawned with their workers. Serve calls it on its way out.
func (s *Server) Close() {
	s.stopWatching()
	s.bridges.Close()
	s.codex.Close()
}

// instructions is what the server says of itself at initialisation.
const instructions = `LetAgents puts you in a shared chat room with the other agents and humans working on the same repository and branch. ` +
	`You are usually joined already (call get_current_room to see). Talk with send_message / send_thread_message, and stay in the loop by calling ` +
	`wait_for_messages again after each result, passing the last message id you saw as after_message_id.`

// MCP is the MCP server, for transports and in-process clients.
func (s *Server) MCP() *mcpserver.MCPServer { return s.mcp }

// Serve speaks MCP over r and w until ctx ends or the client goes away,
// auto-joining the room of the working directory once the connection is
// up (a failure to join is logged, never fatal), and closes the server.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	defer s.Close()
	go s.AutoJoin(ctx)
	stdio := mcpserver.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	err := stdio.Listen(ctx, r, w)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Where the owner token requests carry comes from, as the tools report it.
const (
	tokenFromEnv    = "env"         // LETAGENTS_TOKEN
	tokenFromState  = "local_state" // the device flow's, saved in the state file
	tokenFromBearer = "bearer"      // a hosted session's: its request's Authorization
	// authLocalOwner is the auth source of an agent with no token on a
	// server that acts for the local owner (wire.Session.LocalOwner).
	authLocalOwner = "local_owner"
)

// tokenSource is where the token requests carry comes from (see token).
func (s *Server) tokenSource() string {
	if s.cfg.Hosted != nil {
		return tokenFromBearer
	}
	if s.cfg.EnvToken != "" {
		return tokenFromEnv
	}
	return tokenFromState
}

// token is the owner token requests carry: LETAGENTS_TOKEN, else the one
// the device flow saved; a hosted session's, its request's bearer.
func (s *Server) token() string {
	if s.cfg.Hosted != nil {
		return s.cfg.Hosted.Bearer()
	}
	if s.cfg.EnvToken != "" {
		return s.cfg.EnvToken
	}
	st, err := s.state.Load()
	if err != nil || st.Auth == nil {
		return ""
	}
	return st.Auth.Token
}

// update changes the saved state, logging (not failing) when it cannot:
// the state is a convenience, the server works without it.
func (s *Server) update(ctx context.Context, fn func(*state.State) error) {
	if err := s.state.Update(ctx, fn); err != nil {
		s.log.Warn("could not save the local state", "path", s.cfg.StatePath, "error", err)
	}
}

// load reads the saved state, reporting a corrupt file once in the log.
func (s *Server) load() state.State {
	st, err := s.state.Load()
	var corrupt *state.CorruptError
	switch {
	case errors.As(err, &corrupt):
		s.log.Warn("the local state file is corrupt; it will be set aside and replaced", "path", corrupt.Path, "error", corrupt.Err)
	case err != nil:
		s.log.Warn("could not read the local state", "path", s.cfg.StatePath, "error", err)
	}
	return st
}

// current returns the room this process is in, if any.
func (s *Server) current() (joinedRoom, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.room == nil {
		return joinedRoom{}, false
	}
	return *s.room, true
}

// roomURL is the web page of a room.
func (s *Server) roomURL(roomID string) string { return s.cfg.APIURL + roomPath(roomID) }

// roomPath is a room's path on the web ("/in/github.com/o/r").
func roomPath(roomID string) string { return "/in/" + rooms.PathOf(roomID) }

// detect inspects a working directory (the process's when dir is "").
// A hosted session has none: the host's directories are not the agent's.
func (s *Server) detect(ctx context.Context, dir string) gitctx.Context {
	if s.cfg.Hosted != nil {
		return gitctx.Context{}
	}
	if dir == "" {
		dir = s.cfg.Dir
	}
	c, err := gitctx.Detect(ctx, dir)
	if err != nil {
		s.log.Warn("could not inspect the working directory", "dir", dir, "error", err)
	}
	return c
}

// git runs a git query in the working directory; "" when it fails.
func (s *Server) git(ctx context.Context, args ...string) string {
	if s.cfg.Hosted != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = s.cfg.Dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// key is this agent's runtime key, its sessions' key in the state file.
func (s *Server) key() string { return *s.runtimeKey.Load() }

// learnRuntimeKey takes the runtime key a tool call's _meta names
// (Codex's threadId: its MCP servers get no session id in their
// environment, its hooks one in their input), unless the environment
// named one: sessions registered from then on are saved under it, where
// the agent's hooks look for them.
func (s *Server) learnRuntimeKey(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if m := req.Params.Meta; m != nil && !s.envKeyed {
			if key, ok := identity.MetaRuntimeKey(m.AdditionalFields); ok && key != s.key() {
				s.runtimeKey.Store(&key)
			}
		}
		return next(ctx, req)
	}
}

// osUser is the user the process runs as; "" for a hosted session, whose
// agent is not the host's user.
func (s *Server) osUser() string {
	if s.cfg.Hosted != nil {
		return ""
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
