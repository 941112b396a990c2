package auth

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/letagents/letagents-go/shared/github"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/seal"
	"github.com/letagents/letagents-go/shared/store"
)

// Lifetimes and limits of the sign-in flows.
const (
	// SessionTTL is how long a browser session lasts.
	SessionTTL = 30 * 24 * time.Hour
	// StateTTL is how long an OAuth state may wait for its callback.
	StateTTL = 15 * time.Minute
	// slowDownStep is what GitHub adds to a device flow's interval on
	// slow_down; we add at least as much.
	slowDownStep = 5 * time.Second
	// DefaultJoinLimit is the number of room joins a client address may
	// make per minute (LETAGENTS_JOIN_LIMIT).
	DefaultJoinLimit = 10
	// DefaultInviteRoomLimit is the number of invite rooms a client
	// address may create per minute (LETAGENTS_INVITE_ROOM_LIMIT): far
	// above what any agent or person needs, low enough to stop a script
	// filling the table.
	DefaultInviteRoomLimit = 30
	// DefaultSendLimit is the number of messages a client address may send
	// per minute (LETAGENTS_SEND_LIMIT): a burst of that many, then 10 a
	// second sustained, well above a busy room of agents on one machine.
	DefaultSendLimit = 600
	// deviceStartLimit bounds device flows a client address may start per
	// minute: each one costs a call to GitHub on our OAuth app's budget.
	deviceStartLimit = 10
)

// Config is what a Service needs besides the store.
type Config struct {
	// GitHub is the GitHub client; sign-in needs it Configured.
	GitHub *github.Client
	// Sealer encrypts the GitHub tokens and device codes we keep; nil
	// leaves sign-in unavailable.
	Sealer seal.Sealer
	// RepoAccess makes repo rooms follow GitHub (public to all, private to
	// collaborators); false opens every room to anyone, for development
	// without GitHub (LETAGENTS_REPO_ACCESS=open).
	RepoAccess bool
	// LocalOwner makes every caller that no credential signs in act as the
	// local owner (letagents.LocalOwner), who administers every room. It
	// takes effect only where nobody can sign in and every room is open
	// (RepoAccess false): with sign-in on, it is ignored, so that no
	// deployment grants it by accident (config.Config refuses the
	// combination before it gets here).
	LocalOwner bool
	// JoinLimit, InviteRoomLimit and SendLimit are room joins, invite
	// rooms created and messages sent per minute per client address
	// (defaults DefaultJoinLimit, DefaultInviteRoomLimit, DefaultSendLimit).
	JoinLimit, InviteRoomLimit, SendLimit int
	// Now is the clock (time.Now by default); tests drive it.
	Now    func() time.Time
	Logger *slog.Logger
}

// Service runs the sign-in flows and access decisions.
type Service struct {
	cfg   Config
	store *store.Store

	// local is the local owner's account once read (LocalOwner mode).
	localMu sync.Mutex
	local   letagents.Account
}

// New returns a Service on st.
func New(st *store.Store, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, l := range []struct {
		n   *int
		def int
	}{{&cfg.JoinLimit, DefaultJoinLimit}, {&cfg.InviteRoomLimit, DefaultInviteRoomLimit}, {&cfg.SendLimit, DefaultSendLimit}} {
		if *l.n <= 0 {
			*l.n = l.def
		}
	}
	if cfg.GitHub == nil {
		cfg.GitHub = github.New(github.Config{})
	}
	return &Service{cfg: cfg, store: st}
}

// Via says how a request proved who it is.
type Via string

// Ways to be signed in.
const (
	ViaSession    Via = "session"     // browser cookie
	ViaOwnerToken Via = "owner_token" // Authorization: Bearer (agents)
	// ViaLocal: no credential, on a server acting for the local owner
	// (Config.LocalOwner); the person at the page and their agents alike.
	ViaLocal Via = "local"
)

// Identity is who a request comes from; the zero Identity is anonymous.
type Identity struct {
	Account      letagents.Account
	Via          Via
	CredentialID int64 // the session's, owner token's or OAuth grant's id
	// StaleSession is set when the request carried a session cookie that
	// no longer signs anyone in, so the answer can clear it.
	StaleSession bool
	// Ignored is why the request's Authorization header left the caller
	// anonymous (IgnoredScheme, IgnoredUnknown); "" otherwise.
	Ignored string
}

