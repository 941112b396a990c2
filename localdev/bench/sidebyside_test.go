package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// fakeRooms serves the routes the side-by-side wake uses: the newest
// message, a long-poll and a send. A poll that holds waits for a message
// after its cursor; one that does not answers at once with the room's
// newest message, whatever the cursor, as a server that does not hold
// polls does.
func fakeRooms(t *testing.T, hold bool) *httptest.Server {
	var mu sync.Mutex
	rooms := map[string]int64{}
	changed := make(chan struct{})
	answer := func(w http.ResponseWriter, seqs ...int64) {
		msgs := []map[string]string{}
		for _, s := range seqs {
			msgs = append(msgs, map[string]string{"id": letagents.MessageID(s)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room, route, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/rooms/"), "/")
		mu.Lock()
		last := rooms[room]
		mu.Unlock()
		switch {
		case r.Method == http.MethodPost && route == "messages":
			mu.Lock()
			rooms[room]++
			close(changed)
			changed = make(chan struct{})
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			answer(w, last+1)
		case route == "messages" && last == 0:
			answer(w)
		case route == "messages":
			answer(w, last)
		case route == "messages/poll" && !hold:
			answer(w, max(last, 1))
		case route == "messages/poll":
			after, err := letagents.ParseMessageID(r.URL.Query().Get("after"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for {
				mu.Lock()
				last, wait := rooms[room], changed
				mu.Unlock()
				if last > after {
					answer(w, last)
					return
				}
				select {
				case <-wait:
				case <-r.Context().Done():
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestVsWakeCountsEarlyAnswers: a server that holds its polls has each
// waiter timed from the send; one that answers polls at once has them
// counted as answered early, never timed (they would be negative times).
// Every answer is one or the other. (An answer at once that a very slow
// machine delivers only after the send is timed, rightly: so the second
// case asks for early answers, not for all of them.)
func TestVsWakeCountsEarlyAnswers(t *testing.T) {
	t.Parallel()
	const rooms, per, iters = 2, 1, 2
	for _, tc := range []struct {
		name string
		hold bool
	}{
		{"holds the poll", true},
		{"answers at once", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeRooms(t, tc.hold)
			peers := &vsPeers{}
			t.Cleanup(peers.close)
			lat, missed, early, err := (&bench{}).vsWake(context.Background(), srv.Client(), peers, srv.URL, []string{"r0", "r1"}, per, iters)
			if err != nil || missed != 0 || len(lat)+early != rooms*per*iters || (early == 0) == !tc.hold {
				t.Fatalf("vsWake = %d timed, %d missed, %d early, %v; want all %d answered, early ones only from a server that does not hold polls",
					len(lat), missed, early, err, rooms*per*iters)
			}
			for _, l := range lat {
				if l < 0 {
					t.Errorf("a timed answer took %v: answered before the send", l)
				}
			}
		})
	}
}

// TestVsPeersComeFromAddressesOfTheirOwn: the side-by-side's clients
// reach a server that counts rates by the peer as that many clients, as
// the original sees them by X-Forwarded-For; one client keeps its
// address.
func TestVsPeersComeFromAddressesOfTheirOwn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		_, _ = w.Write([]byte(host))
	}))
	t.Cleanup(srv.Close)
	peers := &vsPeers{}
	t.Cleanup(peers.close)
	seen := map[string]int{}
	for _, i := range []int{0, 1, 99, 0, 260} {
		resp, err := peers.client(i).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		host, err := readAll(resp)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[string(host)]; ok && prev != i {
			t.Errorf("clients %d and %d both came from %s", prev, i, host)
		}
		seen[string(host)] = i
	}
	if len(seen) != 4 {
		t.Errorf("4 clients came from %d addresses (%v), want one each", len(seen), seen)
	}
}

// TestVsReadsAlternating: the alternating read row reads one of the first
// server's rooms, then one of the second's, then the first's
// /api/health (floor R), n times, each over its own rooms in turn, and
// times every read; a refused read ends it.
func TestVsReadsAlternating(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	server := func(name string, status int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/health" && (r.URL.Query().Get("before") != "latest" || r.URL.Query().Get("limit") != "50") {
				http.Error(w, "want the newest 50", http.StatusBadRequest)
				return
			}
			mu.Lock()
			seen = append(seen, name+" "+r.URL.EscapedPath())
			mu.Unlock()
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"messages":[]}`))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := server("a", http.StatusOK), server("b", http.StatusOK)
	client := &http.Client{}
	rooms := [2][]string{{"a-0", "a-1"}, {"b-0", "b-1"}}
	got, err := vsReadsAlternating(client, [2]string{a.URL, b.URL}, rooms, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a /rooms/a-0/messages", "b /rooms/b-0/messages", "a /api/health", "a /rooms/a-1/messages",
		"b /rooms/b-1/messages", "a /api/health", "a /rooms/a-0/messages", "b /rooms/b-0/messages", "a /api/health"}
	if strings.Join(seen, "; ") != strings.Join(want, "; ") {
		t.Errorf("reads in the order %q, want %q", seen, want)
	}
	for k, d := range got { // ours, the original's, floor R
		if len(d) != 3 {
			t.Errorf("figure %d: %d reads timed, want 3", k, len(d))
		}
		for _, x := range d {
			if x <= 0 {
				t.Errorf("figure %d: a read timed %v", k, x)
			}
		}
	}

	refused := server("c", http.StatusNotFound)
	if _, err := vsReadsAlternating(client, [2]string{a.URL, refused.URL}, rooms, 3); err == nil {
		t.Error("a refused read: no error")
	}
}

// TestQuietNote: the 1-waiter row sets each server's p50 (a third of the
// original's) against the floor after the same quiet, and leaves out a
// server none of whose waiters was timed (0.11.1 does not hold a poll)
// rather than print it at 0×.
func TestQuietNote(t *testing.T) {
	t.Parallel()
	ms := func(v ...float64) dist {
		var d dist
		for _, x := range v {
			d = append(d, time.Duration(x*float64(time.Millisecond)))
		}
		return d
	}
	floor := ms(2, 2, 2)
	for _, tc := range []struct {
		name       string
		ours, orig dist
		has, hasnt []string
	}{
		{"both timed", ms(3, 3, 3), ms(9, 9, 9), []string{"ours 1.50× the floor", "a third of the original's 1.50× it"}, nil},
		{"the original's polls not held", ms(4, 4, 4), nil, []string{"ours 2.00× the floor"}, []string{"original", "0.00×"}},
		{"neither timed", nil, nil, []string{"one send at a time after 1.001s of quiet"}, []string{"ours", "original"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := quietNote(tc.ours, tc.orig, floor)
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("%q lacks %q", got, s)
				}
			}
			for _, s := range tc.hasnt {
				if strings.Contains(got, s) {
					t.Errorf("%q has %q", got, s)
				}
			}
		})
	}
}
