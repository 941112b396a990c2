package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// Every message sent before the event log gets its event, numbered as the
// message is, so a stream resumes after any of them; the log goes on past
// every number the old task and reasoning counters used.
func TestRoomEventsMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := pgtest.NewEmpty(t)
	if _, err := db.Migrate(ctx, d.Pool, before(t, "_room_events.sql")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO rooms (id, kind, display_name, last_seq, last_task_change, last_reasoning_seq) VALUES
			('chatty', 'named', 'chatty', 2, 1, 0), ('busy', 'named', 'busy', 1, 5, 9), ('quiet', 'named', 'quiet', 0, 0, 0);
		INSERT INTO messages (room_id, seq, sender, text, created_at) VALUES
			('chatty', 1, 'a', 'one', now()), ('chatty', 2, 'a', 'two', now()), ('busy', 1, 'b', 'one', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := d.Pool.QueryRow(ctx, `
		SELECT string_agg(format('%s:%s', r.id, r.last_event) || coalesce(' ' || ev.list, ''), '; ' ORDER BY r.id)
		FROM rooms r LEFT JOIN LATERAL (
			SELECT string_agg(format('%s=%s/%s', seq, kind, ref), ' ' ORDER BY seq) AS list FROM room_events WHERE room_id = r.id
		) ev ON true`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "busy:9 1=message/1; chatty:2 1=message/1 2=message/2; quiet:0"; got != want {
		t.Errorf("rooms and events after the migration = %q; want %q", got, want)
	}
}
