package testwait

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer a process or goroutine may write while the test
// reads it (a server's log, a child's stderr), for instance in a condition
// it waits on with Until.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
