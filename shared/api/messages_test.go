package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
)

func TestSendAndReadMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "github.com/o/r")
	sent := e.call(t, http.MethodPost, "/rooms/github.com/o/r/messages", `{"sender":"Ada | Bob's agent | Codex","text":"hello\nworld"}`).want(t, 201, "")
	want := map[string]any{"id": "msg_1", "room_id": "github.com/o/r", "sender": "Ada | Bob's agent | Codex", "text": "hello\nworld",
		"source": nil, "agent_prompt_kind": nil, "thread_parent_id": nil, "reply_to": nil, "thread_root_id": "msg_1", "thread": nil}
	for k, v := range want {
		if sent.obj[k] != v {
			t.Errorf("sent[%q] = %v, want %v", k, sent.obj[k], v)
		}
	}
	if !isTimestamp(sent.str("timestamp")) || len(sent.obj) != len(want)+1 {
		t.Errorf("sent = %s: want exactly the keys %v and timestamp", sent.raw, want)
	}

	read := e.call(t, http.MethodGet, "/rooms/github.com/o/r/messages", "").want(t, 200, "")
	if read.str("room_id") != "github.com/o/r" || read.obj["project_id"] != nil || read.obj["has_more"] != false || read.obj["has_older"] != nil {
		t.Errorf("read = %s", read.raw)
	}
	msgs := read.messages(t)
	if len(msgs) != 1 || msgs[0]["timestamp"] != sent.obj["timestamp"] || msgs[0]["text"] != "hello\nworld" {
		t.Errorf("read back %v, want the sent message with the same timestamp", msgs)
	}

	// Legacy routes: the id encoded as one segment, the list under project_id.
	legacy := e.call(t, http.MethodGet, "/projects/github.com%2Fo%2Fr/messages", "").want(t, 200, "")
	if legacy.str("project_id") != "github.com/o/r" || legacy.obj["room_id"] != nil || len(legacy.messages(t)) != 1 {
		t.Errorf("legacy read = %s", legacy.raw)
	}
	e.call(t, http.MethodPost, "/projects/github.com%2Fo%2Fr/messages", `{"sender":"b","text":"via projects"}`).want(t, 201, "")
}

func TestThreadParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "threads")
	e.join(t, "elsewhere")
	root := e.send(t, "threads", "a", "root")
	e.send(t, "elsewhere", "a", "x")
	e.send(t, "elsewhere", "a", "y")
	reply := e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender":"b","text":"reply","thread_parent_id":"`+root+`"}`).want(t, 201, "")
	if reply.str("thread_parent_id") != root {
		t.Errorf("reply thread_parent_id = %v, want %s", reply.obj["thread_parent_id"], root)
	}
	e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender":"b","text":"r","thread_parent_id":null}`).want(t, 201, "")
	e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender":"b","text":"r","thread_parent_id":"msg_99"}`).want(t, 400, "msg_99 is not a message in this room")
	e.call(t, http.MethodPost, "/rooms/elsewhere/messages", `{"sender":"b","text":"r","thread_parent_id":"msg_2"}`).want(t, 201, "")
	e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender":"b","text":"r","thread_parent_id":"task_1"}`).want(t, 400, "thread_parent_id must be a message id")
	e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender":"b","text":"r","thread_parent_id":"msg_0"}`).want(t, 400, "thread_parent_id must be a message id")
	e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender":"b","text":"r","thread_parent_id":3}`).want(t, 400, "thread_parent_id must be a string")
	list := e.call(t, http.MethodGet, "/rooms/threads/messages", "").want(t, 200, "").messages(t)
	if len(list) != 3 || list[1]["thread_parent_id"] != root || list[2]["thread_parent_id"] != nil {
		t.Errorf("thread fields read back = %v", list)
	}
}

func TestThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "threads")
	root := e.send(t, "threads", "ann", strings.Repeat("long root ", 100))
	other := e.send(t, "threads", "bo", "another topic")
	post := func(body string) reply {
		return e.call(t, http.MethodPost, "/rooms/threads/messages", body).want(t, 201, "")
	}
	r1 := post(`{"sender": "bo", "text": "first reply", "thread_parent_id": "` + root + `"}`)
	// A reply to a reply joins the same thread; reply_to is the older spelling.
	r2 := post(`{"sender": "cy", "text": "nested", "reply_to": "` + r1.str("id") + `"}`)
	r3 := post(`{"sender": "ann", "text": "both agree", "reply_to": "` + root + `", "thread_parent_id": "` + root + `"}`)
	e.call(t, http.MethodPost, "/rooms/threads/messages", `{"sender": "x", "text": "y", "reply_to": "`+root+`", "thread_parent_id": "`+other+`"}`).
		want(t, 400, "name different messages")
	for _, r := range []reply{r1, r2, r3} {
		if r.str("thread_root_id") != root {
			t.Errorf("reply %s has thread_root_id %v, want %s", r.str("id"), r.obj["thread_root_id"], root)
		}
	}
	if r2.str("thread_parent_id") != r1.str("id") {
		t.Errorf("nested reply's thread_parent_id = %v, want %s (the message it answers)", r2.obj["thread_parent_id"], r1.str("id"))
	}

	msgs := e.call(t, http.MethodGet, "/rooms/threads/messages", "").want(t, 200, "").messages(t)
	byID := map[string]map[string]any{}
	for _, m := range msgs {
		byID[m["id"].(string)] = m
	}
	thread, _ := byID[root]["thread"].(map[string]any)
	if thread["root_message_id"] != root || thread["reply_count"] != 3.0 || thread["latest_reply_id"] != r3.str("id") || !isTimestamp(thread["latest_reply_at"].(string)) {
		t.Errorf("root's thread = %v, want 3 replies, the latest %s", thread, r3.str("id"))
	}
	if byID[other]["thread"] != nil || byID[r1.str("id")]["thread"] != nil {
		t.Errorf("a message without replies, or a reply, has a thread summary: %v / %v", byID[other]["thread"], byID[r1.str("id")]["thread"])
	}
	quote, _ := byID[r1.str("id")]["reply_to"].(map[string]any)
	if quote["id"] != root || quote["sender"] != "ann" || len(quote["text"].(string)) != 500 || quote["truncated"] != true || !isTimestamp(quote["timestamp"].(string)) {
		t.Errorf("reply_to of the first reply = %v, want the root quoted, cut to 500 characters", quote)
	}
	if q, _ := byID[r2.str("id")]["reply_to"].(map[string]any); q["id"] != r1.str("id") || q["text"] != "first reply" || q["truncated"] != nil {
		t.Errorf("reply_to of the nested reply = %v", q)
	}
}

