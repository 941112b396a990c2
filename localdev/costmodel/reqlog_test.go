package main

import (
	"os"
	"testing"
	"time"
)

// TestParseLog reads request lines recorded from a run of the runner
// (testdata/requests.log, from `costmodel -log`: the runner's lines and
// the stream refuser's 501s), then three written by hand: a request no
// route claims, a line of the runner's other logging, a line that is not
// JSON.
func TestParseLog(t *testing.T) {
	f, err := os.Open("testdata/requests.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := parseLog(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.total(); got != 39 {
		t.Errorf("%d requests, want the 39 request lines", got)
	}
	ms := time.Millisecond
	for _, c := range []struct {
		route, function string
		count           int
		held, billed    time.Duration
		bytes           int64
		poll, stream    bool
	}{
		{"POST /rooms/{room}/presence", "coordination", 2, 23565*time.Microsecond + 20776*time.Microsecond, 24*ms + 21*ms, 555 + 558, false, false},
		// A path with a room id and an id of its own.
		{"POST /rooms/{room}/reasoning-sessions/{session_id}/updates", "coordination", 2, 0, 0, 0, false, false},
		{"GET /auth/device/poll/{request_id}", "auth", 2, 0, 0, 0, false, false},
		// Two streams held three minutes each, two refused at once: each
		// rounded up to the millisecond, however short.
		{"GET /rooms/{room}/messages/stream", "poll", 4, 179859091*time.Microsecond + 180044142*time.Microsecond + 13806 + 5129,
			179860*ms + 180045*ms + 1*ms + 1*ms, 2*179260 + 2*95, true, true},
		{"GET /rooms/{room}/messages/poll", "poll", 2, 477155*time.Microsecond + 90642*time.Microsecond, 478*ms + 91*ms, 2 * 396, true, false},
		{"ANY /{proxy+}", "web", 1, 1500 * time.Microsecond, 2 * ms, 27, false, false},
	} {
		r := u[c.route]
		if r == nil {
			t.Errorf("%s: no requests counted", c.route)
			continue
		}
		if r.Function != c.function || r.Count != c.count || r.isPoll() != c.poll || r.isStream() != c.stream {
			t.Errorf("%s: function %s, %d requests, poll %v, stream %v; want %s, %d, %v, %v",
				c.route, r.Function, r.Count, r.isPoll(), r.isStream(), c.function, c.count, c.poll, c.stream)
		}
		if c.held != 0 && (r.Held != c.held || r.Billed != c.billed || r.Bytes != c.bytes) {
			t.Errorf("%s: held %v, billed %v, %d bytes; want %v, %v, %d", c.route, r.Held, r.Billed, r.Bytes, c.held, c.billed, c.bytes)
		}
	}
}

func TestBilled(t *testing.T) {
	for _, c := range []struct{ d, want time.Duration }{
		{0, 0}, {1, time.Millisecond}, {time.Millisecond, time.Millisecond}, {time.Millisecond + 1, 2 * time.Millisecond},
		{1500 * time.Microsecond, 2 * time.Millisecond},
	} {
		if got := billed(c.d); got != c.want {
			t.Errorf("billed(%v) = %v, want %v", c.d, got, c.want)
		}
	}
}

// TestToMix turns a pass into an agent-hour: counts divided by the
// agent-hours, the poll base's held time scaled back to simulated time,
// the functions' billed time not (serving is not compressed).
func TestToMix(t *testing.T) {
	r := passResult{mode: modeFargate, hours: 0.5, speed: 20, agents: 4, routes: usage{
		"POST /rooms/{room}/presence": {Route: "POST /rooms/{room}/presence", Function: "coordination", Count: 400,
			Held: 4 * time.Second, Billed: 5 * time.Second, Bytes: 2000},
		"POST /rooms/{room}/messages": {Route: "POST /rooms/{room}/messages", Function: "messages", Count: 20, Billed: time.Second},
		"GET /rooms/{room}/messages/poll": {Route: "GET /rooms/{room}/messages/poll", Function: "poll", Count: 200,
			Held: 90 * time.Second, Billed: 90 * time.Second, Bytes: 4000},
	}, db: dbDelta{Growth: 2000, WAL: 8192, CPU: 4 * time.Second, CPUKnown: true}}
	m := r.toMix()
	// 4 agents × 0.5 h = 2 agent-hours.
	if got := m.API["coordination"]; got.Requests != 200 || got.Billed != 2.5 || got.Bytes != 1000 {
		t.Errorf("coordination: %+v, want 200 requests, 2.5 s billed, 1,000 bytes an agent-hour", got)
	}
	if m.apiRequests() != 210 {
		t.Errorf("API requests %v, want 210", m.apiRequests())
	}
	if m.Poll.Requests != 100 || m.Poll.Held != 90*20/2 || m.Poll.Bytes != 2000 {
		t.Errorf("poll: %+v, want 100 requests, 900 simulated seconds held, 2,000 bytes an agent-hour", m.Poll)
	}
	if m.DBCPU != 2 || !m.CPUKnown || m.WAL != 4096 || m.Growth != 1000 {
		t.Errorf("database: %+v", m)
	}
}
