package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// HostedPath is where the hosted endpoint is served.
const HostedPath = "/mcp"

// hostedIdle is how long a session's server stays built on a task after
// its last request; past it the next request builds it again from the
// session's saved state, as another task would.
const hostedIdle = 30 * time.Minute

// SessionStore keeps the hosted MCP sessions, so that any task serves any
// session (the poll server's is PostgreSQL). owner is who opened the
// session (its credential's principal: HostedConfig.Verify); the state
// is the session's state document (package state).
type SessionStore interface {
	CreateSession(ctx context.Context, id, owner string) error
	// SessionOwner is found false for a session never opened or ended.
	SessionOwner(ctx context.Context, id string) (owner string, found bool, err error)
	SessionState(ctx context.Context, id string) (data []byte, found bool, err error)
	SaveSessionState(ctx context.Context, id string, data []byte) error
	EndSession(ctx context.Context, id string) error
}

// HostedConfig configures the hosted endpoint.
type HostedConfig struct {
	// APIURL and PollURL are where its sessions' servers reach the API,
	// as Config's.
	APIURL, PollURL string
	// Events, when set, keeps the events of the sessions' SSE streams, so
	// that a client resumes a dropped one with Last-Event-ID (the poll
	// server's are in PostgreSQL: any task replays them).
	Events   mcpserver.EventStore
	Sessions SessionStore
	// Watch, when set, rings when session id's saved state changes, on
	// whichever task saved it (the poll server's is the notify hub's
	// channel of the session): the task holding the session's stream then
	// reads its resource subscriptions again at once, else within
	// followRecheck.
	Watch func(ctx context.Context, id string) (ring <-chan struct{}, stop func(), err error)
	// Origins are the origins, besides the endpoint's own, whose pages
	// may call it; any other Origin is refused (DNS rebinding).
	Origins []string
	Logger  *slog.Logger
	// Verify checks a bearer token and names who it signs in as: a
	// principal that stays the same while the credential lasts (an OAuth
	// grant across its refreshes), which sessions are bound to. A token
	// that signs nobody in (ok false) is answered 401 with
	// WWW-Authenticate (RFC 6750, RFC 9728). nil takes every token as it
	// is, its principal a hash of it.
	Verify func(ctx context.Context, token string) (principal string, ok bool, err error)
	// RequireAuth answers a request without a bearer token 401 too, so
	// that a client signs in (OAuth) before it starts; without it such
	// requests are served anonymously, as the open rooms allow.
	RequireAuth bool
	// AuthServer is the OAuth authorization server the protected
	// resource metadata names ("" for the origin the metadata is asked
	// of: the local runner serves the API beside /mcp).
	AuthServer string
	// ClientAddress is the address of the agent behind a request (behind
	// a load balancer, the one the balancer saw), and Vouch seals it for
	// the API (auth.Service.VouchAddress), whose per-address limits then
	// count each hosted agent on its own. With either nil, or an error,
	// the API counts every hosted agent by this server's address.
	ClientAddress func(r *http.Request) string
	Vouch         func(ctx context.Context, addr string) (string, error)
}

// Protected resource metadata (RFC 9728) of the hosted endpoint: at the
// well-known path, and at it with the resource's path as suffix, where
// clients of MCP 2025-06-18 look first.
const (
	ResourceMetadataPath       = "/.well-known/oauth-protected-resource"
	ResourceMetadataPathSuffix = ResourceMetadataPath + HostedPath
)

// Hosted is the hosted MCP endpoint: the tools of the local server, from
// the same table and handlers, over Streamable HTTP. Each MCP session has
// a server of its own (Config.Hosted), whose credential is the bearer
// token of the session's requests and whose state is kept by the
// SessionStore; a task that has not seen a session builds its server
// from that state, so sessions need no sticky load balancer.
type Hosted struct {
	cfg  HostedConfig
	log  *slog.Logger
	mcp  *mcpserver.MCPServer
	http *mcpserver.StreamableHTTPServer

	mu    sync.Mutex
	built map[string]*hostedSession
}

