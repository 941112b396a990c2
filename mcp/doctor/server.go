package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/mcp/gitctx"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
	"github.com/letagents/letagents-go/shared/wire"
)

// Where a token comes from, for messages.
const (
	fromEnv   = "LETAGENTS_TOKEN"
	fromState = "the saved sign-in"
)

// signInFix is how a person signs in: through the agent, as the MCP
// server owns the device flow.
const signInFix = "ask your agent to call the LetAgents tool start_device_auth (then poll_device_auth), or set LETAGENTS_TOKEN " +
	"in the MCP server's configuration"

// token is the owner token the directory's agents send, and where it
// comes from ("" when none).
func (d *diagnosis) token() (token, from string) {
	if d.cfg.Token != "" {
		return d.cfg.Token, fromEnv
	}
	if d.st.Auth != nil && d.st.Auth.Token != "" {
		return d.st.Auth.Token, fromState
	}
	return "", ""
}

// client is an API client of url sending token; ignored, when set, hears
// the server say it did not accept the token.
func (d *diagnosis) client(url, token string, ignored *string) *apiclient.Client {
	cfg := apiclient.Config{APIURL: url, HTTPClient: d.cfg.HTTPClient, UserAgent: "letagents-doctor (go)",
		Token: func() string { return token }}
	if ignored != nil {
		cfg.TokenIgnored = func(_ context.Context, _, reason string) { *ignored = reason }
	}
	return apiclient.New(cfg)
}

func (d *diagnosis) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.cfg.Timeout)
}

// server checks that the API answers as LetAgents, and says its version.
func (d *diagnosis) server(ctx context.Context) Check {
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	h, err := d.client(d.api, "", nil).Health(ctx)
	if err != nil {
		fix := "start the server (the local runner: go run ./localdev, which prints the export LETAGENTS_API_URL=… line to use), " +
			"or set LETAGENTS_API_URL to your LetAgents API"
		return Check{Name: "server", Status: Fail, Message: fmt.Sprintf("%s does not answer: %v", d.api, err), Fix: fix}
	}
	if h.Service != "letagents-api" || h.Status != "ok" {
		return Check{Name: "server", Status: Fail, Message: fmt.Sprintf("%s answers /api/health as %q (status %q), not as a LetAgents API",
			d.api, h.Service, h.Status), Fix: "set LETAGENTS_API_URL to your LetAgents API (its base URL, without a path)"}
	}
	d.reachable = true
	version := "version not reported"
	if h.Version != "" {
		version = "version " + h.Version
	}
	return Check{Name: "server", Status: OK, Message: fmt.Sprintf("%s answers (%s; this letagents is %s)", d.api, version, d.cfg.Version)}
}

// unreachable is a check that needs the server, skipped.
func unreachable(name string) Check {
	return Check{Name: name, Status: Skip, Message: "not checked: the server does not answer"}
}

// signIn checks the token the agents send, or that the server needs
// none.
func (d *diagnosis) signIn(ctx context.Context) Check {
	const name = "sign-in"
	if !d.reachable {
		return unreachable(name)
	}
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	token, from := d.token()
	ignored := ""
	s, err := d.client(d.api, token, &ignored).Session(ctx)
	if err != nil && ignored == "" {
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("GET /auth/session: %v", err), Fix: "check the server's log"}
	}
	switch {
	case ignored != "" && from == fromEnv:
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("%s is not accepted by %s (%s): agents act anonymously", from, d.api, ignoredText(ignored)),
			Fix: "replace LETAGENTS_TOKEN with a current token, or remove it from the environment and the MCP configuration"}
	case ignored != "":
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("%s in %s is not accepted by %s (%s): agents act anonymously", from,
			d.cfg.StatePath, d.api, ignoredText(ignored)), Fix: signInFix}
	case s.Authenticated && token == "":
		// Signed in without a credential: the server acts for everyone as
		// its local owner (sign-in off, on the local runner).
		login := "its local owner"
		if s.Account != nil {
			login = "its local owner, " + s.Account.Login
		}
		return Check{Name: name, Status: OK, Message: "sign-in is off: the server acts for every agent here as " + login}
	case s.Authenticated && s.Account != nil:
		return Check{Name: name, Status: OK, Message: fmt.Sprintf("signed in as %s (%s)", s.Account.Login, from)}
	case s.Authenticated:
		return Check{Name: name, Status: OK, Message: fmt.Sprintf("signed in (%s)", from)}
	case !s.SignInConfigured:
		return Check{Name: name, Status: OK, Message: "sign-in is off on this server: no token needed"}
	}
	return Check{Name: name, Status: Warn, Message: "not signed in: agent sessions, the task board and rooms of private repositories need an account",
		Fix: signInFix}
}

