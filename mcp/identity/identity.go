// Package identity decides who this MCP process is in rooms: the stable
// runtime key it is remembered by, its name and display name (explicit,
// remembered, or a codename derived from the runtime key), its owner and
// IDE labels, and the actor label its messages are signed with. It reads
// only what it is handed: the environment as a getenv function and facts
// the caller gathered (account, git config, OS user, stored identity,
// the client's process); ProcessKey alone looks at the process table.
package identity

import (
	"crypto/rand"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/letagents/letagents-go/shared/actors"
	"github.com/letagents/letagents-go/shared/letagents"
)

// Label limits. They keep every actor label within
// letagents.MaxSenderBytes: 64 + 64 + 40 bytes plus separators.
const (
	maxDisplayBytes = 64
	maxOwnerBytes   = 64
	maxIDEBytes     = 40
)

// Identity is how this agent presents itself in rooms.
type Identity struct {
	// RuntimeKey is the stable key of this agent instance, the one its
	// identity is stored under; see Resolve for where it comes from.
	RuntimeKey string
	// Name is the agent's slug, as letagents.AgentName makes it.
	Name string
	// DisplayName is the human-readable name, e.g. "RiverValley".
	DisplayName string
	// OwnerLabel names the person the agent works for, e.g. "Ada Lovelace".
	OwnerLabel string
	// IDELabel names the tool the agent runs in: Codex, Claude, Gemini,
	// Cursor, Antigravity, Orchestrator, Agent, or a label from the
	// environment.
	IDELabel string
	// ActorLabel is what messages are signed with; see ActorLabel.
	ActorLabel string
	// CanonicalKey is "<login>/<name>" once registered with the server,
	// else "".
	CanonicalKey string
}

// Inputs is everything Resolve reads. Zero values mean "unknown".
type Inputs struct {
	// Getenv reads the environment (os.Getenv in production); nil reads
	// as an empty environment.
	Getenv func(string) string
	// InstanceUUID is a random UUID the caller makes once per process
	// (see NewInstanceUUID); it keys the identity when the environment
	// names no runtime. When empty, Resolve makes a fresh one per call.
	InstanceUUID string
	// AccountLogin and AccountDisplayName describe the signed-in account.
	AccountLogin, AccountDisplayName string
	// GitUserName and GitUserEmail are `git config user.name` and
	// `git config user.email`.
	GitUserName, GitUserEmail string
	// OSUser is the current OS user name ("DOMAIN\user" is accepted).
	OSUser string
	// Stored is the identity saved earlier under this process's runtime
	// key; it is ignored when its RuntimeKey is set and differs.
	Stored *Identity
	// TakenNames are names the owner's other agents already use; a
	// codename avoids them.
	TakenNames []string
	// ClientProcess is ProcessKey of the process that started this one
	// (the agent client, for an MCP server), "" when unknown; it keys
	// the identity of a client that runs one agent per process but gives
	// its MCP servers no session id (Gemini CLI).
	ClientProcess string
}

// Environment variables Resolve reads.
const (
	envInstanceID   = "LETAGENTS_AGENT_INSTANCE_ID"
	envName         = "LETAGENTS_AGENT_NAME"
	envNameShort    = "AGENT_NAME"
	envDisplayName  = "LETAGENTS_AGENT_DISPLAY_NAME"
	envIDE          = "LETAGENTS_AGENT_IDE"
	envIDEShort     = "AGENT_IDE"
	envOwnerLabel   = "LETAGENTS_AGENT_OWNER_LABEL"
	envCodexThread  = "CODEX_THREAD_ID"
	envAntigravity  = "ANTIGRAVITY_THREAD_ID"
	envClaudeSessID = "CLAUDE_CODE_SESSION_ID"
	// envClaudeSessIDOld is the name the original service reads; Claude
	// Code itself does not set it, but a person may.
	envClaudeSessIDOld = "CLAUDECODE_SESSION_ID"
	// envGeminiSession is what Gemini CLI gives its hooks (not its MCP
	// servers, which get only envGeminiCLI).
	envGeminiSession = "GEMINI_SESSION_ID"
	envGeminiCLI     = "GEMINI_CLI"
	envMCPSessionID  = "MCP_SESSION_ID"
)

// runtimeKeySources are the environment variables that name the runtime,
// in order of preference, with the prefix their value gets.
var runtimeKeySources = []struct{ env, prefix string }{
	{envInstanceID, ""},
	{envCodexThread, "codex:"},
	{envAntigravity, "antigravity:"},
	{envClaudeSessID, "claude:"},
	{envClaudeSessIDOld, "claude:"},
	{envGeminiSession, "gemini:"},
	{envMCPSessionID, "mcp:"},
}

// onePerProcess are variables whose presence shows a client that starts
// its own MCP servers and hooks and runs one agent per process, so that
// the process is the agent (Gemini CLI sets GEMINI_CLI=1 for its MCP
// servers). IDEs that serve many chats from one process must never be
// here: their agents would share a key.
var onePerProcess = []string{envGeminiCLI}

