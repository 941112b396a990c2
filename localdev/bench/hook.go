package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/state"
	"github.com/letagents/letagents-go/shared/auth"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/wire"
)

// hookRoom is the room of the hook rows' agent session.
const hookRoom = "bench-hook"

// hookInput is what Claude Code gives a PostToolUse hook (the %s its
// session id), cut to what a run reads.
const hookInput = `{"session_id": "%s", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": {"stdout": "ok"}}`

// hookBench times the hook process, `letagents hook PostToolUse`, built
// as make dist builds it and run as an agent runtime runs it (a process
// per event, the hook JSON on stdin), from exec to exit: against the local
// runner with a saved session, with nothing unread and with one message
// unread each run, and against a server that takes the connection and
// never answers. Floor H is the exec of a Go program that does nothing;
// the diag rows are the binary's own start, as the MCP server (every
// package initialised) and as the hook. The fast cases alternate run by
// run so a slow moment of the machine falls on all of them.
func (b *bench) hookBench(ctx context.Context, runnerURL string) error {
	dir, err := os.MkdirTemp("", "letagents-bench-hook-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, floor := filepath.Join(dir, "letagents"), filepath.Join(dir, "nothing")
	if err := os.WriteFile(filepath.Join(dir, "nothing.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return err
	}
	// The floor is built outside the module, as a program of its own; both
	// without symbol table and DWARF, as make dist builds the binary.
	for _, c := range []struct{ dir, out, pkg string }{
		{"", bin, "github.com/letagents/letagents-go/mcp/letagents"},
		{dir, floor, filepath.Join(dir, "nothing.go")},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", c.out, c.pkg)
		cmd.Dir = c.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", c.pkg, err, out)
		}
	}

	// A server that accepts and never answers: the hook's bound is all
	// that ends its request.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer hang.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()

	// The state file's sign-in is the last session's owner: the one on
	// the runner.
	statePath := filepath.Join(dir, "state.json")
	if err := b.hookSession(ctx, statePath, "claude:hang", "http://"+hang.Addr().String()); err != nil {
		return err
	}
	if err := b.hookSession(ctx, statePath, "claude:bench", runnerURL); err != nil {
		return err
	}
	env := []string{"LETAGENTS_STATE_PATH=" + statePath}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "LETAGENTS_") && !strings.HasPrefix(k, "CLAUDE") && !strings.HasPrefix(k, "CODEX_") && !strings.HasPrefix(k, "GEMINI_") {
			env = append(env, kv)
		}
	}
	run := func(sessionID string, wantOut bool, name string, args ...string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(env, "CLAUDE_CODE_SESSION_ID="+sessionID)
		cmd.Stdin = strings.NewReader(fmt.Sprintf(hookInput, sessionID))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		switch {
		case err != nil:
			return 0, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
		case wantOut != (stdout.Len() > 0):
			return 0, fmt.Errorf("%s %s: printed %q (stderr %q); want an answer: %v", name, strings.Join(args, " "), stdout.String(), stderr.String(), wantOut)
		}
		return d, nil
	}

	n, nHang := 200, 20
	if b.opt.quick {
		n, nHang = 60, 6
	}
	var floorH, serverStart, start, idle, one, hung dist
	for i := range 10 + n { // the first 10 of each warm the page cache and the runner's pool
		if err := ctx.Err(); err != nil {
			return err
		}
		d0, err := run("bench", false, floor)
		if err != nil {
			return err
		}
		d1, err := run("bench", false, bin, "hook", "--help")
		if err != nil {
			return err
		}
		dServer, err := run("bench", false, bin, "--help")
		if err != nil {
			return err
		}
		d2, err := run("bench", false, bin, "hook", "PostToolUse")
		if err != nil {
			return err
		}
		if _, _, err := b.svc.Store.SendMessage(ctx, letagents.NewMessage{RoomID: hookRoom, Sender: "bench", Text: fmt.Sprintf("hook %d", i)}); err != nil {
			return err
		}
		d3, err := run("bench", true, bin, "hook", "PostToolUse")
		if err != nil {
			return err
		}
		if i >= 10 {
			floorH, start, idle, one = append(floorH, d0), append(start, d1), append(idle, d2), append(one, d3)
			serverStart = append(serverStart, dServer)
		}
	}
	for range nHang {
		d, err := run("hang", false, bin, "hook", "PostToolUse")
		if err != nil {
			return err
		}
		hung = append(hung, d)
	}
	progress("hook: floor H p50 %s; letagents start %s, as the hook %s; hook, nothing unread %s, one unread %s; hanging server p50 %s p99 %s",
		ms(floorH.pct(.5)), ms(serverStart.pct(.5)), ms(start.pct(.5)), ms(idle.pct(.5)), ms(one.pct(.5)), ms(hung.pct(.5)), ms(hung.pct(.99)))

	vs := func(d dist) (string, string) {
		return ratio(d.pct(.5), floorH.pct(.5)), ratio(d.pct(.99), floorH.pct(.99))
	}
	b.add(secHook, func() row {
		return row{name: "**Floor H**: exec of a Go program that does nothing, to its exit",
			p50: ms(floorH.pct(.5)), p99: ms(floorH.pct(.99)), r50: "1×", r99: "1×",
			notes: fmt.Sprintf("n=%d, `func main() {}` built as the binary is (-trimpath, -ldflags '-s -w', CGO_ENABLED=0); the hook rows below alternate with it run by run", len(floorH))}
	})
	b.add(secHook, func() row {
		r50, r99 := vs(serverStart)
		return row{name: "diag: `letagents --help` (the binary's start with every package initialised, no I/O)",
			p50: ms(serverStart.pct(.5)), p99: ms(serverStart.pct(.99)), r50: r50, r99: r99,
			notes: fmt.Sprintf("n=%d; ratio vs floor H: what the MCP server's packages cost at start (GODEBUG=inittrace=1 shows github.com/santhosh-tekuri/jsonschema/v6, which mcp-go's server package links, as most of it); a hook skips them", len(serverStart))}
	})
	b.add(secHook, func() row {
		r50, r99 := vs(start)
		return row{name: "diag: `letagents hook --help` (the hook's start: answered before the server's packages are initialised, no I/O)",
			p50: ms(start.pct(.5)), p99: ms(start.pct(.99)), r50: r50, r99: r99,
			notes: fmt.Sprintf("n=%d; ratio vs floor H (mcp/letagents/internal/hookcmd)", len(start))}
	})
	b.add(secHook, func() row {
		r50, r99 := vs(idle)
		return row{name: "Hook: `letagents hook PostToolUse` on the local runner, nothing unread",
			p50: ms(idle.pct(.5)), p99: ms(idle.pct(.99)), r50: r50, r99: r99,
			notes: fmt.Sprintf("n=%d, ratio vs floor H; from exec to exit: the hook JSON read from stdin, the saved session found in the state file by its runtime key (no git), one POST …/messages/unread to the runner (`go run ./localdev`, a new connection each run); target 15 ms p50", len(idle))}
	})
	b.add(secHook, func() row {
		r50, r99 := vs(one)
		return row{name: "Hook: the same, one message unread each run",
			p50: ms(one.pct(.5)), p99: ms(one.pct(.99)), r50: r50, r99: r99,
			notes: fmt.Sprintf("n=%d; a message is sent (untimed) before each run, which takes it, records its delivery and prints it as additionalContext", len(one))}
	})
	b.add(secHook, func() row {
		r50, r99 := vs(hung)
		return row{name: "Hook: a server that never answers",
			p50: ms(hung.pct(.5)), p99: ms(hung.pct(.99)), r50: r50, r99: r99,
			notes: fmt.Sprintf("n=%d; the session's API accepts the connection and never answers: the run ends on its own bound (hook.DefaultTimeout, %s from its start), delivering nothing; what a gone or hung server adds to each tool call, to be under 1 s", len(hung), hook.DefaultTimeout)}
	})
	return nil
}

