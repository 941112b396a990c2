package letagents

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Account is a person, known by their GitHub identity, or the local owner
// (LocalOwner). Its db tags name the columns the store reads it from (by
// name).
type Account struct {
	ID             int64     `db:"id"`
	Provider       string    `db:"provider"`         // "github", or ProviderLocal
	ProviderUserID string    `db:"provider_user_id"` // GitHub's numeric user id, as text
	Login          string    `db:"login"`
	DisplayName    string    `db:"display_name"` // GitHub's name, else the login
	AvatarURL      string    `db:"avatar_url"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// The local owner is the one account a server with sign-in off and every
// room open acts for (when configured to: LETAGENTS_LOCAL_OWNER), so that
// on a laptop the board, agent sessions and hooks work as for a signed-in
// account. No sign-in makes or reaches it: GitHub accounts have provider
// "github".
const (
	ProviderLocal         = "local"
	LocalOwnerLogin       = "local"
	LocalOwnerDisplayName = "Local owner"
)

// LocalOwner is the local owner's account as it is stored (without its id
// and times).
func LocalOwner() Account {
	return Account{Provider: ProviderLocal, ProviderUserID: LocalOwnerLogin, Login: LocalOwnerLogin, DisplayName: LocalOwnerDisplayName}
}

// Agent is a named agent of an account, as the agents directory keeps it.
// CanonicalKey is "<owner login>/<name>", the key agent sessions and task
// leases name an agent by. Its db tags name the columns the store reads it
// from (by name).
type Agent struct {
	ID             int64     `db:"id"`
	CanonicalKey   string    `db:"canonical_key"`
	Name           string    `db:"name"`
	DisplayName    string    `db:"display_name"`
	OwnerAccountID int64     `db:"owner_account_id"`
	OwnerLogin     string    `db:"owner_login"`
	OwnerLabel     string    `db:"owner_label"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// Machine-readable codes of the errors about who the caller is, sent as the
// error answer's "code" (Error.Code).
const (
	// CodeNotAuthenticated: the action needs a signed-in account.
	CodeNotAuthenticated = "NOT_AUTHENTICATED"
	// CodeTokenInvalid: the owner token or browser session is unknown or
	// revoked; the client should forget it.
	CodeTokenInvalid = "TOKEN_INVALID"
	// CodePrivateRepoNoAccess: the signed-in account cannot see the repo
	// room's repository.
	CodePrivateRepoNoAccess = "PRIVATE_REPO_NO_ACCESS"
	// CodeCrossSiteRefused: a write signed in by the browser session
	// cookie came from a page of another origin (or did not say which).
	CodeCrossSiteRefused = "CROSS_SITE_REFUSED"
	// CodeJSONRequired: a write signed in by the browser session cookie
	// was not sent as application/json, as a plain HTML form's would be.
	CodeJSONRequired = "JSON_REQUIRED"
	// CodeNameHeld: a browser or anonymous write took a name that reads
	// as another person's or agent's.
	CodeNameHeld = "NAME_HELD"
)

// NameHeld is the refusal of a name (of the field named) that reads as
// someone else's, to a caller that cannot prove it is theirs.
func NameHeld(field, name string) error {
	return &Error{Kind: Forbidden, Code: CodeNameHeld, Message: fmt.Sprintf(
		"%s %q reads as the name of another person or agent; only they can write under it (agents with their token or worker session), so choose a name of your own", field, name)}
}

// CrossSiteRefused is the refusal of a cookie-signed write from a page
// that is not the service's own.
func CrossSiteRefused() error {
	return &Error{Kind: Forbidden, Code: CodeCrossSiteRefused,
		Message: "This write carries the browser session cookie but does not come from this service's own pages (Origin or Sec-Fetch-Site); it was refused"}
}

// JSONRequired is the refusal of a cookie-signed write whose body is not
// declared JSON.
func JSONRequired() error {
	return &Error{Kind: Forbidden, Code: CodeJSONRequired,
		Message: "A write signed in by the browser session cookie must be sent with Content-Type: application/json"}
}

// Device sign-in statuses, as the poll answer names them: pending or
// slow_down (poll again after the interval), authorized, or denied or
// expired (start over).
const (
	DevicePending    = "pending"
	DeviceSlowDown   = "slow_down"
	DeviceDenied     = "denied"
	DeviceExpired    = "expired"
	DeviceAuthorized = "authorized"
)

// Role is what a caller is in a room.
type Role string

// Roles, as the join answer names them.
const (
	RoleAdmin       Role = "admin"
	RoleParticipant Role = "participant"
	RoleAnonymous   Role = "anonymous" // not signed in, in a repo room
)

// Prefixes of the wire ids of global rows ("acct_12"); the numbers are
// the rows' serial keys.
const (
	AccountPrefix    = "acct_"
	OwnerTokenPrefix = "owner_token_"
	AgentPrefix      = "agent_"
)

// WireID formats a serial key with its prefix, e.g. WireID(AccountPrefix, 12) = "acct_12".
func WireID(prefix string, n int64) string {
	// Built in place, one allocation where prefix + FormatInt makes two:
	// every message of every page carries such ids.
	var b [32]byte
	return string(strconv.AppendInt(append(b[:0], prefix...), n, 10))
}

// ParseWireID reads a prefixed id back; ok is false unless s is prefix
// followed by a positive decimal number.
func ParseWireID(prefix, s string) (n int64, ok bool) {
	digits, found := strings.CutPrefix(s, prefix)
	if !found || digits == "" || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// MaxAgentNameBytes bounds an agent's name.
const MaxAgentNameBytes = 64

// RegisteredAgentName checks the name an agent is registered under, which
// is kept as given but for surrounding white space, as the original keeps
// it: the canonical key "<login>/<name>" is made of it. It must not be
// empty, longer than MaxAgentNameBytes or hold control characters.
func RegisteredAgentName(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", Errorf(Invalid, "name is required")
	case len(s) > MaxAgentNameBytes:
		return "", Errorf(Invalid, "name is longer than %d bytes", MaxAgentNameBytes)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", Errorf(Invalid, "name must not contain control characters")
	}
	return s, nil
}

// MaxLabelBytes bounds display names and owner labels.
const MaxLabelBytes = 100

// AgentName turns what a client calls its agent into a slug: lower-case
// letters, digits, '.', '_' and '-', any other run of characters becoming
// one '-' ("Claude Code" → "claude-code"). The MCP client names the agents
// it registers so, keeping their canonical keys stable and safe in paths
// and labels; the server takes any name (RegisteredAgentName).
func AgentName(s string) (string, error) {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	name := strings.Trim(b.String(), "-._")
	switch {
	case name == "":
		return "", Errorf(Invalid, "name is required (letters or digits)")
	case len(name) > MaxAgentNameBytes:
		return "", Errorf(Invalid, "name is longer than %d characters", MaxAgentNameBytes)
	}
	return name, nil
}

// Label checks a human-readable label (display name, owner label): trimmed,
// white space collapsed, at most MaxLabelBytes, no control characters.
// An empty label yields def.
func Label(field, s, def string) (string, error) {
	s = strings.Join(strings.Fields(s), " ")
	switch {
	case s == "":
		return def, nil
	case len(s) > MaxLabelBytes:
		return "", Errorf(Invalid, "%s is longer than %d bytes", field, MaxLabelBytes)
	case strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", Errorf(Invalid, "%s must not contain control characters", field)
	}
	return s, nil
}

// OwnerLabel is the owner label of an agent of acct, from the one its
// client gave. It goes into the agent's actor label, which readers take
// for the person who answers for the agent, so a label that does not read
// (NameKey) as the account's own login or display name is not taken: the
// display name stands instead, as when none is given. Clients take the
// registration's answer for their labels (the original's and ours do),
// so one sent in good faith, a team name say, costs nothing but the label.
// A label the client spells its own way ("Ann" for ann) is kept.
func OwnerLabel(given string, acct Account) (string, error) {
	own := acct.DisplayName
	if own == "" {
		own = acct.Login
	}
	label, err := Label("owner_label", given, own)
	if err != nil {
		return "", err
	}
	if k := NameKey(label); k == "" || k != NameKey(acct.Login) && k != NameKey(acct.DisplayName) {
		return own, nil
	}
	return label, nil
}

// Redacted is how logs write a secret (a device request id, an invite
// code): a short digest, enough to tell one secret's lines from
// another's, never enough to use or recover it.
func Redacted(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "redacted-" + hex.EncodeToString(sum[:4])
}
