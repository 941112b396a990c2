package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/pgtest"
)

// Existing accounts and agents get the keys letagents.NameKey gives their
// names (exactly, for names of ASCII letters, digits and the lookalikes
// it folds), and agents the owner label of their account's name.
func TestNameKeysMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := pgtest.NewEmpty(t)
	if _, err := db.Migrate(ctx, d.Pool, before(t, "_name_keys.sql")); err != nil {
		t.Fatal(err)
	}
	names := []struct{ login, display string }{
		{"alice", "Alice Liddell"}, {"B0B-1", "BOB ONE"}, {"Ivan", "Ιvan the Тerrible"}, {"carol", "Carol O'Neil, Jr."},
	}
	for i, n := range names {
		if _, err := d.Pool.Exec(ctx, `
			INSERT INTO accounts (provider, provider_user_id, login, display_name, created_at, updated_at) VALUES ('github', $1::int::text, $2, $3, now(), now())
		`, i+1, n.login, n.display); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, `
			INSERT INTO agents (owner_account_id, name, canonical_key, display_name, owner_login, owner_label, created_at, updated_at)
			VALUES ($1, 'bot', $2, $3, $4, 'someone else', now(), now())`, i+1, n.login+"/bot", n.display+" Bot", n.login); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		var loginKey, nameKey, displayKey, ownerLabel string
		if err := d.Pool.QueryRow(ctx, `
			SELECT a.login_key, a.name_key, g.display_key, g.owner_label FROM accounts a JOIN agents g ON g.owner_account_id = a.id WHERE a.id = $1`,
			i+1).Scan(&loginKey, &nameKey, &displayKey, &ownerLabel); err != nil {
			t.Fatal(err)
		}
		if loginKey != letagents.NameKey(n.login) || nameKey != letagents.NameKey(n.display) || displayKey != letagents.NameKey(n.display+" Bot") || ownerLabel != n.display {
			t.Errorf("%s: keys %q %q %q, owner label %q; want %q %q %q, %q", n.login, loginKey, nameKey, displayKey, ownerLabel,
				letagents.NameKey(n.login), letagents.NameKey(n.display), letagents.NameKey(n.display+" Bot"), n.display)
		}
	}
}

// Existing agent sessions get the key letagents.NameKey gives their
// display names (exactly, for names of letters, digits and the lookalikes
// it folds), so that a send's statement can read them.
func TestSessionNameKeysMigration(t *testing.T) {
	t.Parallel()
	names := []string{"Quill", "B0B-1 the Builder", "Ιvan the Тerrible", "o'neil, jr.", "!!!"}
	sessions := make([]sessionBefore, len(names))
	for i, n := range names {
		sessions[i] = sessionBefore{display: n, label: n + " | ada's agent"}
	}
	d := migrateSessions(t, "_session_name_keys.sql", sessions)
	for _, n := range names {
		var key string
		if err := d.Pool.QueryRow(context.Background(), `SELECT display_key FROM agent_sessions WHERE display_name = $1`, n).Scan(&key); err != nil {
			t.Fatal(err)
		}
		if key != letagents.NameKey(n) {
			t.Errorf("%q: key %q, want %q", n, key, letagents.NameKey(n))
		}
	}
}

// Existing agent sessions get letagents.ReservedSender's verdict on their
// actor labels, which a send's statement reads instead of judging the
// label again.
func TestSessionLabelReservedMigration(t *testing.T) {
	t.Parallel()
	labels := []string{
		"Quill | Codex (ada's agent)",
		"LetAgents | Codex (ada's agent)",
		"let-agents (ada)",
		"ｌｅｔＡｇｅｎｔｓ | Codex", // full-width
		"lеtаgеnts | Codex", // Cyrillic е and а
		"ΙETAGENTS",         // a Greek capital iota for the l
		"1etag3nts | Codex", // 3 is no e
		"letagents-bot | Codex",
		"Quill | letagents",
	}
	sessions := make([]sessionBefore, len(labels))
	for i, l := range labels {
		sessions[i] = sessionBefore{display: "x", label: l}
	}
	d := migrateSessions(t, "_session_label_reserved.sql", sessions)
	var reserved int
	for _, l := range labels {
		var got bool
		if err := d.Pool.QueryRow(context.Background(), `SELECT label_reserved FROM agent_sessions WHERE actor_label = $1`, l).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := letagents.ReservedSender(l); got != want {
			t.Errorf("%q: label_reserved %v, want %v", l, got, want)
		}
		if got {
			reserved++
		}
	}
	if reserved < 5 {
		t.Errorf("%d labels reserved; the table means to hold five", reserved)
	}
}

// sessionBefore is an agent session as a migration finds it.
type sessionBefore struct{ display, label string }

// migrateSessions migrates a new schema up to the migration whose file
// name ends in suffix, registers sessions there (ada's workers in room
// "sessions"), and migrates the rest.
func migrateSessions(t *testing.T, suffix string, sessions []sessionBefore) *pgtest.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := pgtest.NewEmpty(t)
	if _, err := db.Migrate(ctx, d.Pool, before(t, suffix)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `
		INSERT INTO rooms (id, kind, display_name) VALUES ('sessions', 'named', 'sessions');
		INSERT INTO accounts (provider, provider_user_id, login, display_name, created_at, updated_at) VALUES ('github', '1', 'ada', 'Ada', now(), now())`); err != nil {
		t.Fatal(err)
	}
	for i, s := range sessions {
		if _, err := d.Pool.Exec(ctx, `
			INSERT INTO agent_sessions (room_id, token_hash, session_kind, runtime, agent_key, agent_instance_id, owner_account_id,
				display_name, owner_label, ide_label, actor_label, repo_branch, created_at, updated_at, last_seen_at)
			SELECT 'sessions', sha256($1::text::bytea), 'worker', 'codex', 'ada/bot', '', id, $2, 'ada', 'Codex', $3, '', now(), now(), now()
			FROM accounts`, fmt.Sprint(i), s.display, s.label); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Migrate(ctx, d.Pool, migrations.FS); err != nil {
		t.Fatal(err)
	}
	return d
}
