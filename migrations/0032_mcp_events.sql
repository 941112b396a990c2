-- The hosted MCP endpoint's stream events (issue 25): every SSE event it
-- sends on a session's streams, so that a client whose connection
-- dropped resumes with Last-Event-ID, on whichever task it reaches. An
-- event's id is its Last-Event-ID. Kept letagents.HostedEventRetention,
-- and gone with the session.
CREATE TABLE mcp_events (
    id         bigserial PRIMARY KEY,
    session_id text NOT NULL REFERENCES mcp_sessions (id) ON DELETE CASCADE,
    stream_id  text NOT NULL,
    message    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_events_stream_idx ON mcp_events (stream_id, id);
CREATE INDEX mcp_events_session_idx ON mcp_events (session_id);
CREATE INDEX mcp_events_created_idx ON mcp_events (created_at);
