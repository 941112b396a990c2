-- A page of a room's messages is read in the order of messages_pkey
-- (room_id, seq), and only so: message_page plans its statement with
-- bitmap scans, sequential scans and sorts turned off, for this function's
-- statement alone. Right after a burst of sends into a room, before
-- autovacuum has analysed the table, the statistics still say the room
-- has almost no messages, and the planner then read every message past the
-- cursor through a bitmap and sorted them all to keep the newest 50: a
-- read whose time grew with the room and depended on when autovacuum ran.
--
-- The visibility test is the store's (shared/store/messages.go, visible):
-- TestMessagePageVisibility holds the two to one text.
CREATE FUNCTION message_page(room text, bound bigint, n integer, include_prompt_only boolean, before boolean)
RETURNS SETOF messages
LANGUAGE sql STABLE ROWS 50
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off
AS $$
    (SELECT * FROM messages
     WHERE NOT before AND room_id = room AND seq > bound
       AND (include_prompt_only OR (agent_prompt_kind IS DISTINCT FROM 'auto' OR text ~ '\S'))
     ORDER BY seq LIMIT n)
    UNION ALL
    (SELECT * FROM messages
     WHERE before AND room_id = room AND seq < bound
       AND (include_prompt_only OR (agent_prompt_kind IS DISTINCT FROM 'auto' OR text ~ '\S'))
     ORDER BY seq DESC LIMIT n)
$$;
