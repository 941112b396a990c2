package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/rooms"
)

// Group names a set of routes deployed together as one function.
type Group string

// Route groups: each is one function in template.yaml.
const (
	GroupRooms    Group = "rooms"    // create and join rooms
	GroupMessages Group = "messages" // send and read messages
	GroupPoll     Group = "poll"     // long-poll, served by the poll container
	GroupWeb      Group = "web"      // the web page and health check
	GroupAuth     Group = "auth"     // sign-in and the agents directory
	// GroupCoordination is agent sessions, presence and the task board.
	GroupCoordination Group = "coordination"
)

// Route is one method and path pattern. In a pattern, {room} stands for a
// room id of 1 to rooms.MaxSegments path segments (ids such as
// github.com/owner/repo keep their slashes); any other {name} is exactly one
// segment. API Gateway routes only ids of up to rooms.PathSegments
// segments to a route (GatewayPaths); a deeper id reaches it percent-encoded.
type Route struct {
	Group   Group
	Method  string
	Pattern string
	gate    gate // what the caller needs of the room of the path
	handle  handler
}

// handler serves a request its route's gate let through. An error is
// answered by the router, once (server.fail).
type handler func(http.ResponseWriter, *http.Request, call) error

// call is a request as its handler sees it: the values its path captured
// and, on a route that acts on a room, the room the gate let the caller into.
type call struct {
	ps     params
	room   string      // the normalised room id; "" on public routes
	access auth.Access // the access gate's verdict for the caller in room
}

// params are the values a pattern captured, already unescaped.
type params map[string]string

// match reports whether path fits the route's pattern and what it captured.
// Segments are compared escaped, so a room id sent with its slashes
// percent-encoded as one segment (as the old web page does) still works.
func (rt Route) match(escapedPath string) (params, bool) {
	return rt.matchSplit(splitPath(escapedPath))
}

// matchSplit is match for a path already split (splitPath): the router
// tries every route on the same segments.
func (rt Route) matchSplit(segs []string) (params, bool) {
	m, ok := rt.matchPath(segs, rooms.MaxSegments)
	return m.params, ok
}

func splitPath(escapedPath string) []string {
	return strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
}

// patternSegments holds every route's pattern split (splitPath), so that
// routing a request splits only its path.
var patternSegments = func() map[string][]string {
	m := make(map[string][]string, len(table))
	for _, rt := range table {
		m[rt.Pattern] = splitPath(rt.Pattern)
	}
	return m
}()

// segmentMatch is what a path gave a pattern: the captured values, and for
// API Gateway each path segment's parameter name and value.
type segmentMatch struct {
	params   params
	gateway  []string          // the pattern as the gateway route of this path
	gwParams map[string]string // its path parameters: r1…rN for {room}
}

// matchSegments matches a path whose room, if the pattern has one, spans
// at most maxRoom segments.
func (rt Route) matchSegments(escapedPath string, maxRoom int) (segmentMatch, bool) {
	return rt.matchPath(splitPath(escapedPath), maxRoom)
}

// matchPath is matchSegments for a path already split (splitPath).
func (rt Route) matchPath(segs []string, maxRoom int) (segmentMatch, bool) {
	pat, ok := patternSegments[rt.Pattern]
	if !ok {
		pat = splitPath(rt.Pattern)
	}
	roomLen := 1
	if slices.Contains(pat, "{room}") {
		roomLen = len(segs) - (len(pat) - 1)
		if roomLen < 1 || roomLen > maxRoom {
			return segmentMatch{}, false
		}
	} else if len(segs) != len(pat) {
		return segmentMatch{}, false
	}
	// The literal segments first: most routes a request is tried against
	// fail there, before anything is allocated.
	si := 0
	for _, p := range pat {
		switch {
		case p == "{room}":
			si += roomLen
		case strings.HasPrefix(p, "{"):
			si++
		case segs[si] != p:
			return segmentMatch{}, false
		default:
			si++
		}
	}
	m := segmentMatch{params: params{}, gwParams: map[string]string{}}
	si = 0
	for _, p := range pat {
		if !strings.HasPrefix(p, "{") {
			if segs[si] != p {
				return segmentMatch{}, false
			}
			m.gateway = append(m.gateway, p)
			si++
			continue
		}
		name := strings.Trim(p, "{}")
		n := 1
		if name == "room" {
			n = roomLen
		}
		parts := make([]string, n)
		for k := range n {
			v, err := url.PathUnescape(segs[si+k])
			if err != nil || v == "" {
				return segmentMatch{}, false
			}
			parts[k] = v
			gwName := name
			if name == "room" {
				gwName = fmt.Sprintf("r%d", k+1)
			}
			m.gateway = append(m.gateway, "{"+gwName+"}")
			m.gwParams[gwName] = v
		}
		si += n
		m.params[name] = strings.Join(parts, "/")
	}
	return m, true
}

// GatewayPaths spells the pattern as API Gateway routes must: a greedy
// path variable may only end a route, so {room} is written out once per
// segment count, /rooms/{r1}/join up to /rooms/{r1}/{r2}/{r3}/join.
func (rt Route) GatewayPaths() []string {
	before, after, ok := strings.Cut(rt.Pattern, "{room}")
	if !ok {
		return []string{rt.Pattern}
	}
	out := make([]string, 0, rooms.PathSegments)
	vars := make([]string, 0, rooms.PathSegments)
	for i := 1; i <= rooms.PathSegments; i++ {
		vars = append(vars, fmt.Sprintf("{r%d}", i))
		out = append(out, before+strings.Join(vars, "/")+after)
	}
	return out
}