// hostedSession is a session's server on this task.
type hostedSession struct {
	srv      *Server
	lastUsed time.Time
	// token is the bearer of the session's latest request, which its
	// server's calls to the API carry: an OAuth client's refreshed token
	// replaces the expired one while the session goes on.
	token atomic.Pointer[string]
}

// bearerKey carries a request's bearer token in its context, addressKey
// its agent's address (HostedConfig.ClientAddress), and principalKey who
// it signs in as (HostedConfig.Verify).
type (
	bearerKey    struct{}
	addressKey   struct{}
	principalKey struct{}
)

// NewHosted builds the endpoint; Close ends its sessions' servers.
func NewHosted(cfg HostedConfig) (*Hosted, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Hosted{cfg: cfg, log: cfg.Logger, built: map[string]*hostedSession{}}
	// The table is the local server's: built once here for its
	// declarations, then each call runs the handler of the same name on
	// the session's own server.
	proto := newServer(h.serverConfig(state.Blob{}))
	tools := proto.tools()
	proto.Close()
	list := make([]mcp.Tool, len(tools))
	for i, t := range tools {
		list[i] = t.Tool
		tools[i].Handler = h.dispatch(t.Tool.Name)
	}
	v, err := newValidator(list)
	if err != nil {
		return nil, err
	}
	h.mcp = mcpserver.NewMCPServer(Name, Version, append(resourceOptions(h.serverOf),
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithToolHandlerMiddleware(refuseMachineTools), // before the schema check: the refusal is the answer
		mcpserver.WithToolHandlerMiddleware(v.middleware),
		mcpserver.WithRecovery(),
		mcpserver.WithInstructions(hostedInstructions),
	)...)
	h.mcp.AddTools(tools...)
	addResources(h.mcp, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		s, err := h.server(ctx)
		if err != nil {
			return nil, err
		}
		return s.readMessagesResource(ctx, req)
	})
	opts := []mcpserver.StreamableHTTPOption{
		mcpserver.WithSessionIdManagerResolver(h),
		mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if cfg.ClientAddress != nil {
				ctx = context.WithValue(ctx, addressKey{}, cfg.ClientAddress(r))
			}
			return context.WithValue(context.WithValue(ctx, bearerKey{}, bearer(r)), principalKey{}, principalOf(r.Context()))
		}),
		// mcp-go refuses a request over loopback whose Host is not a
		// loopback name (a rebound DNS name, whose page's Origin is its
		// own Host); ServeHTTP refuses other sites' pages everywhere.
		mcpserver.WithStreamableHTTPLogger(cfg.Logger),
	}
	if cfg.Events != nil {
		opts = append(opts, mcpserver.WithEventStore(cfg.Events))
	}
	h.http = mcpserver.NewStreamableHTTPServer(h.mcp, opts...)
	return h, nil
}

// hostedInstructions are the local server's, less what a hosted session
// lacks: it is joined to nothing until it joins.
const hostedInstructions = `LetAgents puts you in a shared chat room with the other agents and humans working on the same repository and branch. ` +
	`This hosted server cannot see your working directory: call join_room first with your repository's URL (github.com/owner/repo) ` +
	`or the room id you were given. Talk with send_message / send_thread_message, and stay in the loop by calling ` +
	`wait_for_messages again after each result, passing the last message id you saw as after_message_id.`

func (h *Hosted) serverConfig(st state.Store) Config {
	return Config{APIURL: h.cfg.APIURL, PollURL: h.cfg.PollURL, PollMax: letagents.MaxHostedWait, Logger: h.log,
		Hosted: &Hosting{State: st, Bearer: func() string { return "" }, Vouch: h.vouch}}
}

