-- One room event log: every change a client sees live in a room (a
-- message, a task change, a reasoning change, and later pins, presence,
-- renames, GitHub events) is one row here, numbered in the room's one
-- sequence (rooms.last_event). The number is taken by bumping the room's
-- row in the transaction that makes the change and is held under that
-- row's lock to commit, so numbers become visible in order: a reader that
-- sees event N also sees every event before it, and one that goes on from
-- the last number it read never skips one (a global sequence could commit
-- out of order).
--
-- A row says what changed, not what it became: ref names the item (a
-- message's or task's number, in ref; a reasoning session's id, in
-- ref_id), and readers load its current state. A task or reasoning session
-- carries the number of its latest event (tasks.change_seq,
-- reasoning_sessions.change_seq, which now count in this sequence), so a
-- reader shows an item changed twice once, at its latest change.
ALTER TABLE rooms ADD COLUMN last_event bigint NOT NULL DEFAULT 0 CHECK (last_event >= 0);

CREATE TABLE room_events (
    room_id text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    seq     bigint NOT NULL CHECK (seq > 0),
    kind    text NOT NULL CHECK (kind ~ '^[a-z_]+$'),
    ref     bigint,
    ref_id  text,
    PRIMARY KEY (room_id, seq)
);

-- A stream resumes after a message (Last-Event-ID msg_N): this finds the
-- event of the newest message at or before N.
CREATE INDEX room_events_message_idx ON room_events (room_id, ref) WHERE kind = 'message';

-- Streams resume after any message ever sent, so every existing message
-- gets its event, numbered as the message is. Task and reasoning events
-- were live only and need no history. The log starts past every number
-- already used by messages, task changes and reasoning changes, so the
-- changes numbered from now on never meet an old one.
INSERT INTO room_events (room_id, seq, kind, ref) SELECT room_id, seq, 'message', seq FROM messages;
UPDATE rooms SET last_event = greatest(last_seq, last_task_change, last_reasoning_seq);
--
-- rooms.last_task_change and rooms.last_reasoning_seq are no longer read
-- by this build, but the build before it writes them, and it serves while
-- this one rolls out, or again for good when the deploy fails and rolls
-- back after this migration ran: they are dropped by a later migration,
-- once no deployed build uses them (docs/deploy.md, "Schema changes").
