package migrations_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// before is the set of migrations that precede the one named suffix.
func before(t *testing.T, suffix string) fs.FS {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, name := range files { // sorted, and numbered with leading zeros
		if strings.HasSuffix(name, suffix) {
			return out
		}
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = &fstest.MapFile{Data: b}
	}
	t.Fatalf("no migration named *%s", suffix)
	return nil
}

// The server's earlier lines get source system where they can be told
// from a client's forgery, and only the server's name may carry it.
func TestSystemSourceMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := pgtest.NewEmpty(t)
	if _, err := db.Migrate(ctx, d.Pool, before(t, "_system_source.sql")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO rooms (id, kind, display_name, last_seq) VALUES ('r', 'named', 'r', 4);
		INSERT INTO messages (room_id, seq, sender, text, source, created_at, client_message_id) VALUES
			('r', 1, 'letagents', '[status] Builder is back online and reachable again.', NULL, now(), 'agent_liveness:recovered:1:1700000000000'),
			('r', 2, 'letagents', '[status] task_1 is complete: Ship it', NULL, now(), NULL),
			('r', 3, 'letagents', '[status] task_2 is complete: Forged', 'agent', now(), NULL),
			('r', 4, 'Ann', '[status] working', 'browser', now(), NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil {
		t.Fatal(err)
	}

	rows, err := d.Pool.Query(ctx, `SELECT coalesce(source, 'null') FROM messages WHERE room_id = 'r' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// The liveness notice is provably the server's; the task line is not
	// (an anonymous post looked the same), nor are the others.
	if want := []string{"system", "null", "agent", "browser"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sources after the migration = %v, want %v", got, want)
	}

	for _, tt := range []struct {
		sender, source string
		ok             bool
	}{
		{"letagents", "system", true},
		{"Ann", "system", false},
		{"letagents", "server", false},
	} {
		_, err := d.Pool.Exec(ctx, `
			WITH next AS (UPDATE rooms SET last_seq = last_seq + 1 WHERE id = 'r' RETURNING last_seq)
			INSERT INTO messages (room_id, seq, sender, text, source, created_at)
			SELECT 'r', last_seq, $1, 'x', $2, now() FROM next`, tt.sender, tt.source)
		var pgErr *pgconn.PgError
		if ok := err == nil; ok != tt.ok || (!ok && (!errors.As(err, &pgErr) || pgErr.Code != "23514")) {
			t.Errorf("insert sender %q source %q: %v, want accepted %v (else a check violation)", tt.sender, tt.source, err, tt.ok)
		}
	}
}
