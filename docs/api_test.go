package docs_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
)

var (
	pathParam  = regexp.MustCompile(`\{[^}]*\}`)
	httpMethod = regexp.MustCompile(`^(GET|POST|PATCH|PUT|DELETE)$`)
)

// documentedRoute is one method and path of api.md's route table: a full
// path, or "…/rest" (the path of a room's route ending in rest), or
// "/prefix/…" (every path that starts with prefix).
type documentedRoute struct{ method, path string }

func (d documentedRoute) matches(method, pattern string) bool {
	if d.method != method {
		return false
	}
	p, want := pathParam.ReplaceAllString(pattern, "{}"), pathParam.ReplaceAllString(d.path, "{}")
	switch {
	case strings.HasPrefix(want, "…/"):
		return strings.HasSuffix(p, want[len("…"):])
	case strings.HasSuffix(want, "/…"):
		return strings.HasPrefix(p, want[:len(want)-len("…")])
	}
	return p == want
}

// documentedRoutes reads api.md's route table. A row's first cell names
// its methods; in the second, a method word changes the method of the
// paths after it ("`/auth/session`, POST `/auth/logout`"), and "same"
// repeats the row above's paths.
func documentedRoutes(t *testing.T) []documentedRoute {
	var out []documentedRoute
	var prevPaths []string
	for _, row := range tableRows(t, "api.md", "method") {
		if len(row) < 2 {
			t.Fatalf("api.md: short row %q", row)
		}
		methods := strings.Split(strings.ReplaceAll(row[0], " ", ""), ",")
		var paths []string
		if row[1] == "same" {
			paths = prevPaths
			for _, p := range paths {
				for _, m := range methods {
					out = append(out, documentedRoute{m, p})
				}
			}
		}
		for _, word := range strings.Fields(strings.ReplaceAll(row[1], ",", " ")) {
			if httpMethod.MatchString(word) {
				methods = []string{word}
				continue
			}
			if !strings.HasPrefix(word, "`") {
				continue
			}
			p := strings.Trim(word, "`")
			paths = append(paths, p)
			for _, m := range methods {
				out = append(out, documentedRoute{m, p})
			}
		}
		prevPaths = paths
	}
	return out
}

// TestAPITableIsTheRoutes: every route of api.Routes() has its line in
// api.md, and every line names a route that exists.
func TestAPITableIsTheRoutes(t *testing.T) {
	documented := documentedRoutes(t)
	used := make([]bool, len(documented))
	for _, r := range api.Routes() {
		found := false
		for i, d := range documented {
			if d.matches(r.Method, r.Pattern) {
				found, used[i] = true, true
			}
		}
		if !found {
			t.Errorf("route %s %s is not in docs/api.md's table", r.Method, r.Pattern)
		}
	}
	for i, d := range documented {
		if !used[i] {
			t.Errorf("docs/api.md lists %s %s, which no route serves", d.method, d.path)
		}
	}
	if !slices.ContainsFunc(documented, func(d documentedRoute) bool { return d.path == "/api/health" }) {
		t.Error("the table was not read: /api/health is missing")
	}
}
