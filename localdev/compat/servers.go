package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/localdev/runnerproc"
	"github.com/letagents/letagents-go/shared/auth"
	svcconfig "github.com/letagents/letagents-go/shared/config"
)

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

// startOurs serves ./localdev on a free port with its log in
// work/ours.log, with the limits raised out of the suite's way and repo
// rooms behind GitHub's rules, as the anchor has them. Every variable the
// service reads is set, most to empty, so that the caller's GitHub app or
// database settings do not leak in.
func startOurs(ctx context.Context, dbURL, work string) (string, func(), error) {
	logPath := filepath.Join(work, "ours.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	env := make([]string, 0, len(svcconfig.Variables)+5)
	for _, v := range svcconfig.Variables {
		if v != "PORT" { // runnerproc's PORT=0 stands
			env = append(env, v+"=")
		}
	}
	env = append(env, "DB_URL="+dbURL, "LETAGENTS_JOIN_LIMIT=100000", "LETAGENTS_INVITE_ROOM_LIMIT=100000",
		"LETAGENTS_SEND_LIMIT=100000", "LETAGENTS_REPO_ACCESS=github")
	p, err := runnerproc.Start(ctx, env, logFile)
	if err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("localdev (log %s): %w", logPath, err)
	}
	return p.URL, func() { p.Stop(); logFile.Close() }, nil
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
