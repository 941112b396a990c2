package main

// deliberate is a difference from the anchor we keep on purpose. It covers
// an item of a case when every pattern matches ('*' matches any run of
// characters, an empty pattern matches anything): Case the case's key
// (family/name), Path the item's path, Anchor and Ours the values each
// side had there, Version the anchor's version.
type deliberate struct {
	Case, Path, Anchor, Ours, Version string
	Reason                            string
}

func (d deliberate) covers(caseKey, version string, it item) bool {
	return glob(d.Case, caseKey) && glob(d.Path, it.Path) && glob(d.Anchor, it.Anchor) &&
		glob(d.Ours, it.Ours) && glob(d.Version, version)
}

// Reasons shared by several entries of knownDifferences.
const (
	whyErrorText = "error texts are our own words; the contract is the status and the code"
	whyCode      = "every error of ours may carry a machine-readable code beside its text"
	whyJSON      = "errors are always JSON {error, code}; the anchor answers some with Express's HTML pages"
	why4xx       = "bad input gets a 4xx, never a 500 (the anchor's 500s here are uncaught errors)"
	whyISO       = "timestamps are RFC 3339 UTC with milliseconds everywhere (SPEC.md); the anchor leaks PostgreSQL's text form"
	whyFocus     = "focus rooms (task-scoped child rooms) are out of scope (behaviour reference §11, peripheral), so their fields are not sent"
	whyAttach    = "attachments are out of scope (behaviour reference §11, peripheral)"
	whyRoomShape = "one room shape for every room answer: name and created_at are always there"
	whyMessage   = "the message shape of SPEC.md and docs/api.md: room_id on every message, thread_parent_id, thread_root_id and the thread summary"
	whyTaskShape = "0.12.9 task extras (active_locks, stale_prompt_state, workflow_refs) are not in the Task JSON we follow (behaviour reference §2.6); active_leases always comes with a task"
	whyLimits    = "size limits (docs/limits.md): the anchor takes any size up to its 100 kB body limit"
	whyLater     = "a route of the 0.12.11 behaviour (behaviour reference §2.6, §2.7, §2.9) that 0.12.9 does not have"
	whyNoGitHub  = "without a GitHub app every sign-in route answers 503 saying so, where the anchor fails in a different way on each"
	whyReserved  = "the sender letagents is reserved for the server's own lines, so nobody can forge a notice (docs/api.md, Who may send as whom)"
	whySquat     = "a name in the shape of an invite code is never opened as a named room: it would squat a code the service may issue later"
	whyAfter011  = "a route or field that came after 0.11.1 (behaviour reference §2.4–2.7): ours follows the later version"
	whyPages     = "the web pages are our own: the anchor's docs page is part of its later web app (behaviour reference §9, peripheral)"
	whyThread    = "thread_parent_id (SPEC.md) makes a reply, read back with its reply_to quote; the anchor does not know the field and posts a top-level message"
	whyBareID    = "a bare number is read as the message it numbers (after=2 is after msg_2); the anchor ignores such a cursor and reads from the start"
	whyOwnerSend = "0.11.1's clients send with an owner token and no worker session: ours takes such a send (docs/api.md, Who may send as whom), 0.12.9 asks for a session"
	whyRepoGate  = "a repo room's access is checked before its existence, so nobody anonymous learns whether a private repository's room exists: 401 with a device sign-in link, where the anchor answers 404"
	whyTrusted   = "a task starts accepted when a signed-in room admin or browser session creates it (docs/api.md, the board); the anchor trusts a created_by that has posted, which anyone can type"
	whyLeasePR   = "the work lease records the PR its holder sets with any change; the anchor records it only on a change that sets pr_url alone"
	whyDoneLease = "marking a task done ends its leases, so nobody holds finished work; the anchor leaves them active"
	whyCodename  = "codenames are fused from our own word list by the original's algorithm, so a generic name's codename is not the anchor's"
	whyTook      = "the room holds what each side took of the sends above (deliberate refusals and acceptances): the anchor the 300-byte client_message_id and the sender letagents, ours the owner token's send"
	whySession   = "repo_branch is a session field of the later behaviour (behaviour reference §2.6) that 0.12.9 does not send"
	whyBadCode   = "a code that is not code-shaped is a bad request (400), not an unknown room"
	whyAdmins    = "holding an invite code makes nobody an admin: the room's creator administers it (docs/api.md, roles); the anchor makes every signed-in joiner an admin"
	whyOwnRooms  = "GET /projects lists the rooms the account administers or worked in; the anchor lists every room to anyone signed in, private repositories included"
	whyRedirect  = "a 301 carries no body; the anchor's Express adds a text one"
	whySignIn    = "sign_in_configured is an added field (docs/page.md): whether GitHub sign-in is set up here"
	whyNative    = "native_activity is an added field: what a worker's runtime last reported doing outside the room, null until it reports (docs/api.md, native-activity)"
	whyReachedBy = "reached_by is an added field: how messages reach a worker, live or by its hooks, so that an agent whose only traffic is its hooks is present (docs/api.md, presence)"
	whyRoster    = "a worker's participant entry also carries its session, presence and connected state, and lists presence before messages among its source flags"

	// Against 0.11.1, each checked in both versions' sources.
	whyField012   = "0.12.9 added this field, which 0.11.1 does not send; ours follows the later version"
	whyBefore012  = "0.12.9 added before= (older history, with has_older); 0.11.1 ignores it and reads from the start; ours follows the later version"
	whyInput012   = "reply_to and agent_prompt_kind came after 0.11.1, which ignores them (its clients never send them); 0.12.9 refuses these values, as ours does"
	whyStrict012  = "0.12.9 refuses a blank or non-string sender or text, as ours does; 0.11.1 takes any non-empty value, but its MCP client and page always send strings"
	whyAuto012    = "0.12.9 takes an auto prompt with empty text, as ours does; 0.11.1 wants text"
	whySessHdr012 = "agent sessions came after 0.11.1, which ignores their headers (its clients never send them); 0.12.9 refuses unknown ones with 401, as ours does"
	whyTook011    = "the room holds what each side took of the sends above: 0.11.1 also took the blank, non-string and unknown-field sends that 0.12.9 and ours refuse"
	whyOwnerSrc   = "an owner-token send is marked agent only under a label the account owns (docs/api.md, Who may send as whom); 0.11.1 marks every owner-token send agent, 0.12.9 wants a worker session"
	whyNoSess011  = "0.11.1 has no worker sessions, so the steps that need one ran only against ours: only our board has the worker's task (Third), and only ours took task_1 through claim and review to done"
	whyPage011    = "the page of a room is served whoever asks and asks for sign-in itself when the room answers 401; 0.11.1 redirects to its landing page first (0.12.9 fails with a 500)"
)

