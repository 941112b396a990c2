-- messages_room_sender_idx (0011) led with room_id, so the planner could
-- read it for any lookup of a room's message by number: with statistics
-- that still saw the room nearly empty, it scored it as the primary key
-- and fetched each reply's parent by walking the room's messages in it,
-- which made a page of 50 messages take 11 ms instead of 1.5. Led by the
-- sender, the index serves only the lookups by sender it exists for
-- (Store.HasSent, search's sender filter), and a message by number is
-- always the primary key's.
CREATE INDEX messages_sender_room_idx ON messages (lower(sender), room_id);
DROP INDEX messages_room_sender_idx;
