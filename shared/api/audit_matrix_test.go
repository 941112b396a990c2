package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/rooms"
)

// The access matrix is the audit of issue 26 made permanent: every route
// of api.Routes(), sent by every kind of caller, at every spelling of a
// private repository room's id, against one seeded service. What each
// caller may get is declared below, per access level and gate
// (gateOutcomes) and per route (matrixRoutes); a route the table does not
// declare fails the test, so a new route is covered the day it is added.
//
// Whatever the declared outcome, every answer must hold to the invariants:
// no 5xx; every error a JSON object with "error"; nobody without access
// reads anything seeded in the private room; writes by callers without
// access change nothing in it; an object id of one room is refused under
// another room's path; and credentials in the query string count for
// nothing (the caller carrying them is anonymous).

// level is what a caller is to the room a request names.
type level int

const (
	levelAnonymous level = iota // nobody signed in (or a credential that signs nobody in)
	levelOutsider               // an account GitHub does not let see the repository
	levelReader                 // an account that may read it
	levelAdmin                  // an admin of the repository, and so of its rooms
)

func (l level) String() string {
	return [...]string{"anonymous", "outsider", "reader", "admin"}[l]
}

// outcome is what a gate answers: a refusal (status and error), or
// passed: the request reached its handler, whose answer is its own.
type outcome struct {
	status int
	err    string
	passed bool
}

var (
	passes       = outcome{passed: true}
	authRequired = outcome{status: 401, err: "auth_required"}
	noAccess     = outcome{status: 403, err: "private_repo_no_access"}
	notAdmin     = outcome{status: 403, err: "Admin privileges required"}
)

// gateOutcomes is what each gate (shared/api/gate.go, by Route.Gate) does
// with each level of caller on a room of a private repository. A gate
// missing here fails the test.
var gateOutcomes = map[string]map[level]outcome{
	// public routes show no room's data: anyone reaches the handler.
	"public": {levelAnonymous: passes, levelOutsider: passes, levelReader: passes, levelAdmin: passes},
	"member": {levelAnonymous: authRequired, levelOutsider: noAccess, levelReader: passes, levelAdmin: passes},
	"sender": {levelAnonymous: authRequired, levelOutsider: noAccess, levelReader: passes, levelAdmin: passes},
	"joiner": {levelAnonymous: authRequired, levelOutsider: noAccess, levelReader: passes, levelAdmin: passes},
	"opener": {levelAnonymous: authRequired, levelOutsider: noAccess, levelReader: passes, levelAdmin: passes},
	"admin":  {levelAnonymous: authRequired, levelOutsider: noAccess, levelReader: notAdmin, levelAdmin: passes},
}

// routeCase is how the matrix calls one route: the rest of its request
// (path parameters come from the seeded rooms, see matrix.pathFor).
type routeCase struct {
	query string // added to the path (a poll's timeout=0, a search's q)
	body  string // JSON body; "" sends none
	// endsSession: the route ends the caller's browser session, so it is
	// sent last, when no other request needs that session.
	endsSession bool
}

