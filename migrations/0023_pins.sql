-- Pinned messages: a room admin pins a message (who and when) and may
-- unpin it. Each pin and unpin is a 'pin' event of the room's log
-- (0022), naming the message in ref.
ALTER TABLE messages
	ADD COLUMN pinned_at timestamptz,
	ADD COLUMN pinned_by text,
	ADD CONSTRAINT messages_pinned_check CHECK ((pinned_at IS NULL) = (pinned_by IS NULL));
CREATE INDEX messages_pinned_idx ON messages (room_id, pinned_at DESC, seq) WHERE pinned_at IS NOT NULL;
