// Package doctor is `letagents doctor`: it checks, for one working
// directory, everything an agent there needs to meet its room — the
// server and its version, the sign-in (or that sign-in is off), the room
// the directory maps to, the agent sessions saved for it, and, for each
// agent runtime installed, whether its hooks are installed, switched on
// and trusted — and says how to fix each failure. It only reads: it
// changes no file and no state on the server, and marks no message read.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/letagents/letagents-go/mcp/gitctx"
	"github.com/letagents/letagents-go/mcp/hook"
	"github.com/letagents/letagents-go/mcp/state"
)

// Status is a check's outcome.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works, but not as well as it could; a fix may be given
	Fail Status = "fail" // broken: the fix says what to do
	Skip Status = "skip" // not checked: what it needs is missing or failed
)

// rank orders statuses from best to worst.
func (s Status) rank() int {
	switch s {
	case Fail:
		return 3
	case Warn:
		return 2
	case OK:
		return 1
	}
	return 0
}

// Check is one line of the report.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Fix is what to do: the exact command or configuration lines. Every
	// failing check has one.
	Fix string `json:"fix,omitempty"`
}

// Report is the whole diagnosis.
type Report struct {
	Dir     string `json:"dir"`
	Version string `json:"version"`
	APIURL  string `json:"api_url"`
	// APIFrom says where APIURL came from: "LETAGENTS_API_URL", "saved
	// session" or "default".
	APIFrom string  `json:"api_url_from"`
	Room    string  `json:"room,omitempty"`
	Checks  []Check `json:"checks"`
	// OK is false when a check failed.
	OK bool `json:"ok"`
}

// Config is what the doctor reads besides the directory's files. main
// fills it from the environment, once.
type Config struct {
	// Dir is the directory checked (absolute).
	Dir string
	// Version is this letagents binary's.
	Version string
	// APIURL is LETAGENTS_API_URL ("" when unset); DefaultAPIURL is the
	// MCP server's default.
	APIURL, DefaultAPIURL string
	// Token is LETAGENTS_TOKEN ("" when unset).
	Token string
	// StatePath is the state file the MCP server uses.
	StatePath string
	// Env holds the LETAGENTS_* variables set in this environment that a
	// Codex worker's MCP server needs too (the token, the state path).
	Env map[string]string
	// Homes are the runtimes' user configuration directories.
	Homes hook.Homes
	// ClaudeState is Claude Code's own state file, which records the
	// folders a person trusted ($CLAUDE_CONFIG_DIR/.claude.json, default
	// ~/.claude.json).
	ClaudeState string
	// GeminiTrustedFolders is Gemini CLI's trustedFolders.json
	// (GEMINI_CLI_TRUSTED_FOLDERS_PATH, default <Gemini home>/.gemini/…);
	// GeminiTrustWorkspace is GEMINI_CLI_TRUST_WORKSPACE.
	GeminiTrustedFolders, GeminiTrustWorkspace string
	// CodexBin is the codex binary asked about its configuration
	// (LETAGENTS_CODEX_BIN, default codex).
	CodexBin string
	// Environ is the environment codex runs in (CODEX_HOME is set from
	// Homes.Codex).
	Environ []string
	// LookPath finds a program as the runtimes' shells would; nil for
	// exec.LookPath.
	LookPath func(string) (string, error)
	// HTTPClient sends the requests; nil for a default one.
	HTTPClient *http.Client
	// Timeout bounds each request to the server and the codex query.
	Timeout time.Duration
}

// DefaultTimeout bounds each request and the codex query: long enough
// for a cold codex on a loaded machine, short enough for a person.
const DefaultTimeout = 60 * time.Second

// ErrFailed is Run's error (wrapped) when a check failed.
var ErrFailed = errors.New("checks failed")