// matrixRoutes declares every route of api.Routes(), by "METHOD pattern".
// A write's body is a valid one where that is easy, so that a route whose
// gate went missing would really write, and the unchanged database would
// say so. "falcon" is a word of the private room's messages.
var matrixRoutes = map[string]routeCase{
	"GET /projects":                     {},
	"POST /projects":                    {},
	"GET /projects/join/{code}":         {},
	"POST /projects/room/{room}":        {},
	"POST /rooms/{room}/join":           {},
	"GET /rooms/{room}/info":            {},
	"GET /projects/{room}/access":       {},
	"POST /projects/{room}/code/rotate": {},
	"GET /rooms/{room}/artifacts":       {},
	"POST /rooms/{room}/artifacts":      {body: `{"kind": "pull_request", "url": "https://example.com/matrix/pull/1"}`},
	"GET /rooms/{room}/events":          {},

	"GET /rooms/{room}/integrations/github":                  {},
	"POST /rooms/{room}/integrations/github/install-url":     {},
	"GET /api/rooms/{room}/integrations/github":              {},
	"POST /api/rooms/{room}/integrations/github/install-url": {},
	"GET /auth/github/app/callback":                          {query: "setup_action=install"},

	"POST /auth/device/start":                     {},
	"GET /auth/device/poll/{request_id}":          {},
	"POST /auth/github/login":                     {},
	"GET /auth/github/callback":                   {query: "code=matrix&state=matrix"},
	"GET /auth/session":                           {},
	"POST /auth/logout":                           {endsSession: true},
	"POST /agents":                                {body: `{"name": "matrix-probe"}`},
	"GET /agents/me":                              {},
	"POST /webhooks/github":                       {body: `{}`},
	"GET /.well-known/oauth-authorization-server": {},
	"POST /oauth/register":                        {body: `{"redirect_uris": ["https://matrix.example/cb"]}`},
	"GET /oauth/authorize":                        {query: "client_id=matrix"},
	"GET /oauth/consent":                          {query: "request=matrix"},
	"GET /oauth/decide":                           {query: "request=matrix&consent=matrix&decision=allow"},
	"POST /oauth/token":                           {body: `{"grant_type": "refresh_token"}`},

	"POST /projects/{room}/messages":                     {body: `{"sender": "matrix", "text": "matrix probe"}`},
	"GET /projects/{room}/messages":                      {},
	"POST /rooms/{room}/messages":                        {body: `{"sender": "matrix", "text": "matrix probe"}`},
	"GET /rooms/{room}/messages":                         {},
	"GET /rooms/{room}/search":                           {query: "q=falcon"},
	"GET /search":                                        {query: "q=falcon"},
	"POST /rooms/{room}/messages/unread":                 {body: `{}`},
	"GET /rooms/{room}/messages/{message_id}/deliveries": {},
	"POST /rooms/{room}/messages/{message_id}/pin":       {},
	"DELETE /rooms/{room}/messages/{message_id}/pin":     {},
	"GET /rooms/{room}/pins":                             {},

	"GET /projects/{room}/messages/poll":   {query: "timeout=0"},
	"GET /rooms/{room}/messages/poll":      {query: "timeout=0"},
	"GET /projects/{room}/messages/stream": {},
	"GET /rooms/{room}/messages/stream":    {},

	"POST /rooms/{room}/agent-sessions":                              {body: `{"actor_key": "matrix/probe"}`},
	"POST /rooms/{room}/agent-sessions/{session_id}/disconnect":      {},
	"POST /rooms/{room}/agent-sessions/{session_id}/native-activity": {body: `{"kind": "tool_call"}`},
	"GET /rooms/{room}/presence":                                     {},
	"POST /rooms/{room}/presence":                                    {body: `{"status": "working"}`},
	"GET /rooms/{room}/participants":                                 {},

	"GET /rooms/{room}/tasks":                                    {},
	"POST /rooms/{room}/tasks":                                   {body: `{"title": "matrix probe"}`},
	"GET /rooms/{room}/tasks/{task_id}":                          {},
	"PATCH /rooms/{room}/tasks/{task_id}":                        {body: `{"status": "done"}`},
	"POST /rooms/{room}/tasks/{task_id}/lease-action":            {body: `{"action": "release"}`},
	"POST /rooms/{room}/tasks/{task_id}/review-lease-action":     {body: `{"action": "release"}`},
	"GET /projects/{room}/tasks":                                 {},
	"POST /projects/{room}/tasks":                                {body: `{"title": "matrix probe"}`},
	"GET /projects/{room}/tasks/{task_id}":                       {},
	"PATCH /projects/{room}/tasks/{task_id}":                     {body: `{"status": "done"}`},
	"POST /projects/{room}/tasks/{task_id}/lease-action":         {body: `{"action": "release"}`},
	"POST /projects/{room}/tasks/{task_id}/review-lease-action":  {body: `{"action": "release"}`},
	"GET /rooms/{room}/reasoning":                                {},
	"GET /rooms/{room}/reasoning-sessions":                       {},
	"POST /rooms/{room}/reasoning-sessions":                      {body: `{"actor_label": "matrix", "summary": "matrix probe"}`},
	"GET /rooms/{room}/reasoning-sessions/{session_id}":          {},
	"PATCH /rooms/{room}/reasoning-sessions/{session_id}":        {body: `{"status": "closed"}`},
	"POST /rooms/{room}/reasoning-sessions/{session_id}/updates": {body: `{"summary": "matrix probe"}`},
	"GET /rooms/{room}/board-intents":                            {},
	"POST /rooms/{room}/board-intents":                           {body: `{"action": "task_create", "payload": {"title": "matrix probe"}}`},
	"POST /rooms/{room}/board-intents/{intent_id}/approve":       {},
	"POST /rooms/{room}/board-intents/{intent_id}/deny":          {},
	"GET /rooms/{room}/board-settings":                           {},
	"PATCH /rooms/{room}/board-settings":                         {body: `{"manager_mode": "intent_required"}`},

	"PATCH /rooms/{room}":               {body: `{"display_name": "matrix probe"}`},
	"GET /rooms/resolve/{room}":         {},
	"GET /api/rooms/resolve/{room}":     {},
	"GET /api/health":                   {},
	"GET /favicon.svg":                  {},
	"GET /favicon.ico":                  {},
	"GET /in/{room}":                    {},
	"GET /js/{file}":                    {},
	"GET /":                             {},
	"GET /docs":                         {},
	"GET /docs/{doc}":                   {},
	"GET /github.com/{owner}/{repo}":    {},
	"GET /gitlab.com/{owner}/{repo}":    {},
	"GET /bitbucket.org/{owner}/{repo}": {},
}

