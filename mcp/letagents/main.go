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
// Flags may come before or after the other arguments ("--" ends them);
// --help or -h on any command prints its usage and exits 0.
//
// `letagents hook [--filter all|addressed] [--limit N] [Event]` is what an
// agent runtime's hooks run (package hook): it reads the hook's JSON on
// stdin and prints the room's unread messages for the runtime to put in
// the agent's context. `letagents hook install [--agent claude|codex|gemini]
// [--dir DIR] [--command CMD] [--filter F] [--local]` writes the hook
// configuration into the project (--local: Claude Code's personal
// .claude/settings.local.json).
// `letagents doctor [--cwd DIR] [--json]` checks the set-up of a directory
// (package doctor) and prints the fix of each failure.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/letagents/letagents-go/mcp/cmdline"
	"github.com/letagents/letagents-go/mcp/doctor"
	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/letagents/internal/hookcmd"
	"github.com/letagents/letagents-go/mcp/server"
	"github.com/letagents/letagents-go/mcp/state"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "letagents:", err)
		os.Exit(1)
	}
}

// run is the command line: nil is exit status 0.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage asked for is printed: a success
	}
	return err
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "hook" {
		return runHook(ctx, args[1:], getenv, stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "doctor" {
		return runDoctor(ctx, args[1:], getenv, stdout, stderr)
	}
	flags := newFlags("letagents [--cwd DIR]  (or: letagents hook --help, letagents doctor --help)", stderr)
	cwd := flags.String("cwd", getenv("LETAGENTS_CWD"), "the directory whose repository picks the room (default: the working directory)")
	rest, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q (letagents hook …, when meant, comes first)", rest[0])
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

// runHook is `letagents hook …`: one hook event answered (hookcmd.Run;
// in the built binary hookcmd's init answers it before main runs), or
// the hooks installed.
func runHook(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "install" {
		flags := newFlags("letagents hook install [--agent "+strings.Join(hook.Agents(), "|")+"] [--dir DIR] [--command CMD] [--filter all|addressed] [--local]", stderr)
		var cfg hook.InstallConfig
		flags.StringVar(&cfg.Agent, "agent", "claude", "the agent runtime: "+strings.Join(hook.Agents(), ", "))
		flags.StringVar(&cfg.Dir, "dir", ".", "the project directory")
		flags.StringVar(&cfg.Command, "command", "letagents", "how the runtime runs letagents")
		flags.StringVar(&cfg.Filter, "filter", "", "all (default) or addressed: the messages the hooks bring")
		flags.BoolVar(&cfg.Local, "local", false, "claude: write .claude/settings.local.json (yours alone) instead of .claude/settings.json (shared with the team)")
		rest, err := parseFlags(flags, args[1:])
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return fmt.Errorf("letagents hook install: unexpected argument %q", rest[0])
		}
		return hook.Install(cfg, stdout)
	}
	return hookcmd.Run(ctx, args, getenv, stdin, stdout, stderr)
}

// runDoctor is `letagents doctor`: the set-up of a directory checked,
// one line per check with the fix of each failure; it fails when a
// check does.
func runDoctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	flags := newFlags("letagents doctor [--cwd DIR] [--json]\n"+
		"Checks the server, the sign-in, the room of DIR, the agent sessions saved for it, and the hooks of every agent runtime installed.", stderr)
	cwd := flags.String("cwd", getenv("LETAGENTS_CWD"), "the directory to check (default: the working directory)")
	asJSON := flags.Bool("json", false, "print the report as JSON")
	rest, err := parseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("letagents doctor: unexpected argument %q", rest[0])
	}
	dir := *cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fmt.Errorf("--cwd: %w", err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--cwd %s: not a directory", dir)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := server.LoadConfig(getenv, dir, logger)
	if err != nil {
		return err
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	homes := hook.Homes{Home: home, Claude: getenv("CLAUDE_CONFIG_DIR"), Codex: getenv("CODEX_HOME"), Gemini: cmp.Or(getenv("GEMINI_CLI_HOME"), home)}
	if homes.Codex == "" && home != "" {
		homes.Codex = filepath.Join(home, ".codex")
	}
	claudeState := filepath.Join(home, ".claude.json")
	if homes.Claude != "" {
		claudeState = filepath.Join(homes.Claude, ".claude.json")
	}
	// What a Codex worker's MCP server must be given too, when set here.
	env := map[string]string{}
	for _, k := range []string{"LETAGENTS_TOKEN", state.PathEnv} {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	return doctor.Run(ctx, doctor.Config{Dir: dir, Version: server.Version, APIURL: getenv("LETAGENTS_API_URL"), DefaultAPIURL: server.DefaultAPIURL,
		Token: cfg.EnvToken, StatePath: cfg.StatePath, Env: env, Homes: homes, ClaudeState: claudeState,
		GeminiTrustedFolders: cmp.Or(getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH"), filepath.Join(homes.Gemini, ".gemini", "trustedFolders.json")),
		GeminiTrustWorkspace: getenv("GEMINI_CLI_TRUST_WORKSPACE"), CodexBin: cmp.Or(cfg.CodexBin, "codex"), Environ: os.Environ(),
		LookPath: exec.LookPath}, *asJSON, stdout)
}

// newFlags and parseFlags read a command's arguments (package cmdline):
// flags anywhere, usage on stderr, --help a success.
var (
	newFlags   = cmdline.NewFlags
	parseFlags = cmdline.ParseFlags
)
