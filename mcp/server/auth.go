package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// authTools are the tools of signing in and of diagnosing the set-up.
func (s *Server) authTools() []mcpserver.ServerTool {
	return []mcpserver.ServerTool{
		bind(tool("get_onboarding_status", readOnly,
			"Diagnose set-up: the API address, sign-in, your identity, the room you are in, the room your working directory suggests, "+
				"and next_step: the tool to call next.",
			cwdArg("A directory to inspect instead of the working directory.")),
			s.onboardingStatus),
		bind(tool("start_device_auth", writes,
			"Start signing in with GitHub (needed for private repositories' rooms). The answer has a verification_uri and user_code: ask your human "+
				"to open the page and enter the code, then call poll_device_auth. Reuses a pending request unless force is true.",
			roomIDArg, mcp.WithBoolean("force", mcp.Description("Start a new request even if one is pending."))),
			s.startDeviceAuth),
		bind(tool("poll_device_auth", writes,
			"Check whether your human approved the GitHub sign-in. Call it every interval seconds until status is authorized (or denied/expired); "+
				"once authorized it saves the sign-in and joins the room that needed it (auto_join, default true).",
			mcp.WithString("request_id", mcp.MaxLength(letagents.MaxTokenBytes), mcp.Description("Defaults to the pending request.")),
			mcp.WithString("room_id", mcp.MaxLength(maxRoomID), mcp.Description("The room to join once signed in (default: the one that asked for sign-in).")),
			mcp.WithBoolean("auto_join", mcp.Description("Join the room once signed in (default true)."))),
			s.pollDeviceAuth),
		bind(tool("clear_saved_auth", hints{destructive: true, idempotent: true},
			"Forget the saved GitHub sign-in (and any pending one) on this machine, e.g. to sign in with another account. LETAGENTS_TOKEN, if set, still applies."),
			s.clearSavedAuth),
	}
}

// startDevice begins a GitHub device sign-in for roomID (may be ""),
// reusing the pending one for the same room unless force is set.
func (s *Server) startDevice(ctx context.Context, roomID string, force bool) (state.PendingDeviceAuth, bool, error) {
	st := s.load()
	if p := st.PendingDeviceAuth; p != nil && !force && (roomID == "" || p.SuggestedRoomID == "" || p.SuggestedRoomID == roomID) {
		return *p, true, nil
	}
	d, err := s.api.StartDevice(ctx, roomID)
	if err != nil {
		return state.PendingDeviceAuth{}, false, err
	}
	now := time.Now().UTC()
	p := state.PendingDeviceAuth{RequestID: d.RequestID, UserCode: d.UserCode, VerificationURI: d.VerificationURI,
		IntervalSeconds: d.Interval, ExpiresAt: now.Add(time.Duration(d.ExpiresIn) * time.Second).Format(time.RFC3339),
		StartedAt: now.Format(time.RFC3339), SuggestedRoomID: roomID}
	s.update(ctx, func(st *state.State) error {
		st.PendingDeviceAuth = &p
		return nil
	})
	return p, false, nil
}

// signInSteps tells the agent what its human must do.
func signInSteps(p state.PendingDeviceAuth) string {
	return fmt.Sprintf("Ask your human to open %s and enter the code %s to sign in with GitHub. Then call poll_device_auth "+
		"(every %d seconds until it says authorized); it joins the room once approved.", p.VerificationURI, p.UserCode, max(p.IntervalSeconds, 1))
}

// tokenNotice is the server's word that it did not accept this process's
// token and served it as anonymous.
type tokenNotice struct {
	Source string `json:"source"` // tokenFromEnv or tokenFromState
	Reason string `json:"reason"` // the server's: unknown, scheme, or refused
	Hint   string `json:"hint"`
}

// tokenIgnored hears the server say it did not accept token (see
// apiclient.Config.TokenIgnored). A saved sign-in the server does not know
// is dropped, so the device flow can replace it; LETAGENTS_TOKEN cannot
// be, so it is reported (log, hints, get_onboarding_status). A token
// refused for its scheme was rewritten on the way, not revoked: kept.
func (s *Server) tokenIgnored(ctx context.Context, token, reason string) {
	n := tokenNotice{Source: tokenFromState, Reason: reason}
	if token == s.cfg.EnvToken {
		n.Source = tokenFromEnv
	}
	n.Hint = s.tokenHint(n)
	if old := s.ignored.Swap(&n); old == nil || *old != n {
		s.log.Warn("the server did not accept the owner token and served this agent as anonymous", "source", n.Source, "reason", reason)
	}
	if n.Source == tokenFromState && reason != "scheme" {
		// The request's context may be ending (a poll's deadline); the
		// state should change all the same.
		ctx = context.WithoutCancel(ctx)
		s.update(ctx, func(st *state.State) error {
			if st.Auth != nil && st.Auth.Token == token {
				st.Auth = nil
			}
			return nil
		})
		s.forgetIdentity()
	}
}