// ideByEnv maps runtimes to the variables whose presence reveals them,
// in order of preference.
var ideByEnv = []struct {
	label string
	envs  []string
}{
	{"Codex", []string{envCodexThread, "CODEX_SHELL", "CODEX_CI", "CODEX_INTERNAL_ORIGINATOR_OVERRIDE"}},
	{"Claude", []string{"CLAUDECODE", envClaudeSessID, envClaudeSessIDOld, "CLAUDE_CODE_ENTRYPOINT"}},
	{"Gemini", []string{envGeminiCLI, envGeminiSession}},
	{"Cursor", []string{"CURSOR_TRACE_ID", "CURSOR_AGENT"}},
}

// ideByNamePrefix infers the IDE from how an explicit name begins.
var ideByNamePrefix = []struct{ prefix, label string }{
	{"codex", "Codex"},
	{"claude", "Claude"},
	{"gemini", "Gemini"},
	{"antigravity", "Antigravity"},
	{"cursor", "Cursor"},
	{"orchestrator", "Orchestrator"},
}

// Resolve works out this agent's identity. Each part takes the first
// source that yields something:
//
//   - RuntimeKey: LETAGENTS_AGENT_INSTANCE_ID, "codex:"+CODEX_THREAD_ID
//     (set for Codex's shell commands, not its MCP servers or hooks),
//     "antigravity:"+ANTIGRAVITY_THREAD_ID, "claude:"+CLAUDE_CODE_SESSION_ID
//     (what Claude Code sets for MCP servers and hooks alike; then
//     CLAUDECODE_SESSION_ID, the original's name), "gemini:"+GEMINI_SESSION_ID
//     (Gemini CLI's hooks), "mcp:"+MCP_SESSION_ID; else, for a client that
//     runs one agent per process (GEMINI_CLI), ClientProcess; else
//     "instance:"+InstanceUUID (so a restart without any of these is a new
//     agent). See testdata/clients for what each client really sets.
//   - IDELabel: LETAGENTS_AGENT_IDE or AGENT_IDE (cut to 40 bytes);
//     "Codex", "Claude", "Gemini" or "Cursor" when that runtime's variables
//     are set; the prefix of the explicit name (codex…, claude…, gemini…,
//     antigravity…, cursor…, orchestrator…); else "Agent".
//   - OwnerLabel: LETAGENTS_AGENT_OWNER_LABEL, the account's display name,
//     its login, git user.name, the part of git user.email before "@",
//     the OS user, else "owner".
//   - Name and DisplayName: LETAGENTS_AGENT_NAME or AGENT_NAME, slugged
//     (display: LETAGENTS_AGENT_DISPLAY_NAME, else the name as given);
//     LETAGENTS_AGENT_DISPLAY_NAME alone (name: its slug); the stored
//     identity's; else the runtime key's codename, moved along the word
//     pairs while it is in TakenNames. A value that slugs to nothing is
//     skipped.
//
// Labels have white space collapsed, control characters dropped and '|'
// (the actor-label separator) replaced by '/'; display and owner labels
// are cut to 64 bytes. CanonicalKey is carried over from the stored
// identity when it names the resolved Name (and the signed-in login, if
// any); otherwise it is "" until the agent is registered.
func Resolve(in Inputs) Identity {
	env := func(k string) string {
		if in.Getenv == nil {
			return ""
		}
		return strings.TrimSpace(in.Getenv(k))
	}

	id := Identity{RuntimeKey: runtimeKey(env, in.InstanceUUID, strings.TrimSpace(in.ClientProcess))}
	stored := in.Stored
	if stored != nil && stored.RuntimeKey != "" && stored.RuntimeKey != id.RuntimeKey {
		stored = nil
	}

	explicit := firstNonEmpty(env(envName), env(envNameShort))
	explicitDisplay := env(envDisplayName)
	id.Name, id.DisplayName = resolveName(id.RuntimeKey, explicit, explicitDisplay, stored, in.TakenNames)
	id.IDELabel = resolveIDE(env, firstNonEmpty(explicit, explicitDisplay))
	id.OwnerLabel = resolveOwner(env(envOwnerLabel), in)
	id.ActorLabel = actors.ActorLabel(id.DisplayName, id.OwnerLabel, id.IDELabel)
	if stored != nil {
		id.CanonicalKey = keptCanonicalKey(stored.CanonicalKey, id.Name, in.AccountLogin)
	}
	return id
}

