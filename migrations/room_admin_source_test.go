package migrations_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// The admins of repository rooms before the migration were all made by
// GitHub, and become GitHub's to re-check; every other admin is the
// room's own.
func TestRoomAdminSourceMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := pgtest.NewEmpty(t)
	if _, err := db.Migrate(ctx, d.Pool, before(t, "_room_admin_source.sql")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO accounts (id, provider, provider_user_id, login, display_name, created_at, updated_at)
			VALUES (1, 'github', '1', 'ann', 'Ann', now(), now());
		INSERT INTO rooms (id, kind, display_name) VALUES
			('github.com/acme/app', 'repo', 'app'), ('AAAA-BBBB-CCCC', 'invite', 'x'), ('team', 'named', 'team');
		INSERT INTO rooms (id, kind, display_name, parent_room_id) VALUES
			('github.com/acme/app@feature', 'branch', 'Branch: feature', 'github.com/acme/app');
		INSERT INTO room_admins (room_id, account_id) VALUES
			('github.com/acme/app', 1), ('github.com/acme/app@feature', 1), ('AAAA-BBBB-CCCC', 1), ('team', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil {
		t.Fatal(err)
	}
	rows, err := d.Pool.Query(ctx, `SELECT room_id, source FROM room_admins`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var room, source string
		if err := rows.Scan(&room, &source); err != nil {
			t.Fatal(err)
		}
		got[room] = source
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"github.com/acme/app": "github", "github.com/acme/app@feature": "github", "AAAA-BBBB-CCCC": "room", "team": "room"}
	if !maps.Equal(got, want) {
		t.Errorf("sources after the migration = %v; want %v", got, want)
	}
}
