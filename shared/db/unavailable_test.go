package db_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/letagents/letagents-go/shared/db"
)

func TestUnavailable(t *testing.T) {
	t.Parallel()
	// A real failure to connect: nothing listens on a port just released.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, connectErr := pgconn.Connect(ctx, "postgres://postgres@"+addr+"/test?sslmode=disable")
	if connectErr == nil {
		t.Fatal("connected to a closed port")
	}

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connect refused", fmt.Errorf("open pool: %w", connectErr), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", fmt.Errorf("read: %w", &pgconn.PgError{Code: "08006"}), true},
		{"query cancelled", &pgconn.PgError{Code: "57014"}, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"broken conn", fmt.Errorf("read messages: %w", io.ErrUnexpectedEOF), true},
		{"closed conn", io.EOF, true},
		{"network", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true},
		{"deadline", fmt.Errorf("acquire: %w", context.DeadlineExceeded), true},
		{"client left", fmt.Errorf("acquire: %w", context.Canceled), false},
		{"no rows", pgx.ErrNoRows, false},
		{"a bug", errors.New("something else"), false},
	}
	for _, tt := range tests {
		if got := db.Unavailable(tt.err); got != tt.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
