//go:build linux

// The build targets name GOOS=linux: the bootstraps run on Linux only.

package infra

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/lambdaapi"
	"github.com/letagents/letagents-go/shared/liveness"
	"github.com/letagents/letagents-go/shared/pgtest"
	"github.com/letagents/letagents-go/shared/store"
	"github.com/letagents/letagents-go/shared/testwait"
)

// The tests here run the functions as Lambda runs them: each bootstrap
// built by its Makefile target as `sam build` builds it (for this
// machine's architecture), under the Lambda Runtime Interface Emulator
// (RIE), which starts it as the provided.al2023 runtime does and passes
// it invocations through the runtime API.

// rie is the emulator's main package and the version the tests build,
// with `go install` from the module proxy into a temporary directory: a
// pinned version, built from its own go.mod (its dependencies as
// released, their checksums verified against the checksum database), and
// nothing of it in this module's go.mod, which holds what the service
// runs on.
const rie = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// buildBound is how long one build may take: the first compiles every
// dependency for the Lambda build's settings, which on a busy 2-core
// machine has taken over ten minutes.
const buildBound = 20 * time.Minute

// invokeBound is how long an invocation may take, the function's start
// (its first) included.
const invokeBound = 2 * time.Minute

// builds holds what the tests built, once per test process, in one
// temporary directory that TestMain removes.
var builds struct {
	mu   sync.Mutex // one go build at a time: the first compiles, the rest mostly link
	dir  string
	done map[string]*built
}

type built struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// buildOnce runs make (writing into its own directory dir) the first time
// name is asked for and returns what it built; later calls wait for it.
func buildOnce(t *testing.T, name string, make func(ctx context.Context, dir string) (string, error)) string {
	t.Helper()
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = map[string]*built{}
	}
	b := builds.done[name]
	if b == nil {
		b = &built{}
		builds.done[name] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		builds.mu.Lock()
		defer builds.mu.Unlock()
		if builds.dir == "" {
			if builds.dir, b.err = os.MkdirTemp("", "letagents-rie-"); b.err != nil {
				return
			}
		}
		dir := filepath.Join(builds.dir, name)
		if b.err = os.Mkdir(dir, 0o755); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildBound)
		defer cancel()
		b.path, b.err = make(ctx, dir)
	})
	if b.err != nil {
		t.Fatalf("build %s: %v", name, b.err)
	}
	return b.path
}

// run runs a command in dir, its output kept for the error.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// emulator returns the path of the emulator's binary.
func emulator(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "aws-lambda-rie", func(ctx context.Context, dir string) (string, error) {
		goTool, err := exec.LookPath("go")
		if err != nil {
			return "", err
		}
		// GOFLAGS of the module under test (-mod=…) mean nothing to
		// another module's install.
		if err := run(ctx, dir, []string{"GOBIN=" + dir, "GOFLAGS=", "CGO_ENABLED=0"}, goTool, "install", rie); err != nil {
			return "", err
		}
		return filepath.Join(dir, "aws-lambda-rie"), nil
	})
}

// bootstrap builds the function with logical id name through its Makefile
// target, as `sam build` does (ARTIFACTS_DIR set), for this machine.
func bootstrap(t *testing.T, name string) string {
	t.Helper()
	return buildOnce(t, name, func(ctx context.Context, dir string) (string, error) {
		absRoot, err := filepath.Abs(root)
		if err != nil {
			return "", err
		}
		if err := run(ctx, absRoot, nil, "make", "--no-print-directory", "build-"+name,
			"ARTIFACTS_DIR="+dir, makeGoarch+"="+runtime.GOARCH); err != nil {
			return "", err
		}
		return filepath.Join(dir, "bootstrap"), nil
	})
}

// targetFunction returns the logical id of the function whose build target
// builds ./functions/<dir>.
func targetFunction(t *testing.T, dir string) string {
	t.Helper()
	pkg := regexp.MustCompile(`\./functions/` + regexp.QuoteMeta(dir) + `(\s|$)`)
	for target, recipe := range makeTargets(t) {
		if name, ok := strings.CutPrefix(target, "build-"); ok && pkg.MatchString(strings.Join(recipe, "\n")) {
			return name
		}
	}
	t.Fatalf("no Makefile build target builds ./functions/%s", dir)
	return ""
}

