// Package embeddedpg runs a private PostgreSQL server for local development
// (`go run ./localdev` when DB_URL is unset), using the PostgreSQL binaries
// already installed on the machine. It never installs anything itself.
//
// The cluster lives in Options.Dir/pgdata and is kept across runs; the
// server's log is Options.Dir/postgres.log. Unix only (Linux, macOS).
package embeddedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// DBUser is the superuser created by initdb and used in URL.
	DBUser = "postgres"
	// DBName is the database Start creates and URL points at.
	DBName = "letagents"

	portFileName = "postgres.port"
	logFileName  = "postgres.log"

	// maxSocketPath is the longest socket file path we accept: sun_path is
	// 108 bytes on Linux and 104 on macOS, NUL included.
	maxSocketPath = 100
)

// Options for Start.
type Options struct {
	// Dir is the state folder (e.g. ".localdev"). The cluster lives in
	// Dir/pgdata, its log and socket directory in Dir too.
	Dir string
	// Port to listen on at 127.0.0.1. 0 picks a free one and remembers it in
	// Dir, so the URL stays the same across runs while that port is free.
	Port int
	// Log receives the server's and the tools' output (nil: discarded).
	Log io.Writer
}

// Server is a running PostgreSQL started (or found running) by Start.
type Server struct {
	bin     string // folder holding initdb, pg_ctl and postgres
	base    string // folder holding pgdata and the log: Dir, unless relocated (see Start)
	dataDir string
	sockDir string
	logPath string
	port    int
	cred    *syscall.Credential // set when we are root: run the tools as this user
	log     io.Writer
	// stats: the machine's PostgreSQL has statementStats, which the
	// server then loads and the database gets.
	stats bool

	tailOnce sync.Once
	tailStop chan struct{}
	tailDone chan struct{}
}

// searchGlobs are the places looked in, highest version first, when the
// binaries are not on PATH.
var searchGlobs = []string{
	"/usr/lib/postgresql/*/bin", // Debian, Ubuntu
	"/usr/pgsql-*/bin",          // RHEL, Fedora (PGDG)
}

