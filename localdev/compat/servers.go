package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/auth"
)

// Bounds of starting and stopping a server.
const (
	startTimeout = 90 * time.Second
	stopGrace    = 10 * time.Second
)

// process is a server this command started, with its log file.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// start runs cmd with its output in logPath, watching for its exit.
func start(cmd *exec.Cmd, logPath string, stdout io.Writer) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logPath, err)
	}
	cmd.Stderr = logFile
	cmd.Stdout = logFile
	if stdout != nil {
		cmd.Stdout = io.MultiWriter(logFile, stdout)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop ends the process with SIGTERM, then SIGKILL after stopGrace.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// childEnv is the environment of a server we start: only what it needs,
// so that the caller's GitHub app or database settings do not leak in.
func childEnv(home string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, extra...)
}

// freshDatabase drops and creates the database name on the server of
// adminURL and returns its URL.
func freshDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := pgx.Identifier{name}.Sanitize()
	for _, sql := range []string{"DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)", "CREATE DATABASE " + ident} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return "", fmt.Errorf("%s: %w", sql, err)
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("COMPAT_PG_URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// startAnchor migrates a database for the built original in dir and
// serves it on a free port.
func startAnchor(ctx context.Context, dir, dbURL, work string) (string, *process, error) {
	migrate := exec.CommandContext(ctx, "node", "dist/api/migrate.js")
	migrate.Dir = dir
	migrate.Env = childEnv(work, "DB_URL="+dbURL)
	if out, err := migrate.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("node dist/api/migrate.js in %s: %w\n%s", dir, err, out)
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	// Its links (device_flow_url) then name the address it is reached at,
	// as ours do: left alone it says localhost.
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("node", "dist/api/server.js")
	cmd.Dir = dir
	cmd.Env = childEnv(work, "DB_URL="+dbURL, "PORT="+strconv.Itoa(port), "LETAGENTS_BASE_URL="+base)
	p, err := start(cmd, filepath.Join(work, "anchor.log"), nil)
	if err != nil {
		return "", nil, err
	}
	if err := waitHealthy(ctx, base, p); err != nil {
		p.stop()
		return "", nil, fmt.Errorf("the anchor (log %s): %w", p.log, err)
	}
	return base, p, nil
}

// startOurs builds ./localdev and serves it on a free port, with the
// limits raised out of the suite's way and repo rooms behind GitHub's
// rules, as the anchor has them.
func startOurs(ctx context.Context, dbURL, work string) (string, *process, error) {
	bin := filepath.Join(work, "localdev")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./localdev")
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("go build ./localdev (run from the module root): %w\n%s", err, out)
	}
	urls := &urlLine{found: make(chan string, 1)}
	cmd := exec.Command(bin)
	cmd.Env = childEnv(work, "DB_URL="+dbURL, "PORT=0",
		"LETAGENTS_LOCALDEV_DIR="+filepath.Join(work, "localdev-state"),
		"LETAGENTS_JOIN_LIMIT=100000", "LETAGENTS_INVITE_ROOM_LIMIT=100000", "LETAGENTS_SEND_LIMIT=100000",
		"LETAGENTS_REPO_ACCESS=github")
	p, err := start(cmd, filepath.Join(work, "ours.log"), urls)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case u := <-urls.found:
		return u, p, nil
	case <-p.done:
		return "", nil, fmt.Errorf("localdev exited before listening, see %s", p.log)
	case <-ctx.Done():
		p.stop()
		return "", nil, fmt.Errorf("localdev not listening after %v, see %s", startTimeout, p.log)
	}
}

// urlLine watches localdev's output for the line that gives its URL.
type urlLine struct {
	partial string
	found   chan string
	sent    bool
}

func (w *urlLine) Write(p []byte) (int, error) {
	w.partial += string(p)
	for {
		line, rest, ok := strings.Cut(w.partial, "\n")
		if !ok {
			return len(p), nil
		}
		w.partial = rest
		if u, ok := strings.CutPrefix(line, "export LETAGENTS_API_URL="); ok && !w.sent {
			w.sent = true
			w.found <- strings.TrimSpace(u)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy waits for GET /api/health to answer 200.
func waitHealthy(ctx context.Context, base string, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return errors.New("exited before answering /api/health")
		case <-ctx.Done():
			return fmt.Errorf("no healthy answer within %v", startTimeout)
		case <-tick.C:
		}
	}
}

// anchorVersion reads the version of the original in dir.
func anchorVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("ANCHOR_DIR: %w", err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("ANCHOR_DIR package.json: %w", err)
	}
	return pkg.Version, nil
}

