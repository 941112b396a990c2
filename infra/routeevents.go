package infra

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/letagents/letagents-go/shared/api"
)

// httpAPI is the logical name of the template's one HttpApi resource, which
// every route event names as its ApiId (else SAM makes an implicit API).
const httpAPI = "HttpApi"

// The markers around a group's generated route events in template.yaml. The
// begin marker tells a reader not to edit the block by hand.
var (
	beginMarker = regexp.MustCompile(`^( *)# begin routes (\S+)(?:\s|$)`)
	endMarker   = regexp.MustCompile(`^ *# end routes (\S+)\s*$`)
)

// beginLine and endLine spell the markers of group at indent, as a block
// that has none yet would get them.
func beginLine(indent string, g api.Group) string {
	return fmt.Sprintf("%s# begin routes %s (generated from shared/api/routes.go by `make template`; do not edit)\n", indent, g)
}

func endLine(indent string, g api.Group) string {
	return fmt.Sprintf("%s# end routes %s\n", indent, g)
}

// RewriteRouteEvents returns the template src with the lines between each
// pair of "# begin routes <group>" and "# end routes <group>" markers
// replaced by the HttpApi events of that group's routes, in table order,
// each route once per path API Gateway needs (Route.GatewayPaths). A begin
// marker is rewritten in its standard words; every other byte outside the
// blocks is kept. Every group of routes must have exactly one pair of
// markers, and every pair must name a group of routes: a new group's
// function and markers are written by hand, once.
func RewriteRouteEvents(src []byte, routes []api.Route) ([]byte, error) {
	byGroup := map[api.Group][]api.Route{}
	var groups []api.Group
	for _, rt := range routes {
		if _, seen := byGroup[rt.Group]; !seen {
			groups = append(groups, rt.Group)
		}
		byGroup[rt.Group] = append(byGroup[rt.Group], rt)
	}

	var out strings.Builder
	done := map[api.Group]bool{}
	var open api.Group // the group whose block is being replaced, or ""
	openAt := 0
	for n, line := range strings.SplitAfter(string(src), "\n") {
		lineNo := n + 1
		if m := beginMarker.FindStringSubmatch(line); m != nil {
			g := api.Group(m[2])
			switch {
			case open != "":
				return nil, fmt.Errorf("line %d: begin routes %s inside the block of %s (line %d)", lineNo, g, open, openAt)
			case done[g]:
				return nil, fmt.Errorf("line %d: a second block of routes %s", lineNo, g)
			case byGroup[g] == nil:
				return nil, fmt.Errorf("line %d: routes %s: no route of shared/api/routes.go has group %q", lineNo, g, g)
			}
			open, openAt, done[g] = g, lineNo, true
			out.WriteString(beginLine(m[1], g))
			writeEvents(&out, m[1], byGroup[g])
			continue
		}
		if m := endMarker.FindStringSubmatch(line); m != nil {
			if g := api.Group(m[1]); g != open {
				return nil, fmt.Errorf("line %d: end routes %s, but the open block is %q", lineNo, g, open)
			}
			out.WriteString(line)
			open = ""
			continue
		}
		if open == "" {
			out.WriteString(line)
		}
	}
	if open != "" {
		return nil, fmt.Errorf("line %d: begin routes %s has no end routes %s", openAt, open, open)
	}
	for _, g := range groups {
		if !done[g] {
			return nil, fmt.Errorf("no block for routes %s: put a %q line and a %q line in the Events of its function",
				g, strings.TrimSpace(beginLine("", g)), strings.TrimSpace(endLine("", g)))
		}
	}
	return []byte(out.String()), nil
}

// writeEvents writes one HttpApi event per gateway path of each route, at
// indent, the indent of the event names under Events.
func writeEvents(out *strings.Builder, indent string, routes []api.Route) {
	for _, rt := range routes {
		for _, path := range rt.GatewayPaths() {
			fmt.Fprintf(out, "%s%s:\n", indent, eventName(rt.Method, path))
			fmt.Fprintf(out, "%s  Type: HttpApi\n", indent)
			fmt.Fprintf(out, "%s  Properties: {ApiId: !Ref %s, PayloadFormatVersion: \"2.0\", Method: %s, Path: %s}\n",
				indent, httpAPI, rt.Method, yamlFlowScalar(path))
		}
	}
}

// yamlFlowScalar quotes s when it could not stand bare in a YAML flow
// mapping: braces, brackets, commas and ": " or " #" end or change it there.
func yamlFlowScalar(s string) string {
	if s == "" || strings.ContainsAny(s, "{}[],:#'\"\\ ") {
		return strconv.Quote(s)
	}
	return s
}

// eventName is the logical name of the event for method and path: both in
// CamelCase, "/" as Root ("POST /rooms/{r1}/join" → PostRoomsR1Join).
func eventName(method, path string) string {
	var b strings.Builder
	word := func(s string) {
		for _, w := range strings.FieldsFunc(s, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) {
			b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
		}
	}
	word(method)
	if path == "/" {
		b.WriteString("Root")
	}
	word(path)
	return b.String()
}