// ignoredText is a server's reason for not accepting a token.
func ignoredText(reason string) string {
	switch reason {
	case "unknown":
		return "a token it does not know: never issued there, or revoked"
	case "scheme":
		return "it arrived as something other than \"Bearer <token>\": a proxy may rewrite the Authorization header"
	}
	return "refused"
}

// room checks the room the directory maps to: found, and readable.
func (d *diagnosis) room(ctx context.Context) Check {
	const name = "room"
	repo := d.repo
	if repo.ConfigError != "" {
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("%s is not usable: %s", repo.ConfigFile, repo.ConfigError),
			Fix: fmt.Sprintf("fix %s to read {\"room\": \"<room id>\"}, or remove it to use the git remote", repo.ConfigFile)}
	}
	if repo.Room == "" {
		msg := "no room for this directory: no " + gitctx.ConfigName + " and no git remote origin naming a repository"
		if repo.RepoRoot == "" {
			msg = "no room for this directory: not in a git repository, and no " + gitctx.ConfigName
		}
		return Check{Name: name, Status: Warn, Message: msg + "; agents start in the lobby",
			Fix: "git remote add origin <the repository's URL>   (or pin a room: echo '{\"room\": \"<room id>\"}' > " + gitctx.ConfigName + ")"}
	}
	via := "from " + repo.Source
	if repo.Source == gitctx.SourceConfig {
		via = "from " + repo.ConfigFile
	} else if repo.BranchRoom != "" {
		via = fmt.Sprintf("from origin and branch %s", repo.CurrentBranch)
	}
	if !d.reachable {
		c := unreachable(name)
		c.Message = fmt.Sprintf("%s (%s); %s", repo.Room, via, c.Message)
		return c
	}
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	token, _ := d.token()
	j, err := d.client(d.api, token, new(string)).RoomInfo(ctx, repo.Room)
	var apiErr *apiclient.APIError
	switch {
	case err == nil:
		return Check{Name: name, Status: OK, Message: fmt.Sprintf("%s (%s): exists, you are %s", j.RoomID, via, cmp.Or(j.Role, "a member"))}
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound && rooms.KindOf(repo.Room) == letagents.RoomInvite:
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("%s (%s): no room has this invite code", repo.Room, via),
			Fix: "ask for the room's current invite code and put it in " + gitctx.ConfigName}
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
		return Check{Name: name, Status: Warn, Message: fmt.Sprintf("%s (%s): not created yet; the agent's MCP server creates it when it joins", repo.Room, via)}
	case errors.As(err, &apiErr) && (apiErr.Status == http.StatusUnauthorized || apiErr.Status == http.StatusForbidden):
		fix := signInFix
		if apiErr.Status == http.StatusForbidden {
			fix = "ask an admin of the room for access (or sign in with an account that has it: " + signInFix + ")"
		}
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("%s (%s): %v", repo.Room, via, err), Fix: fix}
	}
	return Check{Name: name, Status: Fail, Message: fmt.Sprintf("%s (%s): %v", repo.Room, via, err), Fix: "check the server's log"}
}

