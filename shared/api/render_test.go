package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/markdown"
)

// rawMessages is the messages of a page answer as sent.
func rawMessages(t *testing.T, r reply) []json.RawMessage {
	t.Helper()
	var p struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.raw), &p); err != nil {
		t.Fatalf("not a page: %v: %.300s", err, r.raw)
	}
	return p.Messages
}

// TestRenderHTML: with ?render=html each message of a read or a poll is
// what it is without, byte for byte, with the html key added at the end;
// without it no html key appears.
func TestRenderHTML(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "github.com/o/r")
	texts := []string{"**done**: see https://example.com/pr/1", "<script>window.x=1</script>\n```go\nfunc f() {}\n```", "plain"}
	for _, text := range texts {
		b, _ := json.Marshal(map[string]string{"sender": "a", "text": text})
		e.call(t, http.MethodPost, "/rooms/github.com/o/r/messages", string(b)).want(t, 201, "")
	}
	// One message answered with html (msg_2, the reply), to show the
	// thread keys are kept too.
	e.call(t, http.MethodPost, "/rooms/github.com/o/r/messages", `{"sender":"b","text":"_yes_","thread_parent_id":"msg_1"}`).want(t, 201, "")
	texts = append(texts, "_yes_")

	for _, path := range []string{
		"/rooms/github.com/o/r/messages?after=msg_0",
		"/rooms/github.com/o/r/messages?before=latest&limit=10",
		"/projects/github.com%2Fo%2Fr/messages",
		"/rooms/github.com/o/r/messages/poll?after=msg_0&timeout=0",
		"/projects/github.com%2Fo%2Fr/messages/poll?after=msg_0&timeout=0",
	} {
		t.Run(path, func(t *testing.T) {
			plain := e.call(t, http.MethodGet, path, "").want(t, 200, "")
			if strings.Contains(plain.raw, `"html"`) {
				t.Fatalf("without render the page has an html key: %s", plain.raw)
			}
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			rendered := e.call(t, http.MethodGet, path+sep+"render=html", "").want(t, 200, "")
			pm, rm := rawMessages(t, plain), rawMessages(t, rendered)
			if len(pm) != len(texts) || len(rm) != len(pm) {
				t.Fatalf("got %d plain and %d rendered messages, want %d", len(pm), len(rm), len(texts))
			}
			for i := range pm {
				head := pm[i][:len(pm[i])-1] // without its closing brace
				tail, ok := bytes.CutPrefix(rm[i], head)
				if !ok {
					t.Errorf("rendered message differs beyond html:\n plain    %s\n rendered %s", pm[i], rm[i])
					continue
				}
				var m struct {
					Text string `json:"text"`
					HTML string `json:"html"`
				}
				if err := json.Unmarshal(rm[i], &m); err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(tail, []byte(`,"html":`)) || m.HTML != markdown.HTML(m.Text) {
					t.Errorf("message %d: want the html key last, markdown.HTML of its text; got %s", i, rm[i])
				}
			}
			// The page's own keys are untouched.
			delete(plain.obj, "messages")
			delete(rendered.obj, "messages")
			if !reflect.DeepEqual(plain.obj, rendered.obj) {
				t.Errorf("page keys differ: %v vs %v", plain.obj, rendered.obj)
			}
		})
	}
}

func TestRenderOptionErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "r")
	for _, path := range []string{
		"/rooms/r/messages?render=markdown",
		"/rooms/r/messages?render=HTML",
		// A poll refuses at once, rather than after waiting its 30 s.
		"/rooms/r/messages/poll?after=msg_0&timeout=30000&render=text",
	} {
		e.call(t, http.MethodGet, path, "").want(t, 400, "render must be html")
	}
}

// TestRenderTooBigForAPage: a message whose HTML would not fit a page
// alone comes without html, and the page is still answered.
func TestRenderTooBigForAPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.join(t, "big")
	// Every & becomes &amp;: five times the text, past MaxPageBytes.
	amps := strings.Repeat("&", letagents.MaxTextBytes)
	e.call(t, http.MethodPost, "/rooms/big/messages", `{"sender":"a","text":"`+amps+`"}`).want(t, 201, "")
	e.call(t, http.MethodPost, "/rooms/big/messages", `{"sender":"a","text":"*small*"}`).want(t, 201, "")
	r := e.call(t, http.MethodGet, "/rooms/big/messages?after=msg_0&render=html", "").want(t, 200, "")
	msgs := r.messages(t)
	if len(msgs) == 0 || msgs[0]["id"] != "msg_1" || msgs[0]["html"] != nil || msgs[0]["text"] != amps {
		t.Fatalf("first message: want msg_1 with its text and no html, got keys of %d messages", len(msgs))
	}
	if len(r.raw) > letagents.MaxPageBytes+1<<10 {
		t.Errorf("page of %d bytes, over the page bound", len(r.raw))
	}
	r = e.call(t, http.MethodGet, "/rooms/big/messages?after=msg_1&render=html", "").want(t, 200, "")
	if msgs := r.messages(t); len(msgs) != 1 || msgs[0]["html"] != "<p><em>small</em></p>\n" {
		t.Errorf("small message after it = %v, want its html", msgs)
	}
}

// TestRoomPageCarriesCodeStyles: the room page brings the stylesheet of
// the classes shared/markdown writes, in its head.
func TestRoomPageCarriesCodeStyles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.call(t, http.MethodGet, "/in/some/room", "").want(t, 200, "")
	head, _, ok := strings.Cut(r.raw, "</head>")
	if !ok || !strings.Contains(head, "<style>\n"+markdown.CSS()+"</style>") {
		t.Errorf("the room page's head lacks markdown.CSS in a <style>:\n%.500s", r.raw)
	}
	if !strings.Contains(r.raw, "render=html") {
		t.Errorf("the room page does not ask for rendered messages")
	}
}