// Run diagnoses cfg.Dir and writes the report to out, as lines or as
// JSON; it returns ErrFailed (wrapped) when a check failed.
func Run(ctx context.Context, cfg Config, asJSON bool, out io.Writer) error {
	r := Diagnose(ctx, cfg)
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	} else if err := r.write(out); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if !r.OK {
		failed := 0
		for _, c := range r.Checks {
			if c.Status == Fail {
				failed++
			}
		}
		return fmt.Errorf("doctor: %d of %d %w", failed, len(r.Checks), ErrFailed)
	}
	return nil
}

// Diagnose runs every check.
func Diagnose(ctx context.Context, cfg Config) Report {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	r := Report{Dir: cfg.Dir, Version: cfg.Version}
	repo, err := gitctx.Detect(ctx, cfg.Dir)
	if err != nil {
		repo = gitctx.Context{Dir: cfg.Dir}
	}
	r.Room = repo.Room
	st, stateErr := state.Open(cfg.StatePath).Load()
	r.APIURL, r.APIFrom = apiURL(cfg, st, repo.Room)
	d := &diagnosis{cfg: cfg, repo: repo, st: st, stateErr: stateErr, api: r.APIURL}
	r.Checks = append(r.Checks, d.server(ctx))
	r.Checks = append(r.Checks, d.signIn(ctx))
	r.Checks = append(r.Checks, d.room(ctx))
	r.Checks = append(r.Checks, d.sessions(ctx))
	r.Checks = append(r.Checks, d.clients(ctx)...)
	r.OK = true
	for _, c := range r.Checks {
		if c.Status == Fail {
			r.OK = false
		}
	}
	return r
}

// diagnosis is what the checks share.
type diagnosis struct {
	cfg      Config
	repo     gitctx.Context
	st       state.State
	stateErr error
	api      string
	// reachable is set by the server check: the others need the server.
	reachable bool
}

// apiURL is the server the directory's agents use: LETAGENTS_API_URL,
// else the one the newest session saved for the room was registered with
// (what the hooks use), else the default.
func apiURL(cfg Config, st state.State, room string) (url, from string) {
	if cfg.APIURL != "" {
		return strings.TrimRight(cfg.APIURL, "/"), "LETAGENTS_API_URL"
	}
	var newest state.AgentSession
	for _, s := range st.AgentSessions {
		if s.RoomID == room && room != "" && s.APIURL != "" && s.CreatedAt >= newest.CreatedAt {
			newest = s
		}
	}
	if newest.APIURL != "" {
		return strings.TrimRight(newest.APIURL, "/"), "saved session"
	}
	return cfg.DefaultAPIURL, "default"
}

// write prints the report for a person: a heading, then one line per
// check, each fix indented under its check.
func (r Report) write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "letagents doctor %s: %s\n", r.Version, r.Dir)
	fmt.Fprintf(&b, "server %s (from %s)\n", r.APIURL, r.APIFrom)
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	for _, c := range r.Checks {
		indent := strings.Repeat(" ", 6+width+2)
		msg := strings.Split(c.Message, "\n")
		fmt.Fprintf(&b, "%-4s  %-*s  %s\n", c.Status, width, c.Name, msg[0])
		for _, l := range msg[1:] {
			fmt.Fprintf(&b, "%s%s\n", indent, l)
		}
		if c.Fix != "" {
			lines := strings.Split(c.Fix, "\n")
			fmt.Fprintf(&b, "%sfix: %s\n", indent, lines[0])
			for _, l := range lines[1:] {
				fmt.Fprintf(&b, "%s     %s\n", indent, l)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// problems gathers what one check found: the worst status, the messages
// a line each, the fixes in order.
type problems struct {
	status Status
	msgs   []string
	fixes  []string
}

func (p *problems) add(s Status, msg, fix string) {
	if s.rank() > p.status.rank() {
		p.status = s
	}
	if msg != "" {
		p.msgs = append(p.msgs, msg)
	}
	if fix != "" && !slices.Contains(p.fixes, fix) {
		p.fixes = append(p.fixes, fix)
	}
}

func (p *problems) check(name string) Check {
	return Check{Name: name, Status: p.status, Message: strings.Join(p.msgs, "\n"), Fix: strings.Join(p.fixes, "\n")}
}
