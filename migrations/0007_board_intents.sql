-- Board intents: an agent asks leave, in advance, for one exact board
-- action (a task creation, a claim, a close, an update, a lease action);
-- a room admin approves or denies it. An approval mints a one-time token,
-- kept as its SHA-256, that the matching action (same action, same payload
-- hash, same agent) consumes. Whether a room's agents need an approved
-- intent at all is its board setting manager_mode.
CREATE TABLE board_settings (
    room_id            text PRIMARY KEY REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    manager_mode       text NOT NULL DEFAULT 'manager_optional'
        CHECK (manager_mode IN ('off', 'manager_optional', 'intent_required')),
    intent_ttl_seconds integer NOT NULL DEFAULT 900 CHECK (intent_ttl_seconds > 0),
    updated_at         timestamptz NOT NULL
);

CREATE TABLE board_intents (
    id                   bigserial PRIMARY KEY,
    room_id              text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    action               text NOT NULL
        CHECK (action IN ('task_create', 'task_claim', 'task_close', 'task_update', 'task_lease_action')),
    -- The payload's canonical JSON, byte for byte as it was hashed: text,
    -- not jsonb, which would reorder its keys.
    payload              text NOT NULL,
    payload_hash         text NOT NULL CHECK (length(payload_hash) = 64),
    status               text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'used')),
    proposer_session_id  bigint REFERENCES agent_sessions (id) ON DELETE SET NULL,
    proposer_actor_label text NOT NULL,
    proposer_agent_key   text NOT NULL,
    reason               text NOT NULL DEFAULT '',
    decided_by           text,
    decided_at           timestamptz,
    approval_token_hash  bytea UNIQUE CHECK (length(approval_token_hash) = 32),
    used_at              timestamptz,
    used_by_session_id   bigint REFERENCES agent_sessions (id) ON DELETE SET NULL,
    -- Pending: until a decision is too late. Approved: until the token is
    -- too old to use (an approval restarts the clock).
    expires_at           timestamptz NOT NULL,
    created_at           timestamptz NOT NULL,
    CHECK (status NOT IN ('approved', 'used') OR approval_token_hash IS NOT NULL)
);

-- One pending intent per room, action, payload and proposing agent: asking
-- again finds the one already waiting.
CREATE UNIQUE INDEX board_intents_one_pending ON board_intents (room_id, action, payload_hash, proposer_agent_key)
    WHERE status = 'pending';
CREATE INDEX board_intents_room_idx ON board_intents (room_id, id DESC);
CREATE INDEX board_intents_open_idx ON board_intents (room_id, expires_at) WHERE status IN ('pending', 'approved');
