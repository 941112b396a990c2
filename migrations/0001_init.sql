-- Rooms and their messages. A room's last_seq is the message counter: taking
-- the next number with UPDATE ... RETURNING locks only that room's row, so
-- senders of one room are serialised and number order equals commit order.
CREATE TABLE rooms (
    id             text PRIMARY KEY,
    kind           text NOT NULL CHECK (kind IN ('invite', 'named', 'repo', 'branch')),
    display_name   text NOT NULL,
    parent_room_id text REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    last_seq       bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    created_at     timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
    CHECK ((kind = 'branch') = (parent_room_id IS NOT NULL))
);

CREATE INDEX rooms_parent_idx ON rooms (parent_room_id) WHERE parent_room_id IS NOT NULL;

CREATE TABLE messages (
    room_id           text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    seq               bigint NOT NULL CHECK (seq > 0),
    sender            text NOT NULL,
    text              text NOT NULL,
    source            text CHECK (source IN ('agent', 'browser')),
    thread_parent_seq bigint,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (room_id, seq),
    -- A reply comes after its parent; this also stops a message naming its
    -- own number, which the foreign key alone would accept.
    CHECK (thread_parent_seq < seq),
    FOREIGN KEY (room_id, thread_parent_seq) REFERENCES messages (room_id, seq)
        ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX messages_thread_parent_idx ON messages (room_id, thread_parent_seq)
    WHERE thread_parent_seq IS NOT NULL;
