package api

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// spawn runs fn on a goroutine of its own and returns a wait for its end.
// A panic in fn is raised again by wait, on the caller's goroutine: there,
// in a handler, net/http's recovery ends the one request and logs it,
// where a panic on a goroutine of its own would end the process and every
// long-poll and stream it holds. The value raised again carries fn's
// stack, which the recovery's own does not show.
func spawn(fn func()) (wait func()) {
	done := make(chan struct{})
	var p *goroutinePanic
	go func() {
		defer close(done)
		ok := false
		defer func() {
			if !ok {
				p = &goroutinePanic{value: recover(), stack: debug.Stack()}
			}
		}()
		fn()
		ok = true
	}()
	return func() {
		<-done
		if p == nil {
			return
		}
		if p.value == http.ErrAbortHandler { // net/http's quiet abort, as it was raised
			panic(p.value)
		}
		panic(p)
	}
}

// goroutinePanic is a panic of a spawned goroutine, raised again.
type goroutinePanic struct {
	value any
	stack []byte
}

func (p *goroutinePanic) String() string {
	return fmt.Sprintf("%v\n\npanicked on its own goroutine:\n%s", p.value, p.stack)
}
