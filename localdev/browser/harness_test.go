package browser_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/letagents/letagents-go/shared/github/githubtest"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/testwait"
)

// optOut, set to "off", skips the browser tests. Nothing sets it for
// them: a machine without Chromium fails them, as it should.
const optOut = "LETAGENTS_BROWSER_TESTS"

// workDir holds the runner binary; TestMain removes it.
var workDir string

func TestMain(m *testing.M) {
	var err error
	if workDir, err = os.MkdirTemp("", "letagents-browser-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopBrowser()
	os.RemoveAll(workDir)
	os.Exit(code)
}

// skipIfOptedOut skips t only when the opt-out is set, on purpose.
func skipIfOptedOut(t *testing.T) {
	t.Helper()
	if os.Getenv(optOut) == "off" {
		t.Skipf("%s=off", optOut)
	}
}

// ---- the runner ------------------------------------------------------------

var (
	buildOnce sync.Once
	runnerBin string
	buildErr  error
)

// runnerBinary builds localdev once for the whole test binary.
func runnerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		runnerBin = filepath.Join(workDir, "localdev")
		cmd := exec.Command(goCmd, "build", "-o", runnerBin, "github.com/letagents/letagents-go/localdev")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build localdev: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return runnerBin
}

// runner is the local runner, as a process serving one test's schema.
type runner struct {
	t    *testing.T
	URL  string
	db   *pgtest.DB // the runner's schema, for what no route makes (agent sessions)
	env  []string
	port string
	cmd  *exec.Cmd
	done chan error
	logs *testwait.Buffer
}

// startRunner starts localdev on a fresh schema until the test ends,
// with env (NAME=value) added to its environment.
func startRunner(t *testing.T, env ...string) *runner {
	t.Helper()
	db := pgtest.New(t)
	r := &runner{t: t, db: db, logs: &testwait.Buffer{}, port: "0", env: append(os.Environ(),
		"DB_URL="+db.URL, "DB_SECRET_ARN=", "LETAGENTS_LOCALDEV_DIR="+t.TempDir(),
		// The tests send faster than a person; limits are not what they test.
		"LETAGENTS_JOIN_LIMIT=1000000", "LETAGENTS_INVITE_ROOM_LIMIT=1000000", "LETAGENTS_SEND_LIMIT=1000000")}
	r.env = append(r.env, env...)
	t.Cleanup(func() {
		if r.cmd != nil {
			r.stop()
		}
		if t.Failed() {
			t.Logf("runner's log:\n%s", r.logs)
		}
	})
	r.start()
	return r
}

var listening = regexp.MustCompile(`^export LETAGENTS_API_URL=(http://127\.0\.0\.1:(\d+))$`)

// start starts the runner on r.port (0 the first time: any free port;
// the same one after a restart, as the page knows it).
func (r *runner) start() {
	r.t.Helper()
	cmd := exec.Command(runnerBinary(r.t))
	cmd.Env = append(r.env, "PORT="+r.port)
	cmd.Stderr = r.logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd, r.done = cmd, make(chan error, 1)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(r.logs, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		r.done <- cmd.Wait()
	}()
	select {
	case u := <-urls:
		r.URL = u
		r.port = u[strings.LastIndex(u, ":")+1:]
	case err := <-r.done:
		r.cmd = nil
		r.t.Fatalf("runner exited before listening: %v\n%s", err, r.logs)
	case <-time.After(testwait.Bound):
		r.t.Fatalf("runner did not listen within %v:\n%s", testwait.Bound, r.logs)
	}
}

// stop stops the runner as a person would, with SIGTERM, and waits for it.
func (r *runner) stop() {
	r.t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(testwait.Bound):
		_ = r.cmd.Process.Kill()
		r.t.Errorf("runner did not stop within %v of SIGTERM", testwait.Bound)
	}
	r.cmd = nil
}

// githubRunner starts a runner whose sign-in is gh, a fake GitHub,
// where user is signed in already: its sign-in page sends the browser
// straight back.
func githubRunner(t *testing.T, user string) *runner {
	t.Helper()
	gh := githubtest.New(t)
	gh.AddUser(user)
	gh.SignIn(user)
	gc := gh.Config()
	return startRunner(t, "GITHUB_CLIENT_ID="+gc.ClientID, "GITHUB_CLIENT_SECRET="+gc.ClientSecret,
		"GITHUB_OAUTH_URL="+gc.OAuthURL, "GITHUB_API_URL="+gc.APIURL)
}