// Start starts the server (creating the cluster and the database on first
// use) and returns once it accepts connections. If a server from an earlier
// run on the same Dir is still alive, it is reused.
func Start(ctx context.Context, opt Options) (*Server, error) {
	if opt.Dir == "" {
		return nil, errors.New("embeddedpg: Options.Dir is empty")
	}
	dir, err := filepath.Abs(opt.Dir)
	if err != nil {
		return nil, fmt.Errorf("embeddedpg: %w", err)
	}
	bin, err := findBinDir(searchGlobs)
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, base: dir, log: io.Discard}
	if opt.Log != nil {
		// The log tail and the tools write to it from different goroutines.
		s.log = &lockedWriter{w: opt.Log}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embeddedpg: %w", err)
	}

	// PostgreSQL refuses to run as root: run initdb and pg_ctl as an
	// unprivileged user, who must be able to reach Dir.
	if os.Geteuid() == 0 {
		s.cred, err = unprivilegedCredential(filepath.Join(dir, "pgdata"))
		if err != nil {
			return nil, err
		}
		if !canTraverse(dir, s.cred) {
			// E.g. Dir under /root (mode 0700): keep the cluster in a
			// folder of its own under the temp dir instead, one per Dir.
			s.base = filepath.Join(os.TempDir(), "letagents-embeddedpg-"+shortHash(dir))
			fmt.Fprintf(s.log, "embeddedpg: uid %d cannot reach %s; keeping the cluster in %s instead\n", s.cred.Uid, dir, s.base)
			if err := os.MkdirAll(s.base, 0o755); err != nil {
				return nil, fmt.Errorf("embeddedpg: %w", err)
			}
			if err := os.Chmod(s.base, 0o755); err != nil {
				return nil, fmt.Errorf("embeddedpg: %w", err)
			}
			if s.cred, err = unprivilegedCredential(filepath.Join(s.base, "pgdata")); err != nil {
				return nil, err
			}
		}
	}
	s.dataDir = filepath.Join(s.base, "pgdata")
	s.logPath = filepath.Join(s.base, logFileName)
	s.sockDir = filepath.Join(s.base, "socket")
	if len(s.sockDir)+len("/.s.PGSQL.65535") > maxSocketPath {
		s.sockDir = filepath.Join(os.TempDir(), fmt.Sprintf("letagents-pg-%d-%s", os.Geteuid(), shortHash(dir)))
		if len(s.sockDir)+len("/.s.PGSQL.65535") > maxSocketPath {
			s.sockDir = filepath.Join("/tmp", fmt.Sprintf("letagents-pg-%d-%s", os.Geteuid(), shortHash(dir)))
		}
	}
	if err := s.prepareDirs(); err != nil {
		return nil, err
	}

	// The tools run in s.base, which exists only now.
	s.stats = s.hasStatementStats(ctx)
	if err := s.initdbIfNeeded(ctx); err != nil {
		return nil, err
	}

	logOffset := fileSize(s.logPath)
	reused, err := s.reuseRunning(ctx, opt.Port)
	if err != nil {
		return nil, err
	}
	if reused {
		fmt.Fprintf(s.log, "embeddedpg: reusing the server already running on port %d\n", s.port)
		logOffset = fileSize(s.logPath)
	} else {
		s.port = opt.Port
		if s.port == 0 {
			if s.port, err = s.pickPort(dir); err != nil {
				return nil, err
			}
		}
		if err := s.start(ctx); err != nil {
			return nil, err
		}
	}
	// Remembered in Dir (not in a relocated base) so the URL stays stable.
	_ = os.WriteFile(filepath.Join(dir, portFileName), []byte(strconv.Itoa(s.port)+"\n"), 0o644)

	if err := s.createDB(ctx); err != nil {
		_ = s.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	if s.stats {
		// A convenience for profiling: without it the database still serves.
		if out, err := s.run(ctx, s.tool("psql"), "-X", "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", DBUser, "-d", DBName,
			"-c", "CREATE EXTENSION IF NOT EXISTS "+statementStats); err != nil {
			fmt.Fprintf(s.log, "embeddedpg: CREATE EXTENSION %s: %v: %s\n", statementStats, err, strings.TrimSpace(out))
		}
	}
	s.startTail(logOffset)
	return s, nil
}

// URL is the connection URL of the database DBName.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", DBUser, s.port, DBName)
}

// Port is the TCP port the server listens on at 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down (pg_ctl stop -m fast), bounded by ctx. Stopping
// a server that is not running is not an error.
func (s *Server) Stop(ctx context.Context) error {
	defer s.stopTail()
	if _, err := os.Stat(filepath.Join(s.dataDir, "postmaster.pid")); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	out, err := s.run(ctx, "pg_ctl", "stop", "-D", s.dataDir, "-m", "fast", "-w")
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("embeddedpg: stopping the server: %w", ctx.Err())
		}
		if strings.Contains(out, "Is server running?") {
			return nil
		}
		return fmt.Errorf("embeddedpg: pg_ctl stop: %v: %s", err, strings.TrimSpace(out))
	}
	return nil
}

// findBinDir returns the folder holding initdb, pg_ctl and postgres: that of
// initdb (or pg_ctl) on PATH, symlinks resolved, else the highest version
// matched by globs.
func findBinDir(globs []string) (string, error) {
	var candidates []string
	for _, name := range []string{"initdb", "pg_ctl"} {
		if p, err := exec.LookPath(name); err == nil {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				p = r
			}
			candidates = append(candidates, filepath.Dir(p))
		}
	}
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		sort.Slice(matches, func(i, j int) bool { return versionLess(matches[j], matches[i]) })
		candidates = append(candidates, matches...)
	}
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("embeddedpg: PostgreSQL server programs (initdb, pg_ctl, postgres) not found on PATH nor in " +
		strings.Join(globs, ", ") + "; install PostgreSQL (Debian/Ubuntu: sudo apt-get install postgresql; " +
		"macOS: brew install postgresql) or set DB_URL to an existing database")
}

// versionLess orders paths like /usr/lib/postgresql/9.6/bin < .../15/bin by
// the numbers they contain.
func versionLess(a, b string) bool {
	na, nb := numbers(a), numbers(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		if na[i] != nb[i] {
			return na[i] < nb[i]
		}
	}
	if len(na) != len(nb) {
		return len(na) < len(nb)
	}
	return a < b
}

