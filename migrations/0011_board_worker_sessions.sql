-- Whether a room's board asks callers for a worker session before they
-- create, claim or move tasks (see letagents.SessionlessBoard). NULL is
-- the room kind's default: repo and branch rooms ask, invite and named
-- rooms serve the clients that predate sessions, as LetAgents did.
ALTER TABLE board_settings ADD COLUMN require_worker_sessions boolean;

-- Whether a name has been heard in a room: a task created under it on a
-- board without worker sessions starts accepted (Store.HasSent).
CREATE INDEX messages_room_sender_idx ON messages (room_id, lower(sender));
