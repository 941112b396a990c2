package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// results are the message ids of a search answer, in order.
func (r reply) results(t *testing.T) []string {
	t.Helper()
	list, ok := r.obj["results"].([]any)
	if !ok {
		t.Fatalf("no results list in %s", r.raw)
	}
	out := make([]string, len(list))
	for i, h := range list {
		m, _ := h.(map[string]any)["message"].(map[string]any)
		out[i], _ = m["room_id"].(string)
		out[i] += "/" + m["id"].(string)
	}
	return out
}

func searchPath(room string, v url.Values) string {
	if room == "" {
		return "/search?" + v.Encode()
	}
	return "/rooms/" + room + "/search?" + v.Encode()
}

func TestSearchRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "ops")
	first := e.send(t, "ops", "ann", "deploy failed on staging")
	e.send(t, "ops", "bob", "deploy succeeded on <prod>")
	e.send(t, "ops", "ann", "lunch?")
	e.send(t, "ops", "cy", `the "deploy" broke: <script>deploy()</script>`)
	body := `{"sender": "bob", "text": "deploy again after the fix", "thread_parent_id": "` + first + `"}`
	e.call(t, http.MethodPost, "/rooms/ops/messages", body).want(t, 201, "")

	r := e.call(t, http.MethodGet, searchPath("ops", url.Values{"q": {"deploy -failed"}}), "").want(t, 200, "")
	if r.str("room_id") != "ops" || r.str("query") != "deploy -failed" || r.obj["has_more"] != false || r.obj["next_cursor"] != nil {
		t.Errorf("search = %s", r.raw)
	}
	if got := r.results(t); len(got) != 3 || slices.Contains(got, "ops/msg_1") {
		t.Errorf("deploy -failed = %v, want msg_2, msg_4 and msg_5", got)
	}
	// A hit: the message as a read gives it, a rank, a snippet in plain
	// text parts.
	hit := r.obj["results"].([]any)[0].(map[string]any)
	msg := hit["message"].(map[string]any)
	if _, ok := hit["rank"].(float64); !ok || msg["sender"] == nil || !isTimestamp(msg["timestamp"].(string)) {
		t.Errorf("hit = %v", hit)
	}
	for _, h := range r.obj["results"].([]any) {
		h := h.(map[string]any)
		var text strings.Builder
		matched := false
		for _, p := range h["snippet"].([]any) {
			p := p.(map[string]any)
			text.WriteString(p["text"].(string))
			matched = matched || (p["match"] == true && strings.EqualFold(p["text"].(string), "deploy"))
		}
		// ts_headline cuts at words: a short text's snippet is all of
		// it, maybe less punctuation at its ends.
		if m := h["message"].(map[string]any); !matched || !strings.Contains(m["text"].(string), text.String()) || len(text.String()) < len(m["text"].(string))-2 {
			t.Errorf("snippet %v of %v: want the short text, deploy matched", h["snippet"], m["text"])
		}
	}

	// The filters, and a page at a time.
	for _, tt := range []struct {
		v    url.Values
		want []string
	}{
		{url.Values{"q": {"deploy"}, "sender": {"BOB"}}, []string{"ops/msg_5", "ops/msg_2"}},
		{url.Values{"q": {"deploy"}, "thread": {"msg_5"}}, []string{"ops/msg_5", "ops/msg_1"}},
		{url.Values{"q": {`"deploy failed" or prod`}}, []string{"ops/msg_2", "ops/msg_1"}},
		{url.Values{"q": {"deploy"}, "source": {"system"}}, []string{}},
		{url.Values{"q": {"deploy"}, "until": {"2000-01-01T00:00:00Z"}}, []string{}},
		{url.Values{"q": {"deploy"}, "since": {"2000-01-01T00:00:00+02:00"}, "sender": {"cy"}}, []string{"ops/msg_4"}},
	} {
		got := e.call(t, http.MethodGet, searchPath("ops", tt.v), "").want(t, 200, "").results(t)
		slices.Sort(got)
		slices.Sort(tt.want)
		if !slices.Equal(got, tt.want) {
			t.Errorf("search %v = %v, want %v", tt.v, got, tt.want)
		}
	}
	all := e.call(t, http.MethodGet, searchPath("ops", url.Values{"q": {"deploy"}}), "").want(t, 200, "").results(t)
	var paged []string
	v := url.Values{"q": {"deploy"}, "limit": {"2"}}
	for range 10 {
		p := e.call(t, http.MethodGet, searchPath("ops", v), "").want(t, 200, "")
		paged = append(paged, p.results(t)...)
		if p.obj["has_more"] != true {
			break
		}
		v.Set("cursor", p.str("next_cursor"))
	}
	if len(all) != 4 || !slices.Equal(paged, all) {
		t.Errorf("paged by 2: %v, want %v (4 hits)", paged, all)
	}

	e.call(t, http.MethodGet, searchPath("nowhere", url.Values{"q": {"deploy"}}), "").want(t, 404, "Room not found")
}

func TestSearchBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "ops")
	e.send(t, "ops", "ann", "deploy")
	tests := []struct {
		name string
		v    url.Values
		code string
	}{
		{"no q", url.Values{}, "SEARCH_QUERY_INVALID"},
		{"blank q", url.Values{"q": {"   "}}, "SEARCH_QUERY_INVALID"},
		{"q too long", url.Values{"q": {strings.Repeat("x", 1025)}}, "SEARCH_QUERY_INVALID"},
		{"only an exclusion", url.Values{"q": {"-deploy"}}, "SEARCH_QUERY_INVALID"},
		{"no words", url.Values{"q": {"!!! ..."}}, "SEARCH_QUERY_INVALID"},
		{"bad UTF-8", url.Values{"q": {"\xff"}}, "SEARCH_QUERY_INVALID"},
		{"bad source", url.Values{"q": {"deploy"}, "source": {"robot"}}, "SEARCH_FILTER_INVALID"},
		{"bad thread", url.Values{"q": {"deploy"}, "thread": {"task_1"}}, "SEARCH_FILTER_INVALID"},
		{"thread 0", url.Values{"q": {"deploy"}, "thread": {"msg_0"}}, "SEARCH_FILTER_INVALID"},
		{"bad since", url.Values{"q": {"deploy"}, "since": {"yesterday"}}, "SEARCH_FILTER_INVALID"},
		{"bad until", url.Values{"q": {"deploy"}, "until": {"2026-13-01T00:00:00Z"}}, "SEARCH_FILTER_INVALID"},
		{"since not before until", url.Values{"q": {"deploy"}, "since": {"2026-01-02T00:00:00Z"}, "until": {"2026-01-01T00:00:00Z"}}, "SEARCH_FILTER_INVALID"},
		{"long sender", url.Values{"q": {"deploy"}, "sender": {strings.Repeat("s", 16<<10+1)}}, "SEARCH_FILTER_INVALID"},
		{"bad cursor", url.Values{"q": {"deploy"}, "cursor": {"not-a-cursor"}}, "SEARCH_CURSOR_INVALID"},
		{"long cursor", url.Values{"q": {"deploy"}, "cursor": {strings.Repeat("A", 2000)}}, "SEARCH_CURSOR_INVALID"},
	}
	for _, tt := range tests {
		r := e.call(t, http.MethodGet, searchPath("ops", tt.v), "")
		if r.status != 400 || r.str("code") != tt.code || r.str("error") == "" {
			t.Errorf("%s: %d %s, want 400 %s", tt.name, r.status, r.raw, tt.code)
		}
	}
	// A limit is read as reads read it: out of range is clamped, never refused.
	for _, limit := range []string{"0", "-3", "abc", "100000"} {
		e.call(t, http.MethodGet, searchPath("ops", url.Values{"q": {"deploy"}, "limit": {limit}}), "").want(t, 200, "")
	}
}