// SignedIn reports whether the identity is an account.
func (i Identity) SignedIn() bool { return i.Account.ID != 0 }

// AgentOwner reports whether the identity may act through its agents'
// sessions: an owner token or OAuth access token, or the local owner. A
// browser session may not: session credentials ride with the owner's
// token.
func (i Identity) AgentOwner() bool { return i.AgentToken() || i.Via == ViaLocal }

// AgentToken reports whether the identity is an agent's bearer token: an
// owner token, or an OAuth access token (the hosted MCP endpoint's
// agents), which act alike.
func (i Identity) AgentToken() bool { return i.Via == ViaOwnerToken || i.Via == ViaOAuth }

// Source is the message source a write by this identity carries:
// browser for a session, agent for an owner token, "" when anonymous.
// The API stores the agent source only under a sender the token owns.
func (i Identity) Source() string {
	switch i.Via {
	case ViaSession:
		return letagents.SourceBrowser
	case ViaOwnerToken, ViaOAuth:
		return letagents.SourceAgent
	}
	return ""
}

// Identify resolves a credential; one that signs nobody in leaves the
// caller anonymous, as in the original service, where an agent with an
// outdated token still reads and writes the rooms open to anyone. A
// session cookie wins over a bearer token, which is then not looked up.
// An unusable bearer is noted in Ignored, a stale cookie in StaleSession.
// On a server acting for the local owner (LocalOwner), whoever no
// credential signs in is the local owner.
func (s *Service) Identify(ctx context.Context, c Credential) (Identity, error) {
	who, err := s.identify(ctx, c)
	if err != nil || who.SignedIn() || !s.LocalOwner() {
		return who, err
	}
	if who.Account, err = s.localOwner(ctx); err != nil {
		return Identity{}, err
	}
	who.Via = ViaLocal
	return who, nil
}

func (s *Service) identify(ctx context.Context, c Credential) (Identity, error) {
	who := Identity{Ignored: c.Ignored}
	if c.Session != "" {
		acct, id, err := s.store.AccountBySession(ctx, HashToken(c.Session), s.cfg.Now())
		switch {
		case err == nil:
			return Identity{Account: acct, Via: ViaSession, CredentialID: id}, nil
		case letagents.IsKind(err, letagents.Unauthorized):
			who.StaleSession = true
		default:
			return who, err
		}
	}
	if c.Bearer != "" {
		via, lookup := ViaOwnerToken, s.store.AccountByOwnerToken
		if strings.HasPrefix(c.Bearer, OAuthAccessPrefix) {
			via, lookup = ViaOAuth, func(ctx context.Context, hash []byte) (letagents.Account, int64, error) {
				return s.store.AccountByOAuthToken(ctx, hash, s.cfg.Now())
			}
		}
		acct, id, err := lookup(ctx, HashToken(c.Bearer))
		switch {
		case err == nil:
			return Identity{Account: acct, Via: via, CredentialID: id, StaleSession: who.StaleSession}, nil
		case letagents.IsKind(err, letagents.Unauthorized):
			who.Ignored = IgnoredUnknown
		default:
			return who, err
		}
	}
	return who, nil
}

// SignOut ends the browser session the identity signed in with. An owner
// token is left alone: agents send theirs on every call, a sign-out is the
// browser's, and the original service never revoked a token here.
func (s *Service) SignOut(ctx context.Context, who Identity) error {
	if who.Via != ViaSession {
		return nil
	}
	return s.store.DeleteSession(ctx, who.CredentialID)
}

// LocalOwner reports whether this server acts for the local owner: asked
// to (Config.LocalOwner), with nobody able to sign in and every room open.
func (s *Service) LocalOwner() bool {
	return s.cfg.LocalOwner && !s.cfg.RepoAccess && !s.SignInConfigured()
}

// localOwner is the local owner's account, read (or made) once: after
// that, a request costs no query for it.
func (s *Service) localOwner(ctx context.Context) (letagents.Account, error) {
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if s.local.ID != 0 {
		return s.local, nil
	}
	a, err := s.store.LocalOwner(ctx, s.cfg.Now())
	if err != nil {
		return a, err
	}
	s.local = a
	return a, nil
}