func numbers(s string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}

// unprivilegedCredential is the user to run PostgreSQL as when we are root:
// the owner of an existing pgdata if not root, else the postgres system
// user, else nobody.
func unprivilegedCredential(pgdata string) (*syscall.Credential, error) {
	if fi, err := os.Stat(pgdata); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			return &syscall.Credential{Uid: st.Uid, Gid: st.Gid}, nil
		}
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		// Groups left empty: setgroups(0) drops root's supplementary groups.
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("embeddedpg: running as root, and PostgreSQL refuses to; no 'postgres' or 'nobody' user to run it as")
}

// canTraverse reports whether cred may search every folder from / down to
// dir, judging by mode bits (ACLs ignored).
func canTraverse(dir string, cred *syscall.Credential) bool {
	p := dir
	for {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return true
		}
		perm := uint32(fi.Mode().Perm())
		var bit uint32 = 0o001
		switch {
		case st.Uid == cred.Uid:
			bit = 0o100
		case st.Gid == cred.Gid:
			bit = 0o010
		}
		if perm&bit == 0 {
			return false
		}
		parent := filepath.Dir(p)
		if parent == p {
			return true
		}
		p = parent
	}
}

func shortHash(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return fmt.Sprintf("%012x", h.Sum64())[:12]
}

// prepareDirs creates pgdata, the socket folder and the log file, owned by
// the user the server runs as.
func (s *Server) prepareDirs() error {
	for _, d := range []string{s.dataDir, s.sockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("embeddedpg: %w", err)
		}
	}
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("embeddedpg: %w", err)
	}
	f.Close()
	if s.cred != nil {
		for _, p := range []string{s.dataDir, s.sockDir, s.logPath} {
			if err := os.Lchown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return fmt.Errorf("embeddedpg: %w", err)
			}
		}
	}
	return nil
}

