package main

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/store/storetest"
)

// offlineNotice is the sweeper's notice for Scout. Its age reads 9m when
// the runner sweeps within a second of the poll's end being ten minutes
// old, and more on a machine slow to start it.
var offlineNotice = regexp.MustCompile(`^\[status\] Scout's message channel has been unreachable for (9|1[0-9])m `)

// The local runner sweeps liveness as the scheduled function does: at
// start, then every minute, and stops sweeping when it stops.
func TestSweepsLiveness(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	st := store.New(d.Pool)
	const room = "localdev liveness"
	// A worker whose last poll ended ten minutes ago, past the default
	// five-minute grace.
	ago := time.Now().Add(-10 * time.Minute)
	w := storetest.Register(t, st, room, "Scout", letagents.SessionWorker, ago)
	storetest.Poll(t, st, w.RoomID, w.ID, ago, ago.Add(time.Second))

	in := start(t, map[string]string{"DB_URL": d.URL, "PORT": "0", "LETAGENTS_LOCALDEV_DIR": t.TempDir()})
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _, b := call(t, "GET", in.URL+"/rooms/localdev%20liveness/messages?after=0", nil)
		var p struct {
			Messages []struct{ Source, Text string } `json:"messages"`
		}
		if err := json.Unmarshal(b, &p); status != 200 || err != nil {
			t.Fatalf("read the room: %d %s (%v)", status, b, err)
		}
		if len(p.Messages) > 0 {
			m := p.Messages[0]
			if len(p.Messages) != 1 || m.Source != letagents.SourceSystem || !offlineNotice.MatchString(m.Text) {
				t.Errorf("room has %+v, want one offline notice for Scout", p.Messages)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no liveness notice within 60 s of start")
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := in.stopped(t); err != nil {
		t.Errorf("run = %v after stop", err)
	}
}