// knownDifferences are the differences from the anchor we keep, by route
// family, each with its reason. Everything else the suite finds is a
// difference to fix (or to add here, with its reason, once decided).
var knownDifferences = []deliberate{
	// Every family.
	{Path: "$.error", Anchor: `"*`, Ours: `"*`, Reason: whyErrorText},
	{Path: "$.message", Anchor: `"*`, Ours: `"*`, Reason: whyErrorText},
	{Path: "$.code", Anchor: absent, Ours: `"*`, Reason: whyCode},
	{Path: "body", Anchor: kindHTML, Ours: kindJSON, Reason: whyJSON},
	{Path: "status", Anchor: "500", Ours: "4*", Reason: why4xx},
	{Anchor: `"*-*-* *:*:*+00"`, Ours: `"<ts>"`, Reason: whyISO},

	// rooms: creation, joins, named and repo rooms, access, rotation.
	{Case: "*", Path: "$.kind", Anchor: `"main"`, Ours: absent, Reason: whyFocus},
	{Case: "*", Path: "$.parent_room_id", Anchor: "null", Ours: absent, Reason: whyFocus},
	{Case: "*", Path: "$.focus_*", Anchor: "null", Ours: absent, Reason: whyFocus},
	{Case: "*", Path: "$.conclu*", Anchor: "null", Ours: absent, Reason: whyFocus},
	{Case: "*", Path: "$.source_task_id", Anchor: "null", Ours: absent, Reason: whyFocus},
	{Case: "*", Path: "$.attachments_enabled", Anchor: "false", Ours: absent, Reason: whyAttach},
	{Case: "rooms/*", Path: "$.name", Anchor: absent, Ours: "null", Reason: whyRoomShape},
	{Case: "rooms/*", Path: "$.created_at", Anchor: absent, Ours: `"<ts>"`, Reason: whyRoomShape},
	{Case: "sessions/create the board room as A", Path: "$.name", Anchor: absent, Ours: "null", Reason: whyRoomShape},
	{Case: "rooms/open named room, unissued invite code (squatting)", Reason: whySquat},

	// messages and poll: the message shape.
	{Path: "*.attachments", Anchor: "[]", Ours: absent, Reason: whyAttach},
	{Path: "*.room_id", Anchor: absent, Ours: `"{*}"`, Reason: whyMessage},
	{Path: "*.thread_root_id", Anchor: absent, Reason: whyMessage},
	{Path: "*.thread_parent_id", Anchor: absent, Reason: whyMessage},
	{Path: "*.thread", Anchor: absent, Reason: whyMessage},

	{Case: "messages/*", Path: "*.reply_to", Anchor: "null", Ours: `{"id":"msg_*`, Reason: whyThread},
	{Case: "poll/*", Path: "*.reply_to", Anchor: "null", Ours: `{"id":"msg_*`, Reason: whyThread},
	{Case: "messages/read, after=2", Reason: whyBareID},
	{Case: "*repo room anonymously", Path: "status", Anchor: "404", Ours: "401", Reason: whyRepoGate},
	{Case: "*repo room anonymously", Path: "$.code", Anchor: `"ROOM_NOT_FOUND"`, Ours: `"NOT_AUTHENTICATED"`, Reason: whyRepoGate},
	{Case: "*repo room anonymously", Path: "$.device_flow_url", Anchor: absent, Reason: whyRepoGate},
	{Case: "*repo room anonymously", Path: "$.message", Anchor: absent, Reason: whyRepoGate},
	{Case: "*repo room anonymously", Path: "$.room_id", Anchor: absent, Reason: whyRepoGate},

	// limits
	{Case: "limits/text of 40000 bytes", Reason: whyLimits},
	{Case: "limits/sender of 300 bytes", Reason: whyLimits},
	{Case: "limits/client_message_id of 300 bytes", Reason: whyLimits},
	{Case: "limits/body of 300000 bytes", Reason: whyLimits},
	{Case: "limits/task title of 5000 bytes", Reason: whyLimits},
	{Case: "agents/register a long name", Reason: whyLimits},
	{Case: "limits/sender letagents", Reason: whyReserved},
	{Case: "limits/A's owner token without a session", Version: "0.12.*", Reason: whyOwnerSend},
	{Case: "limits/auto prompt without text", Path: "$.id", Reason: whyTook},
	{Case: "limits/read the limits room", Reason: whyTook},

	// tasks: the task shape.
	{Path: "*.active_locks", Anchor: "[]", Ours: absent, Reason: whyTaskShape},
	{Path: "*.stale_prompt_state", Ours: absent, Reason: whyTaskShape},
	{Path: "*.workflow_refs", Ours: absent, Reason: whyTaskShape},
	{Case: "tasks/*", Path: "*.active_leases", Anchor: absent, Ours: "[]", Reason: whyTaskShape},
	{Case: "tasks/*", Path: "*status", Anchor: `"proposed"`, Ours: `"accepted"`, Reason: whyTrusted},
	{Case: "tasks/board, status=proposed", Reason: whyTrusted},
	{Case: "tasks/*", Path: "*active_leases[*].pr_url", Anchor: "null", Ours: `"https://*"`, Reason: whyLeasePR},
	{Case: "tasks/mark done as the admin's page", Path: "*active_leases[*]", Ours: absent, Reason: whyDoneLease},
	{Case: "tasks/*after the round", Path: "*active_leases[*]", Ours: absent, Reason: whyDoneLease},

	// sessions
	{Case: "sessions/register a controller", Path: "$.display_name", Reason: whyCodename},
	{Case: "sessions/register a controller", Path: "$.actor_label", Reason: whyCodename},
	{Case: "sessions/*", Path: "$.repo_branch", Anchor: absent, Reason: whySession},

	// agents
	{Case: "agents/my agents", Path: "$.agents[*]", Anchor: `{"canonical_key":"compat-a/xxxx*`, Ours: absent, Reason: whyLimits},

	// auth: no GitHub app on either side.
	{Case: "auth/device flow*", Path: "status", Ours: "503", Reason: whyNoGitHub},
	{Case: "auth/web*", Path: "status", Ours: "503", Reason: whyNoGitHub},

	// board, artifacts, native activity: routes 0.12.9 lacks. An unknown
	// PATCH /rooms/{a}/{b} falls into the anchor's PATCH /rooms/{room}
	// and is a room it does not know.
	{Case: "board/*", Path: "status", Anchor: "404", Version: "0.12.*", Reason: whyLater},
	{Case: "board/*", Path: "$.code", Anchor: `"ROOM_NOT_FOUND"`, Version: "0.12.*", Reason: whyLater},
	{Case: "artifacts/*", Path: "status", Anchor: "404", Version: "0.12.*", Reason: whyLater},
	{Case: "sessions/native activity", Path: "status", Anchor: "404", Version: "0.12.*", Reason: whyLater},

	// The 0.11.1 anchor: what came after it.
	{Case: "sessions/*", Path: "status", Anchor: "404", Version: "0.11.*", Reason: whyAfter011},
	{Case: "sessions/read the board room", Path: "$.messages[*]", Anchor: absent, Version: "0.11.*", Reason: whyAfter011},
	{Case: "tasks/*", Path: "status", Anchor: "404", Version: "0.11.*", Reason: whyAfter011},
	{Path: "*.reply_to", Anchor: absent, Version: "0.11.*", Reason: whyAfter011},
	{Path: "*.assignee_agent_key", Anchor: absent, Version: "0.11.*", Reason: whyAfter011},
	{Case: "board/*", Path: "status", Anchor: "404", Version: "0.11.*", Reason: whyAfter011},
	{Case: "board/*", Path: "$.code", Anchor: `"ROOM_NOT_FOUND"`, Version: "0.11.*", Reason: whyAfter011},
	{Case: "artifacts/*", Path: "status", Anchor: "404", Version: "0.11.*", Reason: whyAfter011},
	{Case: "resolve/*", Path: "$.canonical_room_id", Anchor: absent, Version: "0.11.*", Reason: whyField012},
	{Case: "sessions/participants*", Path: "$.participants[*].delivery_latency", Anchor: absent,
		Reason: "delivery_latency is an added field: each agent's send→surfaced latency (docs/api.md, Proof of delivery)"},
	{Case: "sessions/*", Path: "$.participants[*].reached_by", Anchor: absent, Reason: whyReachedBy},
	{Case: "sessions/*", Path: "$.presence[*].reached_by", Anchor: absent, Reason: whyReachedBy},
	{Case: "sessions/*", Path: "$.reached_by", Anchor: absent, Reason: whyReachedBy},
	{Case: "sessions/*", Path: "$.native_activity", Anchor: absent, Reason: whyNative},
	{Case: "resolve/repo room page anonymously", Path: "status", Anchor: "302", Ours: "200", Version: "0.11.*", Reason: whyPage011},
	{Case: "resolve/repo room page anonymously", Path: "body", Anchor: "text", Ours: "html", Version: "0.11.*", Reason: whyPage011},
	{Case: "resolve/repo room page anonymously", Path: "location", Anchor: "/?reason=repo_signin_required*", Version: "0.11.*", Reason: whyPage011},
	{Case: "messages/*", Path: "*.agent_prompt_kind", Anchor: absent, Ours: "null", Version: "0.11.*", Reason: whyField012},
	{Case: "poll/*", Path: "*.agent_prompt_kind", Anchor: absent, Ours: "null", Version: "0.11.*", Reason: whyField012},
	{Case: "limits/*", Path: "*.agent_prompt_kind", Anchor: absent, Ours: "null", Version: "0.11.*", Reason: whyField012},
	{Case: "messages/read, before=*", Path: "$.has_older", Anchor: absent, Version: "0.11.*", Reason: whyBefore012},
	{Case: "messages/read, before=*", Path: "$.messages[*]*", Version: "0.11.*", Reason: whyBefore012},
	{Case: "messages/read, after and before", Path: "$.has_older", Anchor: absent, Version: "0.11.*", Reason: whyBefore012},
	{Case: "messages/read, after and before", Path: "$.messages[*]*", Version: "0.11.*", Reason: whyBefore012},
	{Case: "messages/send, reply to *", Version: "0.11.*", Reason: whyInput012},
	{Case: "messages/send, unknown prompt kind", Version: "0.11.*", Reason: whyInput012},
	{Case: "messages/send blank sender", Version: "0.11.*", Reason: whyStrict012},
	{Case: "messages/send numeric *", Version: "0.11.*", Reason: whyStrict012},
	{Case: "limits/*", Path: "$.id", Anchor: `"msg_*"`, Ours: `"msg_*"`, Version: "0.11.*", Reason: whyTook011},
	{Case: "limits/auto prompt without text", Version: "0.11.*", Reason: whyAuto012},
	{Case: "limits/A's owner token without a session", Path: "$.source", Anchor: `"agent"`, Ours: "null", Version: "0.11.*", Reason: whyOwnerSrc},
	{Case: "poll/poll, unknown agent session headers", Version: "0.11.*", Reason: whySessHdr012},
	{Case: "tasks/*", Path: "*.workflow_artifacts", Anchor: absent, Version: "0.11.*", Reason: whyField012},
	{Case: "tasks/*", Path: "*.created_by", Anchor: `"dave"`, Ours: `"{sess_a_label}"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*", Path: "*.description", Anchor: "null", Ours: `"by the worker"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*", Path: "*.title", Anchor: `"Fourth"`, Ours: `"Third"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*", Path: "$.tasks[*]", Anchor: absent, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*add", Path: "$.id", Anchor: `"task_*"`, Ours: `"task_*"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/add, stale bearer", Path: "$.id", Anchor: `"task_*"`, Ours: `"task_*"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/mark done as the admin's page", Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*", Path: "*.status", Anchor: `"accepted"`, Ours: `"done"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*", Path: "*.assignee", Anchor: "null", Ours: `"{sess_a_label}"`, Version: "0.11.*", Reason: whyNoSess011},
	{Case: "tasks/*", Path: "*.pr_url", Anchor: "null", Ours: `"https://*"`, Version: "0.11.*", Reason: whyNoSess011},

	// Decided in the compatibility issue (docs/compatibility.md).
	{Case: "rooms/join by malformed code", Path: "status", Anchor: "404", Ours: "400", Reason: whyBadCode},
	{Case: "rooms/join invite room*", Path: "$.role", Anchor: `"admin"`, Ours: `"participant"`, Reason: whyAdmins},
	{Case: "rooms/list rooms as A", Path: "$.projects[*]", Ours: absent, Reason: whyOwnRooms},
	{Case: "resolve/*redirect", Path: "body", Anchor: "text", Ours: "empty", Reason: whyRedirect},
	{Case: "auth/session*", Path: "$.sign_in_configured", Anchor: absent, Reason: whySignIn},
	{Case: "sessions/participants*", Path: "$.participants[*]", Reason: whyRoster},
	{Case: "sessions/participants*", Path: "$.participants[*].connected", Anchor: absent, Reason: whyRoster},
	{Case: "sessions/participants*", Path: "$.participants[*].runtime", Anchor: absent, Reason: whyRoster},
	{Case: "sessions/participants*", Path: "$.participants[*].session_*", Anchor: absent, Reason: whyRoster},
	{Case: "sessions/participants*", Path: "$.participants[*].status*", Anchor: absent, Reason: whyRoster},
	{Case: "resolve/repo room page anonymously", Path: "status", Anchor: "500", Ours: "200", Reason: "the page of a room is served whoever asks; the anchor fails with a 500"},
	{Case: "resolve/resolve invite code, lower case", Path: "$.input", Reason: "the input is each side's own code in lower case, which the normaliser leaves as it is"},

	// health: pages.
	{Case: "health/docs page", Path: "status", Anchor: "200", Ours: "404", Reason: whyPages},
	{Case: "health/health", Path: "$.version", Anchor: absent, Ours: `"*`, Reason: "the health check says the server's build, so that letagents doctor can name it"},
}

// reasonFor is the reason of the first entry of table that covers the
// item, or "" when none does.
func reasonFor(table []deliberate, caseKey, version string, it item) string {
	for _, d := range table {
		if d.covers(caseKey, version, it) {
			return d.Reason
		}
	}
	return ""
}

// glob reports whether s matches pattern, where '*' matches any run of
// characters (slashes included) and every other byte only itself. An
// empty pattern matches everything.
func glob(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	// The classic greedy match with one backtrack point: the last star.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
