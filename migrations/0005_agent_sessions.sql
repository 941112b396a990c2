-- Agent sessions: one agent (an MCP client, or a worker inside one)
-- registered in one room by its owner. The session token is shown once
-- and kept as its SHA-256. A worker's actor label is unique among the
-- room's live workers, so a label names one agent at a time.
CREATE TABLE agent_sessions (
    id                bigserial PRIMARY KEY,
    room_id           text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    token_hash        bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    session_kind      text NOT NULL CHECK (session_kind IN ('worker', 'controller')),
    runtime           text NOT NULL,
    agent_key         text NOT NULL,
    agent_instance_id text NOT NULL,
    owner_account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    display_name      text NOT NULL,
    owner_label       text NOT NULL,
    ide_label         text NOT NULL,
    actor_label       text NOT NULL,
    repo_branch       text NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    last_seen_at      timestamptz NOT NULL,
    ended_at          timestamptz,
    -- Presence: what the agent says it is doing.
    presence_status   text NOT NULL DEFAULT 'idle' CHECK (presence_status IN ('idle', 'working', 'reviewing', 'blocked')),
    presence_text     text NOT NULL DEFAULT '',
    presence_at       timestamptz,
    -- Liveness: when its last delivery connection closed, and the last
    -- activity its runtime reported outside the room.
    last_disconnected_at    timestamptz,
    last_native_activity_at timestamptz,
    -- The liveness sweeper's marks: the outage (its start) an offline
    -- notice was posted for, when, and when its recovery was announced.
    offline_epoch         timestamptz,
    offline_announced_at  timestamptz,
    recovery_announced_at timestamptz
);

CREATE UNIQUE INDEX agent_sessions_live_worker_label ON agent_sessions (room_id, actor_label)
    WHERE session_kind = 'worker' AND ended_at IS NULL;
CREATE INDEX agent_sessions_room_idx ON agent_sessions (room_id) WHERE ended_at IS NULL;

-- Open delivery connections: a long-poll parked with a session's
-- credentials. Each row is a lease the poll renews while it waits; a poll
-- container that dies stops renewing, and its rows expire by themselves.
CREATE TABLE delivery_connections (
    id               bigserial PRIMARY KEY,
    agent_session_id bigint NOT NULL REFERENCES agent_sessions (id) ON DELETE CASCADE,
    opened_at        timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL
);

CREATE INDEX delivery_connections_session_idx ON delivery_connections (agent_session_id, expires_at);

-- Who sent a message, as the server verified it, and a client-chosen id
-- that makes a post idempotent (the liveness notices use it).
ALTER TABLE messages
    ADD COLUMN publisher_session_id bigint,
    ADD COLUMN client_message_id text;

CREATE UNIQUE INDEX messages_client_id_idx ON messages (room_id, client_message_id) WHERE client_message_id IS NOT NULL;