// hookSession registers a worker session in hookRoom straight in the store
// (with an account of its own, as no GitHub signs anyone in here) and
// saves it in the state file under runtimeKey with apiURL, as the
// agent's MCP server does; the state file's sign-in is the account's.
func (b *bench) hookSession(ctx context.Context, statePath, runtimeKey, apiURL string) error {
	now := time.Now()
	login := "bench-hook-" + strings.NewReplacer(":", "-").Replace(runtimeKey)
	a, owner, token, err := b.registerWorker(ctx, hookRoom, login, "Hook", now)
	if err != nil {
		return fmt.Errorf("register the hook's session: %w", err)
	}
	id := letagents.WireID(letagents.AgentSessionPrefix, a.ID)
	err = state.Open(statePath).Update(ctx, func(st *state.State) error {
		st.Auth = &state.Auth{Token: owner, StoredAt: letagents.FormatTime(now), Source: state.AuthSourceDeviceFlow}
		st.AgentSessions[id] = state.AgentSession{SessionID: id, SessionToken: token, RoomID: hookRoom, ActorLabel: a.ActorLabel,
			DisplayName: a.DisplayName, RuntimeKey: runtimeKey, CreatedAt: letagents.FormatTime(a.CreatedAt), APIURL: apiURL}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save the hook's session: %w", err)
	}
	return nil
}

// agentHeaders registers a worker session of account login in room
// (registerWorker) and answers the headers an agent calls with as it:
// its owner's bearer token and the session's credentials.
func (b *bench) agentHeaders(ctx context.Context, room, login string) (http.Header, error) {
	a, owner, token, err := b.registerWorker(ctx, room, login, "Agent", time.Now())
	if err != nil {
		return nil, err
	}
	return http.Header{"Authorization": {"Bearer " + owner},
		wire.SessionIDHeader: {letagents.WireID(letagents.AgentSessionPrefix, a.ID)}, wire.SessionTokenHeader: {token}}, nil
}

// registerWorker makes an account login with an owner token, its agent
// display and a worker session of that agent in room (created if need
// be), straight in the store, as no GitHub signs anyone in here; it
// returns the session, the owner token and the session's token.
func (b *bench) registerWorker(ctx context.Context, room, login, display string, now time.Time) (a letagents.AgentSession, owner, token string, err error) {
	if _, _, err := b.svc.Store.EnsureRoom(ctx, room); err != nil {
		return a, "", "", err
	}
	owner, token = auth.NewToken(), auth.NewToken()
	acct, _, err := b.svc.Store.SignIn(ctx, store.SignIn{
		Account:     letagents.Account{Provider: "github", ProviderUserID: login, Login: login, DisplayName: login},
		GitHubToken: []byte{0}, OwnerTokenHash: auth.HashToken(owner), Now: now})
	if err != nil {
		return a, "", "", err
	}
	agent, _, err := b.svc.Store.UpsertAgent(ctx, letagents.Agent{OwnerAccountID: acct.ID, Name: strings.ToLower(display),
		CanonicalKey: login + "/" + strings.ToLower(display), DisplayName: display, OwnerLogin: login, OwnerLabel: login}, now)
	if err != nil {
		return a, "", "", err
	}
	a, err = b.svc.Store.CreateAgentSession(ctx, store.NewAgentSession{
		AgentSession: letagents.AgentSession{RoomID: room, Kind: letagents.SessionWorker, Runtime: "claude", AgentKey: agent.CanonicalKey,
			OwnerAccountID: acct.ID, OwnerLabel: login, IDELabel: "Claude Code"},
		TokenHash: auth.HashToken(token),
		Names:     []string{display},
		Label:     func(n string) string { return n + " | " + login + "'s agent | Claude Code" },
	}, now)
	return a, owner, token, err
}