// GatewayRoute returns the route key and path parameters API Gateway gives
// the event of a request to this route, as the local runner must too.
func (rt Route) GatewayRoute(escapedPath string) (key string, pathParams map[string]string, ok bool) {
	m, ok := rt.matchSegments(escapedPath, rooms.PathSegments)
	if !ok {
		return "", nil, false
	}
	if len(m.gwParams) == 0 {
		m.gwParams = nil
	}
	return rt.Method + " /" + strings.Join(m.gateway, "/"), m.gwParams, true
}

// router dispatches to the first route that matches, in table order: it
// runs the route's gate, then its handler, and answers a refusal or a
// failure of either.
type router struct {
	s      *server
	routes []Route
}

func (rs router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := splitPath(r.URL.EscapedPath())
	var allowed []string
	for _, rt := range rs.routes {
		ps, ok := rt.matchSplit(segs)
		if !ok {
			continue
		}
		if rt.Method != r.Method && !(rt.Method == http.MethodGet && r.Method == http.MethodHead) {
			allowed = append(allowed, rt.Method)
			continue
		}
		c, err := rs.s.pass(r, rt.gate, ps)
		if err == nil {
			err = rt.handle(w, r, c)
		}
		if err != nil {
			// A refusal's answer, too, says whether the caller's
			// token signed anyone in.
			if rerr := rs.s.resolve(r); rerr != nil {
				err = rerr
			}
			rs.s.fail(w, r, err)
		}
		return
	}
	if err := rs.s.resolve(r); err != nil {
		rs.s.fail(w, r, err)
		return
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

// table is the route table without a server behind its handlers, for
// lookups from outside. Building it checks every route's gate, so a route
// that declares none stops the package at start (and every test).
var table = checkGates((&server{}).routes())

// checkGates panics unless every route declares its gate, and only routes
// with a room in their path declare a room gate.
func checkGates(rs []Route) []Route {
	for _, rt := range rs {
		switch {
		case rt.gate == undeclared:
			panic(fmt.Sprintf("api: route %s %s declares no gate", rt.Method, rt.Pattern))
		case rt.gate != public && !strings.Contains(rt.Pattern, "{room}"):
			panic(fmt.Sprintf("api: route %s %s has a room gate but no {room}", rt.Method, rt.Pattern))
		}
	}
	return rs
}

// Match returns the route serving method and path, as the gateway would
// route it; the local runner uses it to pick the function to invoke. HEAD
// is not GET here: API Gateway matches methods exactly, and a room of more
// than rooms.PathSegments slash-separated segments matches no route there.
func Match(method, escapedPath string) (Route, bool) {
	for _, rt := range table {
		if _, ok := rt.matchSegments(escapedPath, rooms.PathSegments); ok && rt.Method == method {
			return rt, true
		}
	}
	return Route{}, false
}

// secretParams are the path parameters that are credentials: whoever
// reads one can use it (poll a device sign-in for its owner token, join
// an invite room by its code).
var secretParams = map[string]bool{"request_id": true, "code": true}

// LogPath is an escaped request path as a log line may show it, its
// secrets replaced by letagents.Redacted: the secretParams of the route
// that claims it, and any invite-shaped segment, wherever it stands (an
// invite room's id is its code; rooms.ForLog). Every logger that writes a
// request's path writes this instead.
func LogPath(escapedPath string) string {
	segs := strings.Split(escapedPath, "/")
	for _, rt := range table {
		if _, ok := rt.matchSegments(escapedPath, rooms.MaxSegments); !ok {
			continue
		}
		pat := strings.Split(rt.Pattern, "/")
		si := 0
		for _, p := range pat {
			if p == "{room}" {
				si += len(segs) - (len(pat) - 1)
				continue
			}
			if name, ok := strings.CutPrefix(p, "{"); ok && secretParams[strings.TrimSuffix(name, "}")] {
				v, _ := url.PathUnescape(segs[si])
				segs[si] = letagents.Redacted(v)
			}
			si++
		}
		break
	}
	for i, seg := range segs {
		if v, err := url.PathUnescape(seg); err == nil && rooms.IsInviteCode(v) {
			segs[i] = rooms.ForLog(v)
		}
	}
	return strings.Join(segs, "/")
}

// Routes lists every route the service serves, for the template check.
func Routes() []Route { return slices.Clone(table) }

// Groups lists every route group, each one deployed function, in the
// order the route table first names them.
func Groups() []Group {
	var out []Group
	for _, rt := range table {
		if !slices.Contains(out, rt.Group) {
			out = append(out, rt.Group)
		}
	}
	return out
}

type ctxKey int

const holdKey ctxKey = 0

// WithHoldLimit caps how long handlers on ctx may hold a request open. The
// Lambda adapter sets it under API Gateway, which ends every request at 30 s.
func WithHoldLimit(ctx context.Context, limit time.Duration) context.Context {
	return context.WithValue(ctx, holdKey, limit)
}

func holdLimit(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(holdKey).(time.Duration)
	return d, ok
}
