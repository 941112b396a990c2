//go:build linux || darwin

package db

import (
	"errors"
	"net"
	"syscall"
)

// socketQuiet reports whether c's socket is open with nothing waiting to
// be read, without reading it or waiting: an idle PostgreSQL connection
// has nothing to say, and a closed one has its end (or a FATAL message
// before it) waiting. false when it cannot tell.
func socketQuiet(c net.Conn) bool {
	if tlsConn, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tlsConn.NetConn() // TLS's records are read from the socket under it
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	// Control, not Read: Read would wait for the socket's read lock, which
	// a reader blocked on the idle socket holds until the server speaks
	// (pgx leaves its background reader so after a write slower than
	// 15 ms, as on a busy machine), and the pool would hang handing the
	// connection out. The peek takes nothing from that reader.
	var peekErr error
	var b [1]byte
	if err := raw.Control(func(fd uintptr) {
		_, _, peekErr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		return false
	}
	return errors.Is(peekErr, syscall.EAGAIN) // open, nothing to read (EWOULDBLOCK is EAGAIN on both systems)
}