// emulated is one function running under the emulator: one execution
// environment, started on its first invocation.
type emulated struct {
	url    string // where invocations go
	logs   *testwait.Buffer
	exited <-chan struct{} // closed when the emulator has exited
}

// emulate starts the emulator on the bootstrap of the function with
// logical id name, env being the whole of the function's environment (the
// emulator adds Lambda's own variables).
func emulate(t *testing.T, name string, env map[string]string) emulated {
	t.Helper()
	rieBin, boot := emulator(t), bootstrap(t, name)
	// A port free when picked may be taken by another process before the
	// emulator binds it; then the emulator runs on without listening (or
	// exits), and a fresh pair of ports is tried.
	for attempt := 1; ; attempt++ {
		e, started := startEmulator(t, rieBin, boot, name, env)
		if started {
			return e
		}
		if attempt == 3 {
			t.Fatalf("the emulator exited before it listened, %d times; the last time:\n%s", attempt, e.logs)
		}
	}
}

// startEmulator starts one emulator and waits until it listens, or
// reports that it exited first.
func startEmulator(t *testing.T, rieBin, boot, name string, env map[string]string) (emulated, bool) {
	t.Helper()
	addr, runtimeAPI := freeAddr(t), freeAddr(t)
	cmd := exec.Command(rieBin, "--runtime-interface-emulator-address", addr, "--runtime-api-address", runtimeAPI, boot)
	cmd.Dir = filepath.Dir(boot) // Lambda's /var/task
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &testwait.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the emulator: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// The bootstrap, asking the emulator for its next invocation,
		// ends when the emulator does.
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s under the emulator:\n%s", name, logs)
		}
	})
	e := emulated{url: "http://" + addr + "/2015-03-31/functions/function/invocations", logs: logs, exited: exited}
	gone, taken := false, false
	testwait.Until(t, "the emulator to listen on "+addr, func() bool {
		select {
		case <-exited:
			gone = true
			return true
		default:
		}
		mine, other, err := listener(cmd.Process.Pid, addr)
		if err != nil {
			t.Fatalf("look for the emulator's listener: %v", err)
		}
		taken = other
		return mine || other
	})
	if taken {
		_ = cmd.Process.Kill()
	}
	return e, !gone && !taken
}

// listener says whether process pid listens on addr (an IPv4 host:port),
// or another process does, from /proc. A dial alone cannot tell: the
// emulator does not exit when its address is taken, and a dial that
// reached whoever took it sent the invocation there (a connection reset
// by a stranger, the emulator silent).
func listener(pid int, addr string) (mine, other bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, false, err
	}
	ip, p := net.ParseIP(host).To4(), 0
	if _, err := fmt.Sscan(port, &p); err != nil || ip == nil {
		return false, false, fmt.Errorf("not an IPv4 address and port: %q", addr)
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false, false, err
	}
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p)
	inode := ""
	for _, line := range strings.Split(string(table), "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if f := strings.Fields(line); len(f) > 9 && f[1] == local && f[3] == "0A" {
			inode = f[9]
		}
	}
	if inode == "" {
		return false, false, nil
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, true, nil // pid is gone: whoever listens is another
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == "socket:["+inode+"]" {
			return true, false, nil
		}
	}
	return false, true, nil
}

// handedOut holds every address freeAddr has given in this test process,
// so that two parallel tests are never handed the same port, which the
// kernel may offer again once its probe listener has closed.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// freeAddr returns a loopback address nothing listens on, for a process
// to listen on, and never the same one twice in a test process.
func freeAddr(t *testing.T) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
}

// invoke sends one invocation and returns the emulator's status and the
// function's answer.
func (e emulated) invoke(t *testing.T, payload []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), invokeBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		select {
		case <-e.exited:
			t.Fatalf("invoke: %v (the emulator had exited)", err)
		default:
			t.Fatalf("invoke: %v (the emulator still runs)", err)
		}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	return resp.StatusCode, out
}

