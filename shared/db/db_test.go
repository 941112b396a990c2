package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
)

func TestMigrateAppliesOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	ctx := context.Background()

	var wg sync.WaitGroup
	counts := make([]int, 6)
	errs := make([]error, 6)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = db.Migrate(ctx, d.Pool, migrations.FS)
		}()
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
		total += counts[i]
	}
	files, _ := migrations.FS.ReadDir(".")
	want := 0
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".sql") {
			want++
		}
	}
	if total != want {
		t.Errorf("migrations applied across 6 concurrent migrators = %d, want %d (each once)", total, want)
	}
	var recorded int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != want {
		t.Errorf("schema_migrations rows = %d, want %d", recorded, want)
	}
	if n, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil || n != 0 {
		t.Errorf("second Migrate = %d, %v; want 0, nil", n, err)
	}
}

func TestMigrateRejectsBadSets(t *testing.T) {
	t.Parallel()
	ok := &fstest.MapFile{Data: []byte(`CREATE TABLE a (id int);`)}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"gap", fstest.MapFS{"0001_a.sql": ok, "0003_c.sql": ok}, "expected migration 0002"},
		{"duplicate", fstest.MapFS{"0001_a.sql": ok, "0001_b.sql": ok}, "two migrations numbered 1"},
		{"starts at two", fstest.MapFS{"0002_a.sql": ok}, "expected migration 0001"},
		{"bad name", fstest.MapFS{"1_a.sql": ok}, "not named NNNN_name.sql"},
		{"bad sql", fstest.MapFS{"0001_a.sql": {Data: []byte(`CREATE TABLEX`)}}, "0001_a.sql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			_, err := db.Migrate(context.Background(), d.Pool, tt.fsys)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Migrate error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestMigrateRejectsRenamedMigration(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	ctx := context.Background()
	sql := &fstest.MapFile{Data: []byte(`CREATE TABLE a (id int);`)}
	if _, err := db.Migrate(ctx, d.Pool, fstest.MapFS{"0001_a.sql": sql}); err != nil {
		t.Fatal(err)
	}
	_, err := db.Migrate(ctx, d.Pool, fstest.MapFS{"0001_renamed.sql": sql})
	if err == nil || !strings.Contains(err.Error(), "was applied as 0001_a.sql") {
		t.Fatalf("Migrate after rename error = %v", err)
	}
}