// The answer to a send is the message as reads give it, reply_to quote
// included, as the original's send answer is; a repeat of the send (its
// client_message_id) answers the same.
func TestSendAnswersAsReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "quotes")
	root := e.send(t, "quotes", "ann", strings.Repeat("long root ", 100))
	first := e.call(t, http.MethodPost, "/rooms/quotes/messages", `{"sender": "bo", "text": "first", "thread_parent_id": "`+root+`"}`).want(t, 201, "").str("id")
	tests := []struct {
		name, body string
		status     int
		quoted     string // id of the message reply_to quotes
	}{
		{"top-level", `{"sender": "ann", "text": "plain"}`, 201, ""},
		{"thread_parent_id", `{"sender": "cy", "text": "a", "thread_parent_id": "` + root + `"}`, 201, root},
		{"reply_to", `{"sender": "cy", "text": "b", "reply_to": "` + first + `"}`, 201, first},
		{"with client id", `{"sender": "cy", "text": "c", "reply_to": "` + root + `", "client_message_id": "k-1"}`, 201, root},
		{"repeat", `{"sender": "cy", "text": "c", "reply_to": "` + root + `", "client_message_id": "k-1"}`, 200, root},
	}
	sent := map[string]reply{}
	for _, tt := range tests {
		r := e.call(t, http.MethodPost, "/rooms/quotes/messages", tt.body).want(t, tt.status, "")
		quote, _ := r.obj["reply_to"].(map[string]any)
		if id, _ := quote["id"].(string); id != tt.quoted {
			t.Errorf("%s: reply_to = %v, want a quote of %q", tt.name, r.obj["reply_to"], tt.quoted)
		}
		sent[tt.name] = r
	}
	read := map[string]map[string]any{}
	for _, m := range e.call(t, http.MethodGet, "/rooms/quotes/messages", "").want(t, 200, "").messages(t) {
		read[m["id"].(string)] = m
	}
	for name, r := range sent {
		if got, want := mustJSON(t, r.obj), mustJSON(t, read[r.str("id")]); got != want {
			t.Errorf("%s: send answered %s, a read gives %s", name, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "errors")
	long := strings.Repeat("é", letagents.MaxTextBytes/2+1) // bytes, not characters, count
	body := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	tests := []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"no body", "/rooms/errors/messages", "", 400, "request body must be a JSON object"},
		{"not JSON", "/rooms/errors/messages", "{sender", 400, "not a JSON object"},
		{"array", "/rooms/errors/messages", `[1]`, 400, "not a JSON object"},
		{"two objects", "/rooms/errors/messages", `{"sender":"a","text":"b"}{}`, 400, "single JSON object"},
		{"missing sender", "/rooms/errors/messages", `{"text":"hi"}`, 400, "sender and text are required"},
		{"missing text", "/rooms/errors/messages", `{"sender":"a"}`, 400, "sender and text are required"},
		{"blank text", "/rooms/errors/messages", `{"sender":"a","text":" \n "}`, 400, "sender and text are required"},
		{"number text", "/rooms/errors/messages", `{"sender":"a","text":5}`, 400, "text must be a string"},
		{"NUL", "/rooms/errors/messages", `{"sender":"a","text":"a\u0000b"}`, 400, "NUL"},
		{"long sender", "/rooms/errors/messages", body(map[string]string{"sender": strings.Repeat("s", letagents.MaxSenderBytes+1), "text": "x"}), 400, fmt.Sprintf("sender is longer than %d bytes", letagents.MaxSenderBytes)},
		{"text too large", "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": long}), 413, fmt.Sprintf("text is longer than %d bytes", letagents.MaxTextBytes)},
		{"text a byte too large", "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": strings.Repeat("x", letagents.MaxTextBytes+1)}), 413, "text is longer than"},
		{"body too large", "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": strings.Repeat("\u0001", letagents.MaxBodyBytes/6+1)}), 413, "request body is larger than"},
		{"long client_message_id", "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": "x", "client_message_id": strings.Repeat("c", letagents.MaxClientMessageIDBytes+1)}), 400, "client_message_id is longer than 200 bytes"},
		{"liveness client_message_id", "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": "x", "client_message_id": "agent_liveness:offline:1:1700000000000"}), 400, "must not start with \"agent_liveness:\""},
		{"GitHub line client_message_id", "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": "x", "client_message_id": "github_event:1"}), 400, "must not start with \"github_event:\""},
		{"unknown room", "/rooms/no-such-room/messages", `{"sender":"a","text":"b"}`, 404, "Room not found"},
		{"unknown invite room", "/rooms/ZZZZ-ZZZZ/messages", `{"sender":"a","text":"b"}`, 404, "Room not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e.call(t, http.MethodPost, tt.path, tt.body).want(t, tt.status, tt.msg)
		})
	}
	// Text exactly at the limit is accepted, and refusals took no number.
	at := strings.Repeat("x", letagents.MaxTextBytes)
	if id := e.call(t, http.MethodPost, "/rooms/errors/messages", body(map[string]string{"sender": "a", "text": at})).want(t, 201, "").str("id"); id != "msg_1" {
		t.Errorf("first accepted message is %s, want msg_1", id)
	}
}

// TestSendsTheOriginalAccepts: what the original (0.12.9, a 1 MB body)
// takes is taken here too and read back whole: logs, diffs, long labels.
func TestSendsTheOriginalAccepts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "roomy")
	line := "+\tif a < b && c > \"d\" { return `<html>` }\n"
	tests := []struct{ name, sender, text string }{
		{"40 KB log", "a", strings.Repeat("2026-01-02 build step ok\n", 40_000/25)},
		{"1 MB diff", "a", strings.Repeat(line, 1_000_000/len(line))},
		{"long sender", strings.Repeat("s", 1000), "hi"},
		{"a text at the limit", "a", strings.Repeat("é", letagents.MaxTextBytes/2)},
	}
	for i, tt := range tests {
		id := e.send(t, "roomy", tt.sender, tt.text)
		r := e.call(t, http.MethodGet, "/rooms/roomy/messages?limit=1&after="+fmt.Sprintf("msg_%d", i), "").want(t, 200, "")
		msgs := r.messages(t)
		if len(msgs) != 1 || msgs[0]["id"] != id || msgs[0]["sender"] != tt.sender || msgs[0]["text"] != tt.text {
			t.Errorf("%s: sent as %s, read back %d messages, not the one sent", tt.name, id, len(msgs))
		}
	}
	// <, > and & travel as themselves, as the original writes them.
	if r := e.call(t, http.MethodGet, "/rooms/roomy/messages?after=msg_1&limit=1", "").want(t, 200, ""); !strings.Contains(r.raw, "a < b && c >") ||
		r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("the diff reads back escaped, or without nosniff: %.80s… %v", r.raw, r.header)
	}
}

