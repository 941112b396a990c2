package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/testwait"
	"github.com/letagents/letagents-go/shared/wire"
)

// Bounds of the waits. They are generous: they only decide how long a
// broken run takes to fail, never whether a working one passes.
const (
	runnerStartTimeout = 60 * time.Second
	runnerStopTimeout  = 30 * time.Second
	callTimeout        = 30 * time.Second
	// waitMillis is the timeout a blocking wait_for_messages is given:
	// longer than testwait.Bound, so that only what the test sends ends
	// it, however slow the machine. The agents clamp waits at the same.
	waitMillis = 120000
	// notYetFor is how long a blocked call is watched to make sure it
	// stays blocked (the only "nothing happened" check; kept short).
	notYetFor = 200 * time.Millisecond
)

// bins are the binaries under test, built once by TestMain.
var bins struct{ runner, agent string }

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests builds the runner and the MCP server into a temporary
// directory, runs the tests, and removes the binaries.
func runTests(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "letagents-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temporary directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.runner = filepath.Join(dir, "localdev")
	bins.agent = filepath.Join(dir, "letagents")

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, b := range []struct{ out, pkg string }{{bins.runner, "./localdev"}, {bins.agent, "./mcp/letagents"}} {
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// moduleRoot is the module's root: this package is mcp/e2e, and tests run
// in their package's directory.
func moduleRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	if !bytes.Contains(gomod, []byte("module github.com/letagents/letagents-go\n")) {
		return "", fmt.Errorf("%s is not the letagents-go module", root)
	}
	return root, nil
}

// urlWatch is the runner's stdout: it keeps everything written and hands
// over the URL of the "export LETAGENTS_API_URL=" line once it is whole.
type urlWatch struct {
	testwait.Buffer
	once sync.Once
	url  chan string
}

func (w *urlWatch) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	lines := strings.Split(w.String(), "\n")
	// Only complete lines count: the last piece may still grow.
	for _, line := range lines[:len(lines)-1] {
		if u, ok := strings.CutPrefix(line, "export LETAGENTS_API_URL="); ok {
			w.once.Do(func() { w.url <- strings.TrimSpace(u) })
		}
	}
	return n, err
}

// runner is a localdev process serving the whole API.
type runner struct {
	URL    string
	GitHub *githubtest.Server // nil for a runner without a GitHub app
	// log is the runner's stderr: its request log among the rest; stdout
	// its start banner.
	log, stdout *testwait.Buffer
}

// requests are the statuses of the runner's logged requests of method
// to path (unescaped), in order. A request is logged once answered, a
// stream once it ends.
func (r *runner) requests(t *testing.T, method, path string) []int {
	t.Helper()
	var statuses []int
	for line := range strings.Lines(r.log.String()) {
		var entry struct {
			Msg, Method, Path string
			Status            int
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg != "request" || entry.Method != method {
			continue
		}
		if p, err := url.PathUnescape(entry.Path); err == nil && p == path {
			statuses = append(statuses, entry.Status)
		}
	}
	return statuses
}

// startRunner builds a fake GitHub and runs localdev against it
// (runRunner).
func startRunner(t *testing.T) *runner {
	t.Helper()
	gh := githubtest.New(t)
	r := runRunner(t, "GITHUB_CLIENT_ID="+githubtest.ClientID, "GITHUB_CLIENT_SECRET="+githubtest.ClientSecret,
		"GITHUB_OAUTH_URL="+gh.URL, "GITHUB_API_URL="+gh.URL)
	r.GitHub = gh
	return r
}

// startLocalRunner runs localdev as a new user does: no GitHub app, so
// sign-in is off, every room open and the server acts for the local owner.
func startLocalRunner(t *testing.T) *runner {
	t.Helper()
	return runRunner(t)
}

// runRunner runs localdev with extra environment on a fresh migrated
// schema, on a free port, until the test ends; then it stops it with
// SIGTERM, expecting a clean drain.
func runRunner(t *testing.T, extra ...string) *runner {
	t.Helper()
	env := append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"DB_URL=" + pgtest.New(t).URL,
		"PORT=0",
		"LETAGENTS_LOCALDEV_DIR=" + t.TempDir(),
		"LETAGENTS_JOIN_LIMIT=10000",
	}, extra...)
	stdout := &urlWatch{url: make(chan string, 1)}
	stderr := &testwait.Buffer{}
	cmd := exec.Command(bins.runner)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start localdev: %v", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			if waitErr != nil {
				t.Errorf("localdev exited with %v after SIGTERM; want a clean drain (exit 0)", waitErr)
			}
		case <-time.After(runnerStopTimeout):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("localdev still running %v after SIGTERM; killed it", runnerStopTimeout)
		}
		if t.Failed() {
			t.Logf("localdev stdout:\n%s\nlocaldev stderr:\n%s", stdout.String(), stderr.String())
		}
	})
	select {
	case u := <-stdout.url:
		return &runner{URL: u, log: stderr, stdout: &stdout.Buffer}
	case <-done:
		t.Fatalf("localdev exited before listening: %v", waitErr)
	case <-time.After(runnerStartTimeout):
		t.Fatalf("localdev printed no export LETAGENTS_API_URL line within %v", runnerStartTimeout)
	}
	return nil
}

