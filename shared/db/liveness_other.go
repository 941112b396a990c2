//go:build !linux && !darwin

package db

import "net"

// socketQuiet cannot look at a socket here: every connection idle past
// lookAfter is pinged, as pgx does by default.
func socketQuiet(net.Conn) bool { return false }
