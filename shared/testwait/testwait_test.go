package testwait

import (
	"sync/atomic"
	"testing"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	Until(t, "three increments", func() bool { return n.Load() == 3 })
}

func TestRecv(t *testing.T) {
	t.Parallel()
	c := make(chan int)
	go func() { c <- 7 }()
	if got := Recv(t, "a value", c); got != 7 {
		t.Errorf("Recv = %d, want 7", got)
	}
}

// TestBlocked finds a goroutine by its state, the function it waits in
// and one that called it.
func TestBlocked(t *testing.T) {
	t.Parallel()
	c := make(chan int)
	go waitForSeven(c)
	Blocked(t, "the receiver to wait", "chan receive", "testwait.receive", "testwait.waitForSeven")
	c <- 7
}

func waitForSeven(c <-chan int) { receive(c) }

//go:noinline
func receive(c <-chan int) { <-c }