// agentConfig is how one letagents process is started.
type agentConfig struct {
	Name       string // LETAGENTS_AGENT_NAME
	Dir        string // working directory: decides the room it auto-joins
	StatePath  string // LETAGENTS_STATE_PATH; "" for a fresh file of its own
	InstanceID string // LETAGENTS_AGENT_INSTANCE_ID; "" for Name+"-instance"
	// Env is a client's environment (recorded, mcp/identity/testdata/
	// clients) added to the agent's; with it, no LETAGENTS_AGENT_INSTANCE_ID
	// is set, so that the client's own variables key the agent.
	Env []string
}

// agent is one letagents MCP server process, driven over stdio.
type agent struct {
	name      string
	c         *client.Client
	stderr    *testwait.Buffer
	closeOnce sync.Once
	// notes are the notifications the server sent, from the handshake on
	// (the latest are dropped once 100 wait).
	notes chan mcp.JSONRPCNotification
}

// startAgent starts the letagents binary in cfg.Dir with a clean
// environment (its own HOME, no system git config) and completes the MCP
// handshake. The process is closed when the test ends, its stderr logged
// if the test failed.
func startAgent(t *testing.T, apiURL string, cfg agentConfig) *agent {
	t.Helper()
	if cfg.StatePath == "" {
		cfg.StatePath = filepath.Join(t.TempDir(), "mcp-state.json")
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = cfg.Name + "-instance"
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"LETAGENTS_API_URL=" + apiURL,
		"LETAGENTS_STATE_PATH=" + cfg.StatePath,
		"LETAGENTS_AGENT_NAME=" + cfg.Name,
		"LETAGENTS_POLL_MAX_MS=" + strconv.Itoa(waitMillis),
	}
	if cfg.Env == nil {
		env = append(env, "LETAGENTS_AGENT_INSTANCE_ID="+cfg.InstanceID)
	}
	env = append(env, cfg.Env...)
	a := &agent{name: cfg.Name, stderr: &testwait.Buffer{}, notes: make(chan mcp.JSONRPCNotification, 100)}
	c, err := client.NewStdioMCPClientWithOptions(bins.agent, env, nil,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir, cmd.Stderr = env, cfg.Dir, a.stderr
			return cmd, nil
		}))
	if err != nil {
		t.Fatalf("start agent %s: %v", cfg.Name, err)
	}
	a.c = c
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case a.notes <- n:
		default:
		}
	})
	t.Cleanup(func() {
		a.close(t)
		if t.Failed() {
			t.Logf("agent %s stderr:\n%s", a.name, a.stderr.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	// The process runs already; Start hands its notifications to the
	// handler above.
	if err := c.Start(ctx); err != nil {
		t.Fatalf("agent %s: start: %v", cfg.Name, err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "letagents-e2e", Version: "0.0.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("agent %s: initialize: %v", cfg.Name, err)
	}
	t.Logf("agent %s started in %s: server %s %s, protocol %s", cfg.Name, cfg.Dir, res.ServerInfo.Name, res.ServerInfo.Version, res.ProtocolVersion)
	return a
}

// close ends the process (closing its stdin, as an MCP host does) once.
func (a *agent) close(t *testing.T) {
	t.Helper()
	a.closeOnce.Do(func() {
		if err := a.c.Close(); err != nil {
			t.Errorf("agent %s: close: %v; want a clean exit once stdin is closed", a.name, err)
		}
	})
}

// note waits for the server's next notification of method, skipping
// others, and returns it.
func (a *agent) note(t *testing.T, method string) mcp.JSONRPCNotification {
	t.Helper()
	for {
		n := testwait.Recv(t, "agent "+a.name+" to be sent "+method, a.notes)
		if n.Method == method {
			t.Logf("%s: notified %s %v", a.name, n.Method, n.Params.AdditionalFields)
			return n
		}
	}
}

// toolNames is what tools/list shows the agent, in the server's order.
func (a *agent) toolNames(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := a.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("agent %s: tools/list: %v", a.name, err)
	}
	names := make([]string, len(res.Tools))
	for i, tl := range res.Tools {
		names[i] = tl.Name
	}
	return names
}

// answer is a tool's answer: its one text item, and whether it is marked
// as an error.
type answer struct {
	Text    string
	IsError bool
	Err     error // the call itself failed (transport, protocol)
}

// invoke calls a tool without touching t, for use from goroutines.
func (a *agent) invoke(ctx context.Context, tool string, args map[string]any) answer {
	var req mcp.CallToolRequest
	req.Params.Name = tool
	if args != nil {
		req.Params.Arguments = args
	}
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return answer{Err: fmt.Errorf("agent %s: call %s: %w", a.name, tool, err)}
	}
	if len(res.Content) != 1 {
		return answer{IsError: res.IsError, Err: fmt.Errorf("agent %s: %s answered %d content items, want 1 text item", a.name, tool, len(res.Content))}
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		return answer{IsError: res.IsError, Err: fmt.Errorf("agent %s: %s answered %T, want a text item", a.name, tool, res.Content[0])}
	}
	return answer{Text: tc.Text, IsError: res.IsError}
}

// call calls a tool, failing the test if the call itself fails.
func (a *agent) call(t *testing.T, tool string, args map[string]any) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	ans := a.invoke(ctx, tool, args)
	if ans.Err != nil {
		t.Fatal(ans.Err)
	}
	a.logCall(t, tool, args, ans)
	return ans
}

// logCall adds a call to the test's transcript (shown with -v or on
// failure), the answer compacted and cut short.
func (a *agent) logCall(t *testing.T, tool string, args map[string]any, ans answer) {
	t.Helper()
	in, _ := json.Marshal(args)
	var out bytes.Buffer
	if json.Compact(&out, []byte(ans.Text)) != nil {
		out.Reset()
		out.WriteString(ans.Text)
	}
	text := out.String()
	if len(text) > 600 {
		text = text[:600] + "…"
	}
	mark := "→"
	if ans.IsError {
		mark = "→ ERROR"
	}
	t.Logf("%s: %s %s %s %s", a.name, tool, in, mark, text)
}

// callOK calls a tool, wants a success, and decodes its JSON into out.
func (a *agent) callOK(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	ans := a.call(t, tool, args)
	if ans.IsError {
		t.Fatalf("agent %s: %s(%v) answered an error, want success:\n%s", a.name, tool, args, ans.Text)
	}
	decode(t, tool, ans.Text, out)
}

// decode reads a tool's JSON answer into out.
func decode(t *testing.T, tool, text string, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), out); err != nil {
		t.Fatalf("%s answered text that is not the expected JSON (%v):\n%s", tool, err, text)
	}
}