func TestMigrateFailedMigrationLeavesNoTrace(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	ctx := context.Background()
	fsys := fstest.MapFS{
		"0001_a.sql": {Data: []byte(`CREATE TABLE a (id int);`)},
		"0002_b.sql": {Data: []byte(`CREATE TABLE b (id int); SELECT 1/0;`)},
	}
	n, err := db.Migrate(ctx, d.Pool, fsys)
	if err == nil || n != 1 {
		t.Fatalf("Migrate = %d, %v; want 1 applied and an error", n, err)
	}
	var exists bool
	if err := d.Pool.QueryRow(ctx, `SELECT to_regclass('b') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("table b of the failed migration exists; its transaction should have rolled back")
	}
}

type fakeSecrets struct {
	secret *string
	err    error
}

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &secretsmanager.GetSecretValueOutput{ARN: in.SecretId, SecretString: f.secret}, nil
}

func ptr(s string) *string { return &s }

func TestConnString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     db.Config
		sm      db.SecretGetter
		want    string
		wantErr string
	}{
		{"url", db.Config{URL: "postgres://x@h/db"}, nil, "postgres://x@h/db", ""},
		{"none", db.Config{}, nil, "", "set DB_URL or DB_SECRET_ARN"},
		{"both", db.Config{URL: "u", SecretARN: "arn"}, nil, "", "not both"},
		{"rds secret", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`{"username":"app","password":"p@ss/w:rd","host":"db.example","port":5433,"dbname":"letagents"}`)},
			"postgres://app:p%40ss%2Fw%3Ard@db.example:5433/letagents?sslmode=require", ""},
		{"string port, default db", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`{"username":"app","password":"p","host":"h","port":"6000"}`)},
			"postgres://app:p@h:6000/postgres?sslmode=require", ""},
		{"no port", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`{"username":"app","password":"p","host":"h","dbname":"d"}`)},
			"postgres://app:p@h:5432/d?sslmode=require", ""},
		{"not json", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`nope`)}, "", "not JSON"},
		{"no host", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`{"username":"a"}`)}, "", "needs username, and host"},
		{"managed master secret, address beside it", db.Config{SecretARN: "arn", Host: "c.cluster-x.rds.amazonaws.com", Port: "5432", Name: "letagents"},
			fakeSecrets{secret: ptr(`{"username":"letagents","password":"p:w"}`)},
			"postgres://letagents:p%3Aw@c.cluster-x.rds.amazonaws.com:5432/letagents?sslmode=require", ""},
		{"address beside a whole secret wins", db.Config{SecretARN: "arn", Host: "new.example", Port: "6432", Name: "other"},
			fakeSecrets{secret: ptr(`{"username":"app","password":"p","host":"old.example","port":5433,"dbname":"d"}`)},
			"postgres://app:p@new.example:6432/other?sslmode=require", ""},
		{"host only", db.Config{SecretARN: "arn", Host: "h"}, fakeSecrets{secret: ptr(`{"username":"app","password":"p","port":5433}`)},
			"postgres://app:p@h:5433/postgres?sslmode=require", ""},
		{"bad DB_PORT", db.Config{SecretARN: "arn", Host: "h", Port: "54x"}, fakeSecrets{secret: ptr(`{"username":"app","password":"p"}`)}, "", `DB_PORT="54x"`},
		{"DB_PORT out of range", db.Config{SecretARN: "arn", Host: "h", Port: "70000"}, fakeSecrets{secret: ptr(`{"username":"app","password":"p"}`)}, "", "want a port number"},
		{"managed secret without DB_HOST", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`{"username":"a","password":"p"}`)}, "", "DB_HOST"},
		{"address with a url", db.Config{URL: "postgres://x@h/db", Host: "h"}, nil, "", "DB_URL carries its own address"},
		{"bad port", db.Config{SecretARN: "arn"}, fakeSecrets{secret: ptr(`{"username":"a","host":"h","port":"x"}`)}, "", "not a number"},
		{"binary secret", db.Config{SecretARN: "arn"}, fakeSecrets{}, "", "no SecretString"},
		{"aws error", db.Config{SecretARN: "arn"}, fakeSecrets{err: errors.New("denied")}, "", "read database secret: denied"},
		{"no client", db.Config{SecretARN: "arn"}, nil, "", "no Secrets Manager client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.cfg.ConnString(context.Background(), tt.sm)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ConnString error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ConnString = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSchemaAndConnector(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if got := db.Schema(d.Pool); got != d.Schema {
		t.Errorf("Schema = %q, want %q", got, d.Schema)
	}
	direct, err := db.DirectConnector(d.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, connect := range map[string]func(context.Context) (*pgx.Conn, error){
		"Connector": db.Connector(d.Pool), "DirectConnector": direct,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, err := connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var schema, userTimeout, keepaliveIdle string
			if err := conn.QueryRow(context.Background(),
				`SELECT current_schema(), current_setting('tcp_user_timeout'), current_setting('tcp_keepalives_idle')`,
			).Scan(&schema, &userTimeout, &keepaliveIdle); err != nil {
				t.Fatal(err)
			}
			if schema != d.Schema {
				t.Errorf("dedicated connection schema = %q, want %q", schema, d.Schema)
			}
			// The server drops a listener that went silent instead of keeping its
			// backend for hours. (Over a Unix socket the settings read as 0.)
			tcp := conn.PgConn().Conn().RemoteAddr().Network() != "unix"
			if tcp && (userTimeout != "20000" || keepaliveIdle != "5") {
				t.Errorf("dedicated connection tcp_user_timeout, tcp_keepalives_idle = %q, %q, want 20000, 5", userTimeout, keepaliveIdle)
			}
		})
	}
	if _, err := db.DirectConnector("postgres://x:notaport/db", nil); err == nil {
		t.Error("DirectConnector of a malformed URL = nil error")
	}
}

func TestPoolConnString(t *testing.T) {
	t.Parallel()
	const direct = "postgres://u:p%40ss@db.internal:5433/app?sslmode=require"
	tests := []struct {
		name, proxy, direct, want, wantErr string
	}{
		{"no proxy: the direct address", "", direct, direct, ""},
		{"no proxy, key=value form", "", "host=db dbname=app", "host=db dbname=app", ""},
		{"proxy host keeps the port", "letagents.proxy-abc.eu-west-1.rds.amazonaws.com", direct,
			"postgres://u:p%40ss@letagents.proxy-abc.eu-west-1.rds.amazonaws.com:5433/app?default_query_exec_mode=cache_describe&sslmode=require", ""},
		{"proxy host and port", "proxy.internal:6432", "postgres://u@db.internal/app",
			"postgres://u@proxy.internal:6432/app?default_query_exec_mode=cache_describe", ""},
		{"an explicit exec mode stays", "proxy.internal", "postgres://u@db.internal/app?default_query_exec_mode=exec",
			"postgres://u@proxy.internal/app?default_query_exec_mode=exec", ""},
		{"key=value form cannot be rewritten", "proxy.internal", "host=db dbname=app", "", "postgres:// URL"},
		{"not a host", "proxy.internal/app", direct, "", "DB_PROXY_HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := db.Config{ProxyHost: tt.proxy}.PoolConnString(tt.direct)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("PoolConnString = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("PoolConnString = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// CheckSchema against a real schema at each stage: none yet, part of the
// migrations, all of them, and one past what the build knows.
func TestCheckSchema(t *testing.T) {
	t.Parallel()
	a := &fstest.MapFile{Data: []byte(`CREATE TABLE a (id int);`)}
	b := &fstest.MapFile{Data: []byte(`CREATE TABLE b (id int);`)}
	c := &fstest.MapFile{Data: []byte(`CREATE TABLE c (id int);`)}
	build := fstest.MapFS{"0001_a.sql": a, "0002_b.sql": b} // what the code carries
	tests := []struct {
		name    string
		applied fstest.MapFS // nil: never migrated
		wantErr *db.SchemaError
	}{
		{"never migrated", nil, &db.SchemaError{Applied: 0, Needed: 2}},
		{"one behind", fstest.MapFS{"0001_a.sql": a}, &db.SchemaError{Applied: 1, Needed: 2}},
		{"current", build, nil},
		{"ahead: the next build migrated", fstest.MapFS{"0001_a.sql": a, "0002_b.sql": b, "0003_c.sql": c}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			ctx := context.Background()
			if tt.applied != nil {
				if _, err := db.Migrate(ctx, d.Pool, tt.applied); err != nil {
					t.Fatal(err)
				}
			}
			err := db.CheckSchema(ctx, d.Pool, build)
			var se *db.SchemaError
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("CheckSchema = %v, want nil", err)
			case tt.wantErr != nil && !errors.As(err, &se):
				t.Fatalf("CheckSchema = %v, want a *db.SchemaError", err)
			case tt.wantErr != nil && *se != *tt.wantErr:
				t.Fatalf("CheckSchema = %+v, want %+v", *se, *tt.wantErr)
			case tt.wantErr != nil && !strings.Contains(err.Error(), "functions/migrate"):
				t.Errorf("error %q does not say how to migrate", err)
			}
		})
	}
}

func TestLatestIsTheNewestEmbeddedMigration(t *testing.T) {
	t.Parallel()
	files, err := migrations.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".sql") {
			want++ // numbered 1…n without gaps, which Migrate enforces
		}
	}
	if got, err := db.Latest(migrations.FS); err != nil || got != want {
		t.Errorf("Latest(migrations.FS) = %d, %v; want %d", got, err, want)
	}
}

// TestConnStringReachesTheDatabase: a secret with credentials only (as RDS
// manages a master user's) and the address beside it (DB_HOST, DB_PORT,
// DB_NAME) open a real connection, over TLS as the URL asks.
func TestConnStringReachesTheDatabase(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	u, err := url.Parse(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	secret, err := json.Marshal(map[string]string{"username": u.User.Username(), "password": pw})
	if err != nil {
		t.Fatal(err)
	}
	cfg := db.Config{SecretARN: "arn", Host: u.Hostname(), Port: u.Port(), Name: strings.TrimPrefix(u.Path, "/")}
	ctx := context.Background()
	conn, err := cfg.ConnString(ctx, fakeSecrets{secret: ptr(string(secret))})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := db.Open(ctx, conn, 1)
	if err != nil {
		t.Fatalf("open the database the secret and DB_HOST, DB_PORT, DB_NAME name: %v", err)
	}
	defer pool.Close()
	var name string
	var tls bool
	if err := pool.QueryRow(ctx, `SELECT current_database(), (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())`).Scan(&name, &tls); err != nil {
		t.Fatal(err)
	}
	if name != cfg.Name || !tls {
		t.Errorf("connected to database %q (TLS %v), want %q over TLS", name, tls, cfg.Name)
	}
}

// rotatingSecrets is a Secrets Manager whose secret's password the test
// changes, as RDS rotates a managed one; it counts reads.
type rotatingSecrets struct {
	mu       sync.Mutex
	password string
	err      error
	reads    int
}

func (r *rotatingSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.err != nil {
		return nil, r.err
	}
	s := `{"username":"app","password":"` + r.password + `"}`
	return &secretsmanager.GetSecretValueOutput{ARN: in.SecretId, SecretString: &s}, nil
}

func (r *rotatingSecrets) set(password string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.password, r.err = password, err
}

// TestSecretPassword: new connections follow the secret's rotation within
// PasswordTTL, reading it at most once per PasswordTTL, and keep the last
// password read while Secrets Manager fails.
func TestSecretPassword(t *testing.T) {
	t.Parallel()
	if (db.Config{URL: "postgres://x"}).SecretPassword(&rotatingSecrets{}, time.Now) != nil {
		t.Error("SecretPassword without a secret is not nil")
	}
	sm := &rotatingSecrets{password: "first"}
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	pw := db.Config{SecretARN: "arn"}.SecretPassword(sm, now)
	ctx := context.Background()
	steps := []struct {
		name      string
		advance   time.Duration
		set       string
		setErr    error
		want      string
		wantReads int
	}{
		{"first connection reads the secret", 0, "first", nil, "first", 1},
		{"within the TTL: no read", db.PasswordTTL - time.Second, "second", nil, "first", 1},
		{"past the TTL: the rotated password", time.Second, "second", nil, "second", 2},
		{"cached again", time.Second, "second", nil, "second", 2},
		{"Secrets Manager failing: the last password", db.PasswordTTL, "", errors.New("throttled"), "second", 3},
		{"it fails again: read again, still the last", time.Second, "", errors.New("throttled"), "second", 4},
		{"back: the new one", time.Second, "third", nil, "third", 5},
	}
	for _, s := range steps {
		clock = clock.Add(s.advance)
		sm.set(s.set, s.setErr)
		got, err := pw(ctx)
		if err != nil || got != s.want || sm.reads != s.wantReads {
			t.Errorf("%s: password %q, %v after %d reads; want %q after %d", s.name, got, err, sm.reads, s.want, s.wantReads)
		}
	}
	fresh := db.Config{SecretARN: "arn"}.SecretPassword(&rotatingSecrets{err: errors.New("denied")}, now)
	if _, err := fresh(ctx); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("no password read yet and Secrets Manager failing: %v, want its error", err)
	}
}

// TestConnectionsTakeTheSourcesPassword: the pool and the listener's
// connector ask the password source for each new connection (the test
// server trusts local connections, so a failing source is what shows it).
func TestConnectionsTakeTheSourcesPassword(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	var asked atomic.Int32
	good := func(context.Context) (string, error) { asked.Add(1); return "from the secret", nil }
	bad := func(context.Context) (string, error) { return "", errors.New("secret unreadable") }

	pool, err := db.OpenWithPassword(ctx, d.URL, 1, good)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if n := asked.Load(); n < 1 {
		t.Errorf("the pool opened a connection without asking the password source")
	}
	connect, err := db.DirectConnector(d.URL, good)
	if err != nil {
		t.Fatal(err)
	}
	before := asked.Load()
	conn, err := connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if asked.Load() != before+1 {
		t.Errorf("the connector opened a connection without asking the password source")
	}

	if p, err := db.OpenWithPassword(ctx, d.URL, 1, bad); err == nil || !strings.Contains(err.Error(), "secret unreadable") {
		if p != nil {
			p.Close()
		}
		t.Errorf("pool whose password source fails: %v, want its error", err)
	}
	connect, err = db.DirectConnector(d.URL, bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(ctx); err == nil || !strings.Contains(err.Error(), "secret unreadable") {
		t.Errorf("listener connection whose password source fails: %v, want its error", err)
	}
}

// A migrator that another session keeps waiting gives up after its bound,
// naming that session, and takes its turn once the session lets go; the
// bound does not stay on the pooled session.
func TestMigrateWaitingNamesTheLockHolder(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	ctx := context.Background()
	pid, release := d.HoldMigrateLock(t)
	pool, err := db.Open(ctx, d.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	_, err = db.MigrateWaiting(ctx, pool, migrations.FS, 200*time.Millisecond)
	var lerr *db.LockError
	if !errors.As(err, &lerr) || lerr.PID != pid || lerr.Application != d.Schema || lerr.Since.IsZero() {
		t.Fatalf("MigrateWaiting behind pid %d = %v (%#v), want a LockError naming pid %d of application %s", pid, err, lerr, pid, d.Schema)
	}
	for _, want := range []string{fmt.Sprintf("pg_terminate_backend(%d)", pid), "over 200ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := db.CheckSchema(ctx, pool, migrations.FS); err == nil {
		t.Error("the schema was migrated without the lock")
	}
	var timeout string
	if err := pool.QueryRow(ctx, `SHOW lock_timeout`).Scan(&timeout); err != nil || timeout != "0" {
		t.Errorf("lock_timeout on the pooled session = %q, %v; want the server's 0", timeout, err)
	}

	release()
	if _, err := db.MigrateWaiting(ctx, pool, migrations.FS, 200*time.Millisecond); err != nil {
		t.Fatalf("MigrateWaiting once the lock is free: %v", err)
	}
	if err := db.CheckSchema(ctx, pool, migrations.FS); err != nil {
		t.Error(err)
	}
}
