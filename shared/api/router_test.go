package api_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/letagents"
)

func TestMatchAndGatewayRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		group        api.Group
		key          string
		params       map[string]string
	}{
		{"POST", "/projects", api.GroupRooms, "POST /projects", nil},
		{"GET", "/projects/join/ABCD-EFGH", api.GroupRooms, "GET /projects/join/{code}", map[string]string{"code": "ABCD-EFGH"}},
		{"POST", "/rooms/solo/join", api.GroupRooms, "POST /rooms/{r1}/join", map[string]string{"r1": "solo"}},
		{"POST", "/rooms/github.com/o/r/join", api.GroupRooms, "POST /rooms/{r1}/{r2}/{r3}/join", map[string]string{"r1": "github.com", "r2": "o", "r3": "r"}},
		{"GET", "/projects/github.com%2Fo%2Fr/messages", api.GroupMessages, "GET /projects/{r1}/messages", map[string]string{"r1": "github.com/o/r"}},
		{"GET", "/rooms/a%20b/c/messages/poll", api.GroupPoll, "GET /rooms/{r1}/{r2}/messages/poll", map[string]string{"r1": "a b", "r2": "c"}},
		// A room may be named like a route's suffix: the room takes what
		// the suffix leaves, as the original's greedy regex does.
		{"GET", "/rooms/a/messages/messages", api.GroupMessages, "GET /rooms/{r1}/{r2}/messages", map[string]string{"r1": "a", "r2": "messages"}},
		{"GET", "/in/github.com/o/r", api.GroupWeb, "GET /in/{r1}/{r2}/{r3}", map[string]string{"r1": "github.com", "r2": "o", "r3": "r"}},
		{"GET", "/favicon.ico", api.GroupWeb, "GET /favicon.ico", nil},
		{"GET", "/rooms/github.com/o/r/info", api.GroupRooms, "GET /rooms/{r1}/{r2}/{r3}/info", map[string]string{"r1": "github.com", "r2": "o", "r3": "r"}},
		{"GET", "/", api.GroupWeb, "GET /", nil},
		{"GET", "/projects", api.GroupRooms, "GET /projects", nil},
		{"PATCH", "/rooms/github.com/o/r", api.GroupRooms, "PATCH /rooms/{r1}/{r2}/{r3}", map[string]string{"r1": "github.com", "r2": "o", "r3": "r"}},
		{"PATCH", "/rooms/x/tasks/task_1", api.GroupCoordination, "PATCH /rooms/{r1}/tasks/{task_id}", map[string]string{"r1": "x", "task_id": "task_1"}},
		{"GET", "/rooms/resolve/ABCD-EFGH", api.GroupRooms, "GET /rooms/resolve/{r1}", map[string]string{"r1": "ABCD-EFGH"}},
		{"GET", "/api/rooms/resolve/github.com/o/r", api.GroupRooms, "GET /api/rooms/resolve/{r1}/{r2}/{r3}", map[string]string{"r1": "github.com", "r2": "o", "r3": "r"}},
		{"GET", "/github.com/o/r", api.GroupWeb, "GET /github.com/{owner}/{repo}", map[string]string{"owner": "o", "repo": "r"}},
		// A room deeper than the gateway's routes goes percent-encoded whole.
		{"GET", "/rooms/gitlab.com%2Fg%2Fs%2Fp/messages", api.GroupMessages, "GET /rooms/{r1}/messages", map[string]string{"r1": "gitlab.com/g/s/p"}},
	}
	for _, tt := range tests {
		rt, ok := api.Match(tt.method, tt.path)
		if !ok || rt.Group != tt.group {
			t.Errorf("Match(%s %s) = %v, %v; want group %s", tt.method, tt.path, rt.Group, ok, tt.group)
			continue
		}
		key, params, ok := rt.GatewayRoute(tt.path)
		if !ok || key != tt.key || !maps.Equal(params, tt.params) {
			t.Errorf("GatewayRoute(%s) = %q %v; want %q %v", tt.path, key, params, tt.key, tt.params)
		}
		if !slices.Contains(rt.GatewayPaths(), key[len(tt.method)+1:]) {
			t.Errorf("%s is not among GatewayPaths %v", key, rt.GatewayPaths())
		}
	}
	for _, miss := range []struct{ method, path string }{
		{"HEAD", "/api/health"},            // the gateway matches methods exactly
		{"GET", "/rooms/a/b/c/d/messages"}, // more segments than the gateway's routes spell
		{"GET", "/in/gitlab.com/g/s/p"},
		{"GET", "/rooms//messages"},
		{"GET", "/rooms/x/messages/"},
		{"PUT", "/rooms/x/messages"},
		{"GET", "/robots.txt"},
	} {
		if rt, ok := api.Match(miss.method, miss.path); ok {
			t.Errorf("Match(%s %s) = %s %s, want no route", miss.method, miss.path, rt.Method, rt.Pattern)
		}
	}
}

func TestGatewayPaths(t *testing.T) {
	t.Parallel()
	got := api.Route{Pattern: "/rooms/{room}/messages"}.GatewayPaths()
	want := []string{"/rooms/{r1}/messages", "/rooms/{r1}/{r2}/messages", "/rooms/{r1}/{r2}/{r3}/messages"}
	if !slices.Equal(got, want) {
		t.Errorf("GatewayPaths = %v, want %v", got, want)
	}
	if got := (api.Route{Pattern: "/projects/join/{code}"}).GatewayPaths(); !slices.Equal(got, []string{"/projects/join/{code}"}) {
		t.Errorf("GatewayPaths without {room} = %v", got)
	}
}

// TestLogPath: what a log line shows of a path keeps its shape and its
// readable parts, and none of its secrets.
func TestLogPath(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("ab", 32)
	tests := []struct{ path, want, secret string }{
		{"/auth/device/poll/" + id, "/auth/device/poll/" + letagents.Redacted(id), id},
		{"/projects/join/FEH7-YWH4-ZYT3", "/projects/join/" + letagents.Redacted("FEH7-YWH4-ZYT3"), "FEH7-YWH4-ZYT3"},
		{"/rooms/feh7-ywh4-zyt3/messages", "/rooms/" + letagents.Redacted("FEH7-YWH4-ZYT3") + "/messages", "feh7-ywh4-zyt3"},
		{"/rooms/FEH7%2DYWH4%2DZYT3/messages/poll", "/rooms/" + letagents.Redacted("FEH7-YWH4-ZYT3") + "/messages/poll", "YWH4"},
		{"/projects/FEH7-YWH4-ZYT3/code/rotate", "/projects/" + letagents.Redacted("FEH7-YWH4-ZYT3") + "/code/rotate", "FEH7"},
		{"/in/FEH7-YWH4-ZYT3", "/in/" + letagents.Redacted("FEH7-YWH4-ZYT3"), "FEH7"},
		{"/rooms/FEH7-YWH4-ZYT3/no/such/route", "/rooms/" + letagents.Redacted("FEH7-YWH4-ZYT3") + "/no/such/route", "FEH7"},
		{"/rooms/github.com/acme/app/messages", "/rooms/github.com/acme/app/messages", ""},
		{"/rooms/team%20chat/tasks/task_3", "/rooms/team%20chat/tasks/task_3", ""},
		{"/api/health", "/api/health", ""},
	}
	for _, tt := range tests {
		got := api.LogPath(tt.path)
		if got != tt.want || (tt.secret != "" && strings.Contains(strings.ToLower(got), strings.ToLower(tt.secret))) {
			t.Errorf("LogPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
