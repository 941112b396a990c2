package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dist is a set of duration samples.
type dist []time.Duration

// pct is the nearest-rank percentile q (0 < q ≤ 1).
func (d dist) pct(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string {
	f := float64(d) / 1e6
	switch {
	case f < 1:
		return fmt.Sprintf("%.3f ms", f)
	case f < 10:
		return fmt.Sprintf("%.2f ms", f)
	case f < 100:
		return fmt.Sprintf("%.1f ms", f)
	}
	return fmt.Sprintf("%.0f ms", f)
}

func ratio(ours, floor time.Duration) string { return ratioF(float64(ours), float64(floor)) }

func ratioF(ours, floor float64) string {
	if floor <= 0 {
		return "—"
	}
	r := ours / floor
	if r < 10 {
		return fmt.Sprintf("%.2f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

// tracer records, while on, every query's kind, start and end, and every
// pool acquire's wait: enough to see where a wake storm spends its time.
type tracer struct {
	on       atomic.Bool
	mu       sync.Mutex
	queries  []queryEvent
	acquires dist
	handlers []time.Time // poll handlers returning (response written)
}

type queryKind int

const (
	kindOther queryKind = iota
	kindRead            // store.Messages
	kindSend            // store.SendMessage
)

type queryEvent struct {
	kind       queryKind
	start, end time.Time
}

type traceKey struct{}

type traceStart struct {
	kind  queryKind
	start time.Time
}

func (t *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !t.on.Load() {
		return ctx
	}
	k := kindOther
	switch {
	case strings.Contains(data.SQL, "LEFT JOIN LATERAL"):
		k = kindRead
	case strings.Contains(data.SQL, "INSERT INTO messages"):
		k = kindSend
	}
	return context.WithValue(ctx, traceKey{}, traceStart{k, time.Now()})
}

func (t *tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	s, ok := ctx.Value(traceKey{}).(traceStart)
	if !ok {
		return
	}
	end := time.Now()
	t.mu.Lock()
	t.queries = append(t.queries, queryEvent{s.kind, s.start, end})
	t.mu.Unlock()
}

type acquireKey struct{}

func (t *tracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	if !t.on.Load() {
		return ctx
	}
	return context.WithValue(ctx, acquireKey{}, time.Now())
}

func (t *tracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	s, ok := ctx.Value(acquireKey{}).(time.Time)
	if !ok {
		return
	}
	d := time.Since(s)
	t.mu.Lock()
	t.acquires = append(t.acquires, d)
	t.mu.Unlock()
}

// start clears the record and turns tracing on.
func (t *tracer) start() {
	t.mu.Lock()
	t.queries, t.acquires, t.handlers = t.queries[:0], t.acquires[:0], t.handlers[:0]
	t.mu.Unlock()
	t.on.Store(true)
}

// stop turns tracing off and returns what was recorded.
func (t *tracer) stop() (qs []queryEvent, acq dist, handlers []time.Time) {
	t.on.Store(false)
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.queries), slices.Clone(t.acquires), slices.Clone(t.handlers)
}

// traceHandler records when each poll handler returns (its answer is then
// written, only the final flush remains).
func traceHandler(t *tracer, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if t.on.Load() && strings.HasSuffix(r.URL.Path, "/poll") {
			now := time.Now()
			t.mu.Lock()
			t.handlers = append(t.handlers, now)
			t.mu.Unlock()
		}
	})
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
