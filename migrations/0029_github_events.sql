-- GitHub in the room (issue 24). Every webhook delivery GitHub sends is
-- recorded once, by its X-GitHub-Delivery id, with what became of it: a
-- repeat of a delivery that was processed or ignored is a duplicate and
-- changes nothing; one that failed may be taken again (GitHub's
-- redelivery). room_id names the repo room the delivery is for, whether
-- or not anybody opened it, so it is no reference.
CREATE TABLE github_deliveries (
    delivery_id  text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 200),
    event_name   text NOT NULL,
    action       text,
    room_id      text,
    status       text NOT NULL CHECK (status IN ('processed', 'ignored', 'failed')),
    reason       text,
    received_at  timestamptz NOT NULL,
    processed_at timestamptz NOT NULL
);

-- One row per change a repo room heard of (a pull request opened, a
-- review, a check that completed...), in the repo room, listed by GET
-- /rooms/{room}/events. Its live event ('github', ref = id) goes to the
-- repo room's log and, for a change on a branch whose room is open, to
-- that branch room's log as well: both name this one row.
CREATE TABLE github_events (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    room_id           text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    delivery_id       text NOT NULL REFERENCES github_deliveries (delivery_id) ON DELETE CASCADE,
    event_type        text NOT NULL CHECK (event_type ~ '^[a-z_]+$'),
    action            text NOT NULL,
    github_object_id  text,
    github_object_url text,
    title             text,
    state             text,
    actor_login       text,
    branch            text,
    metadata          jsonb NOT NULL DEFAULT '{}',
    linked_task_id    text,
    created_at        timestamptz NOT NULL
);
-- The list, newest first, and the object filter (a PR's events).
CREATE INDEX github_events_room_idx ON github_events (room_id, id DESC);
CREATE INDEX github_events_object_idx ON github_events (room_id, event_type, github_object_id);
CREATE INDEX github_events_delivery_idx ON github_events (delivery_id);