// pending is a tool call running in the background.
type pending struct {
	a    *agent
	tool string
	args map[string]any
	ch   chan answer
}

// callAsync calls a tool in the background (bounded by a deadline of its
// own and by the agent's close at the end of the test).
func (a *agent) callAsync(tool string, args map[string]any, timeout time.Duration) *pending {
	p := &pending{a: a, tool: tool, args: args, ch: make(chan answer, 1)}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		p.ch <- a.invoke(ctx, tool, args)
	}()
	return p
}

// stillBlocked fails the test if the call answered within notYetFor.
func stillBlocked(t *testing.T, p *pending, what string) {
	t.Helper()
	select {
	case ans := <-p.ch:
		t.Fatalf("%s answered before anything woke it (want it blocked): error=%v isError=%v\n%s", what, ans.Err, ans.IsError, ans.Text)
	case <-time.After(notYetFor):
		in, _ := json.Marshal(p.args)
		t.Logf("%s: %s %s still blocked after %v", p.a.name, p.tool, in, notYetFor)
	}
}

// awaitAnswer waits for a background call's answer and wants a success.
func awaitAnswer(t *testing.T, p *pending, what string, out any) {
	t.Helper()
	ans := testwait.Recv(t, what+" to answer", p.ch)
	if ans.Err != nil {
		t.Fatalf("%s: %v", what, ans.Err)
	}
	p.a.logCall(t, p.tool, p.args, ans)
	if ans.IsError {
		t.Fatalf("%s answered an error, want success:\n%s", what, ans.Text)
	}
	decode(t, what, ans.Text, out)
}