// api calls the runner's API, failing the test unless it answers want.
func (r *runner) api(method, path string, body any, want int) map[string]any {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			r.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		r.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// join opens a room, as an agent does before it posts.
func (r *runner) join(room string) {
	r.t.Helper()
	r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/join", nil, http.StatusOK)
}

// send posts a message as an agent would and returns its id.
func (r *runner) send(room, sender, text string) string {
	r.t.Helper()
	m := r.api(http.MethodPost, "/rooms/"+roomPath(room)+"/messages", map[string]string{"sender": sender, "text": text}, http.StatusCreated)
	id, _ := m["id"].(string)
	return id
}

func roomPath(room string) string {
	parts := strings.Split(room, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// ---- the browser -------------------------------------------------------------

var (
	browserMu     sync.Mutex
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    error
)

// chromePath finds Chromium: CHROME_PATH, else the usual names on PATH.
func chromePath() (string, error) {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium: install it (apt-get install chromium; .ci/run does) or set CHROME_PATH; %s=off skips these tests", optOut)
}

// browser is the one Chromium of the test binary, started by the first
// test that needs it; each test has tabs of its own in it.
func browser(t *testing.T) context.Context {
	t.Helper()
	browserMu.Lock()
	defer browserMu.Unlock()
	if browserCtx == nil && browserErr == nil {
		browserErr = startBrowser()
	}
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	return browserCtx
}

func startBrowser() error {
	path, err := chromePath()
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "en-US"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	cancel := func() { cancelCtx(); cancelAlloc() }
	// The first run starts Chromium and ties it to the context it gets,
	// so it cannot carry the bound: the bound is kept here instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(2 * testwait.Bound):
		err = errors.New("did not start within " + (2 * testwait.Bound).String())
	}
	if err != nil {
		cancel()
		return fmt.Errorf("start Chromium (%s): %w", path, err)
	}
	browserCtx, browserCancel = ctx, cancel
	return nil
}

func stopBrowser() {
	browserMu.Lock()
	defer browserMu.Unlock()
	if browserCancel != nil {
		browserCancel()
	}
}

// ---- tabs ------------------------------------------------------------------

// tab is a browser tab of one test. Uncaught exceptions in its pages fail
// the test.
type tab struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	exc []string
}

func newTab(t *testing.T, opts ...chromedp.ContextOption) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t), opts...)
	b := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // opens the tab, tied to ctx
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() {
				b.mu.Lock()
				b.exc = append(b.exc, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m.Text))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.exc {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	return b
}

// do runs actions within the bound.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Bound)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.state())
	}
}

// run runs one action that returns a value, within the bound.
func run[T any](b *tab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Bound)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.state())
	}
	return v
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	return run(b, "evaluate "+expr, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// until waits, within the bound, for a JavaScript expression to be truthy.
// It polls on a timer: animation frames do not run in a tab in the
// background.
func (b *tab) until(what, expr string) {
	b.t.Helper()
	run(b, "wait for "+what, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(testwait.Bound)))
}

// untilNavigated is until across a navigation the page starts: a wait
// begun before it ends with the old document, so it begins again in the
// new one, within the one bound.
func (b *tab) untilNavigated(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, testwait.Bound)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			b.t.Fatalf("wait for %s: %v\n%s", what, err, b.state())
		}
	}
}

// press clicks the element selector finds, within the bound, finding and
// clicking it in one evaluation: a list the page redraws on a live event
// can replace the node between chromedp finding it and clicking it. It
// waits for a disabled control to be enabled, as a person would: a click
// on it does nothing, and a live event can show the state a control's
// own request brings while that request, which disabled it, is still on
// its way (the Pin tool, marked pinned by the stream first).
func (b *tab) press(what, selector string) {
	b.t.Helper()
	b.until(what, `(e => e && !e.disabled ? (e.click(), true) : false)(document.querySelector(`+strconv.Quote(selector)+`))`)
}

// signIn signs the open page in through its runner's GitHub
// (githubRunner): the request of its sign-in button, then the navigation
// to GitHub, which sends the browser back through the callback to the
// page. A tab of a browser context of its own keeps the cookie to itself:
// cookies ignore ports, and other tests' runners are on this host too.
func (b *tab) signIn() {
	b.t.Helper()
	b.until("the sign-in button", `[...document.querySelectorAll("#auth button")].some(x => x.textContent === "Sign in with GitHub")`)
	authURL := eval[string](b, `fetch("/auth/github/login", {method: "POST", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({redirect_to: location.pathname})}).then(r => r.json()).then(j => j.auth_url)`)
	b.open(authURL)
}

// open loads a page of the runner, and returns once a script has run in
// it: chromedp can still name the last page's script context just after
// a navigation, and an evaluation there fails ("Cannot find context with
// specified id"), as a press on the landing page did once in CI.
func (b *tab) open(u string) {
	b.t.Helper()
	b.do("open "+u, chromedp.Navigate(u))
	b.untilNavigated("the page of "+u+" loaded", `document.readyState === "complete"`)
}

// scheme sets the colour scheme the page sees (light or dark).
func (b *tab) scheme(s string) {
	b.t.Helper()
	b.do("prefer "+s, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}})
		return chromedp.Void{}, err
	})
}

// state describes the page, for a failure message.
func (b *tab) state() string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\nstatus: " + ((document.getElementById("status") || {}).textContent || "-") + "\n" + document.body.innerText.slice(0, 1500)`))
	if err != nil {
		return "(page state unknown: " + err.Error() + ")"
	}
	return "page: " + s
}

// screenshot saves the whole page as an artefact, outside the repository.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	png := run(b, "screenshot "+name, chromedp.FullScreenshot(100))
	dir := artefacts(b.t)
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// artefacts is the test's folder of artefacts; each run overwrites its
// files.
func artefacts(t *testing.T) string {
	t.Helper()
	root := os.Getenv("LETAGENTS_ARTEFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "letagents-browser-artefacts")
	}
	dir := filepath.Join(root, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestNoChromiumFails: with no Chromium to be found the harness fails,
// saying how to get one, rather than skipping. (Not parallel: it changes
// the environment, which parallel tests only read once it is restored.)
func TestNoChromiumFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CHROME_PATH", "")
	_, err := chromePath()
	if err == nil || !strings.Contains(err.Error(), "apt-get install chromium") {
		t.Errorf("chromePath with no Chromium = %v, want an error saying how to install it", err)
	}
}