// TestRepeatedSend: a send repeated with its client_message_id (after a
// timeout, say) answers the first message with 200 and posts nothing.
func TestRepeatedSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "repeats")
	send := `{"sender":"a","text":"once","client_message_id":"k-1"}`
	first := e.call(t, http.MethodPost, "/rooms/repeats/messages", send).want(t, 201, "")
	for _, body := range []string{send, `{"sender":"a","text":"changed","client_message_id":"k-1"}`} {
		again := e.call(t, http.MethodPost, "/projects/repeats/messages", body).want(t, 200, "")
		if again.raw != first.raw {
			t.Errorf("repeat answered %s, want the first answer %s", again.raw, first.raw)
		}
	}
	e.call(t, http.MethodPost, "/rooms/repeats/messages", `{"sender":"a","text":"next","client_message_id":"k-2"}`).want(t, 201, "")
	got := ids(e.call(t, http.MethodGet, "/rooms/repeats/messages", "").want(t, 200, "").messages(t))
	if !slices.Equal(got, []string{"msg_1", "msg_2"}) {
		t.Errorf("room holds %v, want [msg_1 msg_2]", got)
	}
}

func TestReadPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "paging")
	for i := 1; i <= 5; i++ {
		e.send(t, "paging", "a", fmt.Sprint(i))
	}
	all := []string{"msg_1", "msg_2", "msg_3", "msg_4", "msg_5"}
	// has_more means, as in the original, that more lies the way the page
	// was read: newer messages after it, older ones before it.
	tests := []struct {
		query    string
		want     []string
		hasMore  bool
		hasOlder any // nil: key absent
	}{
		{"", all, false, nil},
		{"?limit=2", []string{"msg_1", "msg_2"}, true, nil},
		{"?after=msg_2&limit=2", []string{"msg_3", "msg_4"}, true, nil},
		{"?after=msg_4", []string{"msg_5"}, false, nil},
		{"?after=4", []string{"msg_5"}, false, nil},
		{"?after=msg_5", []string{}, false, nil},
		{"?after=msg_0&limit=1", []string{"msg_1"}, true, nil},
		{"?before=latest&limit=2", []string{"msg_4", "msg_5"}, true, true},
		{"?before=msg_4&limit=2", []string{"msg_2", "msg_3"}, true, true},
		{"?before=msg_3", []string{"msg_1", "msg_2"}, false, false},
		{"?before=msg_1", []string{}, false, false},
		{"?before=latest&limit=500", all, false, false},
		// Lenient, as the original: a limit that is no whole number from 1
		// to 500 reads as the default (200) or the most (500), or its
		// whole part; before wins over after; an id's prefix in any case.
		{"?limit=0", all, false, nil},
		{"?limit=-1", all, false, nil},
		{"?limit=abc", all, false, nil},
		{"?limit=2.5", []string{"msg_1", "msg_2"}, true, nil},
		{"?limit=100000", all, false, nil},
		{"?before=latest&after=msg_1&limit=2", []string{"msg_4", "msg_5"}, true, true},
		{"?after=MSG_2&limit=2", []string{"msg_3", "msg_4"}, true, nil},
		{"?before=MSG_3", []string{"msg_1", "msg_2"}, false, false},
		{"?before=LATEST&limit=1", []string{"msg_5"}, true, true},
		// A cursor that is no message id is no cursor, as the original
		// reads it: after one reads from the start, before one the newest.
		{"?after=msg_x", all, false, nil},
		{"?after=-1", all, false, nil},
		{"?after=task_3&limit=1", []string{"msg_1"}, true, nil},
		{"?before=msg_0", all, false, false},
		{"?before=soon&limit=1", []string{"msg_5"}, true, true},
	}
	for _, tt := range tests {
		r := e.call(t, http.MethodGet, "/rooms/paging/messages"+tt.query, "").want(t, 200, "")
		got := ids(r.messages(t))
		if !slices.Equal(got, tt.want) || r.obj["has_more"] != tt.hasMore || r.obj["has_older"] != tt.hasOlder {
			t.Errorf("%s: %v has_more=%v has_older=%v; want %v %v %v", tt.query, got, r.obj["has_more"], r.obj["has_older"], tt.want, tt.hasMore, tt.hasOlder)
		}
	}
	// A client paging backward by has_more alone reads everything once.
	var back []string
	for before := "latest"; ; {
		r := e.call(t, http.MethodGet, "/rooms/paging/messages?limit=2&before="+before, "").want(t, 200, "")
		page := ids(r.messages(t))
		back = append(page, back...)
		if r.obj["has_more"] != true || len(back) > len(all) {
			break
		}
		before = page[0]
	}
	if !slices.Equal(back, all) {
		t.Errorf("paging backward while has_more read %v, want %v", back, all)
	}
	e.call(t, http.MethodGet, "/rooms/missing-room/messages", "").want(t, 404, "Room not found")
}

func TestConcurrentSendsThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "crowd")
	// Each sender has an instance of the service of its own, as racing
	// Lambda instances do: one instance never lets two sends wait for a
	// room's row in the database (store.Store), so would not race them.
	const n = 10
	instances := []*env{e}
	for len(instances) < n {
		instances = append(instances, e.twin(t))
	}
	got := make([]string, n)
	// Holding the room's row lines the senders up on its counter.
	release := e.db.HoldLock(t, `SELECT 1 FROM rooms WHERE id = 'crowd' FOR UPDATE`)
	e.db.Race(t, n, release, func(i int) {
		got[i] = instances[i].send(t, "crowd", fmt.Sprintf("agent-%d", i), "hi")
	})
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("msg_%d", i+1)
	}
	sort.Slice(got, func(i, j int) bool { return len(got[i]) < len(got[j]) || len(got[i]) == len(got[j]) && got[i] < got[j] })
	if !slices.Equal(got, want) {
		t.Errorf("%d concurrent senders got %v, want msg_1..msg_%d each once", n, got, n)
	}
}

func TestPagesStayUnderTheLambdaResponseLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "big")
	big := strings.Repeat("x", letagents.MaxTextBytes)
	const n = 9 // 9 MiB of text: more than one Lambda response may carry
	for range n {
		e.call(t, http.MethodPost, "/rooms/big/messages", `{"sender": "a", "text": "`+big+`"}`).want(t, 201, "")
	}
	var seen []string
	after := "msg_0"
	for len(seen) < n {
		r := e.call(t, http.MethodGet, "/rooms/big/messages?limit=500&after="+after, "").want(t, 200, "")
		if len(r.raw) > letagents.MaxPageBytes+1<<10 {
			t.Fatalf("page of %d bytes, want at most %d and its wrapper", len(r.raw), letagents.MaxPageBytes)
		}
		page := ids(r.messages(t))
		if len(page) == 0 {
			t.Fatalf("empty page after %s with %d of %d read", after, len(seen), n)
		}
		seen = append(seen, page...)
		after = page[len(page)-1]
		if more := len(seen) < n; r.obj["has_more"] != more {
			t.Fatalf("has_more = %v after %d of %d", r.obj["has_more"], len(seen), n)
		}
	}
	for i, id := range seen {
		if id != fmt.Sprintf("msg_%d", i+1) {
			t.Fatalf("paging through cut pages gave %v..., want msg_1..msg_%d in order", seen[:i+1], n)
		}
	}
	latest := e.call(t, http.MethodGet, "/rooms/big/messages?before=latest&limit=500", "").want(t, 200, "")
	got := ids(latest.messages(t))
	if len(got) == 0 || len(got) == n || got[len(got)-1] != fmt.Sprintf("msg_%d", n) || latest.obj["has_older"] != true || latest.obj["has_more"] != true {
		t.Errorf("cut newest page = %d messages ending %v, has_older %v, has_more %v; want the newest, cut, both true",
			len(got), got[len(got)-1:], latest.obj["has_older"], latest.obj["has_more"])
	}
	// A poll answers its backlog in pages just as cut.
	poll := e.call(t, http.MethodGet, "/rooms/big/messages/poll?after=msg_0&timeout=0", "").want(t, 200, "")
	if got := ids(poll.messages(t)); len(got) == 0 || len(got) == n || poll.obj["has_more"] != true || len(poll.raw) > letagents.MaxPageBytes+1<<10 {
		t.Errorf("poll over %d big messages = %d of them in %d bytes, has_more %v; want a cut page", n, len(got), len(poll.raw), poll.obj["has_more"])
	}
}

