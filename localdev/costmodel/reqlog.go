package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/letagents/letagents-go/shared/api"
)

// logLine is what the cost model reads of one line of the runner's
// request log (localdev's gateway logs every request once answered, a
// stream once it ends, as JSON through slog).
type logLine struct {
	Msg      string `json:"msg"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Status   int    `json:"status"`
	Function string `json:"function"`
	// Duration is in nanoseconds: how slog's JSON handler writes a
	// time.Duration.
	Duration int64 `json:"duration"`
	Bytes    int64 `json:"bytes"`
}

// routeUse is what the requests of one route added up to.
type routeUse struct {
	Route    string // "POST /rooms/{room}/messages", as routes.go names it
	Function string // the route group: the Lambda function, or "poll"
	Count    int
	// Held is the requests' time, added up: how long they held a
	// connection (a poll, a stream) or ran (anything else).
	Held time.Duration
	// Billed is Lambda's billed duration, added up: each request's
	// rounded up to the millisecond.
	Billed time.Duration
	Bytes  int64 // answer bodies
}

// usage is a run's requests by route key.
type usage map[string]*routeUse

// parseLog reads the runner's log and adds up its requests by route. Lines
// that are not request lines (the runner's other logs, anything not JSON)
// are skipped; a request line whose method and path no route claims
// counts under the web function's catch-all route, where API Gateway
// sends it.
func parseLog(r io.Reader) (usage, error) {
	u := usage{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Msg != "request" || l.Method == "" {
			continue
		}
		key := "ANY /{proxy+}"
		if rt, ok := api.Match(l.Method, l.Path); ok {
			key = rt.Method + " " + rt.Pattern
		}
		ru := u[key]
		if ru == nil {
			ru = &routeUse{Route: key, Function: l.Function}
			u[key] = ru
		}
		d := time.Duration(l.Duration)
		ru.Count++
		ru.Held += d
		ru.Billed += billed(d)
		ru.Bytes += l.Bytes
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the request log: %w", err)
	}
	return u, nil
}

// isPoll reports whether a route is served by the poll base (long-polls
// and event streams) rather than a function behind API Gateway.
func (r *routeUse) isPoll() bool { return r.Function == string(api.GroupPoll) }

// isStream reports whether a route is an event stream.
func (r *routeUse) isStream() bool { return strings.HasSuffix(r.Route, "/messages/stream") }

// billed is Lambda's billed duration of an invocation that ran d: rounded
// up to the millisecond.
func billed(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// total is the number of requests.
func (u usage) total() int {
	n := 0
	for _, r := range u {
		n += r.Count
	}
	return n
}
