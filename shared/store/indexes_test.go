package store_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/letagents/letagents-go/shared/pgtest"
)

// Every send writes an entry into each index on messages, so each one
// must be read by something. Adding an index means naming its reader
// here; an index that nothing reads (as messages_mentions_idx was, until
// migration 0037) fails the test.
func TestMessagesIndexesEachHaveAReader(t *testing.T) {
	t.Parallel()
	readers := map[string]string{
		"messages_pkey":              "every page, thread and message read by room and number",
		"messages_client_id_idx":     "a retried send finds the message its client id made (and its uniqueness refuses a second)",
		"messages_thread_parent_idx": "the reply foreign key's check when the sweeper deletes a quoted message",
		"messages_thread_root_idx":   "thread reads, and TakeUnread's test for a thread the agent wrote in",
		"messages_sender_room_idx":   "whether a name has spoken in a room, and search's sender filter",
		"messages_search_idx":        "search",
		"messages_pinned_idx":        "the room's pins",
	}
	d := pgtest.New(t)
	rows, err := d.Pool.Query(context.Background(), `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'messages'`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range got {
		if readers[name] == "" {
			t.Errorf("index %s on messages has no reader listed: every send pays for it; name what reads it, or drop it", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(readers)) {
		if !slices.Contains(got, name) {
			t.Errorf("index %s is listed but not on messages", name)
		}
	}
}

// The generated search column inlines message_search_text, and PostgreSQL
// builds that column's expression again at the start of every statement
// that writes a message: a body kept as text is parsed each time, one
// stored parsed (PostgreSQL 14 and later, migration 0040) is only read.
// Either way the function gives search the same text.
func TestSearchTextBodyIsStoredParsed(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	var version int
	var parsed bool
	var text string
	err := d.Pool.QueryRow(context.Background(), `
		SELECT current_setting('server_version_num')::integer, p.prosqlbody IS NOT NULL, message_search_text('a <b> c')
		FROM pg_proc p WHERE p.proname = 'message_search_text' AND p.pronamespace = current_schema()::regnamespace`).Scan(&version, &parsed, &text)
	if err != nil {
		t.Fatal(err)
	}
	if want := version >= 140000; parsed != want {
		t.Errorf("on server version %d the body is stored parsed: %v, want %v", version, parsed, want)
	}
	if want := "a \ue000b\ue001 c"; text != want {
		t.Errorf("message_search_text = %q, want %q", text, want)
	}
}