// GET /search searches the rooms of the signed-in account that a read
// would let it into, and only those: a private repository's room stays
// out once GitHub no longer lets the account see it.
func TestSearchAcrossRooms(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, map[string]string{"LETAGENTS_JOIN_LIMIT": "1000"})
	e.gh.AddRepo("acme/secret", true)
	e.gh.AddRepo("acme/open", false)
	for _, login := range []string{"erin", "dave"} {
		e.gh.AddUser(login)
	}
	e.gh.Grant("acme/secret", "erin", "admin")
	e.gh.Grant("acme/open", "erin", "admin")
	erin, dave := e.signIn(t, "erin"), e.signIn(t, "dave")
	for _, room := range []string{"github.com/acme/secret", "github.com/acme/open", "team%20room"} {
		e.as(t, erin, http.MethodPost, "/rooms/"+room+"/join", "").want(t, 200, "")
		e.as(t, erin, http.MethodPost, "/rooms/"+room+"/messages", `{"sender": "erin", "text": "release notes for `+room+`"}`).want(t, 201, "")
	}
	// A room erin's account is not known in is not hers to search, even
	// when she may read it.
	e.join(t, "bystander")
	e.call(t, http.MethodPost, "/rooms/bystander/messages", `{"sender": "x", "text": "release notes elsewhere"}`).want(t, 201, "")

	q := url.Values{"q": {"release notes"}}
	e.call(t, http.MethodGet, searchPath("", q), "").want(t, 401, "Authentication required")
	e.call(t, http.MethodGet, searchPath("github.com/acme/secret", q), "").want(t, 401, "auth_required")
	e.as(t, dave, http.MethodGet, searchPath("github.com/acme/secret", q), "").want(t, 403, "private_repo_no_access")
	if got := e.as(t, dave, http.MethodGet, searchPath("", q), "").want(t, 200, "").results(t); len(got) != 0 {
		t.Errorf("dave's search = %v, want nothing", got)
	}
	e.as(t, erin, http.MethodGet, searchPath("", url.Values{"q": {"x"}, "thread": {"msg_1"}}), "").want(t, 400, "thread needs a room")

	got := e.as(t, erin, http.MethodGet, searchPath("", q), "").want(t, 200, "").results(t)
	slices.Sort(got)
	if want := []string{"github.com/acme/open/msg_1", "github.com/acme/secret/msg_1", "team room/msg_1"}; !slices.Equal(got, want) {
		t.Errorf("erin's search = %v, want %v", got, want)
	}

	// GitHub takes erin's access away; once the cached answer ages out,
	// the private room's messages are gone from her search, as her reads
	// of it are refused.
	e.gh.Grant("acme/secret", "erin", "none")
	e.clock.Advance(31 * time.Minute)
	e.as(t, erin, http.MethodGet, searchPath("github.com/acme/secret", q), "").want(t, 403, "private_repo_no_access")
	got = e.as(t, erin, http.MethodGet, searchPath("", q), "").want(t, 200, "").results(t)
	slices.Sort(got)
	if want := []string{"github.com/acme/open/msg_1", "team room/msg_1"}; !slices.Equal(got, want) {
		t.Errorf("erin's search without access = %v, want %v", got, want)
	}

	// GitHub down once every cached answer has aged out: the repo rooms,
	// whose access cannot be checked (an unknown repository counts as
	// private), are left out and named, never searched on trust.
	e.gh.Grant("acme/secret", "erin", "admin")
	e.clock.Advance(61 * time.Minute)
	e.gh.FailAPI(503)
	r := e.as(t, erin, http.MethodGet, searchPath("", q), "").want(t, 200, "")
	if got := r.results(t); !slices.Equal(got, []string{"team room/msg_1"}) {
		t.Errorf("search while GitHub is down = %v, want the named room's only", got)
	}
	u, _ := r.obj["unchecked_rooms"].([]any)
	if len(u) != 2 || !slices.Contains(u, any("github.com/acme/secret")) || !slices.Contains(u, any("github.com/acme/open")) {
		t.Errorf("unchecked_rooms = %v, want both repo rooms", r.obj["unchecked_rooms"])
	}
}