// vouch is the wire.VouchedAddressHeader of the agent behind ctx's
// request: sealed for each call, since a session's calls may come from
// wherever its agent now is.
func (h *Hosted) vouch(ctx context.Context) string {
	addr, _ := ctx.Value(addressKey{}).(string)
	if addr == "" || h.cfg.Vouch == nil {
		return ""
	}
	v, err := h.cfg.Vouch(ctx, addr)
	if err != nil {
		h.log.Warn("hosted MCP: the agent's address not vouched; the API counts it by this server's", "error", err)
		return ""
	}
	return v
}

// ServeHTTP serves HostedPath: POST, GET and DELETE of the Streamable
// HTTP transport, after the Origin check and the bearer token's.
func (h *Hosted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o, r) {
		writeError(w, http.StatusForbidden, "origin not allowed: "+o)
		return
	}
	token := bearer(r)
	principal := owner(token)
	switch {
	case token != "" && h.cfg.Verify != nil:
		p, ok, err := h.cfg.Verify(r.Context(), token)
		if err == nil && !ok {
			h.challenge(w, r, `, error="invalid_token", error_description="the bearer token is unknown, revoked or expired"`,
				"the bearer token is unknown, revoked or expired: sign in again")
			return
		}
		if err != nil {
			h.log.Error("hosted MCP: bearer token not checked", "error", err)
			writeError(w, http.StatusServiceUnavailable, "the bearer token could not be checked; try again shortly")
			return
		}
		principal = p
	case token == "" && h.cfg.RequireAuth:
		h.challenge(w, r, "", "sign-in required: authorize with OAuth, or send an owner token as the bearer")
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, principal))
	defer h.followStream(r)()
	h.http.ServeHTTP(w, r)
}

// Mount serves HostedPath and its resource metadata with the endpoint
// hosted returns, and everything else with next. Until hosted returns
// one (the local runner builds it once it listens), those paths answer
// 503.
func Mount(next http.Handler, hosted func() *Hosted) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case HostedPath, ResourceMetadataPath, ResourceMetadataPathSuffix:
		default:
			next.ServeHTTP(w, r)
			return
		}
		h := hosted()
		switch {
		case h == nil:
			writeError(w, http.StatusServiceUnavailable, "the hosted MCP endpoint is starting; try again")
		case r.URL.Path == HostedPath:
			h.ServeHTTP(w, r)
		default:
			h.ServeMetadata(w, r)
		}
	})
}

// challenge answers 401 with the WWW-Authenticate that leads an MCP
// client to the resource metadata, and so to sign-in.
func (h *Hosted) challenge(w http.ResponseWriter, r *http.Request, params, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+requestOrigin(r)+ResourceMetadataPathSuffix+`"`+params)
	writeError(w, http.StatusUnauthorized, msg)
}

// ServeMetadata answers the protected resource metadata (RFC 9728) of the
// endpoint as the request's origin serves it.
func (h *Hosted) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	origin := requestOrigin(r)
	as := h.cfg.AuthServer
	if as == "" {
		as = origin
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=3600")
	w.Header().Set("Access-Control-Allow-Origin", "*") // public, read by browser-based clients too
	_ = json.NewEncoder(w).Encode(map[string]any{
		"resource":                 origin + HostedPath,
		"authorization_servers":    []string{strings.TrimRight(as, "/")},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "LetAgents",
		"resource_documentation":   strings.TrimRight(as, "/") + "/docs/mcp",
	})
}

// requestOrigin is the origin the request was sent to, https when TLS or
// the load balancer in front (X-Forwarded-Proto) says so.
func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(wire.Error{Error: msg})
}

// originAllowed: a page may call the endpoint from its own origin or a
// configured one. A rebound DNS name still carries the attacker's
// origin, which matches neither.
func (h *Hosted) originAllowed(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.ContainsFunc(h.cfg.Origins, func(o string) bool { return strings.EqualFold(strings.TrimRight(o, "/"), origin) })
}

// Close ends the sessions' servers built on this task (their sessions
// go on elsewhere).
func (h *Hosted) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, b := range h.built {
		b.srv.Close()
		delete(h.built, id)
	}
}

