-- Reasoning sessions: an agent's replace-in-place reasoning trace in a
-- room, and every snapshot written to it (see letagents/reasoning.go).
--
-- Every write takes the room's next reasoning change number from
-- rooms.last_reasoning_seq, in the statement that writes, and stamps the
-- session (and the update it appends) with it: the number orders changes
-- as they commit, so an event stream that reads change_seq > its cursor
-- never skips one (Store.ReasoningChanges).
ALTER TABLE rooms ADD COLUMN last_reasoning_seq bigint NOT NULL DEFAULT 0 CHECK (last_reasoning_seq >= 0);

CREATE TABLE reasoning_sessions (
    id                text PRIMARY KEY CHECK (id ~ '^rs_[0-9a-f]{32}$'),
    room_id           text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    task_id           text,
    anchor_message_id text,
    actor_label       text NOT NULL CHECK (actor_label <> ''),
    agent_key         text,
    status            text CHECK (status IN ('idle', 'working', 'reviewing', 'blocked')),
    summary           text NOT NULL CHECK (summary <> ''),
    -- The merge of every snapshot written (jsonb ||: later keys win).
    latest_payload    jsonb NOT NULL CHECK (jsonb_typeof(latest_payload) = 'object'),
    change_seq        bigint NOT NULL CHECK (change_seq > 0),
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    closed_at         timestamptz
);

CREATE UNIQUE INDEX reasoning_sessions_change_idx ON reasoning_sessions (room_id, change_seq);
CREATE INDEX reasoning_sessions_room_updated_idx ON reasoning_sessions (room_id, updated_at DESC);
CREATE INDEX reasoning_sessions_room_open_idx ON reasoning_sessions (room_id, updated_at DESC) WHERE closed_at IS NULL;
CREATE INDEX reasoning_sessions_room_actor_idx ON reasoning_sessions (room_id, actor_label);
CREATE INDEX reasoning_sessions_room_task_idx ON reasoning_sessions (room_id, task_id) WHERE task_id IS NOT NULL;

CREATE TABLE reasoning_updates (
    id          text PRIMARY KEY CHECK (id ~ '^ru_[0-9a-f]{32}$'),
    room_id     text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    session_id  text NOT NULL REFERENCES reasoning_sessions (id) ON DELETE CASCADE,
    actor_label text NOT NULL CHECK (actor_label <> ''),
    status      text CHECK (status IN ('idle', 'working', 'reviewing', 'blocked')),
    summary     text NOT NULL CHECK (summary <> ''),
    milestone   text,
    -- The snapshot as written: only the fields its write gave.
    payload     jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    change_seq  bigint NOT NULL CHECK (change_seq > 0),
    created_at  timestamptz NOT NULL
);

CREATE UNIQUE INDEX reasoning_updates_change_idx ON reasoning_updates (room_id, change_seq);
CREATE INDEX reasoning_updates_session_idx ON reasoning_updates (session_id, created_at, change_seq);
