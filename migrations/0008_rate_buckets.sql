-- Rate limits become token buckets, one per limited action (kind) and
-- client address (key), replacing the calendar-minute counters, which let
-- twice the limit through across a minute boundary. A bucket is kept as
-- the moment it was, or would have been, empty: it gains a token every
-- `every` since then, up to its capacity, so
-- tokens(now) = least(capacity, (now - empty_at) / every), and taking one
-- moves empty_at on by `every`. allowed is the outcome of the last take,
-- kept so the one upsert that decides it can also return it.
--
-- UNLOGGED: a crash empties the table, which only refills every bucket;
-- in exchange a take does not wait for a WAL flush while it holds the row.
CREATE UNLOGGED TABLE rate_buckets (
    kind     text NOT NULL,
    key      text NOT NULL,
    empty_at timestamptz NOT NULL,
    allowed  boolean NOT NULL,
    PRIMARY KEY (kind, key)
);

CREATE INDEX rate_buckets_empty_idx ON rate_buckets (empty_at);

DROP TABLE rate_limits;