// tokenHint says what to do about a token the server did not accept.
func (s *Server) tokenHint(n tokenNotice) string {
	token := "The saved sign-in"
	if n.Source == tokenFromEnv {
		token = "LETAGENTS_TOKEN, set in this MCP server's environment,"
	}
	switch {
	case n.Reason == "scheme":
		return fmt.Sprintf("%s reached %s as something other than \"Bearer <token>\": a proxy on the way may be rewriting the Authorization header. "+
			"Until that is fixed this agent acts anonymously: open rooms work, anything that needs an account does not.", token, s.cfg.APIURL)
	case n.Source == tokenFromEnv:
		return fmt.Sprintf("%s is not accepted by %s (%s), so this agent acts anonymously: open rooms work, anything that needs an account does not. "+
			"Replace it with a current token or remove it from the MCP configuration, then restart; while it is set, a sign-in through "+
			"start_device_auth is not used.", token, s.cfg.APIURL, reasonText(n.Reason))
	}
	return fmt.Sprintf("%s is not accepted by %s (%s) and has been cleared. Call start_device_auth to sign in again.", token, s.cfg.APIURL, reasonText(n.Reason))
}

// reasonText is a server's reason for not accepting a token, for people.
func reasonText(reason string) string {
	if reason == "unknown" {
		return "a token it does not know: never issued there, or revoked"
	}
	return "refused"
}

// clearTokenNotice forgets what the server said of the saved sign-in,
// once that sign-in is replaced or dropped.
func (s *Server) clearTokenNotice() {
	if n := s.ignored.Load(); n != nil && n.Source == tokenFromState {
		s.ignored.CompareAndSwap(n, nil)
	}
}

type startDeviceArgs struct {
	RoomID string `json:"room_id"`
	Force  bool   `json:"force"`
}

type deviceAnswer struct {
	Success               bool `json:"success"`
	ReusedExistingRequest bool `json:"reused_existing_request"`
	state.PendingDeviceAuth
	NextStep string `json:"next_step"`
}

func (s *Server) startDeviceAuth(ctx context.Context, a startDeviceArgs) *mcp.CallToolResult {
	room := a.RoomID
	if room == "" {
		if r, ok := s.current(); ok {
			room = r.join.RoomID
		} else {
			room = s.detect(ctx, "").Room
		}
	}
	p, reused, err := s.startDevice(ctx, room, a.Force)
	if err != nil {
		return s.apiFailure(ctx, err)
	}
	return result(deviceAnswer{Success: true, ReusedExistingRequest: reused, PendingDeviceAuth: p, NextStep: signInSteps(p)})
}

type pollDeviceArgs struct {
	RequestID string `json:"request_id"`
	RoomID    string `json:"room_id"`
	AutoJoin  *bool  `json:"auto_join"`
}

type authorizedAnswer struct {
	Success        bool              `json:"success"`
	Status         string            `json:"status"`
	Account        wire.Account      `json:"account"`
	ExpiresAt      *string           `json:"expires_at"`
	AutoJoinedRoom string            `json:"auto_joined_room,omitempty"`
	RoomPath       string            `json:"room_path,omitempty"`
	RoomURL        string            `json:"room_url,omitempty"`
	Join           *joinAnswer       `json:"join,omitempty"`
	AgentIdentity  agentIdentityJSON `json:"agent_identity"`
	Hint           string            `json:"hint"`
}

