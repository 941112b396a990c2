package embeddedpg

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// These tests start real PostgreSQL servers from the machine's binaries. With
// the binaries missing they fail, unless LETAGENTS_NO_EMBEDDED_PG=1.
func skipIfDisabled(t *testing.T) {
	t.Helper()
	if os.Getenv("LETAGENTS_NO_EMBEDDED_PG") == "1" {
		t.Skip("LETAGENTS_NO_EMBEDDED_PG=1")
	}
}

// reachableTempDir is a t.TempDir() that the postgres user can reach when
// the tests run as root (t.TempDir makes 0700 folders).
func reachableTempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if os.Geteuid() == 0 {
		for _, p := range []string{filepath.Dir(d), d} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d
}

func mustStart(t *testing.T, opt Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	s, err := Start(ctx, opt)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (%s)", time.Since(t0).Round(time.Millisecond), s.URL())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func mustStop(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(t0).Round(time.Millisecond))
}

func connect(t *testing.T, s *Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", s.URL(), err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %v, %d", err, one)
	}
	return c
}

func assertPortClosed(t *testing.T, port int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("port %d still answers after Stop", port)
	}
}

func TestStartReuseStop(t *testing.T) {
	skipIfDisabled(t)
	t.Parallel()
	// A Dir not made yet, as .localdev on a fresh checkout.
	dir := filepath.Join(reachableTempDir(t), "state")
	ctx := context.Background()

	var log1 bytes.Buffer
	s := mustStart(t, Options{Dir: dir, Log: &log1})
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "PG_VERSION")); err != nil {
		t.Fatalf("cluster not in Dir/pgdata: %v", err)
	}
	if want := "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.Port()) + "/letagents?sslmode=disable"; s.URL() != want {
		t.Fatalf("URL = %q, want %q", s.URL(), want)
	}
	c := connect(t, s)
	if _, err := c.Exec(ctx, "CREATE TABLE marker (v text); INSERT INTO marker VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	// Where the machine's PostgreSQL ships pg_stat_statements, the
	// database keeps every statement's counts from the start.
	libdir, err := exec.Command(s.tool("pg_config"), "--pkglibdir").Output()
	if _, serr := os.Stat(filepath.Join(strings.TrimSpace(string(libdir)), "pg_stat_statements.so")); err == nil && serr == nil {
		var calls int64
		if err := c.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE 'INSERT INTO marker%'`).Scan(&calls); err != nil || calls != 1 {
			t.Errorf("pg_stat_statements: %d calls of the marker's insert, %v; want 1", calls, err)
		}
	} else if s.stats {
		t.Errorf("statement stats loaded, but pg_config --pkglibdir (%v) names no pg_stat_statements.so (%v)", err, serr)
	}
	c.Close(ctx)
	url1 := s.URL()
	mustStop(t, s)
	assertPortClosed(t, s.Port())
	if !strings.Contains(log1.String(), "creating a PostgreSQL cluster") {
		t.Errorf("first Start did not run initdb? log:\n%s", log1.String())
	}
	if strings.Contains(log1.String(), "Usage:") {
		t.Errorf("the log holds a usage text:\n%s", log1.String())
	}

	// Second run on the same Dir: same cluster, same URL, no initdb.
	var log2 bytes.Buffer
	s2 := mustStart(t, Options{Dir: dir, Log: &log2})
	if s2.URL() != url1 {
		t.Errorf("URL changed across runs: %q then %q", url1, s2.URL())
	}
	var v string
	if err := connect(t, s2).QueryRow(ctx, "SELECT v FROM marker").Scan(&v); err != nil || v != "kept" {
		t.Fatalf("marker lost: %v, %q", err, v)
	}

	// Start while it is still running (as after a crash of the runner that
	// left the server up): adopted, not restarted.
	var log3 bytes.Buffer
	s3 := mustStart(t, Options{Dir: dir, Log: &log3})
	mustStop(t, s3) // the logs may be read only once their server stopped
	assertPortClosed(t, s3.Port())
	if s3.URL() != url1 || !strings.Contains(log3.String(), "reusing the server") {
		t.Errorf("running server not reused: URL %q, log:\n%s", s3.URL(), log3.String())
	}
	if err := s2.Stop(ctx); err != nil {
		t.Errorf("second Stop of a stopped server: %v", err)
	}
	if strings.Contains(log2.String()+log3.String(), "creating a PostgreSQL cluster") {
		t.Errorf("initdb ran again")
	}
}

func TestStartAfterKill(t *testing.T) {
	skipIfDisabled(t)
	t.Parallel()
	dir := reachableTempDir(t)
	s := mustStart(t, Options{Dir: dir})
	connect(t, s)

	// Kill the postmaster as a killed run's would be: postmaster.pid stays.
	b, err := os.ReadFile(filepath.Join(dir, "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Until it is reaped: PostgreSQL takes a zombie for a live postmaster.
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("postmaster %d did not die", pid)
		}
	}

	s2 := mustStart(t, Options{Dir: dir})
	if s2.URL() != s.URL() {
		t.Errorf("URL changed after kill: %q then %q", s.URL(), s2.URL())
	}
	connect(t, s2)
	mustStop(t, s2)
	assertPortClosed(t, s2.Port())
}

func TestLongDirUsesShortSocketDir(t *testing.T) {
	skipIfDisabled(t)
	t.Parallel()
	dir := filepath.Join(reachableTempDir(t), strings.Repeat("d", 60), strings.Repeat("e", 60))
	s := mustStart(t, Options{Dir: dir})
	t.Cleanup(func() { os.RemoveAll(s.sockDir) })
	if strings.HasPrefix(s.sockDir, dir) || len(s.sockDir) > 80 {
		t.Errorf("socket dir %q is not short", s.sockDir)
	}
	connect(t, s)
	mustStop(t, s)
}

func TestUnreachableDirAsRoot(t *testing.T) {
	skipIfDisabled(t)
	if os.Geteuid() != 0 {
		t.Skip("only meaningful as root")
	}
	t.Parallel()
	dir := t.TempDir() // 0700, root's: the postgres user cannot enter it
	s := mustStart(t, Options{Dir: dir})
	t.Cleanup(func() { os.RemoveAll(s.base) })
	if s.base == dir {
		t.Fatalf("cluster kept in unreachable %s", dir)
	}
	connect(t, s)
	mustStop(t, s)
}

func TestMissingBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinDir(nil)
	if err == nil {
		t.Fatal("found PostgreSQL with an empty PATH")
	}
	for _, want := range []string{"apt-get install postgresql", "brew install postgresql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestVersionLess(t *testing.T) {
	dirs := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/10/bin"}
	if !versionLess(dirs[0], dirs[2]) || !versionLess(dirs[2], dirs[1]) || versionLess(dirs[1], dirs[0]) {
		t.Error("versionLess orders versions as strings")
	}
}
