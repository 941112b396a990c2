package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestArtifacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "github.com/acme/app")
	path := "/rooms/github.com/acme/app/artifacts"
	empty := e.call(t, http.MethodGet, path, "").want(t, 200, "")
	if list, ok := empty.obj["artifacts"].([]any); !ok || len(list) != 0 || empty.str("room_id") != "github.com/acme/app" {
		t.Fatalf("empty list = %s", empty.raw)
	}

	pr := e.call(t, http.MethodPost, path, `{"artifact": {"kind": "pull_request", "url": "https://github.com/acme/app/pull/7", "number": 7},
		"task_id": "task_2", "linked_task_ids": ["task_1", "task_2"]}`).want(t, 200, "")
	a, _ := pr.obj["artifact"].(map[string]any)
	if a["identity_key"] != "github:pull_request:url:https://github.com/acme/app/pull/7" || a["provider"] != "github" || a["source"] != "manual" ||
		a["artifact_number"] != 7.0 || a["title"] != nil || fmt.Sprint(a["linked_task_ids"]) != "[task_1 task_2]" || !isTimestamp(a["first_seen_at"].(string)) {
		t.Fatalf("published = %s", pr.raw)
	}
	// Publishing again, flat this time, fills in and links more; what it
	// leaves out is kept.
	again := e.call(t, http.MethodPost, path, `{"kind": "pull_request", "url": "https://github.com/acme/app/pull/7", "title": "Fix login",
		"state": "open", "linked_task_ids": ["task_3"]}`).want(t, 200, "")
	b, _ := again.obj["artifact"].(map[string]any)
	if b["title"] != "Fix login" || b["state"] != "open" || b["artifact_number"] != 7.0 || b["first_seen_at"] != a["first_seen_at"] ||
		fmt.Sprint(b["linked_task_ids"]) != "[task_1 task_2 task_3]" {
		t.Errorf("republished = %s", again.raw)
	}
	e.call(t, http.MethodPost, path, `{"artifact": {"kind": "branch", "ref": "feature/login", "provider": "github"}}`).want(t, 200, "")
	e.call(t, http.MethodPost, path, `{"artifact": {"kind": "issue", "number": 12, "provider": "gitlab"}, "task_id": "task_3"}`).want(t, 200, "")

	list := e.call(t, http.MethodGet, path, "").want(t, 200, "")
	var keys []string
	for _, x := range list.obj["artifacts"].([]any) {
		keys = append(keys, x.(map[string]any)["identity_key"].(string))
	}
	want := "github:branch:ref:feature/login gitlab:issue:number:12 github:pull_request:url:https://github.com/acme/app/pull/7"
	if strings.Join(keys, " ") != want {
		t.Errorf("listed %v, want by kind then identity: %s", keys, want)
	}
	byTask := e.call(t, http.MethodGet, path+"?task_id=task_3", "").want(t, 200, "")
	if n := len(byTask.obj["artifacts"].([]any)); n != 2 {
		t.Errorf("task_3 has %d artifacts, want 2: %s", n, byTask.raw)
	}
	if n := len(e.call(t, http.MethodGet, path+"?limit=1", "").want(t, 200, "").obj["artifacts"].([]any)); n != 1 {
		t.Errorf("limit=1 gave %d", n)
	}

	tooMany := make([]string, 33)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("%q", fmt.Sprintf("task_%d", i+1))
	}
	for body, msg := range map[string]string{
		`{"artifact": {"kind": "pull_request"}}`:                                                               "at least one stable identity",
		`{"artifact": {"kind": "tag", "ref": "v1"}}`:                                                           "kind must be one of",
		`{"artifact": {"kind": "issue", "ref": "x", "provider": "svn"}}`:                                       "provider must be one of",
		`{"artifact": {"kind": "issue", "url": "ftp://x/y"}}`:                                                  "http(s) URL",
		`{"artifact": {"kind": "issue", "number": -1}}`:                                                        "positive",
		`{"artifact": {"kind": "issue", "ref": "x"}, "linked_task_ids": "task_1"}`:                             "linked_task_ids must be a",
		`{"artifact": {"kind": "issue", "ref": "x"}, "linked_task_ids": [` + strings.Join(tooMany, ",") + `]}`: "more than 32",
		`{"artifact": {"kind": "issue", "ref": "x"}, "task_id": "7"}`:                                          "not a task id",
		`{"artifact": {"kind": "issue", "ref": "` + strings.Repeat("r", 256) + `"}}`:                           "longer than",
	} {
		e.call(t, http.MethodPost, path, body).want(t, 400, msg)
	}
	// A limit past the bounds is read as the nearest, as the original reads it.
	for _, q := range []string{"?limit=251", "?limit=0", "?limit=x"} {
		if n := len(e.call(t, http.MethodGet, path+q, "").want(t, 200, "").obj["artifacts"].([]any)); n != 3 {
			t.Errorf("%s gave %d artifacts, want all 3", q, n)
		}
	}
	e.call(t, http.MethodGet, path+"?task_id=x", "").want(t, 400, "task id")
	e.call(t, http.MethodGet, "/rooms/nowhere/artifacts", "").want(t, 404, "Room not found")
	e.call(t, http.MethodPost, "/rooms/nowhere/artifacts", `{"kind": "issue", "ref": "x"}`).want(t, 404, "Room not found")
}
