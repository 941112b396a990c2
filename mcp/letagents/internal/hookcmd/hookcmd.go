// Package hookcmd is `letagents hook [Event]`, the command an agent
// runtime's hooks run around the agent's steps, and it answers it before
// the rest of the binary is initialised.
//
// The runtime holds the agent's tool call until the hook exits, and
// initialising the MCP server's packages took longer than the hook's
// whole work: the server's argument validator and mcp-go's server package
// both link a JSON-schema library (github.com/santhosh-tekuri/jsonschema/v6)
// that compiles every draft's meta-schema in its init. Go initialises packages in the
// order of their import paths as far as their imports allow, and this one
// (github.com/letagents/…) needs nothing that waits for
// github.com/mark3labs/… or github.com/santhosh-tekuri/… (package hook
// speaks HTTP without net/http, which would): so its init answers the
// hook event and exits before those are initialised.
// mcp/letagents' TestHookSkipsServerInit holds the binary to it. main
// still dispatches to Run, for its tests and for what init leaves to it.
package hookcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/letagents/letagents-go/mcp/apiurl"
	"github.com/letagents/letagents-go/mcp/cmdline"
	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/identity"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/letagents"
)

func init() {
	args := os.Args[1:]
	if !Handles(args) {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := Run(ctx, args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "letagents:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Handles says whether args (the command's, without the program name)
// are a hook event for Run: "hook", then a flag, an event name or
// nothing. Any other word after "hook" (install, and any later
// subcommand) is main's.
func Handles(args []string) bool {
	if len(args) == 0 || args[0] != "hook" {
		return false
	}
	return len(args) == 1 || strings.HasPrefix(args[1], "-") || hook.IsEvent(args[1])
}

// Run is `letagents hook [--filter all|addressed] [--limit N] [Event]`
// (args after "hook"): one hook event answered. Only a mistake in its
// arguments or environment fails it: a run that cannot reach the room
// prints nothing and returns nil, so the agent goes on.
func Run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := cmdline.NewFlags("letagents hook [--filter all|addressed] [--limit N] [Event]\n"+
		"       letagents hook install --help\n"+
		"Event is one of "+strings.Join(hook.EventNames(), ", ")+" (else the input's hook_event_name).", stderr)
	filter := flags.String("filter", "", "all (default) or addressed: @mentions of the agent and replies in its threads")
	limit := flags.Int("limit", 0, "the most messages one run brings (default 10, at most 50)")
	// A hook finds its session by its runtime key alone, never by the
	// room of a directory; --cwd is still read so that hook commands
	// written with it go on running.
	flags.String("cwd", "", "ignored: a hook's session is the one saved under its agent's runtime key")
	events, err := cmdline.ParseFlags(flags, args)
	if err != nil {
		return err
	}
	if len(events) > 1 {
		return fmt.Errorf("letagents hook: one event at most, got %q", events)
	}
	event := ""
	if len(events) == 1 {
		event = events[0]
	}
	f, err := letagents.ParseUnreadFilter(*filter)
	if err != nil {
		return fmt.Errorf("--filter: %w", err)
	}
	// The API of the hook's own environment wins; without one, the
	// session's saved API, which the MCP server's environment named. The
	// server's configuration is not read: none of the rest is a hook's.
	apiURL := strings.TrimRight(getenv("LETAGENTS_API_URL"), "/")
	if err := apiurl.Check(apiURL); apiURL != "" && err != nil {
		return fmt.Errorf("LETAGENTS_API_URL=%q: %w", apiURL, err)
	}
	statePath, err := state.DefaultPath(getenv)
	if err != nil {
		return fmt.Errorf("find the state file (set %s): %w", state.PathEnv, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return hook.Run(ctx, hook.Config{APIURL: apiURL, DefaultAPIURL: apiurl.Default, Token: strings.TrimSpace(getenv("LETAGENTS_TOKEN")),
		StatePath: statePath, Getenv: getenv, ClientProcess: identity.ProcessKey(os.Getppid()), Filter: f, Limit: *limit, Logger: logger},
		event, stdin, stdout)
}