// identityJSON is the agent_identity of tool answers.
type identityJSON struct {
	Name         string `json:"name"`
	DisplayName  string `json:"display_name"`
	OwnerLabel   string `json:"owner_label"`
	ActorLabel   string `json:"actor_label"`
	CanonicalKey string `json:"canonical_key"`
	RuntimeKey   string `json:"runtime_key"`
}

// currentRoom is get_current_room's answer.
type currentRoom struct {
	Connected     bool         `json:"connected"`
	RoomID        string       `json:"room_id"`
	JoinedVia     string       `json:"joined_via"`
	LastMessageID string       `json:"last_message_id"`
	AgentIdentity identityJSON `json:"agent_identity"`
	Auth          *struct {
		Source  string `json:"source"`
		Account *struct {
			Login string `json:"login"`
		} `json:"account"`
	} `json:"auth"`
}

// messagesAnswer is what read_messages and wait_for_messages answer.
type messagesAnswer struct {
	RoomID                string         `json:"room_id"`
	Messages              []wire.Message `json:"messages"`
	LastObservedMessageID string         `json:"last_observed_message_id"`
	TimedOut              bool           `json:"timed_out"`
	Truncated             bool           `json:"truncated"`
}

// sentMessage is send_message's and send_thread_message's answer.
type sentMessage struct {
	wire.Message
	AgentIdentity identityJSON `json:"agent_identity"`
}

// pendingDeviceAuth is a device sign-in as answers show it.
type pendingDeviceAuth struct {
	RequestID       string `json:"request_id"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	IntervalSeconds int    `json:"interval_seconds"`
	SuggestedRoomID string `json:"suggested_room_id"`
}

// onboarding is get_onboarding_status's answer.
type onboarding struct {
	Authenticated     bool               `json:"authenticated"`
	AuthSource        string             `json:"auth_source"`
	PendingDeviceAuth *pendingDeviceAuth `json:"pending_device_auth"`
	CurrentRoom       string             `json:"current_room"`
	DetectedRoom      string             `json:"detected_room_from_context"`
	NextStep          string             `json:"next_step"`
}

// failureAnswer is the JSON of an error answer.
type failureAnswer struct {
	Success *bool  `json:"success"`
	Error   string `json:"error"`
	Hint    string `json:"hint"`
}

// waitJoined polls get_current_room until the background auto-join has
// put the agent in a room, and returns the answer.
func (a *agent) waitJoined(t *testing.T) currentRoom {
	t.Helper()
	var cur currentRoom
	testwait.Until(t, "agent "+a.name+" to auto-join a room", func() bool {
		cur = currentRoom{}
		a.callOK(t, "get_current_room", nil, &cur)
		return cur.Connected
	})
	return cur
}

// send posts a top-level message and returns it as the server stored it.
func (a *agent) send(t *testing.T, text string) sentMessage {
	t.Helper()
	var m sentMessage
	a.callOK(t, "send_message", map[string]any{"text": text}, &m)
	if m.ID == "" || m.Text != text {
		t.Fatalf("agent %s: send_message answered id %q text %q, want an id and text %q", a.name, m.ID, m.Text, text)
	}
	return m
}

// gitEnv is the environment of the test's git commands: no GIT_*
// variables of the caller, no system or user configuration.
func gitEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
}

// runGit runs git in dir and returns its trimmed output.
func runGit(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv(home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo is a temporary git repository.
type repo struct {
	Dir  string
	home string
}

// newRepo makes a repository on branch main with one commit, origin at
// originURL, and origin/HEAD pointing at origin/main (so main is the
// default branch, as after a clone).
func newRepo(t *testing.T, originURL string) repo {
	t.Helper()
	r := repo{Dir: filepath.Join(t.TempDir(), "repo"), home: t.TempDir()}
	if err := os.Mkdir(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git(t, "init", "-b", "main")
	r.git(t, "config", "user.name", "Test Owner")
	r.git(t, "config", "user.email", "owner@example.com")
	r.git(t, "config", "commit.gpgsign", "false")
	if err := os.WriteFile(filepath.Join(r.Dir, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git(t, "add", "README.md")
	r.git(t, "commit", "-m", "initial")
	r.git(t, "remote", "add", "origin", originURL)
	r.git(t, "update-ref", "refs/remotes/origin/main", "HEAD")
	r.git(t, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	return r
}

func (r repo) git(t *testing.T, args ...string) string {
	t.Helper()
	return runGit(t, r.home, r.Dir, args...)
}