// SignInConfigured reports whether people can sign in with GitHub here.
func (s *Service) SignInConfigured() bool { return s.signInReady() == nil }

// signInReady fails unless GitHub sign-in is configured.
func (s *Service) signInReady() error {
	if !s.cfg.GitHub.Configured() || s.cfg.Sealer == nil {
		return letagents.Errorf(letagents.Unavailable, "GitHub sign-in is not configured on this server")
	}
	return nil
}

// DeviceStart is a device flow just begun: the user opens VerificationURI
// and types UserCode; the agent polls with RequestID.
type DeviceStart struct {
	RequestID       string
	UserCode        string
	VerificationURI string
	ExpiresIn       time.Duration
	Interval        time.Duration
}

// StartDevice begins a GitHub device flow. roomID (optional) is the room
// the agent wants, kept for the agent's next step.
func (s *Service) StartDevice(ctx context.Context, client, roomID string) (DeviceStart, error) {
	if err := s.signInReady(); err != nil {
		return DeviceStart{}, err
	}
	if err := s.limit(ctx, "device", client, deviceStartLimit, "device sign-ins"); err != nil {
		return DeviceStart{}, err
	}
	dc, err := s.cfg.GitHub.StartDevice(ctx)
	if err != nil {
		return DeviceStart{}, s.githubError("start a device sign-in", err)
	}
	now := s.cfg.Now()
	id := NewToken()
	hash := HashToken(id)
	sealed, err := s.cfg.Sealer.Seal(ctx, []byte(dc.DeviceCode), deviceAAD(hash))
	if err != nil {
		return DeviceStart{}, fmt.Errorf("seal device code: %w", err)
	}
	interval := max(dc.Interval, time.Second)
	if err := s.store.CreateDeviceRequest(ctx, store.DeviceRequest{
		IDHash: hash, DeviceCode: sealed, UserCode: dc.UserCode, VerificationURI: dc.VerificationURI,
		Interval: interval, RoomID: roomID, CreatedAt: now, ExpiresAt: now.Add(dc.ExpiresIn),
	}); err != nil {
		return DeviceStart{}, err
	}
	return DeviceStart{RequestID: id, UserCode: dc.UserCode, VerificationURI: dc.VerificationURI,
		ExpiresIn: dc.ExpiresIn, Interval: interval}, nil
}

// DevicePoll is the state of a device flow after one poll.
type DevicePoll struct {
	Status    string
	Interval  time.Duration
	ExpiresIn time.Duration
	// Set when Status is letagents.DeviceAuthorized: the new owner token
	// (shown this once), its id, the GitHub token's expiry (zero for none)
	// and the account.
	Token          string
	TokenID        int64
	TokenExpiresAt time.Time
	Account        letagents.Account
}

// PollDevice asks GitHub once about a device flow, unless the flow was
// polled less than its interval ago (RateLimited). Unknown request ids,
// and ids already authorized, are NotFound.
func (s *Service) PollDevice(ctx context.Context, requestID string) (DevicePoll, error) {
	if err := s.signInReady(); err != nil {
		return DevicePoll{}, err
	}
	now := s.cfg.Now()
	hash := HashToken(requestID)
	d, err := s.store.ClaimDevicePoll(ctx, hash, now)
	if letagents.IsKind(err, letagents.Gone) {
		return DevicePoll{Status: letagents.DeviceExpired}, nil
	}
	if err != nil {
		return DevicePoll{}, err
	}
	code, err := s.cfg.Sealer.Open(ctx, d.DeviceCode, deviceAAD(hash))
	if err != nil {
		return DevicePoll{}, fmt.Errorf("open device code: %w", err)
	}
	pending := DevicePoll{Status: letagents.DevicePending, Interval: d.Interval, ExpiresIn: d.ExpiresAt.Sub(now)}
	tok, err := s.cfg.GitHub.PollDevice(ctx, string(code), now)
	var slow *github.SlowDownError
	switch {
	case err == nil:
	case errors.Is(err, github.ErrAuthorizationPending):
		return pending, nil
	case errors.As(err, &slow):
		pending.Status = letagents.DeviceSlowDown
		pending.Interval = max(slow.Interval, d.Interval+slowDownStep)
		return pending, s.store.SlowDownDevice(ctx, hash, pending.Interval)
	case errors.Is(err, github.ErrAccessDenied):
		return DevicePoll{Status: letagents.DeviceDenied}, s.store.DeleteDeviceRequest(ctx, hash)
	case errors.Is(err, github.ErrExpiredToken), errors.Is(err, github.ErrRejected):
		if errors.Is(err, github.ErrRejected) {
			s.cfg.Logger.Warn("GitHub rejected a device code poll", "error", err)
		}
		return DevicePoll{Status: letagents.DeviceExpired}, s.store.DeleteDeviceRequest(ctx, hash)
	default:
		return DevicePoll{}, s.githubError("check the device sign-in", err)
	}
	ownerToken := NewToken()
	acct, id, err := s.signIn(ctx, tok, store.SignIn{DeviceRequest: hash, OwnerTokenHash: HashToken(ownerToken)})
	if err != nil {
		return DevicePoll{}, err
	}
	return DevicePoll{Status: letagents.DeviceAuthorized, Token: ownerToken, TokenID: id, TokenExpiresAt: tok.ExpiresAt, Account: acct}, nil
}