// TestAgentPromptKind pins how the original takes agent_prompt_kind: inline
// or auto, trimmed and in any case, "" or null for none, anything else
// refused; auto alone allows an empty text, and such a prompt-only message
// is left out of reads and polls unless they ask for it.
func TestAgentPromptKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "prompts")
	sends := []struct {
		name, fields string
		status       int
		want         any // the kind answered; or the error's words
	}{
		{"none", `"text":"plain"`, 201, nil},
		{"inline", `"text":"do this","agent_prompt_kind":"inline"`, 201, "inline"},
		{"auto, spaced, upper case", `"text":"remember","agent_prompt_kind":" AUTO "`, 201, "auto"},
		{"empty", `"text":"x","agent_prompt_kind":""`, 201, nil},
		{"null", `"text":"x","agent_prompt_kind":null`, 201, nil},
		{"auto without text", `"text":"","agent_prompt_kind":"auto"`, 201, "auto"},
		{"auto with blank text", `"text":"  ","agent_prompt_kind":"auto"`, 201, "auto"},
		{"join", `"text":"x","agent_prompt_kind":"join"`, 400, "agent_prompt_kind must be one of: inline, auto"},
		{"unknown", `"text":"x","agent_prompt_kind":"shout"`, 400, "agent_prompt_kind must be one of: inline, auto"},
		{"blank", `"text":"x","agent_prompt_kind":"  "`, 400, "agent_prompt_kind must be one of: inline, auto"},
		{"a number", `"text":"x","agent_prompt_kind":3`, 400, "agent_prompt_kind must be a string"},
		{"inline without text", `"text":"","agent_prompt_kind":"inline"`, 400, "sender and text are required"},
	}
	for _, tt := range sends {
		r := e.call(t, http.MethodPost, "/rooms/prompts/messages", `{"sender":"ann",`+tt.fields+`}`)
		if tt.status != 201 {
			r.want(t, tt.status, tt.want.(string))
			continue
		}
		if r.want(t, 201, ""); r.obj["agent_prompt_kind"] != tt.want {
			t.Errorf("%s: agent_prompt_kind %v, want %v", tt.name, r.obj["agent_prompt_kind"], tt.want)
		}
	}
	e.call(t, http.MethodPost, "/projects/prompts/messages", `{"sender":"ann","text":"legacy","agent_prompt_kind":"inline"}`).want(t, 201, "")

	visible := []string{"msg_1", "msg_2", "msg_3", "msg_4", "msg_5", "msg_8"}
	everything := []string{"msg_1", "msg_2", "msg_3", "msg_4", "msg_5", "msg_6", "msg_7", "msg_8"}
	reads := []struct {
		path string
		want []string
	}{
		{"/rooms/prompts/messages", visible},
		{"/rooms/prompts/messages?include_prompt_only=1", everything},
		{"/rooms/prompts/messages?include_prompt_only=TRUE", everything},
		{"/rooms/prompts/messages?include_prompt_only=yes", visible},
		{"/projects/prompts/messages?before=latest&limit=3", []string{"msg_4", "msg_5", "msg_8"}},
		{"/rooms/prompts/messages/poll?after=msg_5&timeout=0", []string{"msg_8"}},
		{"/rooms/prompts/messages/poll?after=msg_5&timeout=0&include_prompt_only=true", []string{"msg_6", "msg_7", "msg_8"}},
	}
	for _, tt := range reads {
		if got := ids(e.call(t, http.MethodGet, tt.path, "").want(t, 200, "").messages(t)); !slices.Equal(got, tt.want) {
			t.Errorf("GET %s: %v, want %v", tt.path, got, tt.want)
		}
	}
	// Nobody sees a prompt-only message to answer it.
	e.call(t, http.MethodPost, "/rooms/prompts/messages", `{"sender":"bo","text":"re","reply_to":"msg_6"}`).want(t, 400, "msg_6 is not a message in this room")
}
