// Package servicetest starts the whole service for a test of a client of
// it (the MCP server, its API client, the hook, the doctor): the real
// handlers on a private schema of the test database, over real HTTP.
package servicetest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/service"
)

// Start builds the service from vars, read as the environment is, with
// logs at error level only; adjust, when not nil, changes the
// configuration before it starts (a fake GitHub, a test clock). The
// service closes when the test ends.
func Start(t testing.TB, vars map[string]string, adjust func(*config.Config)) (*service.Service, *pgtest.DB) {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.LogLevel = slog.LevelError
	if adjust != nil {
		adjust(&cfg)
	}
	d := pgtest.New(t)
	svc, err := service.FromPool(context.Background(), cfg, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc, d
}

// Serve is Start behind an HTTP server, whose URL it returns. At the
// test's end parked long-polls are drained before the server closes.
func Serve(t testing.TB, vars map[string]string, adjust func(*config.Config)) (string, *service.Service, *pgtest.DB) {
	t.Helper()
	svc, d := Start(t, vars, adjust)
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(srv.Close)
	t.Cleanup(svc.Drain)
	return srv.URL, svc, d
}
