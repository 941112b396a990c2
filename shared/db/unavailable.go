package db

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says the database could not serve a
// request, as opposed to a statement that failed: no connection could be
// opened, the connection broke (the server restarted, failed over or was
// cut off), the server is shutting down or starting, or no answer came
// before the context's deadline (every pooled connection stayed busy, or
// the server did not answer). It is false for a cancelled context: that
// is the caller leaving, not the database.
//
// It is the one place that knows how pgx reports these; the API answers
// them with 503, and the store retries a read that met one once.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true // whatever the cause, even a server error while connecting (57P03)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin shutdown, crash shutdown, cannot connect now
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exception
	}
	var netErr *net.OpError
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) ||
		pgconn.SafeToRetry(err)
}
