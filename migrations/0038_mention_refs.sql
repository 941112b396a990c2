-- mention_refs: the sessions a message mentions, read by a function
-- rather than by subqueries in every read of messages (issue 23).
--
-- Reads resolved a message's mentions with three subqueries under a
-- CASE (ids, display names, actor labels), run only for a message that
-- mentions someone. But each read's plan set all three up again every
-- time it ran, mentions or not: about 40 µs of a page read's 130 µs of
-- backend CPU for a page of eight messages without one (docs/benchmark.md,
-- "What a page read costs the database"). A PL/pgSQL function is no part
-- of the plan it is called from: it plans its one query once a session,
-- and runs it only for a message that mentions someone.
--
-- It answers what the subqueries did, in one value: a JSON array of the
-- sessions of ids (which a send writes without repeats), each {"id",
-- "display_name", "actor_label"}, in the order of their ids; null when
-- none of them exists. Its query reads the sessions by = ANY: over
-- unnest and a LATERAL join, as the subqueries read them, a call cost
-- about 80 µs of backend CPU; this way about 9, where the three
-- subqueries cost a message that mentions someone about 12.
CREATE OR REPLACE FUNCTION mention_refs(ids bigint[])
RETURNS json
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    refs json;
BEGIN
    SELECT json_agg(json_build_object('id', s.id, 'display_name', s.display_name, 'actor_label', s.actor_label) ORDER BY s.id)
        INTO refs
        FROM agent_sessions s WHERE s.id = ANY (ids);
    RETURN refs;
END
$$;
