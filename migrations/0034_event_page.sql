-- A page of a room's event log, read in the order of room_events_pkey
-- (room_id, seq) whatever the statistics say, as message_page (0033)
-- reads messages. Right after a burst, before autovacuum has analysed the
-- log, the planner read a stream's catch-up from the start of a room of
-- 10,000 events through a bitmap of all of them and sorted them to keep
-- 51 (130 blocks, growing with the room), and tested a task's, a
-- reasoning session's or a presence's event against a hash of its whole
-- table. Planned with bitmap scans, sequential scans and sorts off, the
-- page walks the key and looks each of those up by its own.
--
-- An event whose item has changed since (a task, a reasoning session or
-- an agent session whose change_seq is later) is left out: the later
-- event stands for it.
CREATE FUNCTION event_page(room text, bound bigint, n integer)
RETURNS SETOF room_events
LANGUAGE plpgsql STABLE ROWS 50
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off
AS $$
BEGIN
    RETURN QUERY SELECT e.* FROM room_events e
        WHERE e.room_id = room AND e.seq > bound
          AND (e.kind <> 'task' OR EXISTS (SELECT FROM tasks t WHERE t.room_id = e.room_id AND t.seq = e.ref AND t.change_seq = e.seq))
          AND (e.kind <> 'reasoning' OR EXISTS (SELECT FROM reasoning_sessions rs
              WHERE rs.room_id = e.room_id AND rs.id = e.ref_id AND rs.change_seq = e.seq))
          AND (e.kind <> 'presence' OR EXISTS (SELECT FROM agent_sessions a WHERE a.id = e.ref AND a.change_seq = e.seq))
        ORDER BY e.seq LIMIT n;
END
$$;
