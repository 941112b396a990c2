// Command poll serves long-polls (GET …/messages/poll) and event streams
// (GET …/messages/stream). Under Lambda it is a function like the others,
// which refuses streams (a function answers only once its answer is
// whole); anywhere else (a container, a VM) it is a long-running HTTP
// server on PORT whose one LISTEN connection serves every parked waiter
// and open stream, and which on SIGTERM answers the waiters and ends the
// streams. With LETAGENTS_BASE_URL set it serves the hosted MCP endpoint
// too (/mcp, package mcphost). It also answers service.LivePath, 200 while the process
// serves, for the load balancer's health check (a database failover must
// not get every task replaced), and service.ReadyPath, 503 while its
// listener is down or it is draining, for operators.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	mcpserver "github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/lambdaapi"
	"github.com/letagents/letagents-go/shared/mcphost"
	"github.com/letagents/letagents-go/shared/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, getenv func(string) string) error {
	if lambdaapi.Detected(getenv) {
		return lambdaapi.Run(ctx, getenv, api.GroupPoll)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("start poll server: configuration: %w", err)
	}
	svc, err := service.Open(ctx, cfg, api.GroupPoll)
	if err != nil {
		return fmt.Errorf("start poll server: %w", err)
	}
	defer svc.Close()
	handler := svc.Handler
	if cfg.BaseURL != "" {
		// The hosted MCP endpoint's sessions call the API where agents
		// do, and their long-polls here.
		hosted, err := mcphost.New(svc, cfg.BaseURL, selfURL(cfg.Addr), cfg.BaseURL)
		if err != nil {
			return fmt.Errorf("start poll server: hosted MCP: %w", err)
		}
		defer hosted.Close()
		handler = mcpserver.Mount(handler, func() *mcpserver.Hosted { return hosted })
	} else {
		svc.Logger.Warn("LETAGENTS_BASE_URL is unset: the hosted MCP endpoint (/mcp) is off, since it reaches the API there")
	}
	return httpserver.Serve(ctx, cfg.Addr, svc.WithReadiness(handler), httpserver.Options{Drain: svc.Drain, Grace: httpserver.ShutdownGrace,
		BodyTimeout: cfg.BodyTimeout, IdleTimeout: cfg.IdleTimeout,
		Ready: func(a net.Addr) { svc.Logger.Info("poll server listening", "url", httpserver.Listening(a)) }})
}

// selfURL is this server as its own process reaches it: the port of
// addr on loopback.
func selfURL(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		port = strings.TrimPrefix(addr, ":")
	}
	return "http://" + net.JoinHostPort("127.0.0.1", port)
}