// target is the room a spelling names.
type target int

const (
	targetSecret    target = iota // the private room, or its branch room
	targetLookalike               // a repository nobody here may see
)

// spelling is one way of writing a room into a path.
type spelling struct {
	name   string
	room   string // as the path carries it, escaped
	target target
	legacy bool // the route's /rooms/ path as /projects/, or back
	// cross: the path names one room and its object ids are another
	// room's (crossIDs: the other room's ids under the private room's
	// path; crossPath: the private room's ids under the other room's).
	cross int
}

const (
	sameRoom = iota
	crossIDs
	crossPath
)

const secretRoom = "github.com/alice/secret"

func spellings(t *testing.T) []spelling {
	t.Helper()
	branch, err := rooms.BranchRoomID(secretRoom, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	return []spelling{
		{name: "canonical", room: secretRoom},
		{name: "mixed case", room: "GitHub.COM/Alice/Secret"},
		{name: ".git", room: "github.com/alice/secret.git"},
		{name: "trailing slash", room: "github.com/alice/secret%2F"},
		{name: "encoded slashes", room: "github.com%2Falice%2Fsecret"},
		{name: "https URL", room: "https%3A%2F%2Fgithub.com%2Falice%2Fsecret"},
		{name: "scp", room: "git@github.com:alice/secret.git"},
		{name: "double slash", room: "github.com//alice/secret"},
		{name: "branch room", room: branch},
		{name: "legacy path", room: secretRoom, legacy: true},
		{name: "look-alike", room: "github.com/alice/secret2", target: targetLookalike},
		{name: "other room's ids", room: secretRoom, cross: crossIDs},
		{name: "other room's path", room: otherRoom, cross: crossPath},
	}
}

// caller is one identity of the matrix.
type caller struct {
	name   string
	header http.Header
	query  string // credentials offered in the query string, to be ignored
	// secret is the caller's level in the private room; signedIn says
	// whether it has an account at all (its level anywhere else private).
	secret   level
	signedIn bool
}

// levelFor is the caller's level in the room a spelling names.
func (c caller) levelFor(tg target) level {
	if tg == targetSecret {
		return c.secret
	}
	if c.signedIn {
		return levelOutsider
	}
	return levelAnonymous
}

// caller returns the matrix's caller of that name.
func (m *matrix) caller(t *testing.T, name string) caller {
	t.Helper()
	for _, c := range m.callers {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("the matrix has no caller %q", name)
	return caller{}
}

// matrix is the seeded service and what the test knows of it.
type matrix struct {
	e       *env
	h       http.Handler
	callers []caller
	// ids are the path parameters of each room's objects: secretIDs of the
	// private room, otherIDs of the other room (by parameter, with the
	// agent and reasoning session ids as "{agent_session}" and
	// "{reasoning_session}").
	secretIDs, otherIDs map[string]string
	// secrets are strings of the private room's content (and the
	// credentials of those who may read it) that no caller without access
	// may ever see; otherMarks are the other room's.
	secrets, otherMarks []string
	sent                atomic.Int64 // requests sent, for the log
}

const otherRoom = "mallory-lab"

// TestAccessMatrix sends every route, as every caller, at every spelling
// of the private room's id, and checks each answer against the declared
// outcome and the invariants above.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	start := time.Now()
	m := seedMatrix(t)
	probes := m.probes(t)
	ctx := context.Background()
	watched := []string{secretRoom, otherRoom}
	before := roomState(ctx, t, m.e, watched)

	// Callers without access first, alone: the private room's rows must
	// come out as they went in.
	run := func(name string, pick func(caller) bool, which func(probe) bool) {
		t.Run(name, func(t *testing.T) {
			for _, c := range m.callers {
				if !pick(c) {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					m.send(t, c, probes, which)
				})
			}
		})
	}
	without := func(c caller) bool { return c.secret < levelReader }
	with := func(c caller) bool { return c.secret >= levelReader }
	writes := func(p probe) bool {
		return p.method != http.MethodGet && p.spelling.cross == sameRoom && !p.endsSession
	}
	run("without access", without, func(p probe) bool { return !p.endsSession })
	if after := roomState(ctx, t, m.e, watched); after != before {
		t.Errorf("callers without access changed the rooms:\nbefore %s\nafter  %s", before, after)
	}
	// Readers' reads and cross-room probes before their writes, which add
	// tasks and messages: the other room's task and message numbers must
	// stay none of the private room's.
	run("with access, reading", with, func(p probe) bool { return !writes(p) && !p.endsSession })
	run("with access, writing", with, writes)
	// Last, the routes that end the caller's session.
	t.Run("ending sessions", func(t *testing.T) {
		for _, c := range m.callers {
			m.send(t, c, probes, func(p probe) bool { return p.endsSession })
		}
	})
	// Sign-in is on: the callers with no credential were anonymous, never
	// the local owner (issue 21), whose account no request may make.
	var local int
	if err := m.e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE provider = 'local'`).Scan(&local); err != nil || local != 0 {
		t.Errorf("accounts of the local owner after the matrix: %d (%v); want none where sign-in is on", local, err)
	}
	t.Logf("%d requests in %v (seeding included)", m.sent.Load(), time.Since(start).Round(time.Millisecond))
}

// probe is one request of the matrix, less its caller.
type probe struct {
	route, method, path, body string
	spelling                  spelling
	routed                    api.Route // the route the path reaches (api.Match)
	isRouted, endsSession     bool
}

// probes builds the matrix's requests, failing for any route or gate the
// tables do not declare.
func (m *matrix) probes(t *testing.T) []probe {
	t.Helper()
	var out []probe
	declared := map[string]bool{}
	undeclared := 0
	for _, rt := range api.Routes() {
		key := rt.Method + " " + rt.Pattern
		declared[key] = true
		rc, ok := matrixRoutes[key]
		if !ok {
			undeclared++
			t.Errorf("route %s is not in matrixRoutes (audit_matrix_test.go): add it, with the query and body the matrix should send", key)
			continue
		}
		if _, ok := gateOutcomes[rt.Gate()]; !ok {
			undeclared++
			t.Errorf("route %s declares the gate %q, which gateOutcomes (audit_matrix_test.go) does not know: add what it answers each level of caller", key, rt.Gate())
			continue
		}
		sps := []spelling{{name: "no room"}}
		if strings.Contains(rt.Pattern, "{room}") {
			sps = spellings(t)
		}
		for _, sp := range sps {
			path, ok := m.pathFor(t, rt.Pattern, sp)
			if !ok {
				continue
			}
			if rc.query != "" {
				path += "?" + rc.query
			}
			routed, isRouted := api.Match(rt.Method, strings.SplitN(path, "?", 2)[0])
			out = append(out, probe{route: key, method: rt.Method, path: path, body: rc.body, spelling: sp,
				routed: routed, isRouted: isRouted, endsSession: rc.endsSession})
		}
	}
	for key := range matrixRoutes {
		if !declared[key] {
			undeclared++
			t.Errorf("matrixRoutes declares %s, which api.Routes() no longer has: remove it", key)
		}
	}
	if undeclared > 0 {
		t.FailNow()
	}
	return out
}

// pathFor writes a route's path at a spelling; false when the spelling
// means nothing for the route (a legacy path for a route that has none, a
// cross-room id for a route without object ids).
func (m *matrix) pathFor(t *testing.T, pattern string, sp spelling) (string, bool) {
	t.Helper()
	ids := m.secretIDs
	switch sp.cross {
	case crossIDs:
		ids = m.otherIDs
	case crossPath:
		// Only ids that are unique across rooms say anything here: task
		// and message numbers are per room, and the other room has its
		// own task_1.
		if strings.Contains(pattern, "{task_id}") || strings.Contains(pattern, "{message_id}") {
			return "", false
		}
	}
	fixed := map[string]string{"{code}": "ZZZZ-ZZZZ-ZZZZ", "{request_id}": strings.Repeat("0", 64), "{owner}": "alice", "{repo}": "secret", "{file}": "room.js", "{doc}": "limits"}
	var segs []string
	hasID := false
	for seg := range strings.SplitSeq(pattern, "/") {
		switch {
		case seg == "{room}":
			seg = sp.room
		case seg == "{session_id}" && strings.Contains(pattern, "/reasoning-sessions/"):
			seg, hasID = ids["{reasoning_session}"], true
		case seg == "{session_id}":
			seg, hasID = ids["{agent_session}"], true
		case fixed[seg] != "":
			seg = fixed[seg]
		case strings.HasPrefix(seg, "{"):
			v, ok := ids[seg]
			if !ok {
				t.Fatalf("route %s: the matrix has no value for %s; add one to seedMatrix's ids", pattern, seg)
			}
			seg, hasID = v, true
		}
		segs = append(segs, seg)
	}
	if sp.cross != sameRoom && !hasID {
		return "", false
	}
	path := strings.Join(segs, "/")
	if sp.legacy {
		switch {
		case strings.HasPrefix(path, "/rooms/"):
			path = "/projects/" + strings.TrimPrefix(path, "/rooms/")
		case strings.HasPrefix(path, "/projects/"):
			path = "/rooms/" + strings.TrimPrefix(path, "/projects/")
		default:
			return "", false
		}
	}
	return path, true
}

// maxFailures bounds the failures one caller reports: past it the same
// fault is usually showing again.
const maxFailures = 25

// probeWorkers is how many requests of one caller are in flight at once:
// each waits mostly on the database, so a few overlap well even on two
// cores.
const probeWorkers = 4

// send runs as caller c the probes that pick chooses.
func (m *matrix) send(t *testing.T, c caller, probes []probe, pick func(probe) bool) {
	todo := make(chan probe)
	var failures atomic.Int32
	var wg sync.WaitGroup
	for range probeWorkers {
		wg.Go(func() {
			for p := range todo {
				m.sent.Add(1)
				r := m.do(c, p)
				msg := m.verdict(c, p, r)
				if msg == "" {
					continue
				}
				switch n := failures.Add(1); {
				case n < maxFailures:
					t.Errorf("%s as %s at %s (%s): %s\n\tanswer %d %.400s", p.route, c.name, p.spelling.name, p.method+" "+p.path, msg, r.status, r.body)
				case n == maxFailures:
					t.Errorf("%d failures for %s; not reporting more", n, c.name)
				}
			}
		})
	}
	for _, p := range probes {
		if pick(p) {
			todo <- p
		}
	}
	close(todo)
	wg.Wait()
}

// answer is what the handler wrote.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends one request to the service's handler, in process. An event
// stream that opens is ended as soon as it flushes its first events.
func (m *matrix) do(c caller, p probe) answer {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := p.path
	if c.query != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + c.query
	}
	var body io.Reader
	if p.body != "" {
		body = strings.NewReader(p.body)
	}
	req := httptest.NewRequestWithContext(ctx, p.method, m.e.url+path, body)
	if p.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	// The service's own origin, as its page sends: cookie writes keep
	// passing a same-origin check.
	req.Header.Set("Origin", m.e.url)
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	rec := &streamHead{ResponseRecorder: httptest.NewRecorder(), cancel: cancel}
	m.h.ServeHTTP(rec, req)
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

// streamHead records an answer and ends the request at its first flush:
// an event stream has by then said what it is and sent its backlog.
type streamHead struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (s *streamHead) Flush() {
	s.ResponseRecorder.Flush()
	s.cancel()
}

// verdict checks an answer; "" when it is right.
func (m *matrix) verdict(c caller, p probe, r answer) string {
	if r.status >= 500 {
		return "a server error"
	}
	var body struct {
		Error *string `json:"error"`
	}
	if strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal([]byte(r.body), &body); err != nil {
			return "an answer that is not the JSON it says: " + err.Error()
		}
	}
	gateError := ""
	if r.status >= 400 {
		if body.Error == nil || *body.Error == "" {
			return `an error that is not JSON with "error"`
		}
		gateError = *body.Error
	}
	request := p.path + " " + p.body + " " + c.query
	lvl := c.levelFor(p.spelling.target)
	switch {
	case p.spelling.cross == crossIDs:
		if leak := leaked(r.body, request, m.otherMarks); leak != "" {
			return "another room's object under this room's path: " + leak
		}
	case p.spelling.cross == crossPath || lvl < levelReader:
		if leak := leaked(r.body, request, m.secrets); leak != "" {
			return "the private room's " + leak + " reached a caller without access"
		}
	}
	if p.spelling.cross != sameRoom {
		if r.status != 401 && r.status != 403 && r.status != 404 {
			return "a cross-room id not refused (want 401, 403 or 404)"
		}
		return ""
	}
	if !p.isRouted {
		// No route has the path (a double slash, a legacy path no route
		// has): the router, or the room id check, refuses it.
		if r.status != 400 && r.status != 404 && r.status != 405 {
			return "an unrouted path not refused (want 400, 404 or 405)"
		}
		return ""
	}
	gate := p.routed.Gate()
	want := gateOutcomes[gate][lvl]
	switch {
	case !want.passed && (r.status != want.status || gateError != want.err):
		return fmt.Sprintf("want %d %q (gate %s, caller %s)", want.status, want.err, gate, lvl)
	case want.passed && (gateError == authRequired.err || gateError == noAccess.err || (gate == "admin" && gateError == notAdmin.err)):
		return fmt.Sprintf("refused by the %s gate, which a caller %s passes", gate, lvl)
	}
	return ""
}

// leaked names the first of secrets the body holds that the request did
// not carry itself (an answer may echo what it was sent), or "".
func leaked(body, request string, secrets []string) string {
	for _, s := range secrets {
		if strings.Contains(body, s) && !strings.Contains(request, strings.Trim(s, `"`)) {
			return fmt.Sprintf("%q", s)
		}
	}
	return ""
}

