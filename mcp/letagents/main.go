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
//
// `letagents hook [--filter all|addressed] [--limit N] [Event]` is what an
// agent runtime's hooks run (package hook): it reads the hook's JSON on
// stdin and prints the room's unread messages for the runtime to put in
// the agent's context. `letagents hook install [--agent claude|codex|gemini]
// [--dir DIR] [--command CMD] [--filter F]` writes the hook configuration
// into the project.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/shared/letagents"
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
	if len(args) > 0 && args[0] == "hook" {
		return runHook(ctx, args[1:], getenv, stdin, stdout, stderr)
	}
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

// runHook is `letagents hook …`: one hook event answered, or the hooks
// installed. Only a mistake in its arguments fails it: a hook that cannot
// reach the room prints nothing and exits 0, so the agent goes on.
func runHook(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "install" {
		flags := flag.NewFlagSet("letagents hook install", flag.ContinueOnError)
		flags.SetOutput(stderr)
		var cfg hook.InstallConfig
		flags.StringVar(&cfg.Agent, "agent", "claude", "the agent runtime: "+strings.Join(hook.Agents(), ", "))
		flags.StringVar(&cfg.Dir, "dir", ".", "the project directory")
		flags.StringVar(&cfg.Command, "command", "letagents", "how the runtime runs letagents")
		flags.StringVar(&cfg.Filter, "filter", "", "all (default) or addressed: the messages the hooks bring")
		if err := flags.Parse(args[1:]); err != nil {
			return err
		}
		return hook.Install(cfg, stdout)
	}
	flags := flag.NewFlagSet("letagents hook", flag.ContinueOnError)
	flags.SetOutput(stderr)
	filter := flags.String("filter", "", "all (default) or addressed: @mentions of the agent and replies in its threads")
	limit := flags.Int("limit", 0, "the most messages one run brings (default 10, at most 50)")
	cwd := flags.String("cwd", getenv("LETAGENTS_CWD"), "the directory whose repository picks the room, when the hook input gives none")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 1 {
		return fmt.Errorf("letagents hook: one event at most, got %q", flags.Args())
	}
	f, err := letagents.ParseUnreadFilter(*filter)
	if err != nil {
		return fmt.Errorf("--filter: %w", err)
	}
	dir := *cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := server.LoadConfig(getenv, dir, logger)
	if err != nil {
		return err
	}
	return hook.Run(ctx, hook.Config{APIURL: cfg.APIURL, Token: cfg.EnvToken, StatePath: cfg.StatePath, Getenv: getenv, Dir: dir,
		Filter: f, Limit: *limit, Logger: logger}, flags.Arg(0), stdin, stdout)
}
