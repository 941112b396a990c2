-- The server's own lines (task board and liveness notices) carry source
-- 'system', and only they do: clients tell them by source, never by their
-- sender 'letagents' or a '[status]' text, which anyone could copy.
ALTER TABLE messages
    DROP CONSTRAINT messages_source_check,
    ADD CONSTRAINT messages_source_check CHECK (source IN ('agent', 'browser', 'system')),
    ADD CONSTRAINT messages_system_sender CHECK (source <> 'system' OR sender = 'letagents');

-- Earlier lines of the server's had no source. Only the liveness notices
-- can be told from a client's forgery: clients could not set a
-- client_message_id, and the notices' ids all start 'agent_liveness:'.
-- A task board line looked exactly like an anonymous post as 'letagents',
-- so those keep no source rather than pass a forgery off as the server's.
UPDATE messages SET source = 'system'
WHERE sender = 'letagents' AND source IS NULL AND starts_with(client_message_id, 'agent_liveness:');

-- Who may send under a label: the agent sessions of a room that carry it,
-- whichever its case (see Store.SenderClaim).
CREATE INDEX agent_sessions_room_label_idx ON agent_sessions (room_id, lower(actor_label));