// Renamed is id under a name chosen for it (the set_agent_name tool):
// Name is the name's slug, DisplayName the name cleaned as labels are,
// and ActorLabel follows. CanonicalKey is dropped: the server knows the
// agent by its old name until the new one is registered. The error says
// the name has no letter or digit to make a slug of.
func Renamed(id Identity, name string) (Identity, error) {
	n := slug(name)
	if n == "" {
		return id, fmt.Errorf("name %q has no letters or digits", name)
	}
	id.Name, id.DisplayName, id.CanonicalKey = n, firstNonEmpty(cleanLabel(name, maxDisplayBytes), n), ""
	id.ActorLabel = actors.ActorLabel(id.DisplayName, id.OwnerLabel, id.IDELabel)
	return id, nil
}

// EnvRuntimeKey is the runtime key the environment names (see Resolve:
// LETAGENTS_AGENT_INSTANCE_ID, CODEX_THREAD_ID, …), false when it names
// none and an agent's key is its process's own. A hook process finds its
// agent's saved session by it. A nil getenv is an empty environment.
func EnvRuntimeKey(getenv func(string) string) (string, bool) {
	if getenv == nil {
		return "", false
	}
	for _, s := range runtimeKeySources {
		if v := strings.TrimSpace(getenv(s.env)); v != "" {
			return s.prefix + v, true
		}
	}
	return "", false
}

func runtimeKey(env func(string) string, instanceUUID, clientProcess string) string {
	if key, ok := EnvRuntimeKey(env); ok {
		return key
	}
	if clientProcess != "" {
		for _, e := range onePerProcess {
			if env(e) != "" {
				return clientProcess
			}
		}
	}
	if instanceUUID = strings.TrimSpace(instanceUUID); instanceUUID == "" {
		instanceUUID = NewInstanceUUID()
	}
	return "instance:" + instanceUUID
}

func resolveName(key, explicit, explicitDisplay string, stored *Identity, taken []string) (name, display string) {
	if name = slug(explicit); name != "" {
		return name, firstNonEmpty(cleanLabel(explicitDisplay, maxDisplayBytes), cleanLabel(explicit, maxDisplayBytes), name)
	}
	if name = slug(explicitDisplay); name != "" {
		return name, firstNonEmpty(cleanLabel(explicitDisplay, maxDisplayBytes), name)
	}
	if stored != nil {
		if name = slug(stored.Name); name != "" {
			return name, firstNonEmpty(cleanLabel(stored.DisplayName, maxDisplayBytes), name)
		}
	}
	takenSet := make(map[string]bool, len(taken))
	for _, t := range taken {
		takenSet[strings.ToLower(strings.TrimSpace(t))] = true
	}
	display, name = actors.FreeCodename(key, takenSet)
	return name, display
}

func resolveIDE(env func(string) string, explicitName string) string {
	if v := cleanLabel(firstNonEmpty(env(envIDE), env(envIDEShort)), maxIDEBytes); v != "" {
		return v
	}
	for _, r := range ideByEnv {
		for _, e := range r.envs {
			if env(e) != "" {
				return r.label
			}
		}
	}
	lower := strings.ToLower(explicitName)
	for _, p := range ideByNamePrefix {
		if strings.HasPrefix(lower, p.prefix) {
			return p.label
		}
	}
	return "Agent"
}

func resolveOwner(explicit string, in Inputs) string {
	email, _, _ := strings.Cut(strings.TrimSpace(in.GitUserEmail), "@")
	osUser := in.OSUser
	if i := strings.LastIndexByte(osUser, '\\'); i >= 0 {
		osUser = osUser[i+1:] // Windows reports DOMAIN\user
	}
	for _, c := range []string{explicit, in.AccountDisplayName, in.AccountLogin, in.GitUserName, email, osUser} {
		if v := cleanLabel(c, maxOwnerBytes); v != "" {
			return v
		}
	}
	return "owner"
}

// keptCanonicalKey returns the stored canonical key if it still describes
// an agent called name owned by login (any owner when login is unknown).
func keptCanonicalKey(key, name, login string) string {
	owner, keyName, ok := strings.Cut(key, "/")
	if !ok || owner == "" || keyName != name {
		return ""
	}
	if login != "" && !strings.EqualFold(owner, login) {
		return ""
	}
	return key
}

// slug is letagents.AgentName, with over-long names cut rather than
// refused; "" when s has no letters or digits.
func slug(s string) string {
	s = strings.TrimSpace(s)
	if name, err := letagents.AgentName(s); err == nil {
		return name
	}
	// Every input byte yields at most one slug byte, so a cut input
	// yields a slug that fits.
	if name, err := letagents.AgentName(truncate(s, letagents.MaxAgentNameBytes)); err == nil {
		return name
	}
	return ""
}

// cleanLabel collapses white space, drops control characters, replaces
// '|' by '/' and cuts the result to max bytes on a character boundary.
func cleanLabel(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '|':
			return '/'
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r < ' ' || r == 0x7f || r == utf8.RuneError:
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimSpace(truncate(s, max))
}

// truncate cuts s to at most max bytes without splitting a character.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// NewInstanceUUID returns a random version 4 UUID, for Inputs.InstanceUUID.
func NewInstanceUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
