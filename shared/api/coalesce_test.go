package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/letagents/letagents-go/shared/letagents"
)

func pageOf(seqs ...int64) letagents.MessagePage {
	var p letagents.MessagePage
	for _, s := range seqs {
		p.Messages = append(p.Messages, letagents.Message{Seq: s})
	}
	return p
}

// The readGroup tests run in a synctest bubble: synctest.Wait returns
// once every reader is blocked, joined to the read under way, so no
// sleep has to guess how long joining takes.

func TestReadGroupSharesOneRead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testReadGroupSharesOneRead)
}

func testReadGroupSharesOneRead(t *testing.T) {
	var g readGroup[eventKey, int64]
	var calls atomic.Int32
	release := make(chan struct{})
	// Readers at two cursors of a room: each cursor's readers share a
	// read of their own.
	read := func(key eventKey) func(context.Context) (int64, error) {
		return func(context.Context) (int64, error) {
			calls.Add(1)
			<-release
			return key.after + 1, nil
		}
	}
	const n = 50
	since := g.ticket() // one ring wakes them all before any reads
	var wg sync.WaitGroup
	keys := make([]eventKey, n)
	got := make([]int64, n)
	for i := range n {
		keys[i] = eventKey{room: "r", after: int64(i % 2)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = g.read(context.Background(), keys[i], since, read(keys[i]))
		}()
	}
	synctest.Wait()
	close(release)
	wg.Wait()
	if c := calls.Load(); c != 2 {
		t.Errorf("%d concurrent reads at 2 cursors ran %d queries, want one shared per cursor", n, c)
	}
	for i, v := range got {
		if want := keys[i].after + 1; v != want {
			t.Fatalf("reader %d after %d got %d, want its cursor's read %d", i, keys[i].after, v, want)
		}
	}
}

// A reader woken after a read began may take that read's page only if
// keep accepts it: a long-poll's page that has messages (an empty one may
// predate the commit that woke the reader), and nothing for a stream,
// which would move its cursor past a read that may have missed its ring.
func TestReadGroupReadsAgainAfterAStaleRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		keep        func(letagents.MessagePage) bool
		first, next letagents.MessagePage // what the read under way and a later read find
		want        int64                 // the woken reader's first message, 0 for none
	}{
		{"long-poll, stale and empty: read again", hasMessages, pageOf(), pageOf(1), 1},
		{"long-poll, stale with messages: keep it", hasMessages, pageOf(3), pageOf(4), 3},
		{"stream, stale with events: read again", nil, pageOf(3), pageOf(4), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				g := readGroup[pageKey, letagents.MessagePage]{keep: tt.keep}
				key := pageKey{room: "r"}
				started, release := make(chan struct{}), make(chan struct{})
				var calls atomic.Int32
				fn := func(context.Context) (letagents.MessagePage, error) {
					if calls.Add(1) == 1 {
						close(started)
						<-release
						return tt.first, nil
					}
					return tt.next, nil
				}
				first := make(chan letagents.MessagePage, 1)
				go func() {
					p, _ := g.read(context.Background(), key, g.ticket(), fn)
					first <- p
				}()
				<-started
				since := g.ticket() // woken now, after that read began
				woken := make(chan letagents.MessagePage, 1)
				go func() {
					p, _ := g.read(context.Background(), key, since, fn)
					woken <- p
				}()
				synctest.Wait() // the woken reader has joined the read under way
				close(release)
				if p := <-first; len(p.Messages) != len(tt.first.Messages) {
					t.Errorf("first reader got %+v, want its own read %+v", p, tt.first)
				}
				if p := <-woken; len(p.Messages) == 0 || p.Messages[0].Seq != tt.want {
					t.Errorf("woken reader got %+v, want message %d", p, tt.want)
				}
			})
		})
	}
}

func TestReadGroupWaiterLeaves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testReadGroupWaiterLeaves)
}

func testReadGroupWaiterLeaves(t *testing.T) {
	var g readGroup[pageKey, letagents.MessagePage]
	key := pageKey{room: "r"}
	started, release := make(chan struct{}), make(chan struct{})
	fn := func(ctx context.Context) (letagents.MessagePage, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return letagents.MessagePage{}, ctx.Err()
		}
		return pageOf(1), nil
	}
	leaderCtx, leave := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := g.read(leaderCtx, key, g.ticket(), fn)
		leader <- err
	}()
	<-started
	// The bubble's clock moves only when every goroutine is blocked, so
	// this deadline passes while the follower waits, however slow the
	// machine.
	followerCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := g.read(followerCtx, key, 0, fn); err != context.DeadlineExceeded {
		t.Errorf("a follower whose context ends = %v, want its context's error", err)
	}
	// The leader's client leaving does not cancel the read others share.
	leave()
	synctest.Wait() // a cancelled read would have returned by now
	close(release)
	if err := <-leader; err != nil {
		t.Errorf("shared read failed when its starter's context ended: %v", err)
	}
}
