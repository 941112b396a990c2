-- The hosted MCP endpoint's sessions (/mcp, issue 25): any task serves any
-- session, so what a session is (who opened it, the room it joined, the
-- agent sessions it registered) lives here rather than in a task's
-- memory. owner is a SHA-256 of the bearer token that opened it ('' for
-- anonymous), never the token; state is the MCP server's state document
-- (mcp/state). A session unused for letagents.HostedSessionIdle is
-- removed when the next one is opened.
CREATE TABLE mcp_sessions (
    id         text PRIMARY KEY,
    owner      text NOT NULL,
    state      jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_sessions_used_idx ON mcp_sessions (used_at);
