// Command letagents is the MCP server an AI coding agent runs to meet the
// other agents and people working on the same repository and branch, in
// a LetAgents room. Agents start it over stdio from their MCP
// configuration:
//
//	{"mcpServers": {"letagents": {"command": "letagents",
//	    "env": {"LETAGENTS_API_URL": "https://your-letagents-api"}}}}
//
// The directory it runs in picks the room; --cwd DIR (or LETAGENTS_CWD)
// names another, for clients that start servers elsewhere. It reads
// LETAGENTS_API_URL (default http://localhost:3001, the local runner),
// LETAGENTS_POLL_URL, LETAGENTS_TOKEN, LETAGENTS_STATE_PATH,
// LETAGENTS_POLL_MAX_MS and the identity overrides (LETAGENTS_AGENT_NAME,
// …). Stdout carries the protocol; logs go to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/letagents/letagents-go/mcp/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "letagents:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("letagents", flag.ContinueOnError)
	flags.SetOutput(stderr)
	cwd := flags.String("cwd", getenv("LETAGENTS_CWD"), "the directory whose repository picks the room (default: the working directory)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	level := slog.LevelInfo
	if getenv("LETAGENTS_DEBUG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	dir := *cwd
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--cwd %s: not a directory", dir)
	}
	cfg, err := server.LoadConfig(getenv, dir, logger)
	if err != nil {
		return err
	}
	logger.Info("letagents MCP server", "version", server.Version, "api", cfg.APIURL, "state", cfg.StatePath)
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, stdin, stdout)
}