// functionEnv is a function's environment for the test's schema d.
func functionEnv(d *pgtest.DB, more ...string) map[string]string {
	env := map[string]string{"DB_URL": d.URL, "LOG_LEVEL": "warn"}
	for i := 0; i+1 < len(more); i += 2 {
		env[more[i]] = more[i+1]
	}
	return env
}

// TestEmulatedFunctions runs every HTTP function's bootstrap under the
// emulator with its sample event on a real database, and the liveness
// function with its scheduled event; a bad configuration stops a function
// at start with a line saying why.
func TestEmulatedFunctions(t *testing.T) {
	t.Parallel()
	for _, tt := range lambdaCases() {
		t.Run(string(tt.group), func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			st := store.New(d.Pool)
			if tt.setup != nil {
				tt.setup(t, st)
			}
			fn := emulate(t, targetFunction(t, string(tt.group)), functionEnv(d))
			status, out := fn.invoke(t, event(t, tt.group))
			if status != http.StatusOK {
				t.Fatalf("the emulator answered %d %s", status, out)
			}
			status, header, body := decodeResponse(t, out)
			if status != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", status, body, tt.wantStatus)
			}
			tt.check(t, st, header, body)
		})
	}
	t.Run(livenessDir, func(t *testing.T) {
		t.Parallel()
		d := pgtest.New(t)
		quietWorker(t, store.New(d.Pool))
		payload, err := os.ReadFile(filepath.Join(root, "functions", livenessDir, "event.json"))
		if err != nil {
			t.Fatal(err)
		}
		fn := emulate(t, targetFunction(t, livenessDir), functionEnv(d))
		status, out := fn.invoke(t, payload)
		var r liveness.Report
		if status != http.StatusOK || json.Unmarshal(out, &r) != nil || r != firstSweep {
			t.Errorf("the emulator answered %d %s, want 200 with the sweep report %+v", status, out, firstSweep)
		}
	})
	t.Run("bad-configuration", func(t *testing.T) {
		t.Parallel()
		d := pgtest.New(t)
		fn := emulate(t, targetFunction(t, string(api.GroupRooms)), functionEnv(d, "LETAGENTS_BASE_URL", "example.com"))
		// The runtime's failed start: Lambda answers the caller an
		// error (API Gateway then a 502), the emulator a 502.
		if status, out := fn.invoke(t, event(t, api.GroupRooms)); status != http.StatusBadGateway {
			t.Errorf("the emulator answered %d %s, want 502: the function must not start", status, out)
		}
		want := `start rooms function: configuration: LETAGENTS_BASE_URL="example.com": want an absolute http(s) URL`
		testwait.Until(t, "the function's log to say why it did not start", func() bool { return strings.Contains(fn.logs.String(), want) })
	})
}

// TestEmulatedFunctionsRunOnOneProcessor: a function's real bootstrap,
// once it has handed its handler to the runtime, runs Go on one
// processor (lambdaapi's oneProcessor), seen in the runtime's own
// scheduler trace (GODEBUG=schedtrace), which the function's log carries.
// Both ways a function starts are taken: an HTTP group's (start) and the
// migrate function's (RunMigrator). On a machine with one CPU, Go's own
// choice would be one as well.
func TestEmulatedFunctionsRunOnOneProcessor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		dir   string
		empty bool // the migrate function starts on an empty schema
		event func(t *testing.T) []byte
	}{
		{"messages", string(api.GroupMessages), false, func(t *testing.T) []byte { return event(t, api.GroupMessages) }},
		{"migrate", migrateDir, true, func(t *testing.T) []byte {
			url, _ := responseURL(t)
			return migrateEvent(t, cfn.RequestDelete, url)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			if tt.empty {
				d = pgtest.NewEmpty(t)
			}
			fn := emulate(t, targetFunction(t, tt.dir), functionEnv(d, "GODEBUG", "schedtrace=50"))
			if status, out := fn.invoke(t, tt.event(t)); status != http.StatusOK {
				t.Fatalf("the emulator answered %d %s", status, out)
			}
			testwait.Until(t, "the function's scheduler trace to show one processor", func() bool {
				return strings.Contains(fn.logs.String(), " gomaxprocs=1 ")
			})
		})
	}
}

