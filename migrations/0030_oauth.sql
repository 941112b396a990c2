-- The hosted MCP endpoint's OAuth 2.1 authorization server (issue 25).
-- Every secret (authorization request ids, consent nonces, codes, access
-- and refresh tokens) is stored as its SHA-256, as owner tokens are.

-- Clients registered by RFC 7591 dynamic registration: public clients
-- only (no secret), each with the exact redirect URIs it may use.
CREATE TABLE oauth_clients (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    redirect_uris text[] NOT NULL,
    created_at    timestamptz NOT NULL
);

-- Authorizations under way: from /oauth/authorize through the GitHub
-- sign-in to the consent page. account_id and consent_hash are set when
-- the signed-in browser is shown the consent page. Ten minutes.
CREATE TABLE oauth_requests (
    id_hash        bytea PRIMARY KEY CHECK (length(id_hash) = 32),
    client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    state          text NOT NULL,
    resource       text NOT NULL,
    account_id     bigint REFERENCES accounts (id) ON DELETE CASCADE,
    consent_hash   bytea,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX oauth_requests_expires_idx ON oauth_requests (expires_at);

-- Authorization codes: single use (deleted when redeemed), ten minutes.
CREATE TABLE oauth_codes (
    code_hash      bytea PRIMARY KEY CHECK (length(code_hash) = 32),
    client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    resource       text NOT NULL,
    account_id     bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at);

-- A grant is one client's authorization by one account, for one
-- resource: the refresh token family. Refreshing rotates refresh_hash.
CREATE TABLE oauth_grants (
    id                 bigserial PRIMARY KEY,
    client_id          text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    account_id         bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    resource           text NOT NULL,
    refresh_hash       bytea NOT NULL UNIQUE CHECK (length(refresh_hash) = 32),
    refresh_expires_at timestamptz NOT NULL,
    created_at         timestamptz NOT NULL
);
CREATE INDEX oauth_grants_account_idx ON oauth_grants (account_id);
CREATE INDEX oauth_grants_expires_idx ON oauth_grants (refresh_expires_at);

-- Refresh tokens rotated away, kept while their grant lasts: one presented
-- again (stolen, or used twice) is recognised and ends the whole grant.
CREATE TABLE oauth_spent_refresh (
    refresh_hash bytea PRIMARY KEY CHECK (length(refresh_hash) = 32),
    grant_id     bigint NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE
);
CREATE INDEX oauth_spent_refresh_grant_idx ON oauth_spent_refresh (grant_id);

-- Access tokens: short-lived bearers of a grant, for its resource.
CREATE TABLE oauth_access_tokens (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    grant_id   bigint NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL
);
CREATE INDEX oauth_access_tokens_grant_idx ON oauth_access_tokens (grant_id);
CREATE INDEX oauth_access_tokens_expires_idx ON oauth_access_tokens (expires_at);