// signIn completes a sign-in with a GitHub token: who it belongs to, the
// token sealed for later access checks, and the credential in `in`.
func (s *Service) signIn(ctx context.Context, tok github.Token, in store.SignIn) (letagents.Account, int64, error) {
	user, err := s.cfg.GitHub.User(ctx, tok.AccessToken)
	if err != nil {
		return letagents.Account{}, 0, s.githubError("read your GitHub account", err)
	}
	uid := strconv.FormatInt(user.ID, 10)
	sealed, err := s.cfg.Sealer.Seal(ctx, []byte(tok.AccessToken), tokenAAD(uid))
	if err != nil {
		return letagents.Account{}, 0, fmt.Errorf("seal GitHub token: %w", err)
	}
	name := user.Name
	if name == "" {
		name = user.Login
	}
	in.Account = letagents.Account{Provider: "github", ProviderUserID: uid, Login: user.Login, DisplayName: name, AvatarURL: user.AvatarURL}
	in.GitHubToken = sealed
	in.GitHubTokenExpiresAt = tok.ExpiresAt
	in.Now = s.cfg.Now()
	return s.store.SignIn(ctx, in)
}

// LoginCookie names the cookie that binds a web sign-in to the browser
// that started it; it holds LoginStart.BrowserNonce.
const LoginCookie = "letagents_login"

// LoginStart is a web sign-in just begun: send the browser to AuthURL,
// with BrowserNonce in its LoginCookie.
type LoginStart struct {
	AuthURL      string
	State        string
	RedirectTo   string
	BrowserNonce string
}

// BeginLogin starts a GitHub web sign-in that returns to callbackURL and
// then leads to redirectTo (a path on this site; anything else becomes "/").
// Only the browser holding the returned BrowserNonce can finish it: else an
// attacker could start a sign-in of their own and hand its callback link
// to a victim, whose browser would end up signed in as the attacker.
func (s *Service) BeginLogin(ctx context.Context, redirectTo, callbackURL string) (LoginStart, error) {
	if err := s.signInReady(); err != nil {
		return LoginStart{}, err
	}
	state := NewToken()[:48]
	redirectTo = SafeRedirect(redirectTo)
	now := s.cfg.Now()
	nonce := NewToken()
	if err := s.store.CreateAuthState(ctx, state, HashToken(nonce), redirectTo, now, now.Add(StateTTL)); err != nil {
		return LoginStart{}, err
	}
	return LoginStart{AuthURL: s.cfg.GitHub.AuthorizeURL(state, callbackURL), State: state, RedirectTo: redirectTo,
		BrowserNonce: nonce}, nil
}

// Login is a finished web sign-in: the session token for the cookie.
type Login struct {
	Account      letagents.Account
	SessionToken string
	ExpiresAt    time.Time
	RedirectTo   string
}

