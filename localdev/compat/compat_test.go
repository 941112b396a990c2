package main

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestNormaliseString(t *testing.T) {
	t.Parallel()
	vs := vars{"room": "AB12-CD34-EF56", "m1": "msg_1", "tok": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	tests := []struct {
		in, want string
	}{
		{"AB12-CD34-EF56", "{room}"},
		{"/in/AB12-CD34-EF56", "/in/{room}"},
		{"msg_1", "{m1}"},
		// A short value is replaced only whole, never inside msg_12.
		{"msg_12", "msg_12"},
		{"Bearer 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "Bearer {tok}"},
		{"2026-12-03T12:14:15.212Z", "<ts>"},
		{"at 2026-12-03T12:14:15+01:00 sharp", "at <ts> sharp"},
		// PostgreSQL's text form is kept: a server answering in it must show.
		{"2026-12-03 12:14:15.212+00", "2026-12-03 12:14:15.212+00"},
		{"QQQQ-WWWW-EEEE", "<code>"},
		{"join 1KQP-R0JQ now", "join <code> now"},
		{"6f1c1a52-0b7e-4c39-9a8f-9d5f0b2b7e11", "<uuid>"},
		{"ffffffffffffffffffffffffffffffff", "<hex>"},
		{"tl_f0651c548968468fa839acc61a2ade63", "tl_<hex>"},
		{"plain text", "plain text"},
	}
	for _, tt := range tests {
		if got := normaliseString(tt.in, vs); got != tt.want {
			t.Errorf("normaliseString(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormaliseRandomDisplayNames(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"display_name": "granite-pine",
		"name":         "compat-named",
		"rooms":        []any{map[string]any{"display_name": "Compat Renamed"}, map[string]any{"display_name": "mine-room"}},
	}
	want := map[string]any{
		"display_name": "<random-name>",
		"name":         "compat-named",
		"rooms":        []any{map[string]any{"display_name": "Compat Renamed"}, map[string]any{"display_name": "{r}"}},
	}
	if got := normalise(in, vars{"r": "mine-room"}); !reflect.DeepEqual(got, want) {
		t.Errorf("normalise = %v, want %v", got, want)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestDiffJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b string
		want       []item
	}{
		{"equal", `{"a":1,"b":[1,{"c":null}]}`, `{"b":[1,{"c":null}],"a":1}`, nil},
		{"missing and extra members", `{"a":1,"b":2}`, `{"b":2,"c":3}`,
			[]item{{"$.a", "1", absent}, {"$.c", absent, "3"}}},
		{"nested value", `{"m":[{"id":"msg_1"}]}`, `{"m":[{"id":"msg_2"}]}`,
			[]item{{"$.m[0].id", `"msg_1"`, `"msg_2"`}}},
		{"longer array", `[1]`, `[1,2]`, []item{{"$[1]", absent, "2"}}},
		{"type change", `{"id":"1"}`, `{"id":1}`, []item{{"$.id", `"1"`, "1"}}},
		{"placeholders unescaped", `{"t":"<ts>"}`, `{"t":null}`, []item{{"$.t", `"<ts>"`, "null"}}},
	}
	for _, tt := range tests {
		got := diffJSON("$", decode(t, tt.a), decode(t, tt.b))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: diffJSON = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	vs := vars{}
	jsonOf := func(status int, body string) observed {
		return newObserved(status, "application/json; charset=utf-8", "", []byte(body), vs)
	}
	html := func(status int, body string) observed {
		return newObserved(status, "text/html", "", []byte(body), vs)
	}
	tests := []struct {
		name string
		a, o observed
		want []item
	}{
		{"same after normalising", jsonOf(201, `{"id":"AAAA-BBBB-CCCC","at":"2026-01-01T00:00:00.000Z"}`),
			jsonOf(201, `{"id":"DDDD-EEEE-FFFF","at":"2026-02-02T10:00:00.123Z"}`), nil},
		{"status and body kind", html(404, "Cannot GET /x"), jsonOf(404, `{"error":"Not Found"}`),
			[]item{{"body", kindHTML, kindJSON}}},
		{"pages are not compared", html(200, "<p>theirs</p>"), html(200, "<p>ours</p>"), nil},
		{"status", jsonOf(200, `{}`), jsonOf(401, `{}`), []item{{"status", "200", "401"}}},
		{"redirect", newObserved(301, "text/plain", "/in/x", []byte("Moved"), vs), newObserved(301, "text/plain", "/in/y", []byte("Moved"), vs),
			[]item{{"location", "/in/x", "/in/y"}}},
		{"ran on one side only", observed{NotRun: "needs {s}", missing: "s"}, jsonOf(200, `{}`),
			[]item{{"run", "not run: needs {s}", "ran"}}},
		{"ran on neither", observed{NotRun: "needs {s}"}, observed{NotRun: "needs {s}"}, nil},
		{"bad JSON", newObserved(200, "application/json", "", []byte("{"), vs), jsonOf(200, `{}`),
			[]item{{"body", "bad-json", kindJSON}}},
	}
	for _, tt := range tests {
		if got := compare(tt.a, tt.o); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: compare = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "anything", true},
		{"*", "", true},
		{"rooms/*", "rooms/join/x", true},
		{"rooms/*", "messages/x", false},
		{"*.thread", "$.messages[0].thread", true},
		{"*.thread", "$.messages[0].thread_root_id", false},
		{`"*-*-* *:*:*+00"`, `"2026-12-03 12:22:40.48+00"`, true},
		{`"*-*-* *:*:*+00"`, `"<ts>"`, false},
		{"4*", "413", true},
		{"4*", "500", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
	}
	for _, tt := range tests {
		if got := glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestReasonFor(t *testing.T) {
	t.Parallel()
	table := []deliberate{
		{Case: "board/*", Path: "status", Anchor: "404", Version: "0.12.*", Reason: "later route"},
		{Path: "$.error", Anchor: `"*`, Ours: `"*`, Reason: "own words"},
	}
	tests := []struct {
		key, version string
		it           item
		want         string
	}{
		{"board/intents", "0.12.9", item{"status", "404", "200"}, "later route"},
		{"board/intents", "0.11.1", item{"status", "404", "200"}, ""},
		{"tasks/board", "0.12.9", item{"status", "404", "200"}, ""},
		{"any/case", "0.12.9", item{"$.error", `"theirs"`, `"ours"`}, "own words"},
		{"any/case", "0.12.9", item{"$.error", absent, `"ours"`}, ""},
	}
	for _, tt := range tests {
		if got := reasonFor(table, tt.key, tt.version, tt.it); got != tt.want {
			t.Errorf("reasonFor(%s, %s, %v) = %q, want %q", tt.key, tt.version, tt.it, got, tt.want)
		}
	}
}

// TestKnownDifferencesByVersion: what 0.11.1 did and 0.12.9 changed is
// declared for 0.11.1 only, so the same answer from 0.12.9 stays a
// difference to look at.
func TestKnownDifferencesByVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key string
		it  item
		// covered011 and covered012: whether the item is declared against
		// each version.
		covered011, covered012 bool
	}{
		{"messages/read", item{"$.messages[0].agent_prompt_kind", absent, "null"}, true, false},
		{"messages/send, reply to unknown message", item{"status", "201", "400"}, true, false},
		{"messages/send numeric text", item{"status", "201", "400"}, true, false},
		{"messages/send without text", item{"status", "201", "400"}, false, false},
		{"messages/read, before=msg_1", item{"$.messages[0]", `{"id":"msg_1"}`, absent}, true, false},
		{"messages/read, limit=2", item{"$.messages[0].id", `"msg_1"`, `"msg_6"`}, false, false},
		{"limits/auto prompt without text", item{"status", "400", "201"}, true, false},
		{"poll/poll, unknown agent session headers", item{"status", "200", "401"}, true, false},
		{"resolve/resolve named room", item{"$.canonical_room_id", absent, `"compat-named"`}, true, false},
		{"tasks/board", item{"$.tasks[0].workflow_artifacts", absent, "[]"}, true, false},
		{"tasks/mark done as the admin's page", item{"status", "400", "200"}, true, false},
		{"tasks/board", item{"$.tasks[0].status", `"accepted"`, `"done"`}, true, false},
		{"sessions/participants", item{"$.participants[0].session_id", absent, `"{sess_a}"`}, true, true},
		{"sessions/participants", item{"$.participants[0].actor_label", `"a"`, `"b"`}, false, false},
	}
	for _, tt := range tests {
		for _, v := range []struct {
			version string
			want    bool
		}{{"0.11.1", tt.covered011}, {"0.12.9", tt.covered012}} {
			if got := reasonFor(knownDifferences, tt.key, v.version, tt.it) != ""; got != v.want {
				t.Errorf("against %s, %s %v declared = %v, want %v", v.version, tt.key, tt.it, got, v.want)
			}
		}
	}
}

// TestDependentRequests: a request that cannot run on one side for want
// of a value is deliberate exactly when the request that should have
// handed it out was.
func TestDependentRequests(t *testing.T) {
	t.Parallel()
	table := []deliberate{{Case: "f/producer", Path: "status", Reason: "later route"}}
	for _, tt := range []struct {
		name  string
		table []deliberate
		want  string
	}{
		{"producer deliberate", table, verdictDeliberate},
		{"producer undeclared", nil, verdictDiffers},
	} {
		c := &comparison{version: "0.12.9", table: tt.table}
		producer := &result{req: request{Family: "f", Name: "producer", Save: map[string]string{"s": "id"}},
			items: []item{{"status", "404", "201"}}}
		for _, it := range producer.items {
			producer.reasons = append(producer.reasons, c.reason(producer, it))
		}
		c.producers = map[string]*result{"s": producer}
		dep := &result{req: request{Family: "f", Name: "dependent"},
			anchor: observed{NotRun: "needs {s}", missing: "s"}, ours: observed{Status: 200, Kind: kindJSON}}
		dep.items = compare(dep.anchor, dep.ours)
		for _, it := range dep.items {
			dep.reasons = append(dep.reasons, c.reason(dep, it))
		}
		if got := dep.verdict(); got != tt.want {
			t.Errorf("%s: dependent verdict = %s, want %s (reasons %q)", tt.name, got, tt.want, dep.reasons)
		}
	}
}

func TestFill(t *testing.T) {
	t.Parallel()
	vs := vars{"room": "AB12-CD34-EF56", "tok": "t0k"}
	tests := []struct {
		in, want, missing string
	}{
		{"/rooms/{room}/messages", "/rooms/AB12-CD34-EF56/messages", ""},
		{"/projects/join/{room|lower}", "/projects/join/ab12-cd34-ef56", ""},
		{`{"text":"{x*5}","t":"{tok}"}`, `{"text":"xxxxx","t":"t0k"}`, ""},
		// JSON braces are not placeholders.
		{`{"a":{"b":1}}`, `{"a":{"b":1}}`, ""},
		{"/rooms/{room}/tasks/{task}", "", "task"},
	}
	for _, tt := range tests {
		got, err := fill(tt.in, vs)
		var mv *missingVar
		switch {
		case tt.missing != "":
			if !errors.As(err, &mv) || mv.name != tt.missing {
				t.Errorf("fill(%q) = %q, %v; want missing {%s}", tt.in, got, err, tt.missing)
			}
		case err != nil || got != tt.want:
			t.Errorf("fill(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	v := decode(t, `{"id":"AB12","n":7,"messages":[{"id":"msg_1"}],"empty":"","obj":{}}`)
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"id", "AB12", true},
		{"n", "7", true},
		{"messages.0.id", "msg_1", true},
		{"messages.1.id", "", false},
		{"empty", "", false},
		{"obj", "", false},
		{"nope.x", "", false},
	}
	for _, tt := range tests {
		got, ok := lookup(v, tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("lookup(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTally(t *testing.T) {
	t.Parallel()
	results := []*result{
		{req: request{Family: "a"}},
		{req: request{Family: "a"}, items: []item{{"status", "1", "2"}}, reasons: []string{"why"}},
		{req: request{Family: "b"}, items: []item{{"status", "1", "2"}, {"$.x", "1", "2"}}, reasons: []string{"why", ""}},
	}
	want := []familyCount{
		{Family: "a", Requests: 2, Same: 1, Deliberate: 1},
		{Family: "b", Requests: 1, Differs: 1},
		{Family: "total", Requests: 3, Same: 1, Deliberate: 1, Differs: 1},
	}
	if got := tally(results); !reflect.DeepEqual(got, want) {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

func TestScenarioPasses(t *testing.T) {
	t.Parallel()
	fail := errors.New("refused")
	tests := []struct {
		name         string
		anchor, ours []stepResult
		want         bool
	}{
		{"all pass", []stepResult{{"a", nil}, {"b", nil}}, []stepResult{{"a", nil}, {"b", nil}}, true},
		{"fails where the anchor fails too", []stepResult{{"a", nil}, {"b", fail}}, []stepResult{{"a", nil}, {"b", fail}}, true},
		{"fails where the anchor passes", []stepResult{{"a", nil}}, []stepResult{{"a", fail}}, false},
		{"stopped before a step the anchor passed", []stepResult{{"a", nil}, {"b", nil}}, []stepResult{{"a", nil}}, false},
	}
	for _, tt := range tests {
		if got := (outcome{anchor: tt.anchor, ours: tt.ours}).passes(); got != tt.want {
			t.Errorf("%s: passes = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLoadConfigPrefixAndMCPOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		env        map[string]string
		wantPrefix string
		wantMCP    bool
		wantErr    bool
	}{
		{"defaults", map[string]string{"ANCHOR_URL": "http://a"}, "compat", false, false},
		{"a prefix of its own", map[string]string{"ANCHOR_URL": "http://a", "COMPAT_DB_PREFIX": "compatres"}, "compatres", false, false},
		{"a prefix that is no name", map[string]string{"ANCHOR_URL": "http://a", "COMPAT_DB_PREFIX": "x; drop"}, "", false, true},
		{"MCP only without the original's client", map[string]string{"ANCHOR_URL": "http://a", "COMPAT_MCP_ONLY": "1"}, "", false, true},
		{"MCP only is 1 or 0", map[string]string{"ANCHOR_URL": "http://a", "COMPAT_MCP_ONLY": "yes"}, "", false, true},
		{"MCP off", map[string]string{"ANCHOR_URL": "http://a", "COMPAT_MCP_ONLY": "0"}, "compat", false, false},
	}
	for _, tt := range tests {
		c, err := loadConfig(func(k string) string { return tt.env[k] })
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		if err == nil && (c.dbPrefix != tt.wantPrefix || c.mcpOnly != tt.wantMCP) {
			t.Errorf("%s: prefix %q, MCP only %v; want %q, %v", tt.name, c.dbPrefix, c.mcpOnly, tt.wantPrefix, tt.wantMCP)
		}
	}
}