func (s *Server) pollDeviceAuth(ctx context.Context, a pollDeviceArgs) *mcp.CallToolResult {
	st := s.load()
	pending := st.PendingDeviceAuth
	id := a.RequestID
	if id == "" && pending != nil {
		id = pending.RequestID
	}
	if id == "" {
		return fail("no device sign-in is pending", "Call start_device_auth first.")
	}
	r, err := s.api.PollDevice(ctx, id)
	switch {
	case apiclient.IsStatus(err, http.StatusTooManyRequests):
		return result(map[string]any{"success": true, "status": letagents.DevicePending, "hint": "Polled too soon: wait the interval, then call poll_device_auth again."})
	case apiclient.IsStatus(err, http.StatusNotFound):
		s.clearPending(ctx, id)
		return fail("this device sign-in is unknown or already finished", "Call start_device_auth to begin a new one.")
	case err != nil:
		return s.apiFailure(ctx, err)
	}
	switch r.Status {
	case letagents.DevicePending, letagents.DeviceSlowDown:
		s.update(ctx, func(st *state.State) error {
			if st.PendingDeviceAuth != nil && st.PendingDeviceAuth.RequestID == id && r.Interval > 0 {
				st.PendingDeviceAuth.IntervalSeconds = r.Interval
			}
			return nil
		})
		return result(map[string]any{"success": true, "status": r.Status, "interval": r.Interval, "expires_in": r.ExpiresIn,
			"hint": fmt.Sprintf("Not approved yet. Wait %d seconds and call poll_device_auth again.", max(r.Interval, 1))})
	case letagents.DeviceDenied, letagents.DeviceExpired:
		s.clearPending(ctx, id)
		return fail("the GitHub sign-in was "+r.Status, "Call start_device_auth to try again.")
	}
	auth := r.Authorized
	avatar := ""
	if auth.Account.AvatarURL != nil {
		avatar = *auth.Account.AvatarURL
	}
	s.update(ctx, func(st *state.State) error {
		st.Auth = &state.Auth{Token: auth.LetAgentsToken, Account: &state.Account{ID: auth.Account.ID, Login: auth.Account.Login,
			DisplayName: auth.Account.DisplayName, AvatarURL: avatar},
			StoredAt: time.Now().UTC().Format(time.RFC3339), Source: state.AuthSourceDeviceFlow}
		if auth.OAuthTokenExpiresAt != nil {
			st.Auth.ExpiresAt = *auth.OAuthTokenExpiresAt
		}
		st.PendingDeviceAuth = nil
		return nil
	})
	s.forgetIdentity()
	s.clearTokenNotice()
	ans := authorizedAnswer{Success: true, Status: letagents.DeviceAuthorized, Account: auth.Account, ExpiresAt: auth.OAuthTokenExpiresAt,
		Hint: "Signed in. The token is saved for later runs."}
	if a.AutoJoin == nil || *a.AutoJoin {
		room := a.RoomID
		for _, candidate := range []string{suggested(pending), s.currentID(), s.detect(ctx, "").Room} {
			if room == "" {
				room = candidate
			}
		}
		if room != "" {
			j, needsAuth, err := s.join(ctx, room, joinedViaFor(room))
			switch {
			case err != nil:
				ans.Hint += " Joining " + room + " failed: " + err.Error()
			case needsAuth != nil:
				ans.Hint += " " + room + " still needs access: " + needsAuth.Message
			default:
				ans.AutoJoinedRoom, ans.RoomPath, ans.RoomURL, ans.Join = j.RoomID, j.RoomPath, j.RoomURL, &j
				ans.Hint += " You are in " + j.RoomID + ": start your wait_for_messages loop."
			}
		}
	}
	ans.AgentIdentity = s.identityJSON(s.whoAmI(ctx))
	return result(ans)
}

func suggested(p *state.PendingDeviceAuth) string {
	if p == nil {
		return ""
	}
	return p.SuggestedRoomID
}

func (s *Server) currentID() string {
	if r, ok := s.current(); ok {
		return r.join.RoomID
	}
	return ""
}

// clearPending drops the pending sign-in if it is the one named.
func (s *Server) clearPending(ctx context.Context, requestID string) {
	s.update(ctx, func(st *state.State) error {
		if st.PendingDeviceAuth != nil && st.PendingDeviceAuth.RequestID == requestID {
			st.PendingDeviceAuth = nil
		}
		return nil
	})
}

func (s *Server) clearSavedAuth(ctx context.Context, _ noArgs) *mcp.CallToolResult {
	s.update(ctx, func(st *state.State) error {
		st.Auth, st.PendingDeviceAuth = nil, nil
		return nil
	})
	s.forgetIdentity()
	s.clearTokenNotice()
	return result(map[string]any{"success": true, "env_token_still_present": s.cfg.EnvToken != ""})
}

type onboardingArgs struct {
	Cwd string `json:"cwd"`
}

func (s *Server) onboardingStatus(ctx context.Context, a onboardingArgs) *mcp.CallToolResult {
	st := s.load()
	repo := s.detect(ctx, a.Cwd)
	source, authenticated := "none", false
	var account *state.Account
	var expires string
	switch {
	case s.cfg.EnvToken != "":
		source, authenticated = tokenFromEnv, true
	case st.Auth != nil:
		source, authenticated, account, expires = tokenFromState, true, st.Auth.Account, st.Auth.ExpiresAt
	case s.localOwner(ctx):
		source, authenticated = authLocalOwner, true
	}
	ignored := s.ignored.Load()
	if ignored != nil && ignored.Source == source {
		authenticated = false
	}
	next := "join_room"
	current := s.currentID()
	switch {
	case st.PendingDeviceAuth != nil && !authenticated:
		next = "poll_device_auth"
	case current == "" && st.CurrentRoom != "":
		next = "resume_room_session"
	case current != "":
		next = "wait_for_messages"
	}
	return result(map[string]any{
		"api_url": s.cfg.APIURL, "local_state_path": s.cfg.StatePath, "authenticated": authenticated, "auth_source": source,
		"account": account, "token_expires_at": expires, "pending_device_auth": st.PendingDeviceAuth,
		"agent_identity": s.identityJSON(s.whoAmI(ctx)), "current_room": current, "saved_current_room": st.CurrentRoom,
		"detected_room_from_context": repo.Room, "repo_root": repo.RepoRoot, "next_step": next, "token_ignored": ignored,
	})
}
