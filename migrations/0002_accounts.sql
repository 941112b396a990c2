-- Accounts, credentials and room access. Every secret a client presents
-- (owner tokens, browser session tokens, device-flow request ids) is stored
-- only as its SHA-256; secrets we must read back (GitHub access tokens and
-- device codes) are sealed by shared/seal. Nothing of this lives in process
-- memory: any function instance may serve the next step of a flow.

CREATE TABLE accounts (
    id               bigserial PRIMARY KEY,
    provider         text NOT NULL CHECK (provider = 'github'),
    provider_user_id text NOT NULL,
    login            text NOT NULL,
    display_name     text NOT NULL,
    avatar_url       text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    UNIQUE (provider, provider_user_id)
);

-- One GitHub access token per account, replaced at each sign-in: repo
-- access checks run with the account's newest token.
CREATE TABLE github_tokens (
    account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    sealed     bytea NOT NULL,
    expires_at timestamptz,
    updated_at timestamptz NOT NULL
);

CREATE TABLE auth_sessions (
    id         bigserial PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE INDEX auth_sessions_account_idx ON auth_sessions (account_id);

CREATE TABLE owner_tokens (
    id           bigserial PRIMARY KEY,
    account_id   bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at   timestamptz NOT NULL
);

CREATE INDEX owner_tokens_account_idx ON owner_tokens (account_id);

-- OAuth web-flow states: single use (deleted when redeemed), 15 minutes.
CREATE TABLE auth_states (
    state       text PRIMARY KEY,
    redirect_to text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- Pending GitHub device flows. The request id is what a client polls with
-- and what the owner token is handed to, so it is a secret like a token.
CREATE TABLE device_requests (
    id_hash          bytea PRIMARY KEY CHECK (length(id_hash) = 32),
    device_code      bytea NOT NULL,
    user_code        text NOT NULL,
    verification_uri text NOT NULL,
    interval_seconds integer NOT NULL CHECK (interval_seconds > 0),
    room_id          text,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    last_poll_at     timestamptz
);

CREATE INDEX device_requests_expires_idx ON device_requests (expires_at);

CREATE TABLE agents (
    id               bigserial PRIMARY KEY,
    owner_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name             text NOT NULL,
    canonical_key    text NOT NULL UNIQUE,
    display_name     text NOT NULL,
    owner_login      text NOT NULL,
    owner_label      text NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    UNIQUE (owner_account_id, name)
);

CREATE TABLE room_admins (
    room_id     text NOT NULL REFERENCES rooms (id) ON DELETE CASCADE ON UPDATE CASCADE,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    assigned_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (room_id, account_id)
);

CREATE INDEX room_admins_account_idx ON room_admins (account_id);

-- What GitHub said about a repository (repo is "owner/name", lower case),
-- and whether an account may see it: caches with a short TTL, shared by
-- every instance, so a busy room does not ask GitHub at every message.
CREATE TABLE github_repo_visibility (
    repo       text PRIMARY KEY,
    public     boolean NOT NULL,
    checked_at timestamptz NOT NULL
);

CREATE TABLE github_repo_access (
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    repo       text NOT NULL,
    allowed    boolean NOT NULL,
    admin      boolean NOT NULL,
    checked_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, repo)
);

-- Fixed-window counters for rate limits (bucket names the limit and the
-- client, e.g. "join:203.0.113.7").
CREATE TABLE rate_limits (
    bucket       text NOT NULL,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL,
    PRIMARY KEY (bucket, window_start)
);

CREATE INDEX rate_limits_window_idx ON rate_limits (window_start);