func (s *Server) initdbIfNeeded(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(s.dataDir)
	if err != nil {
		return fmt.Errorf("embeddedpg: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("embeddedpg: %s is not empty but holds no cluster (no PG_VERSION), maybe from an interrupted initdb; delete it to start afresh", s.dataDir)
	}
	args := []string{"-D", s.dataDir, "-U", DBUser, "-A", "trust", "--encoding=UTF8",
		// C locale: the same on every machine, and needs no OS locales installed.
		"--locale=C"}
	// Asked quietly: the log is for what happened, not for a usage text.
	help, _ := s.runTo(ctx, io.Discard, "initdb", "--help")
	// --no-sync: like fsync=off below, a dev cluster need not survive an OS crash.
	for _, opt := range []string{"--no-instructions", "--no-sync"} {
		if strings.Contains(help, opt) {
			args = append(args, opt)
		}
	}
	fmt.Fprintf(s.log, "embeddedpg: creating a PostgreSQL cluster in %s\n", s.dataDir)
	if out, err := s.run(ctx, "initdb", args...); err != nil {
		return fmt.Errorf("embeddedpg: initdb: %v: %s", err, lastLines(out, 10))
	}
	return nil
}

// reuseRunning reports whether a server from an earlier run is alive on our
// data folder and answering; then it adopts it. A live server on another
// port than the one asked for is stopped.
func (s *Server) reuseRunning(ctx context.Context, wantPort int) (bool, error) {
	pidFile := filepath.Join(s.dataDir, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false, nil
	}
	if _, err := s.run(ctx, "pg_ctl", "status", "-D", s.dataDir); err != nil {
		return false, nil // not running: pg_ctl start handles the stale file
	}
	// Lines: pid, data dir, start time, port, socket dir, listen address, ...
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 || !sameDir(lines[1], s.dataDir) {
		return false, nil
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil || !answers(port, 5*time.Second) {
		return false, nil // alive but not ours, or not up: let pg_ctl start tell
	}
	s.port = port
	if wantPort != 0 && wantPort != port {
		if err := s.Stop(ctx); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

func sameDir(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

func answers(port int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// pickPort returns the port remembered in dir if it is still free, else a
// free one.
func (s *Server) pickPort(dir string) (int, error) {
	if b, err := os.ReadFile(filepath.Join(dir, portFileName)); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 && portFree(p) {
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("embeddedpg: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start(ctx context.Context) error {
	// fsync=off: this is a throwaway development database; after an OS
	// crash it may be corrupt, and then deleting Dir/pgdata is the cure.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, shellQuote(s.sockDir))
	if s.stats {
		opts += " -c shared_preload_libraries=" + statementStats
	}
	out, err := s.run(ctx, "pg_ctl", "start", "-w", "-D", s.dataDir, "-l", s.logPath, "-o", opts)
	if err != nil {
		logTail, _ := os.ReadFile(s.logPath)
		return fmt.Errorf("embeddedpg: pg_ctl start on port %d: %v: %s\n%s: %s", s.port, err,
			strings.TrimSpace(out), s.logPath, lastLines(string(logTail), 10))
	}
	return nil
}

// statementStats is the module that keeps every statement's calls and
// times (the pg_stat_statements view): a local run's database can be
// profiled with no set-up, where the machine's PostgreSQL ships it.
const statementStats = "pg_stat_statements"

// hasStatementStats reports whether the server's library folder holds
// statementStats; loading a module that is not there would stop the
// server from starting.
func (s *Server) hasStatementStats(ctx context.Context) bool {
	out, err := s.runTo(ctx, io.Discard, s.tool("pg_config"), "--pkglibdir")
	if err != nil {
		return false
	}
	for _, ext := range []string{".so", ".dylib"} {
		if _, err := os.Stat(filepath.Join(strings.TrimSpace(out), statementStats+ext)); err == nil {
			return true
		}
	}
	return false
}

// tool is the path of a PostgreSQL client program: the server's own
// folder's, else the one on PATH, else its name (which then fails to run,
// saying so).
func (s *Server) tool(name string) string {
	if p := filepath.Join(s.bin, name); isExec(p) {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

func (s *Server) createDB(ctx context.Context) error {
	createdb := s.tool("createdb")
	if !filepath.IsAbs(createdb) {
		return fmt.Errorf("embeddedpg: createdb not found in %s nor on PATH", s.bin)
	}
	out, err := s.run(ctx, createdb, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", DBUser, DBName)
	if err != nil && !strings.Contains(out, "already exists") {
		return fmt.Errorf("embeddedpg: createdb %s: %v: %s", DBName, err, strings.TrimSpace(out))
	}
	return nil
}

// run runs a PostgreSQL program (a name in s.bin, or a path) as the server's
// user, its output going to the log and returned.
func (s *Server) run(ctx context.Context, prog string, args ...string) (string, error) {
	return s.runTo(ctx, s.log, prog, args...)
}

// runTo is run with its output going to log instead of the server's.
func (s *Server) runTo(ctx context.Context, log io.Writer, prog string, args ...string) (string, error) {
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(s.bin, prog)
	}
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = s.base
	cmd.Env = cleanEnv()
	cmd.Stdout = io.MultiWriter(&buf, log)
	cmd.Stderr = cmd.Stdout
	cmd.WaitDelay = 5 * time.Second
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	err := cmd.Run()
	return buf.String(), err
}

// cleanEnv is our environment without PG* variables (PGDATA, PGPORT,
// PGHOST...), which would otherwise steer the tools elsewhere.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// startTail copies what the server appends to its log file, from offset on,
// to s.log until Stop.
func (s *Server) startTail(offset int64) {
	if s.log == io.Discard {
		return
	}
	s.tailStop = make(chan struct{})
	s.tailDone = make(chan struct{})
	go func() {
		defer close(s.tailDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			offset = s.copyLog(offset)
			select {
			case <-s.tailStop:
				s.copyLog(offset)
				return
			case <-tick.C:
			}
		}
	}()
}

func (s *Server) copyLog(offset int64) int64 {
	f, err := os.Open(s.logPath)
	if err != nil {
		return offset
	}
	defer f.Close()
	if fileSize(s.logPath) < offset {
		offset = 0 // truncated
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset
	}
	n, _ := io.Copy(s.log, f)
	return offset + n
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (s *Server) stopTail() {
	if s.tailStop == nil {
		return
	}
	s.tailOnce.Do(func() {
		close(s.tailStop)
		<-s.tailDone
	})
}
