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
