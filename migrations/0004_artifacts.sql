-- Room artifacts: the Git workflow objects a room works on (issues,
-- branches, pull requests, reviews, checks, merges), one row per stable
-- identity, each linked to any number of the room's tasks.
CREATE TABLE room_artifacts (
    room_id         text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    identity_key    text NOT NULL,
    provider        text NOT NULL CHECK (provider IN ('github', 'gitlab', 'bitbucket', 'unknown')),
    kind            text NOT NULL CHECK (kind IN ('issue', 'branch', 'pull_request', 'merge_request', 'review', 'check_run', 'merge')),
    artifact_id     text,
    artifact_number bigint CHECK (artifact_number > 0),
    title           text,
    url             text,
    ref             text,
    state           text,
    source          text NOT NULL CHECK (source IN ('manual', 'task_workflow_artifact', 'github_event')),
    first_seen_at   timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (room_id, identity_key)
);

CREATE INDEX room_artifacts_order_idx ON room_artifacts (room_id, kind, identity_key);

CREATE TABLE room_artifact_tasks (
    room_id      text NOT NULL,
    identity_key text NOT NULL,
    task_id      text NOT NULL,
    linked_at    timestamptz NOT NULL,
    PRIMARY KEY (room_id, identity_key, task_id),
    FOREIGN KEY (room_id, identity_key) REFERENCES room_artifacts (room_id, identity_key)
        ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX room_artifact_tasks_task_idx ON room_artifact_tasks (room_id, task_id);
