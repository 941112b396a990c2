-- What a worker's runtime last said it was doing (the Codex bridge's
-- native activity): its status, the method it heard and a short line,
-- shown in the roster beside last_native_activity_at.
ALTER TABLE agent_sessions
	ADD COLUMN native_status text NOT NULL DEFAULT '',
	ADD COLUMN native_method text NOT NULL DEFAULT '',
	ADD COLUMN native_text text NOT NULL DEFAULT '';