// roomState digests every row that belongs to the rooms: the rooms
// themselves (and their branch rooms) and the rows of every table with a
// room_id column, so a table added later is watched too.
func roomState(ctx context.Context, t *testing.T, e *env, ids []string) string {
	t.Helper()
	rows, err := e.db.Pool.Query(ctx, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name = 'room_id' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	digest := func(table, where string) {
		var n int
		var sum string
		err := e.db.Pool.QueryRow(ctx, `SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '')
			FROM `+table+` t WHERE `+where, ids).Scan(&n, &sum)
		if err != nil {
			t.Fatalf("digest %s: %v", table, err)
		}
		fmt.Fprintf(&b, "%s=%d/%.8s ", table, n, sum)
	}
	digest("rooms", "id = ANY($1) OR parent_room_id = ANY($1)")
	for _, table := range tables {
		digest(table, "room_id = ANY($1) OR room_id IN (SELECT id FROM rooms WHERE parent_room_id = ANY($1))")
	}
	return b.String()
}

// seedMatrix builds the private room github.com/alice/secret (alice
// administers the repository, bobby and rita may read it), its branch
// room, and mallory's open room with content of its own, and the callers.
func seedMatrix(t *testing.T) *matrix {
	t.Helper()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000000", "LETAGENTS_SEND_LIMIT": "1000000", "LETAGENTS_INVITE_ROOM_LIMIT": "1000000",
		"GITHUB_WEBHOOK_SECRET": "matrix", "GITHUB_APP_ID": "4242", "GITHUB_APP_PRIVATE_KEY": githubtest.AppKeyPEM(t), "GITHUB_APP_SLUG": "matrix"})
	e.gh.AddRepo("alice/secret", true)
	for _, login := range []string{"alice", "bobby", "rita", "mallory", "dan"} {
		e.gh.AddUser(login)
	}
	e.gh.Grant("alice/secret", "alice", "admin")
	e.gh.Grant("alice/secret", "bobby", "read")
	e.gh.Grant("alice/secret", "rita", "read")
	alice, bobby, rita, mallory, dan := e.signIn(t, "alice"), e.signIn(t, "bobby"), e.signIn(t, "rita"), e.signIn(t, "mallory"), e.signIn(t, "dan")
	revoked := e.signIn(t, "bobby")
	if _, err := e.db.Pool.Exec(context.Background(), `DELETE FROM owner_tokens WHERE token_hash = $1`, auth.HashToken(revoked)); err != nil {
		t.Fatal(err)
	}
	bobbyBrowser, malloryBrowser, loggedOut := e.browserSignIn(t, "bobby"), e.browserSignIn(t, "mallory"), e.browserSignIn(t, "bobby")
	same := http.Header{"Origin": {e.url}}
	post := func(h http.Header, path, body string, status int) reply {
		t.Helper()
		hh := same.Clone()
		for k, v := range h {
			hh[k] = v
		}
		return e.callWith(context.Background(), t, http.MethodPost, path, body, hh).want(t, status, "")
	}
	post(loggedOut, "/auth/logout", "", 200)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

	branch, _ := rooms.BranchRoomID(secretRoom, "feature/x")
	const mark = "falcon" // the private room's search word
	secrets := []string{}
	secret := func(s string) string { secrets = append(secrets, s); return s }

	// The private room: alice's join makes her its admin (and the branch
	// room's); bobby's agent works in it.
	for _, room := range []string{secretRoom, branch} {
		if r := post(bearer(alice), "/rooms/"+room+"/join", "", 200); r.str("role") != "admin" {
			t.Fatalf("alice's join of %s = %s, want admin", room, r.raw)
		}
	}
	post(bearer(rita), "/rooms/"+secretRoom+"/join", "", 200)
	scout := e.register(t, bobby, secretRoom, "scout", `{"actor_key": "bobby/scout", "display_name": "Scoutqzx"}`)
	// The readers' logins, as JSON strings: an answer that names them
	// (GET /auth/session, say) was served to them.
	secret(`"bobby"`)
	secret(`"rita"`)
	secret("Scoutqzx")
	secret(`"` + scout.id + `"`)
	secret(scout.token)
	secret(bobby)
	secret(strings.SplitN(bobbyBrowser.Get("Cookie"), "=", 2)[1])
	msg := post(bearer(bobby), "/rooms/"+secretRoom+"/messages",
		`{"sender": "`+scout.label+`", "text": "`+secret(mark+" message wq81")+`", `+scout.creds()+`}`, 201).str("id")
	post(bobbyBrowser, "/rooms/"+branch+"/messages", `{"sender": "bobby", "text": "`+secret(mark+" branch note jf02")+`"}`, 201)
	task := post(bearer(bobby), "/rooms/"+secretRoom+"/tasks",
		`{"title": "`+secret(mark+" task pz44")+`", "description": "`+secret("plan kd19")+`", `+scout.creds()+`}`, 201).str("id")
	rs := post(bearer(bobby), "/rooms/"+secretRoom+"/reasoning-sessions",
		`{"summary": "`+secret("reasoning vb27")+`", "goal": "`+secret("goal hy63")+`", `+scout.creds()+`}`, 201).str("id")
	secret(rs)
	post(bearer(bobby), "/rooms/"+secretRoom+"/artifacts", `{"kind": "pull_request", "url": "`+secret("https://example.com/ux58/pull/3")+`"}`, 200)
	intent := post(bearer(bobby), "/rooms/"+secretRoom+"/board-intents",
		`{"action": "task_create", "payload": {"title": "`+secret("intent mc70")+`"}, "reason": "`+secret("because rt36")+`", `+scout.creds()+`}`, 201).str("id")
	secret(`"` + intent + `"`)
	renamed := e.callWith(context.Background(), t, http.MethodPatch, "/rooms/"+secretRoom, `{"display_name": "`+secret("Project Osprey")+`"}`, bearer(alice))
	renamed.want(t, 200, "")
	invite := post(bearer(alice), "/projects", "", 201).str("id")
	secret(invite)

	// mallory's open room, with more of everything than the private one,
	// so that its task and message numbers are none of the private room's.
	post(bearer(mallory), "/rooms/"+otherRoom+"/join", "", 200)
	post(bearer(dan), "/rooms/dan-den/join", "", 200)
	lab := e.register(t, mallory, otherRoom, "imp", `{"actor_key": "mallory/imp", "display_name": "Impwoz"}`)
	marks := []string{"Impwoz"}
	other := func(s string) string { marks = append(marks, s); return s }
	var labMsg, labTask string
	for i := range 4 {
		labMsg = post(bearer(mallory), "/rooms/"+otherRoom+"/messages",
			`{"sender": "`+lab.label+`", "text": "`+other(fmt.Sprintf("lab message %d ro", i))+`", `+lab.creds()+`}`, 201).str("id")
		labTask = post(bearer(mallory), "/rooms/"+otherRoom+"/tasks",
			`{"title": "`+other(fmt.Sprintf("lab task %d ro", i))+`", `+lab.creds()+`}`, 201).str("id")
	}
	labRS := post(bearer(mallory), "/rooms/"+otherRoom+"/reasoning-sessions", `{"summary": "`+other("lab reasoning ro")+`", `+lab.creds()+`}`, 201).str("id")
	labIntent := post(bearer(mallory), "/rooms/"+otherRoom+"/board-intents",
		`{"action": "task_create", "payload": {"title": "`+other("lab intent ro")+`"}, `+lab.creds()+`}`, 201).str("id")
	for _, id := range []string{labMsg, labTask} {
		for _, path := range []string{"/messages/" + id + "/deliveries", "/tasks/" + id} {
			if r := e.as(t, alice, http.MethodGet, "/rooms/"+secretRoom+path, ""); r.status == 200 {
				t.Fatalf("the private room has %s too: the cross-room ids would prove nothing", id)
			}
		}
	}

	callers := []caller{
		{name: "anonymous"},
		{name: "junk bearer", header: bearer(strings.Repeat("j", 64))},
		{name: "revoked token", header: bearer(revoked)},
		{name: "logged-out cookie", header: loggedOut},
		{name: "credentials in the query", query: "token=" + bobby + "&access_token=" + bobby + "&letagents_session=" +
			strings.SplitN(bobbyBrowser.Get("Cookie"), "=", 2)[1] + "&session=" + strings.SplitN(bobbyBrowser.Get("Cookie"), "=", 2)[1] +
			"&authorization=Bearer%20" + bobby + "&agent_session_id=" + scout.id + "&agent_session_token=" + scout.token},
		{name: "outsider token", header: bearer(mallory), secret: levelOutsider, signedIn: true},
		{name: "outsider cookie", header: malloryBrowser, secret: levelOutsider, signedIn: true},
		{name: "worker of another room", header: lab.headers(), secret: levelOutsider, signedIn: true},
		{name: "admin of another room", header: bearer(dan), secret: levelOutsider, signedIn: true},
		{name: "reader token", header: bearer(rita), secret: levelReader, signedIn: true},
		{name: "agent owner token", header: bearer(bobby), secret: levelReader, signedIn: true},
		{name: "worker", header: scout.headers(), secret: levelReader, signedIn: true},
		{name: "reader cookie", header: bobbyBrowser, secret: levelReader, signedIn: true},
		{name: "GitHub admin", header: bearer(alice), secret: levelAdmin, signedIn: true},
	}
	m := &matrix{e: e, h: e.svc.Handler, callers: callers, secrets: secrets, otherMarks: marks,
		secretIDs: map[string]string{"{task_id}": task, "{message_id}": msg, "{intent_id}": intent,
			"{agent_session}": scout.id, "{reasoning_session}": rs},
		otherIDs: map[string]string{"{task_id}": labTask, "{message_id}": labMsg, "{intent_id}": labIntent,
			"{agent_session}": lab.id, "{reasoning_session}": labRS},
	}
	return m
}
