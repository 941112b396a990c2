-- Presence events: a worker session that joins, ends, or changes what the
-- roster shows of it (its presence status or text, its native activity's
-- status or text) logs a 'presence' event of the room's log (0022),
-- naming the session in ref. A heartbeat that moves only times logs
-- nothing. The session carries the number of its latest event, so a
-- reader shows a session changed twice once, at its latest change, as
-- tasks and reasoning sessions do; 0 until its first.
ALTER TABLE agent_sessions ADD COLUMN change_seq bigint NOT NULL DEFAULT 0 CHECK (change_seq >= 0);
