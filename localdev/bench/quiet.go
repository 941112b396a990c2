package main

import (
	"context"
	"fmt"
	"time"
)

// quietGap is how long the server sits idle before a quiet send: over
// the second after which a pooled connection is checked before use.
const quietGap = 1500 * time.Millisecond

// quietSends times an agent's send (owner token and worker session, one
// statement) after quietGap of nothing, alternating with the same send
// after idleGap: what a request on a quiet server pays that one on a busy
// server does not (a ping of its idle connection, with pgx's default).
// Most rooms are quiet most of the time, so it is the common case.
func (b *bench) quietSends(ctx context.Context) error {
	room := "bench-room-quiet"
	hdr, err := b.agentHeaders(ctx, room, "bench-quiet")
	if err != nil {
		return err
	}
	n := 20
	if b.opt.quick {
		n = 8
	}
	var quiet, busy dist
	for i := range n {
		for _, c := range []struct {
			gap time.Duration
			d   *dist
		}{{quietGap, &quiet}, {idleGap, &busy}} {
			if err := sleepCtx(ctx, c.gap); err != nil {
				return err
			}
			t0 := time.Now()
			if err := sendWith(ctx, b.client, b.srv.URL, room, fmt.Sprintf("quiet %d", i), hdr); err != nil {
				return err
			}
			*c.d = append(*c.d, time.Since(t0))
		}
	}
	progress("quiet sends: p50 %s after %s idle, %s after %s", ms(quiet.pct(.5)), quietGap, ms(busy.pct(.5)), idleGap)
	b.add(secThroughput, func() row {
		return row{name: fmt.Sprintf("Ours: an agent's send after %s of quiet", quietGap),
			p50: ms(quiet.pct(.5)), p99: ms(quiet.pct(.99)),
			r50: ratio(quiet.pct(.5), busy.pct(.5)), r99: ratio(quiet.pct(.99), busy.pct(.99)),
			notes: fmt.Sprintf("ratio = this / the same send after %s idle (%s p50 / %s p99), alternating, n=%d each; POST with the owner's bearer token and the worker session's headers, timed to its answer read: whether a quiet server's request pays a round trip more than a busy one's",
				idleGap, ms(busy.pct(.5)), ms(busy.pct(.99)), n)}
	})
	return nil
}