// account is a GitHub account seeded into both databases, with an owner
// token (what LETAGENTS_TOKEN holds) and a browser session token.
type account struct {
	Key, Login, UserID string
	OwnerToken         string
	SessionToken       string
}

// seedAccounts makes the accounts of the suite, with fresh tokens.
func seedAccounts() []account {
	return []account{
		{Key: "a", Login: "compat-a", UserID: "900001", OwnerToken: auth.NewToken(), SessionToken: auth.NewToken()},
		{Key: "b", Login: "compat-b", UserID: "900002", OwnerToken: auth.NewToken(), SessionToken: auth.NewToken()},
	}
}

// seedVars are the vars every server starts with: the tokens (the same on
// both) and a stale token no server ever issued.
func seedVars(accounts []account) vars {
	vs := vars{"stale": auth.NewToken()}
	for _, a := range accounts {
		vs["token_"+a.Key] = a.OwnerToken
		vs["cookie_"+a.Key] = a.SessionToken
	}
	return vs
}

// seedAnchor writes the accounts in the anchor's schema (text ids, hex
// SHA-256 token hashes) and records their ids in vs.
func seedAnchor(ctx context.Context, dbURL string, accounts []account, vs vars) error {
	return withConn(ctx, dbURL, func(conn *pgx.Conn) error {
		for _, a := range accounts {
			id := "acct_compat_" + a.Key
			batch := []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO accounts (id, provider, provider_user_id, login, display_name, created_at, updated_at)
				  VALUES ($1, 'github', $2, $3, $3, now(), now())`, []any{id, a.UserID, a.Login}},
				{`INSERT INTO owner_tokens (token_id, account_id, github_user_id, token_hash, created_at, updated_at)
				  VALUES ($1, $2, $3, $4, now(), now())`, []any{"owner_token_compat_" + a.Key, id, a.UserID, hexHash(a.OwnerToken)}},
				{`INSERT INTO auth_sessions (id, account_id, token_hash, expires_at, created_at)
				  VALUES ($1, $2, $3, now() + interval '1 day', now())`, []any{"sess_compat_" + a.Key, id, hexHash(a.SessionToken)}},
			}
			for _, q := range batch {
				if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
					return fmt.Errorf("seed the anchor: %w", err)
				}
			}
			vs["acct_"+a.Key] = id
		}
		return nil
	})
}

// seedOurs writes the accounts in our schema (bigserial ids, raw SHA-256
// token hashes) and records their ids in vs.
func seedOurs(ctx context.Context, dbURL string, accounts []account, vs vars) error {
	return withConn(ctx, dbURL, func(conn *pgx.Conn) error {
		for _, a := range accounts {
			var id int64
			err := conn.QueryRow(ctx, `INSERT INTO accounts (provider, provider_user_id, login, display_name, created_at, updated_at)
				VALUES ('github', $1, $2, $2, now(), now()) RETURNING id`, a.UserID, a.Login).Scan(&id)
			if err != nil {
				return fmt.Errorf("seed ours: %w", err)
			}
			if _, err := conn.Exec(ctx, `INSERT INTO owner_tokens (account_id, token_hash, created_at) VALUES ($1, $2, now())`,
				id, auth.HashToken(a.OwnerToken)); err != nil {
				return fmt.Errorf("seed ours: %w", err)
			}
			if _, err := conn.Exec(ctx, `INSERT INTO auth_sessions (account_id, token_hash, created_at, expires_at)
				VALUES ($1, $2, now(), now() + interval '1 day')`, id, auth.HashToken(a.SessionToken)); err != nil {
				return fmt.Errorf("seed ours: %w", err)
			}
			// Ours shows account ids as acct_<id>.
			vs["acct_"+a.Key] = "acct_" + strconv.FormatInt(id, 10)
		}
		return nil
	})
}

func withConn(ctx context.Context, dbURL string, f func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(dbURL), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return f(conn)
}

// hexHash is the anchor's stored form of a token: SHA-256 in hex (ours,
// auth.HashToken, keeps the raw bytes).
func hexHash(token string) string { return hex.EncodeToString(auth.HashToken(token)) }
