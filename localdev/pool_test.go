package main

import (
	"context"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/testwait"
)

func TestSizeFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		procs, free int
		want        int32
	}{
		{"2 cores: the minimum", 2, 97, 16},
		{"8 cores: 4 each", 8, 97, 32},
		{"64 cores: the maximum", 64, 997, 64},
		{"half the free connections", 8, 40, 20},
		{"a crowded database: pgx's default", 8, 3, 4},
		{"none free: still pgx's default", 2, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sizeFor(tt.procs, tt.free); got != tt.want {
				t.Errorf("sizeFor(%d cores, %d free) = %d, want %d", tt.procs, tt.free, got, tt.want)
			}
		})
	}
}

// The runner sizes its pool from the database it reaches, and says so;
// DB_MAX_CONNS overrides.
func TestRunnerPool(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	n, why, err := poolSize(context.Background(), d.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n < leastConns || n > maxConns || !strings.Contains(why, "free") {
		t.Errorf("poolSize = %d (%s), want %d to %d and the free connections named", n, why, leastConns, maxConns)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"sized by the runner", nil, "connections (4 per core"},
		{"DB_MAX_CONNS", map[string]string{"DB_MAX_CONNS": "7"}, "pool: 7 connections (DB_MAX_CONNS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DB_URL": d.URL, "PORT": "0", "LETAGENTS_LOCALDEV_DIR": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			in := start(t, env)
			// Printed once listening, after the line start waits for.
			testwait.Until(t, "the pool line", func() bool { return strings.Contains(in.stdout.String(), "\npool: ") })
			if out := in.stdout.String(); !strings.Contains(out, tt.want) {
				t.Errorf("stdout:\n%s\nwant a pool line with %q", out, tt.want)
			}
		})
	}
}
