package apiclient_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/mcp/apiclient"
	"github.com/letagents/letagents-go/shared/wire"
)

// oldServer plays a server from before the /rooms routes: every /rooms
// request gets answer, and everything else (the legacy /projects routes)
// is the real service.
func oldServer(t *testing.T, e *env, answer http.HandlerFunc) *recorder {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/rooms/") {
			answer(w, r)
			return
		}
		e.svc.Handler.ServeHTTP(w, r)
	}))
}

// answer writes a fixed status and body.
func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.ReplaceAll(body, "{request}", r.Method+" "+r.URL.Path)))
	}
}

const expressPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Error</title>
</head>
<body>
<pre>Cannot {request}</pre>
</body>
</html>
`

func TestLegacyFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tests := []struct {
		name    string
		missing http.HandlerFunc // how the old server says it has no such route
	}{
		{"json 404", answer(404, "application/json", `{"error":"Not Found"}`)},
		{"json 405", answer(405, "application/json", `{"error":"Method Not Allowed"}`)},
		{"express text", answer(404, "text/plain", "Cannot {request}")},
		{"express page", answer(404, "text/html; charset=utf-8", expressPage)},
		{"api gateway", answer(404, "application/json", `{"message":"Not Found"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := oldServer(t, e, tt.missing)
			c := apiclient.New(apiclient.Config{APIURL: old.URL})
			ctx := testContext(t)

			created, err := c.CreateRoom(ctx)
			if err != nil {
				t.Fatal(err)
			}
			j, err := c.Join(ctx, created.ID)
			if err != nil {
				t.Fatalf("Join(invite code): %v", err)
			}
			if j.RoomID != created.ID || j.Code == nil || *j.Code != created.ID || j.Name != nil || j.Role != "participant" || j.CreatedAt != created.CreatedAt {
				t.Errorf("Join(invite code) = %+v, want the room %+v as a participant", j, created)
			}

			room := "old-" + strings.ReplaceAll(tt.name, " ", "-")
			j, err = c.Join(ctx, room)
			if err != nil {
				t.Fatalf("Join(%q): %v", room, err)
			}
			if j.RoomID != room || j.Name == nil || *j.Name != room || j.Code != nil || j.Role != "participant" || j.DisplayName == "" {
				t.Errorf("Join(%q) = %+v, want the named room as a participant", room, j)
			}
			m, err := c.Send(ctx, room, wire.SendMessage{Sender: "ann", Text: "hello"})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			p, err := c.Messages(ctx, room, apiclient.Query{Limit: 10})
			if err != nil {
				t.Fatalf("Messages: %v", err)
			}
			if got := messageIDs(p.Messages); p.RoomID != room || !slices.Equal(got, []string{m.ID}) {
				t.Errorf("Messages = %q of %q, want [%s] of %q (from project_id)", got, p.RoomID, m.ID, room)
			}
			p, err = c.Poll(ctx, room, "", 10*time.Second, 0)
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if got := messageIDs(p.Messages); p.RoomID != room || !slices.Equal(got, []string{m.ID}) {
				t.Errorf("Poll = %q of %q, want [%s] of %q", got, p.RoomID, m.ID, room)
			}

			want := []string{
				"POST /projects",
				"POST /rooms/" + created.ID + "/join", "GET /projects/join/" + created.ID,
				"POST /rooms/" + room + "/join", "POST /projects/room/" + room,
				"POST /rooms/" + room + "/messages", "POST /projects/" + room + "/messages",
				"GET /rooms/" + room + "/messages", "GET /projects/" + room + "/messages",
				"GET /rooms/" + room + "/messages/poll", "GET /projects/" + room + "/messages/poll",
			}
			if got := old.paths(); !slices.Equal(got, want) {
				t.Errorf("requests:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestNoFallbackOnRealErrors checks that a route that exists and answers
// 404 (or any error) about what it was asked is an error, not a missing
// route.
func TestNoFallbackOnRealErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tests := []struct {
		name       string
		answer     http.HandlerFunc
		wantStatus int
	}{
		{"room not found", answer(404, "application/json", `{"error":"Room not found"}`), 404},
		{"go's text 404", answer(404, "text/plain", "404 page not found"), 404},
		{"not found as a 400", answer(400, "application/json", `{"error":"Not Found"}`), 400},
		{"express text as a 500", answer(500, "text/plain", "Cannot {request}"), 500},
	}
	calls := []struct {
		name string
		call func(*apiclient.Client) error
	}{
		{"Join", func(c *apiclient.Client) error { _, err := c.Join(testContext(t), "r"); return err }},
		{"Join invite", func(c *apiclient.Client) error { _, err := c.Join(testContext(t), "FEH7-YWH4-ZYT3"); return err }},
		{"Send", func(c *apiclient.Client) error {
			_, err := c.Send(testContext(t), "r", wire.SendMessage{Sender: "a", Text: "b"})
			return err
		}},
		{"Messages", func(c *apiclient.Client) error {
			_, err := c.Messages(testContext(t), "r", apiclient.Query{})
			return err
		}},
		{"Poll", func(c *apiclient.Client) error { _, err := c.Poll(testContext(t), "r", "", time.Second, 0); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := oldServer(t, e, tt.answer)
			c := apiclient.New(apiclient.Config{APIURL: old.URL})
			for _, call := range calls {
				err := call.call(c)
				if !apiclient.IsStatus(err, tt.wantStatus) {
					t.Errorf("%s = %v, want the %d", call.name, err, tt.wantStatus)
				}
			}
			for _, p := range old.paths() {
				if strings.Contains(p, "/projects") {
					t.Errorf("fell back to %s", p)
				}
			}
		})
	}

	// The real service's own 404 for a room never joined.
	c := e.client("")
	_, err := c.Messages(testContext(t), "never-joined", apiclient.Query{})
	if ae := apiError(t, err); ae.Status != 404 || ae.Body.Error != "Room not found" {
		t.Errorf("Messages of a room never joined = %v, want 404 Room not found", err)
	}
	if got, want := e.api.paths(), []string{"GET /rooms/never-joined/messages"}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q: no fallback", got, want)
	}
}