// FinishLogin redeems the state (once) and GitHub's code, for the browser
// whose LoginCookie holds browserNonce ("" when it has none: refused).
func (s *Service) FinishLogin(ctx context.Context, code, state, browserNonce, callbackURL string) (Login, error) {
	if err := s.signInReady(); err != nil {
		return Login{}, err
	}
	if code == "" || state == "" {
		return Login{}, letagents.Errorf(letagents.Invalid, "Missing code or state")
	}
	redirectTo, err := s.store.ConsumeAuthState(ctx, state, HashToken(browserNonce), s.cfg.Now())
	if err != nil {
		return Login{}, err
	}
	tok, err := s.cfg.GitHub.ExchangeCode(ctx, code, callbackURL, s.cfg.Now())
	if errors.Is(err, github.ErrRejected) {
		return Login{}, letagents.Errorf(letagents.Invalid, "GitHub did not accept the sign-in code; sign in again")
	}
	if err != nil {
		return Login{}, s.githubError("finish the sign-in", err)
	}
	token := NewToken()
	expires := s.cfg.Now().Add(SessionTTL)
	acct, _, err := s.signIn(ctx, tok, store.SignIn{SessionHash: HashToken(token), SessionExpiresAt: expires})
	if err != nil {
		return Login{}, err
	}
	return Login{Account: acct, SessionToken: token, ExpiresAt: expires, RedirectTo: redirectTo}, nil
}

// limit takes one of the perMinute tokens of kind for client (see
// store.Take), or refuses with the time until one is back.
func (s *Service) limit(ctx context.Context, kind, client string, perMinute int, what string) error {
	wait, err := s.store.Take(ctx, kind, client, perMinute, s.cfg.Now())
	if err != nil || wait == 0 {
		return err
	}
	return rateLimited(wait, perMinute, what)
}

// rateLimited is the refusal of a request that found no token, one to be
// there after wait.
func rateLimited(wait time.Duration, perMinute int, what string) error {
	wait = (wait + time.Second - 1).Truncate(time.Second) // Retry-After speaks whole seconds
	return &letagents.Error{Kind: letagents.RateLimited, Code: letagents.CodeRateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("Too many %s from this address (at most %d a minute); try again in %d s", what, perMinute, int(wait/time.Second))}
}

// LimitJoin counts a room join from a client address.
func (s *Service) LimitJoin(ctx context.Context, client string) error {
	return s.limit(ctx, "join", client, s.cfg.JoinLimit, "room joins")
}

// LimitInviteRoom counts an invite room created from a client address.
func (s *Service) LimitInviteRoom(ctx context.Context, client string) error {
	return s.limit(ctx, "invite_room", client, s.cfg.InviteRoomLimit, "new invite rooms")
}

// LimitSend counts a message sent from a client address.
func (s *Service) LimitSend(ctx context.Context, client string) error {
	return s.limit(ctx, sendKind, client, s.cfg.SendLimit, sendWhat)
}

// The send rate's bucket kind, and what its refusal calls sends.
const sendKind, sendWhat = "send", "messages"

// SendTake is LimitSend's token for a statement that takes it with the
// send (store.Send), whose wait SendRefused turns into LimitSend's
// refusal.
func (s *Service) SendTake(client string) *store.RateTake {
	return &store.RateTake{Kind: sendKind, Key: client, PerMinute: s.cfg.SendLimit, Now: s.cfg.Now()}
}

// SendRefused is LimitSend's refusal of a send that found no token, one
// to be there after wait.
func (s *Service) SendRefused(wait time.Duration) error {
	return rateLimited(wait, s.cfg.SendLimit, sendWhat)
}

// githubError reports GitHub's failure to the client as unavailability,
// with the details in the log only.
func (s *Service) githubError(doing string, err error) error {
	s.cfg.Logger.Warn("GitHub call failed", "doing", doing, "error", err)
	return letagents.Errorf(letagents.Unavailable, "Could not %s: GitHub did not answer; try again shortly", doing)
}

// deviceAAD binds a sealed device code to its request.
func deviceAAD(idHash []byte) []byte { return []byte("device_code:" + hex.EncodeToString(idHash)) }

// tokenAAD binds a sealed GitHub token to its GitHub user.
func tokenAAD(githubUserID string) []byte { return []byte("github_token:github:" + githubUserID) }
