package infra

import (
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
)

// testRoutes is a small route table: a room route, which expands, and two
// without a room, one of them the root.
var testRoutes = []api.Route{
	{Group: api.GroupRooms, Method: http.MethodPost, Pattern: "/rooms/{room}/join"},
	{Group: api.GroupWeb, Method: http.MethodGet, Pattern: "/"},
	{Group: api.GroupWeb, Method: http.MethodGet, Pattern: "/api/health"},
}

const (
	beginRooms = "    # begin routes rooms (generated from shared/api/routes.go by `make template`; do not edit)\n"
	endRooms   = "    # end routes rooms\n"
	beginWeb   = "    # begin routes web (generated from shared/api/routes.go by `make template`; do not edit)\n"
	endWeb     = "    # end routes web\n"
)

func TestRewriteRouteEvents(t *testing.T) {
	t.Parallel()
	roomsEvents := "" +
		"    PostRoomsR1Join:\n" +
		"      Type: HttpApi\n" +
		"      Properties: {ApiId: !Ref HttpApi, PayloadFormatVersion: \"2.0\", Method: POST, Path: \"/rooms/{r1}/join\"}\n" +
		"    PostRoomsR1R2Join:\n" +
		"      Type: HttpApi\n" +
		"      Properties: {ApiId: !Ref HttpApi, PayloadFormatVersion: \"2.0\", Method: POST, Path: \"/rooms/{r1}/{r2}/join\"}\n" +
		"    PostRoomsR1R2R3Join:\n" +
		"      Type: HttpApi\n" +
		"      Properties: {ApiId: !Ref HttpApi, PayloadFormatVersion: \"2.0\", Method: POST, Path: \"/rooms/{r1}/{r2}/{r3}/join\"}\n"
	webEvents := "" +
		"    GetRoot:\n" +
		"      Type: HttpApi\n" +
		"      Properties: {ApiId: !Ref HttpApi, PayloadFormatVersion: \"2.0\", Method: GET, Path: /}\n" +
		"    GetApiHealth:\n" +
		"      Type: HttpApi\n" +
		"      Properties: {ApiId: !Ref HttpApi, PayloadFormatVersion: \"2.0\", Method: GET, Path: /api/health}\n"
	// Everything outside the blocks must come back byte for byte, the
	// missing final newline and the odd indentation included.
	head := "Rooms:\n  Events:\n   # a comment kept as it is\n"
	mid := "Web:\n  Events:\n"
	tail := "    # the catch-all, written by hand\n    AnyProxy: {Type: HttpApi}\nOutputs: {}"
	want := head + beginRooms + roomsEvents + endRooms + mid + beginWeb + webEvents + endWeb + tail

	tests := []struct {
		name string
		src  string
	}{
		{"empty blocks are filled", head + beginRooms + endRooms + mid + beginWeb + endWeb + tail},
		{"stale events are replaced", head + beginRooms + "    Old:\n      Type: HttpApi\n" + endRooms +
			mid + beginWeb + webEvents + webEvents + endWeb + tail},
		{"a bare begin marker is rewritten", head + "    # begin routes rooms\n" + endRooms +
			mid + beginWeb + endWeb + tail},
		{"up to date", want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RewriteRouteEvents([]byte(tt.src), testRoutes)
			if err != nil {
				t.Fatalf("RewriteRouteEvents: %v", err)
			}
			if line, g, w, ok := firstDiff(string(got), want); ok {
				t.Errorf("line %d:\n got %q\nwant %q", line, g, w)
			}
		})
	}
}

func TestRewriteRouteEventsRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, wantErr string
	}{
		{"a group without a block", beginRooms + endRooms, "no block for routes web"},
		{"a block of no group", beginRooms + endRooms + beginWeb + endWeb +
			"    # begin routes nosuch (x)\n    # end routes nosuch\n", `no route of shared/api/routes.go has group "nosuch"`},
		{"a second block", beginRooms + endRooms + beginWeb + endWeb + beginRooms + endRooms, "line 5: a second block of routes rooms"},
		{"a block inside a block", beginRooms + beginWeb + endWeb + endRooms, "line 2: begin routes web inside the block of rooms (line 1)"},
		{"an end of another group", beginRooms + endWeb, `line 2: end routes web, but the open block is "rooms"`},
		{"an end without a begin", endRooms, `line 1: end routes rooms, but the open block is ""`},
		{"no end", beginWeb + endWeb + beginRooms + "    Old: {}\n", "line 3: begin routes rooms has no end routes rooms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RewriteRouteEvents([]byte(tt.src), testRoutes)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("RewriteRouteEvents = %q, %v; want an error containing %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestEventName(t *testing.T) {
	t.Parallel()
	tests := []struct{ method, path, want string }{
		{"POST", "/rooms/{r1}/join", "PostRoomsR1Join"},
		{"GET", "/", "GetRoot"},
		{"GET", "/rooms/{r1}/{r2}/board-intents", "GetRoomsR1R2BoardIntents"},
		{"POST", "/rooms/{r1}/agent-sessions/{session_id}/native-activity", "PostRoomsR1AgentSessionsSessionIdNativeActivity"},
		{"ANY", "/{proxy+}", "AnyProxy"},
	}
	for _, tt := range tests {
		if got := eventName(tt.method, tt.path); got != tt.want {
			t.Errorf("eventName(%s, %s) = %s, want %s", tt.method, tt.path, got, tt.want)
		}
	}
}
