package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

// TestStreamOnceCountsMessages checks what the scale client takes for a
// message on a stream (an event with an id and data) and that it notices
// a gap or a repeat in the ids.
func TestStreamOnceCountsMessages(t *testing.T) {
	id := letagents.MessageID
	for _, tc := range []struct {
		name       string
		body       string
		got, gaps  int64
		wantCursor int64
	}{
		{"connected comment and cursor only", ": connected\n\nid: " + id(0) + "\n\n", 0, 0, 0},
		{"two messages in order", fmt.Sprintf("id: %s\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1), id(2)), 2, 0, 2},
		{"task events carry no id", fmt.Sprintf("event: task_update\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1)), 1, 0, 1},
		{"a gap", fmt.Sprintf("id: %s\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1), id(3)), 2, 1, 3},
		{"a repeat", fmt.Sprintf("id: %s\ndata: {}\n\nid: %s\ndata: {}\n\n", id(1), id(1)), 2, 1, 1},
		{"CRLF lines", fmt.Sprintf("id: %s\r\ndata: {}\r\n\r\n", id(1)), 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/messages/stream") {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			s := &scaleRun{rooms: []string{"r"}, sentAt: make([][]time.Time, 1)}
			w := &scaleWaiter{stream: true, client: srv.Client()}
			err := s.streamOnce(context.Background(), w, srv.URL)
			if err == nil {
				t.Fatal("streamOnce returned nil at the end of the body; want its read error")
			}
			if w.got.Load() != tc.got || w.gaps.Load() != tc.gaps || w.cursor != tc.wantCursor {
				t.Errorf("got %d, gaps %d, cursor %d; want %d, %d, %d", w.got.Load(), w.gaps.Load(), w.cursor, tc.got, tc.gaps, tc.wantCursor)
			}
			if !w.parked.Load() {
				t.Error("not counted as parked after the stream's 200")
			}
		})
	}
}

// TestArrivals checks the scale senders' schedule: each time is the one
// before it plus the drawn gap (so a late send does not slow the rate),
// and with exponential draws the gaps average the mean and vary as a
// Poisson process's do (a coefficient of variation of 1; senders in
// lockstep have 0).
func TestArrivals(t *testing.T) {
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	const every = 96 * time.Millisecond
	t.Run("each after the one before", func(t *testing.T) {
		draws := []float64{0.5, 2, 0, 1}
		next := arrivals(start, every, func() float64 { d := draws[0]; draws = draws[1:]; return d })
		for _, want := range []time.Duration{48 * time.Millisecond, 240 * time.Millisecond, 240 * time.Millisecond, 336 * time.Millisecond} {
			if got := next().Sub(start); got != want {
				t.Fatalf("arrival at %v, want %v", got, want)
			}
		}
	})
	t.Run("poisson", func(t *testing.T) {
		next := arrivals(start, every, rand.New(rand.NewPCG(1, 2)).ExpFloat64)
		const n = 20000
		var sum, sumSq float64
		prev := start
		for range n {
			at := next()
			gap := float64(at.Sub(prev)) / float64(every)
			sum, sumSq, prev = sum+gap, sumSq+gap*gap, at
		}
		mean := sum / n
		cv := math.Sqrt(sumSq/n-mean*mean) / mean
		if math.Abs(mean-1) > 0.03 || math.Abs(cv-1) > 0.05 {
			t.Fatalf("gaps' mean %.3f× every, coefficient of variation %.3f: want about 1 and 1", mean, cv)
		}
	})
}

// TestScaleOptionsCheck checks that each option a run cannot honour is
// refused with its flag's name, and that the defaults, and the edges
// they may reach, pass.
func TestScaleOptionsCheck(t *testing.T) {
	good := scaleOptions{procs: 3, waiters: 10000, rooms: 1000, senders: 16, streamShare: 0.5,
		dur: 20 * time.Second, maxP99: 100 * time.Millisecond, dbConns: 4}
	for _, tc := range []struct {
		name   string
		change func(*scaleOptions)
		flag   string // "" when the options pass
	}{
		{"defaults", func(*scaleOptions) {}, ""},
		{"edges", func(o *scaleOptions) {
			o.procs, o.waiters, o.rooms, o.streamShare, o.senders, o.dbConns = 2, 1, 1, 1, 1, 1
			o.rate, o.cpu, o.gomaxprocs = 0.5, 0.5, 1
		}, ""},
		{"no streams", func(o *scaleOptions) { o.streamShare = 0 }, ""},
		{"one process", func(o *scaleOptions) { o.procs = 1 }, "-procs"},
		{"no rooms", func(o *scaleOptions) { o.rooms = 0 }, "-scale-rooms"},
		{"fewer waiters than rooms", func(o *scaleOptions) { o.waiters = 999 }, "-scale-waiters"},
		{"stream share over 1", func(o *scaleOptions) { o.streamShare = 1.1 }, "-stream-share"},
		{"negative stream share", func(o *scaleOptions) { o.streamShare = -0.1 }, "-stream-share"},
		{"no senders", func(o *scaleOptions) { o.senders = 0 }, "-scale-senders"},
		{"negative rate", func(o *scaleOptions) { o.rate = -1 }, "-send-rate"},
		{"no send time", func(o *scaleOptions) { o.dur = 0 }, "-send-dur"},
		{"no p99 bound", func(o *scaleOptions) { o.maxP99 = -time.Millisecond }, "-max-p99"},
		{"no database connections", func(o *scaleOptions) { o.dbConns = 0 }, "-db-conns"},
		{"negative quota", func(o *scaleOptions) { o.cpu = -0.5 }, "-poll-cpu"},
		{"negative GOMAXPROCS", func(o *scaleOptions) { o.gomaxprocs = -1 }, "-poll-gomaxprocs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.change(&o)
			err := o.check()
			switch {
			case tc.flag == "" && err != nil:
				t.Fatalf("check() = %v, want nil", err)
			case tc.flag != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.flag)):
				t.Fatalf("check() = %v, want an error naming %s", err, tc.flag)
			}
		})
	}
}
