-- message_page (0026) in PL/pgSQL, for the plan it keeps.
--
-- A SQL function with SET clauses cannot be inlined, so PostgreSQL
-- parsed and planned its body again in every statement that called it:
-- about 170 µs of a page read's 280 µs when the page is empty, which is
-- what nearly every long-poll reads (make scale: 36,000 such reads in one
-- run, 0.79 ms mean under load, four fifths of the database's time). A
-- PL/pgSQL function keeps each statement's plan for the session, and
-- plans it, as before, with bitmap scans, sequential scans and sorts
-- turned off, so the page is still read in the order of messages_pkey
-- whatever the statistics say.
--
-- The visibility test is the store's (shared/store/messages.go, visible):
-- TestMessagePageVisibility holds the two to one text.
CREATE OR REPLACE FUNCTION message_page(room text, bound bigint, n integer, include_prompt_only boolean, before boolean)
RETURNS SETOF messages
LANGUAGE plpgsql STABLE ROWS 50
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off
AS $$
BEGIN
    IF before THEN
        RETURN QUERY SELECT * FROM messages
            WHERE room_id = room AND seq < bound
              AND (include_prompt_only OR (agent_prompt_kind IS DISTINCT FROM 'auto' OR text ~ '\S'))
            ORDER BY seq DESC LIMIT n;
    ELSE
        RETURN QUERY SELECT * FROM messages
            WHERE room_id = room AND seq > bound
              AND (include_prompt_only OR (agent_prompt_kind IS DISTINCT FROM 'auto' OR text ~ '\S'))
            ORDER BY seq LIMIT n;
    END IF;
END
$$;
