-- Proof of delivery (issue 16): which agent sessions a message has been
-- surfaced to (shown, through a wait, a read, a stream or a hook), the
-- agent sessions it @mentions, and each session's delivery cursor.

-- The agent sessions a message's @mentions named when it was sent; null
-- when it names none.
ALTER TABLE messages ADD COLUMN mentions bigint[];
CREATE INDEX messages_mentions_idx ON messages USING gin (mentions) WHERE mentions IS NOT NULL;

-- delivered_seq is the session's delivery cursor: the newest message
-- surfaced to it (or passed over by its hooks' filter). A session starts
-- at its room's newest message: a new agent is not handed the history.
-- unread_checked_at is when it last took its unread messages (a hook).
ALTER TABLE agent_sessions
    ADD COLUMN delivered_seq bigint NOT NULL DEFAULT 0 CHECK (delivered_seq >= 0),
    ADD COLUMN unread_checked_at timestamptz;
UPDATE agent_sessions s SET delivered_seq = r.last_seq FROM rooms r WHERE r.id = s.room_id;

-- A message surfaced to a session, the first time.
CREATE TABLE message_deliveries (
    room_id     text NOT NULL,
    seq         bigint NOT NULL,
    session_id  bigint NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
    surfaced_at timestamptz NOT NULL,
    via         text NOT NULL CHECK (via IN ('wait', 'read', 'stream', 'hook')),
    PRIMARY KEY (room_id, seq, session_id),
    FOREIGN KEY (room_id, seq) REFERENCES messages (room_id, seq) ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX message_deliveries_session_idx ON message_deliveries (session_id, surfaced_at);