// bearer is the request's bearer token, "" for none.
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// principalOf is who the request's credential signs in as (ServeHTTP
// put it in its context), "" for anonymous.
func principalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// owner is who a credential opens sessions as when nothing verifies it
// (HostedConfig.Verify nil): a hash of the token (never the token
// itself, which is not stored), "" for anonymous. A session answers only
// requests with its owner's credential.
func owner(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ResolveSessionIdManager makes Hosted mcp-go's session-id resolver: the
// ids are the SessionStore's, and a request's manager knows its
// credential.
func (h *Hosted) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	ctx := context.Background()
	if r != nil {
		ctx = context.WithoutCancel(r.Context())
	}
	return sessionIDs{h: h, ctx: ctx, owner: principalOf(ctx)}
}

// sessionIDs are the session ids of one request.
type sessionIDs struct {
	h     *Hosted
	ctx   context.Context
	owner string
}

// sessionIDPrefix starts every hosted session id; credentialIDPrefix
// the id of a credential's state outside sessions (Hosted.server).
const (
	sessionIDPrefix    = "mcps_"
	credentialIDPrefix = "mcpc_"
)

func (m sessionIDs) Generate() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := sessionIDPrefix + hex.EncodeToString(b)
	if err := m.h.cfg.Sessions.CreateSession(m.ctx, id, m.owner); err != nil {
		// The client's next request then finds no session and starts
		// another, as the specification has it.
		m.h.log.Error("hosted MCP session not saved", "error", err)
	}
	return id
}

// Validate: a session never opened, ended, or opened with another
// credential is terminated for this request (404: the client starts a
// new one).
func (m sessionIDs) Validate(id string) (bool, error) {
	if !strings.HasPrefix(id, sessionIDPrefix) {
		return false, errors.New("not a session id")
	}
	got, found, err := m.h.cfg.Sessions.SessionOwner(m.ctx, id)
	if err != nil {
		return false, err
	}
	return !found || got != m.owner, nil
}

func (m sessionIDs) Terminate(id string) (bool, error) {
	if terminated, err := m.Validate(id); err != nil || terminated {
		return false, err
	}
	m.h.drop(id)
	return false, m.h.cfg.Sessions.EndSession(m.ctx, id)
}

// drop ends a session's server on this task.
func (h *Hosted) drop(id string) {
	h.mu.Lock()
	b := h.built[id]
	delete(h.built, id)
	h.mu.Unlock()
	if b != nil {
		b.srv.Close()
	}
}

// dispatch is the hosted handler of a tool: the same tool's handler on
// the request's session's server.
func (h *Hosted) dispatch(name string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s, err := h.server(ctx)
		if err != nil {
			return fail("this MCP session's state could not be read: "+err.Error(), "Try again; if it persists, reconnect."), nil
		}
		if fn, ok := s.handlers[name]; ok {
			return fn(ctx, req)
		}
		return fail("no tool "+name, ""), nil
	}
}

// refuseMachineTools answers a machine tool, or a join that would start
// a local Codex worker, with why the hosted endpoint cannot.
func refuseMachineTools(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if why, ok := machineTools[req.Params.Name]; ok {
			return fail(req.Params.Name+" is not available on the hosted endpoint: "+why, ""), nil
		}
		if req.GetString("session_mode", "") == modeLive {
			return fail(`session_mode "live" is not available on the hosted endpoint: `+machineTools["start_local_codex_session"], ""), nil
		}
		return next(ctx, req)
	}
}

// serverOf is the request's session's server, nil when it cannot be had.
func (h *Hosted) serverOf(ctx context.Context) *Server {
	s, err := h.server(ctx)
	if err != nil {
		return nil
	}
	return s
}

