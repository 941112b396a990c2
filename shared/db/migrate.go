package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// undefinedTable is PostgreSQL's SQLSTATE for a relation that does not exist.
const undefinedTable = "42P01"

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

type migration struct {
	version int
	name    string
	sql     string
}

// lockNotAvailable is PostgreSQL's SQLSTATE for a lock wait that
// lock_timeout ended.
const lockNotAvailable = "55P03"

// migrateLockKey is the migration lock's advisory lock key: one per schema.
const migrateLockKey = `hashtext('letagents.migrate:' || current_schema())::bigint`

// Migrate applies, in order, every migration in fsys not yet recorded in
// schema_migrations, each in its own transaction. A session advisory lock
// (keyed by the schema) makes instances that start together take turns, so
// each migration runs exactly once; Migrate waits for it as long as ctx
// allows. Numbers must run 1, 2, 3… without gaps or duplicates, and an
// applied migration must not have been renamed.
func Migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) (applied int, err error) {
	return MigrateWaiting(ctx, pool, fsys, 0)
}

// MigrateWaiting is Migrate giving up with a *LockError once another
// session has kept it waiting lockWait for the migration lock (0: as long
// as ctx allows). A deploy must not spend its whole time behind a session
// that a person has to end.
func MigrateWaiting(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, lockWait time.Duration) (applied int, err error) {
	all, err := readMigrations(fsys)
	if err != nil {
		return 0, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()

	if err := takeMigrateLock(ctx, conn.Conn(), lockWait); err != nil {
		return 0, err
	}
	defer func() {
		// Unlock even when ctx is cancelled, or the pooled session keeps the lock.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+migrateLockKey+`)`); uerr != nil && err == nil {
			err = fmt.Errorf("migrate: release lock: %w", uerr)
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done := map[int]string{}
	rows, err := conn.Query(ctx, `SELECT version, name FROM schema_migrations`)
	if err != nil {
		return 0, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return 0, fmt.Errorf("migrate: read schema_migrations: %w", err)
		}
		done[v] = name
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}

	for _, m := range all {
		if name, ok := done[m.version]; ok {
			if name != m.name {
				return applied, fmt.Errorf("migrate: version %d was applied as %s but is now %s", m.version, name, m.name)
			}
			continue
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return applied, fmt.Errorf("migrate %s: begin: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			_ = tx.Rollback(ctx)
			return applied, fmt.Errorf("migrate %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			_ = tx.Rollback(ctx)
			return applied, fmt.Errorf("migrate %s: record: %w", m.name, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return applied, fmt.Errorf("migrate %s: commit: %w", m.name, err)
		}
		applied++
	}
	return applied, nil
}

// takeMigrateLock takes the migration lock on conn, waiting at most
// lockWait (0: as long as ctx allows). The bound is the server's
// lock_timeout, set for a transaction around the one statement: a
// client-side cancel would leave the server to take the lock for a
// session that has gone, and the session lock outlives the transaction.
func takeMigrateLock(ctx context.Context, conn *pgx.Conn, lockWait time.Duration) error {
	const lock = `SELECT pg_advisory_lock(` + migrateLockKey + `)`
	if lockWait <= 0 {
		if _, err := conn.Exec(ctx, lock); err != nil {
			return fmt.Errorf("migrate: take lock: %w", err)
		}
		return nil
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		ms := strconv.FormatInt(max(lockWait.Milliseconds(), 1), 10)
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, ms); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, lock)
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == lockNotAvailable {
		lerr := &LockError{Waited: lockWait}
		// The holder may have let go since; then PID stays 0.
		_ = conn.QueryRow(ctx, `SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local'), a.backend_start
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND l.classid::bigint = (`+migrateLockKey+` >> 32) & 4294967295 AND l.objid::bigint = `+migrateLockKey+` & 4294967295
			  AND l.objsubid = 1 AND l.pid <> pg_backend_pid()`).Scan(&lerr.PID, &lerr.Application, &lerr.Client, &lerr.Since)
		return lerr
	}
	if err != nil {
		return fmt.Errorf("migrate: take lock: %w", err)
	}
	return nil
}

// LockError is MigrateWaiting's answer when another session held the
// migration lock longer than it would wait: another migration still
// running, or the session of one that died without its client closing it.
type LockError struct {
	Waited time.Duration
	// PID, Application, Client and Since describe the session holding the
	// lock, as pg_stat_activity shows it; PID is 0 when it let go meanwhile.
	PID         int
	Application string
	Client      string
	Since       time.Time
}

func (e *LockError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("migrate: another session held the migration lock for over %v and has let go since: try again", e.Waited)
	}
	return fmt.Sprintf("migrate: another session has held the migration lock for over %v: PostgreSQL backend pid %d "+
		"(application %q, client %s, connected at %s). If no other migration runs, end that session "+
		"(SELECT pg_terminate_backend(%d)) and try again; otherwise wait for it to finish",
		e.Waited, e.PID, e.Application, e.Client, e.Since.UTC().Format(time.RFC3339), e.PID)
}

func readMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrate: list migrations: %w", err)
	}
	var all []migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrate: %s is not named NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1]) // four digits always parse
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrate: read %s: %w", e.Name(), err)
		}
		all = append(all, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].version < all[j].version })
	for i, m := range all {
		if m.version != i+1 {
			if i > 0 && all[i-1].version == m.version {
				return nil, fmt.Errorf("migrate: two migrations numbered %d", m.version)
			}
			return nil, fmt.Errorf("migrate: expected migration %04d, found %s", i+1, m.name)
		}
	}
	return all, nil
}

// Latest returns the newest migration version in fsys: the schema a build
// carrying fsys needs.
func Latest(fsys fs.FS) (int, error) {
	all, err := readMigrations(fsys)
	if err != nil {
		return 0, err
	}
	if len(all) == 0 {
		return 0, nil
	}
	return all[len(all)-1].version, nil
}

// Applied returns the newest migration version recorded in the database,
// 0 when none is (schema_migrations does not even exist yet).
func Applied(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == undefinedTable {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return v, nil
}

// SchemaError is CheckSchema's answer when the database's schema is older
// than the code needs.
type SchemaError struct {
	Applied, Needed int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the database schema is at migration %d but this build needs %d: apply the migrations first "+
		"(a deploy does, through the stack's Migrate resource; by hand: DB_URL=… go run ./functions/migrate)", e.Applied, e.Needed)
}

// CheckSchema returns a *SchemaError when the database has not had every
// migration of fsys applied. A newer schema passes: migrations are
// forward-only and additive, so the build before a deploy keeps serving
// while the next one rolls out.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) error {
	need, err := Latest(fsys)
	if err != nil {
		return err
	}
	have, err := Applied(ctx, pool)
	if err != nil {
		return err
	}
	if have < need {
		return &SchemaError{Applied: have, Needed: need}
	}
	return nil
}
