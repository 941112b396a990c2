package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
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

func TestReadGroupSharesOneRead(t *testing.T) {
	t.Parallel()
	var g readGroup
	var calls atomic.Int32
	release := make(chan struct{})
	fn := func(context.Context) (letagents.MessagePage, error) {
		calls.Add(1)
		<-release
		return pageOf(7), nil
	}
	key := readKey{room: "r"}
	const n = 50
	var wg sync.WaitGroup
	got := make([]letagents.MessagePage, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = g.read(context.Background(), key, g.ticket(), fn)
		}()
	}
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the others join the read under way
	close(release)
	wg.Wait()
	if c := calls.Load(); c > n/5 {
		t.Errorf("%d concurrent identical reads ran %d queries, want them shared", n, c)
	}
	for i, p := range got {
		if len(p.Messages) != 1 || p.Messages[0].Seq != 7 {
			t.Fatalf("reader %d got %+v", i, p)
		}
	}
}

func TestReadGroupNeverReusesAStaleEmptyRead(t *testing.T) {
	t.Parallel()
	var g readGroup
	key := readKey{room: "r"}
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	fn := func(context.Context) (letagents.MessagePage, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
			return pageOf(), nil // read before the commit: empty
		}
		return pageOf(1), nil // read after it
	}
	first := make(chan letagents.MessagePage, 1)
	go func() {
		p, _ := g.read(context.Background(), key, g.ticket(), fn)
		first <- p
	}()
	<-started
	// Woken now, after that read began: its empty answer may predate the
	// commit that woke us, so it must not be ours.
	since := g.ticket()
	second := make(chan letagents.MessagePage, 1)
	go func() {
		p, _ := g.read(context.Background(), key, since, fn)
		second <- p
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if p := <-first; len(p.Messages) != 0 {
		t.Errorf("first reader got %+v, want its own empty read", p)
	}
	if p := <-second; len(p.Messages) != 1 {
		t.Errorf("reader woken after a read began got %+v, want a fresh read with the message", p)
	}
}

func TestReadGroupKeepsAStaleReadWithMessages(t *testing.T) {
	t.Parallel()
	var g readGroup
	key := readKey{room: "r"}
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	fn := func(context.Context) (letagents.MessagePage, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		return pageOf(3), nil
	}
	done := make(chan struct{})
	go func() {
		_, _ = g.read(context.Background(), key, g.ticket(), fn)
		close(done)
	}()
	<-started
	since := g.ticket()
	res := make(chan letagents.MessagePage, 1)
	go func() {
		p, _ := g.read(context.Background(), key, since, fn)
		res <- p
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	<-done
	if p := <-res; len(p.Messages) != 1 || p.Messages[0].Seq != 3 {
		t.Errorf("got %+v, want the shared page with its message", p)
	}
}

func TestReadGroupWaiterLeaves(t *testing.T) {
	t.Parallel()
	var g readGroup
	key := readKey{room: "r"}
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
	followerCtx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.read(followerCtx, key, 0, fn); err != context.DeadlineExceeded {
		t.Errorf("a follower whose context ends = %v, want its context's error", err)
	}
	// The leader's client leaving does not cancel the read others share.
	leave()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if err := <-leader; err != nil {
		t.Errorf("shared read failed when its starter's context ended: %v", err)
	}
}
