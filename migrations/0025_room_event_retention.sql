-- Retention of the room event log (0022). Every task, reasoning, pin and
-- room change adds a row, and nothing removed them. Message events stay
-- for good: a stream resumes after any message (EventStart finds its
-- event). Every other event is pruned once older than
-- letagents.EventRetention (the liveness sweeper does it, in batches):
-- after that a stream that resumes from before it no longer replays that
-- change, which a reader away that long reloads anyway.
--
-- created_at is when the event was logged. now() is not volatile, so the
-- rows already here take this migration's time without a rewrite of the
-- table, and are pruned one retention after it.
ALTER TABLE room_events ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

-- The sweeper finds what to prune by age among events other than
-- messages; messages, nearly every row, stay out of this index, so a send
-- does not write to it.
CREATE INDEX room_events_prune_idx ON room_events (created_at) WHERE kind <> 'message';