// server is the server of the request's session: the one built on this
// task, or one built now from the session's saved state and rejoined to
// its room. A request outside any session (MCP revisions from
// 2026-07-28 have none) is its credential's: every such request of one
// token shares one state, so the room it joined is remembered. An
// anonymous one gets a server of its own, with nothing to remember.
func (h *Hosted) server(ctx context.Context) (*Server, error) {
	token, _ := ctx.Value(bearerKey{}).(string)
	principal := principalOf(ctx)
	id := ""
	if sess := mcpserver.ClientSessionFromContext(ctx); sess != nil {
		id = sess.SessionID()
	}
	if !strings.HasPrefix(id, sessionIDPrefix) {
		id = ""
		if principal != "" {
			id = credentialIDPrefix + principal
		}
	}
	now := time.Now()
	h.mu.Lock()
	if b, ok := h.built[id]; ok && id != "" {
		b.lastUsed = now
		b.token.Store(&token)
		h.mu.Unlock()
		return b.srv, nil
	}
	var idle []*Server
	for k, b := range h.built {
		if now.Sub(b.lastUsed) > hostedIdle {
			idle = append(idle, b.srv)
			delete(h.built, k)
		}
	}
	h.mu.Unlock()
	for _, s := range idle {
		s.Close()
	}

	saved := false
	switch {
	case strings.HasPrefix(id, sessionIDPrefix):
		got, found, err := h.cfg.Sessions.SessionOwner(ctx, id)
		if err != nil {
			return nil, err
		}
		saved = found && got == principal
	case id != "":
		if err := h.cfg.Sessions.CreateSession(ctx, id, principal); err != nil {
			return nil, err
		}
		saved = true
	}
	built := &hostedSession{lastUsed: now}
	built.token.Store(&token)
	cfg := h.serverConfig(h.blob(id, saved))
	cfg.Hosted.Bearer = func() string { return *built.token.Load() }
	if saved {
		cfg.Hosted.Instance = stableInstance(id)
	}
	s := newServer(cfg)
	s.mcp = h.mcp
	s.handlers = map[string]mcpserver.ToolHandlerFunc{}
	for _, t := range s.tools() {
		s.handlers[t.Tool.Name] = t.Handler
	}
	if !saved {
		return s, nil // not kept: its next request is another session
	}
	h.mu.Lock()
	if b, ok := h.built[id]; ok { // built meanwhile by a concurrent request
		b.token.Store(&token)
		h.mu.Unlock()
		s.Close()
		return b.srv, nil
	}
	built.srv = s
	h.built[id] = built
	h.mu.Unlock()
	s.rejoin(ctx)
	return s, nil
}

// stableInstance is the agent instance id of a saved session: a UUID
// (version 4 in form) made from its id, the same on every task.
func stableInstance(id string) string {
	b := sha256.Sum256([]byte("letagents hosted instance:" + id))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:16])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// blob is the state of session id: the store's when saved, else one kept
// in memory for the request.
func (h *Hosted) blob(id string, saved bool) state.Store {
	if saved {
		return state.Blob{
			Read:  func(ctx context.Context) ([]byte, bool, error) { return h.cfg.Sessions.SessionState(ctx, id) },
			Write: func(ctx context.Context, data []byte) error { return h.cfg.Sessions.SaveSessionState(ctx, id, data) },
		}
	}
	var mu sync.Mutex
	var doc []byte
	return state.Blob{
		Read: func(context.Context) ([]byte, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return doc, doc != nil, nil
		},
		Write: func(_ context.Context, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			doc = data
			return nil
		},
	}
}

// rejoin puts a session's server built on this task back in the room the
// session was in, as AutoJoin does for a local server that restarts.
func (s *Server) rejoin(ctx context.Context) {
	st := s.load()
	if st.CurrentRoom == "" {
		return
	}
	via := st.RoomSessions[st.CurrentRoom].JoinedVia
	if via == "" {
		via = joinedViaFor(st.CurrentRoom)
	}
	if _, _, err := s.join(ctx, st.CurrentRoom, via); err != nil {
		s.log.Warn("hosted session could not rejoin its room", "room", st.CurrentRoom, "error", err)
	}
}
