package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

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
)

// Route is one method and path pattern. In a pattern, {room} stands for a
// room id of 1 to rooms.MaxSegments path segments (ids such as
// github.com/owner/repo keep their slashes); any other {name} is exactly one
// segment.
type Route struct {
	Group   Group
	Method  string
	Pattern string
	handle  func(http.ResponseWriter, *http.Request, params)
}

// params are the values a pattern captured, already unescaped.
type params map[string]string

// match reports whether path fits the route's pattern and what it captured.
// Segments are compared escaped, so a room id sent with its slashes
// percent-encoded as one segment (as the old web page does) still works.
func (rt Route) match(escapedPath string) (params, bool) {
	pat := strings.Split(strings.TrimPrefix(rt.Pattern, "/"), "/")
	segs := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	roomAt := -1
	for i, p := range pat {
		if p == "{room}" {
			roomAt = i
		}
	}
	roomLen := 1
	if roomAt >= 0 {
		roomLen = len(segs) - (len(pat) - 1)
		if roomLen < 1 || roomLen > rooms.MaxSegments {
			return nil, false
		}
	} else if len(segs) != len(pat) {
		return nil, false
	}
	ps := params{}
	si := 0
	for i, p := range pat {
		if !strings.HasPrefix(p, "{") {
			if segs[si] != p {
				return nil, false
			}
			si++
			continue
		}
		n := 1
		if i == roomAt {
			n = roomLen
		}
		parts := make([]string, n)
		for k := range n {
			v, err := url.PathUnescape(segs[si+k])
			if err != nil || v == "" {
				return nil, false
			}
			parts[k] = v
		}
		si += n
		ps[strings.Trim(p, "{}")] = strings.Join(parts, "/")
	}
	return ps, true
}

// router dispatches to the first route that matches, in table order.
type router []Route

func (rs router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	var allowed []string
	for _, rt := range rs {
		ps, ok := rt.match(path)
		if !ok {
			continue
		}
		if rt.Method != r.Method && !(rt.Method == http.MethodGet && r.Method == http.MethodHead) {
			allowed = append(allowed, rt.Method)
			continue
		}
		rt.handle(w, r, ps)
		return
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, r, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	writeError(w, r, http.StatusNotFound, "Not Found")
}

// Lookup returns the group serving method and path, as the gateway would
// route it; the local runner uses it to pick the function to invoke.
func Lookup(method, escapedPath string) (Group, bool) {
	for _, rt := range (&server{}).routes() {
		if _, ok := rt.match(escapedPath); ok && (rt.Method == method || method == http.MethodHead && rt.Method == http.MethodGet) {
			return rt.Group, true
		}
	}
	return "", false
}

// Routes lists every route the service serves, for the template check.
func Routes() []Route { return (&server{}).routes() }

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
