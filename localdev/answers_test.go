package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/wire"
)

// TestEveryAnswerIsItsOwn sends thousands of mixed requests at once through
// the whole runner (reads and sends in different rooms, long-polls, session
// look-ups, device sign-ins) and checks every answer against its own
// request: no client may ever get another's messages or sign-in.
func TestEveryAnswerIsItsOwn(t *testing.T) {
	t.Parallel()
	const (
		rooms    = 12
		users    = 3 // signed in before the crowd arrives
		signIns  = 3 // signed in by the crowd
		workers  = 32
		requests = 5200
	)
	env, gh := githubEnv(t)
	env["LETAGENTS_JOIN_LIMIT"] = "1000"
	env["LETAGENTS_SEND_LIMIT"] = "1000000"
	env["DB_MAX_CONNS"] = "16"
	env["LOG_LEVEL"] = "warn"
	in := start(t, env)

	room := func(i int) string { return fmt.Sprintf("answers room %02d", i) }
	roomURL := func(i int) string { return in.URL + "/rooms/" + strings.ReplaceAll(room(i), " ", "%20") }
	for i := range rooms {
		if status, _, b := call(t, "POST", roomURL(i)+"/join", nil); status != http.StatusOK {
			t.Fatalf("join %s: %d %s", room(i), status, b)
		}
		send := fmt.Sprintf(`{"sender":"setup","text":"%s: first"}`, room(i))
		if status, _, b := call(t, "POST", roomURL(i)+"/messages", strings.NewReader(send)); status != http.StatusCreated {
			t.Fatalf("send to %s: %d %s", room(i), status, b)
		}
	}
	// Device sign-ins, approved on GitHub: the first ones finish now and
	// give the tokens of the session look-ups, the others finish in the crowd.
	type flow struct{ login, requestID string }
	flows := make([]flow, users+signIns)
	for i := range flows {
		login := fmt.Sprintf("user%d", i)
		gh.AddUser(login)
		status, _, b := call(t, "POST", in.URL+"/auth/device/start", nil)
		var d wire.DeviceStart
		if err := json.Unmarshal(b, &d); status != http.StatusCreated || err != nil {
			t.Fatalf("device start: %d %s", status, b)
		}
		gh.ApproveDevice(d.UserCode, login)
		flows[i] = flow{login, d.RequestID}
	}
	tokens := make([]string, users)
	for i := range tokens {
		status, _, b := call(t, "GET", in.URL+"/auth/device/poll/"+flows[i].requestID, nil)
		var a wire.DeviceAuthorized
		if err := json.Unmarshal(b, &a); status != http.StatusOK || err != nil || a.LetAgentsToken == "" {
			t.Fatalf("device poll: %d %s", status, b)
		}
		tokens[i] = a.LetAgentsToken
	}

	// Each check gets the status and body of its own request.
	type request struct {
		req   *http.Request
		check func(status int, body []byte) error
	}
	roomPage := func(r int, status int, b []byte) error {
		var p struct {
			RoomID   string `json:"room_id"`
			Messages []wire.Message
		}
		if err := json.Unmarshal(b, &p); status != http.StatusOK || err != nil || p.RoomID != room(r) || len(p.Messages) == 0 {
			return fmt.Errorf("want a page of %s, got %d %.200s", room(r), status, b)
		}
		for _, m := range p.Messages {
			if m.RoomID != room(r) || !strings.HasPrefix(m.Text, room(r)+": ") {
				return fmt.Errorf("a page of %s holds %+v", room(r), m)
			}
		}
		return nil
	}
	account := func(login string, a *wire.Account) error {
		if a == nil || a.Login != login {
			return fmt.Errorf("want the account of %s, got %+v", login, a)
		}
		return nil
	}
	newRequest := func(i int) request {
		r := i % rooms
		must := func(req *http.Request, err error) *http.Request {
			if err != nil {
				t.Fatal(err)
			}
			return req
		}
		if i < signIns {
			f := flows[users+i]
			return request{must(http.NewRequest("GET", in.URL+"/auth/device/poll/"+f.requestID, nil)), func(status int, b []byte) error {
				var a wire.DeviceAuthorized
				if err := json.Unmarshal(b, &a); status != http.StatusOK || err != nil || a.LetAgentsToken == "" {
					return fmt.Errorf("device poll of %s: %d %.200s", f.login, status, b)
				}
				return account(f.login, &a.Account)
			}}
		}
		switch i % 4 {
		case 0:
			return request{must(http.NewRequest("GET", roomURL(r)+"/messages?after=0&limit=20", nil)), func(status int, b []byte) error {
				return roomPage(r, status, b)
			}}
		case 1:
			text := fmt.Sprintf("%s: request %d", room(r), i)
			body, _ := json.Marshal(map[string]string{"sender": "crowd", "text": text})
			req := must(http.NewRequest("POST", roomURL(r)+"/messages", strings.NewReader(string(body))))
			req.Header.Set("Content-Type", "application/json")
			return request{req, func(status int, b []byte) error {
				var m wire.Message
				if err := json.Unmarshal(b, &m); status != http.StatusCreated || err != nil || m.RoomID != room(r) || m.Text != text {
					return fmt.Errorf("send of %q: %d %.200s", text, status, b)
				}
				return nil
			}}
		case 2:
			// Messages exist after 0: the poll answers at once.
			return request{must(http.NewRequest("GET", roomURL(r)+"/messages/poll?after=0&limit=20&timeout=1000", nil)), func(status int, b []byte) error {
				return roomPage(r, status, b)
			}}
		default:
			u := (i / 4) % users
			req := must(http.NewRequest("GET", in.URL+"/auth/session", nil))
			req.Header.Set("Authorization", "Bearer "+tokens[u])
			return request{req, func(status int, b []byte) error {
				var s wire.Session
				if err := json.Unmarshal(b, &s); status != http.StatusOK || err != nil || !s.Authenticated {
					return fmt.Errorf("session of %s: %d %.200s", flows[u].login, status, b)
				}
				return account(flows[u].login, s.Account)
			}}
		}
	}

	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var (
		mu             sync.Mutex
		inFlight, most int
		failed         int
		wg             sync.WaitGroup
		next           = make(chan int)
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				rq := newRequest(i)
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				resp, err := c.Do(rq.req)
				var b []byte
				if err == nil {
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if err == nil {
					err = rq.check(resp.StatusCode, b)
				}
				mu.Lock()
				inFlight--
				if err != nil {
					if failed++; failed <= 20 {
						t.Errorf("request %d: %v", i, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range requests {
		next <- i
	}
	close(next)
	wg.Wait()
	if failed > 0 {
		t.Errorf("%d of %d answers were wrong", failed, requests)
	}
	if most < 2 {
		t.Errorf("at most %d request in flight: the requests never overlapped", most)
	}
	t.Logf("%d requests, up to %d in flight", requests, most)
}