// TestEmulatedMigrate runs the migrate function's bootstrap under the
// emulator with CloudFormation's request, its answer going to a local
// response URL: it migrates and answers SUCCESS with the schema version;
// whatever stops it, it answers FAILED with the reason; Delete answers
// SUCCESS whatever the configuration.
func TestEmulatedMigrate(t *testing.T) {
	t.Parallel()
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	unreachable := freeAddr(t)
	tests := []struct {
		name       string
		request    cfn.RequestType
		env        []string // on top of the test schema's DB_URL
		wantStatus string
		wantReason []string
	}{
		{"migrates", cfn.RequestCreate, nil, "SUCCESS", nil},
		{"bad-configuration", cfn.RequestCreate, []string{"LETAGENTS_BASE_URL", "example.com"},
			"FAILED", []string{`LETAGENTS_BASE_URL="example.com"`, "configuration", "[log group "}},
		{"database-unreachable", cfn.RequestUpdate, []string{"DB_URL", "postgres://postgres@" + unreachable + "/letagents?sslmode=disable"},
			"FAILED", []string{"connect to the database", unreachable}},
		{"delete-touches-nothing", cfn.RequestDelete, []string{"LETAGENTS_BASE_URL", "example.com"}, "SUCCESS", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			url, answers := responseURL(t)
			fn := emulate(t, targetFunction(t, migrateDir), functionEnv(d, tt.env...))
			start := time.Now()
			if status, out := fn.invoke(t, migrateEvent(t, tt.request, url)); status != http.StatusOK {
				t.Errorf("the emulator answered %d %s", status, out)
			}
			a := testwait.Recv(t, "the answer to CloudFormation", answers)
			t.Logf("answered %s in %v", a["Status"], time.Since(start).Round(time.Millisecond))
			if a["Status"] != tt.wantStatus || a["PhysicalResourceId"] != lambdaapi.SchemaResourceID || a["LogicalResourceId"] != "Migrate" {
				t.Errorf("answered %v, want %s for Migrate, physical id %s", a, tt.wantStatus, lambdaapi.SchemaResourceID)
			}
			reason, _ := a["Reason"].(string)
			for _, want := range tt.wantReason {
				if !strings.Contains(reason, want) {
					t.Errorf("reason %q does not say %q", reason, want)
				}
			}
			checkErr := db.CheckSchema(context.Background(), d.Pool, migrations.FS)
			var untouched *db.SchemaError
			if tt.wantStatus == "SUCCESS" && tt.request != cfn.RequestDelete {
				if checkErr != nil || dig(a, "Data", "SchemaVersion") != float64(latest) {
					t.Errorf("answered %v, schema check %v; want SchemaVersion %d and the schema there", a, checkErr, latest)
				}
			} else if !errors.As(checkErr, &untouched) || untouched.Applied != 0 {
				t.Errorf("schema check %v, want the schema untouched", checkErr)
			}
		})
	}
}

// listener tells the process that listens on an address from another one
// that does, and from nobody.
func TestListenerTellsWhoseSocketItIs(t *testing.T) {
	t.Parallel()
	mineL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mineL.Close()
	// A child holds the other listener alone: it inherits the socket,
	// which this process then closes.
	otherL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := otherL.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "600")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	f.Close()
	otherL.Close()
	for _, tt := range []struct {
		name                string
		addr                string
		wantMine, wantOther bool
	}{
		{"this process's", mineL.Addr().String(), true, false},
		{"another process's", otherL.Addr().String(), false, true},
		{"nobody's", freeAddr(t), false, false},
	} {
		mine, other, err := listener(os.Getpid(), tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		if mine != tt.wantMine || other != tt.wantOther {
			t.Errorf("%s listener: mine %v, other %v; want %v, %v", tt.name, mine, other, tt.wantMine, tt.wantOther)
		}
	}
}
