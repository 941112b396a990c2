-- Who owns a piece of work in a room, so that only they change it: the
-- account that opened a reasoning session (through its worker session,
-- its browser, or its token), and the account that first published an
-- artifact. NULL: made by nobody signed in, which proves no one's
-- authorship, so whoever may use the room may change it, as before. Rows
-- older than this migration have no known owner and stay that way.
ALTER TABLE reasoning_sessions ADD COLUMN owner_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL;
ALTER TABLE room_artifacts ADD COLUMN publisher_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL;
