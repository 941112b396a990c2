package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/letagents"
)

// floorSQL is the least a send can be: one row and one NOTIFY, committed
// together in one statement (like store.SendMessage, minus the room's
// counter and the HTTP around it).
const floorSQL = `WITH ins AS (INSERT INTO bench_floor (v) VALUES ($1) RETURNING id)
	SELECT pg_notify($2, id::text) FROM ins`

// floorChannel names a NOTIFY channel private to this run (channels are
// database-wide, schemas do not separate them).
func (b *bench) floorChannel(i int) string { return fmt.Sprintf("%s_floor_%d", b.schema, i) }

// floorA times INSERT+NOTIFY on one connection until a second connection,
// LISTENing, returns from WaitForNotification. Each sample is followed by
// one of store.SendMessage to a room whose channel the same connection
// LISTENs on: our send statement against the bare one, at the same moment.
//
// Every sample except hot follows gap of quiet, as every send of the
// cases it is a floor for does (idleGap for the send→wake cases, which
// wait for all waiters to be parked, polling every 2 ms until three
// checks in a row agree; vsSettle for the side-by-side's): on this kind
// of machine a statement after a few idle milliseconds is measurably
// slower than one right after another, and one after a second slower
// again, and the floor must not be measured hotter than what it is a
// floor for. hot is the same statement back to back.
func (b *bench) floorA(ctx context.Context, n int, gap time.Duration) (floor, sends, hot dist, err error) {
	const room = "bench-room-floor"
	if _, _, err := b.svc.Store.EnsureRoom(ctx, room); err != nil {
		return nil, nil, nil, err
	}
	lst, err := pgx.Connect(ctx, b.url)
	if err != nil {
		return nil, nil, nil, err
	}
	defer lst.Close(context.WithoutCancel(ctx))
	snd, err := pgx.Connect(ctx, b.url)
	if err != nil {
		return nil, nil, nil, err
	}
	defer snd.Close(context.WithoutCancel(ctx))
	ch := b.floorChannel(0)
	if _, err := lst.Exec(ctx, `LISTEN `+pgx.Identifier{ch}.Sanitize()+`; LISTEN `+pgx.Identifier{b.svc.Store.RoomChannel(room)}.Sanitize()); err != nil {
		return nil, nil, nil, err
	}

	lctx, cancel := context.WithCancel(ctx)
	got := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := lst.WaitForNotification(lctx); err != nil {
				done <- err
				return
			}
			got <- time.Now()
		}
	}()
	defer func() { cancel(); <-done }()
	wait := func(t0 time.Time) (time.Duration, error) {
		select {
		case t1 := <-got:
			return t1.Sub(t0), nil
		case err := <-done:
			return 0, err
		case <-time.After(5 * time.Second):
			return 0, fmt.Errorf("no notification after 5 s: %w", errTimeout)
		}
	}

	bare := func(i int) (time.Duration, error) {
		t0 := time.Now()
		if _, err := snd.Exec(ctx, floorSQL, i, ch); err != nil {
			return 0, err
		}
		return wait(t0)
	}
	const warm = 5
	for i := range warm + n {
		if err := sleepCtx(ctx, gap); err != nil {
			return nil, nil, nil, err
		}
		d, err := bare(i)
		if err != nil {
			return nil, nil, nil, err
		}
		dh, err := bare(i)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := sleepCtx(ctx, gap); err != nil {
			return nil, nil, nil, err
		}
		t0 := time.Now()
		if _, _, err := b.svc.Store.SendMessage(ctx, letagents.NewMessage{RoomID: room, Sender: "bench", Text: "floor"}); err != nil {
			return nil, nil, nil, err
		}
		ds, err := wait(t0)
		if err != nil {
			return nil, nil, nil, err
		}
		if i >= warm {
			floor, sends, hot = append(floor, d), append(sends, ds), append(hot, dh)
		}
	}
	return floor, sends, hot, nil
}

// idleGap is the quiet before each floor sample: about what the send→wake
// cases leave before each send.
const idleGap = 6 * time.Millisecond

// floorB times a keep-alive GET of a handler that answers {} at once.
func (b *bench) floorB(ctx context.Context, n int) (dist, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}\n"))
	}))
	defer srv.Close()
	tr := newTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	const warm = 50
	var d dist
	for i := range warm + n {
		if err := sleepCtx(ctx, idleGap); err != nil {
			return nil, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		_, err = io.ReadAll(resp.Body)
		t1 := time.Now()
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if i >= warm {
			d = append(d, t1.Sub(t0))
		}
	}
	return d, nil
}