// lastCursor is the greatest message cursor: a read after it returns
// nothing, so checking a session's credentials with it marks no message
// as delivered to the session.
var lastCursor = letagents.MessageID(math.MaxInt64)

// sessions checks the agent sessions the state file saved for the
// directory's room, as the hooks will use them: each still accepted by
// the server it was registered with.
func (d *diagnosis) sessions(ctx context.Context) Check {
	const name = "sessions"
	if d.stateErr != nil {
		var corrupt *state.CorruptError
		if errors.As(d.stateErr, &corrupt) {
			return Check{Name: name, Status: Fail, Message: fmt.Sprintf("the state file %s is not readable: %v", d.cfg.StatePath, d.stateErr),
				Fix: fmt.Sprintf("move %s aside; the agents save a new one (and sign in again)", d.cfg.StatePath)}
		}
		return Check{Name: name, Status: Fail, Message: fmt.Sprintf("the state file %s: %v", d.cfg.StatePath, d.stateErr),
			Fix: "check the file's permissions, or set LETAGENTS_STATE_PATH to a file the agents can write"}
	}
	room := d.repo.Room
	if room == "" {
		return Check{Name: name, Status: Skip, Message: "not checked: no room for this directory"}
	}
	var saved []state.AgentSession
	for _, s := range d.st.AgentSessions {
		if s.RoomID == room {
			saved = append(saved, s)
		}
	}
	registerFix := "start the agent here and let it call the LetAgents tool register_agent_session (its hooks find the session it saves)"
	if len(saved) == 0 {
		return Check{Name: name, Status: Warn, Message: fmt.Sprintf("no agent session saved for %s in %s: hooks deliver nothing until an agent registers one",
			room, d.cfg.StatePath), Fix: registerFix}
	}
	if !d.reachable {
		return unreachable(name)
	}
	slices.SortFunc(saved, func(a, b state.AgentSession) int { return cmp.Compare(a.SessionID, b.SessionID) })
	token, _ := d.token()
	var valid, ended, other []string
	for _, s := range saved {
		label := fmt.Sprintf("%s (%s, %s)", s.SessionID, cmp.Or(s.ActorLabel, s.DisplayName, "?"), cmp.Or(s.RuntimeKey, "no runtime key"))
		err := d.sessionValid(ctx, cmp.Or(strings.TrimRight(s.APIURL, "/"), d.api), token, s)
		switch code := apiclient.Code(err); {
		case err == nil:
			valid = append(valid, label)
		case code == letagents.CodeAgentSessionEnded:
			ended = append(ended, label+" has ended")
		case code == letagents.CodeAgentSessionInvalid:
			ended = append(ended, label+" is unknown to the server")
		default:
			other = append(other, fmt.Sprintf("%s: %v", label, err))
		}
	}
	var p problems
	p.status = OK
	if len(valid) > 0 {
		p.add(OK, "valid: "+strings.Join(valid, ", "), "")
	}
	if len(ended) > 0 {
		status := Warn
		if len(valid) == 0 {
			status = Fail
		}
		p.add(status, strings.Join(ended, ", ")+" (its agent's hooks deliver nothing until it registers again; they then forget it)", registerFix)
	}
	if len(other) > 0 {
		p.add(Fail, "not checked: "+strings.Join(other, ", "), "fix the sign-in and the server first (see above)")
	}
	return p.check(name)
}

// sessionValid asks api whether it accepts s's credentials, with a read
// after the last message: nothing comes back, so nothing is marked as
// delivered to the session.
func (d *diagnosis) sessionValid(ctx context.Context, api, token string, s state.AgentSession) error {
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	c := d.client(api, token, new(string)).As(wire.SessionCredentials{AgentSessionID: s.SessionID, AgentSessionToken: s.SessionToken})
	_, err := c.Messages(ctx, s.RoomID, apiclient.Query{After: lastCursor, Limit: 1})
	return err
}
