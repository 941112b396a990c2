-- The task board. Tasks are numbered per room without gaps, like
-- messages: rooms.last_task_seq is the counter, bumped by the statement
-- that inserts the task, so creators of one room take turns on that row.
ALTER TABLE rooms ADD COLUMN last_task_seq bigint NOT NULL DEFAULT 0 CHECK (last_task_seq >= 0);

CREATE TABLE tasks (
    room_id               text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    seq                   bigint NOT NULL CHECK (seq > 0),
    title                 text NOT NULL CHECK (title <> ''),
    description           text,
    status                text NOT NULL DEFAULT 'proposed' CHECK (status IN
                              ('proposed', 'accepted', 'assigned', 'in_progress', 'blocked', 'in_review', 'merged', 'done', 'cancelled')),
    -- The actor label of the agent working on it, and its canonical key.
    assignee              text,
    assignee_agent_key    text,
    -- Who created it: a label (an agent's actor label, a person's name),
    -- and the account or agent session the server verified, when any.
    created_by            text NOT NULL,
    created_by_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
    created_by_session_id bigint REFERENCES agent_sessions (id) ON DELETE SET NULL,
    source_message_id     text,
    pr_url                text,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    PRIMARY KEY (room_id, seq)
);

CREATE INDEX tasks_status_idx ON tasks (room_id, status, seq);
CREATE INDEX tasks_assignee_idx ON tasks (room_id, assignee_agent_key) WHERE assignee_agent_key IS NOT NULL;

-- Leases: who holds a task. A work lease is the right to work on the
-- task; a review lease the right to review it. A lease is active until
-- released (by its holder), revoked (by an admin) or expired (expires_at
-- passed; NULL never expires). Expiry is lazy: readers and writers flip
-- overdue active leases to expired before they look, with the caller's
-- clock. ttl_seconds is the lease's time to live, which a heartbeat of
-- its holder renews.
CREATE TABLE task_leases (
    id                text PRIMARY KEY CHECK (id ~ '^tl_[0-9a-f]{32}$'),
    room_id           text NOT NULL,
    task_seq          bigint NOT NULL,
    kind              text NOT NULL CHECK (kind IN ('work', 'review')),
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'released', 'revoked', 'expired')),
    agent_key         text NOT NULL,
    agent_instance_id text,
    agent_session_id  bigint REFERENCES agent_sessions (id) ON DELETE SET NULL,
    actor_label       text NOT NULL,
    branch_ref        text,
    pr_url            text,
    output_intent     text,
    expires_at        timestamptz,
    ttl_seconds       integer CHECK (ttl_seconds > 0),
    last_heartbeat_at timestamptz NOT NULL,
    revoked_reason    text,
    created_by        text NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    FOREIGN KEY (room_id, task_seq) REFERENCES tasks (room_id, seq) ON DELETE CASCADE ON UPDATE CASCADE,
    CHECK ((expires_at IS NULL) = (ttl_seconds IS NULL))
);

-- The arbiters of claims: one active work lease per task, and one active
-- review lease per task and agent.
CREATE UNIQUE INDEX task_leases_one_work ON task_leases (room_id, task_seq)
    WHERE kind = 'work' AND status = 'active';
CREATE UNIQUE INDEX task_leases_one_review ON task_leases (room_id, task_seq, agent_key)
    WHERE kind = 'review' AND status = 'active';

CREATE INDEX task_leases_task_idx ON task_leases (room_id, task_seq);
CREATE INDEX task_leases_expiry_idx ON task_leases (room_id, expires_at) WHERE status = 'active' AND expires_at IS NOT NULL;
CREATE INDEX task_leases_session_idx ON task_leases (agent_session_id) WHERE agent_session_id IS NOT NULL;
