-- A web sign-in's state is bound to the browser that started it (against
-- login CSRF): POST /auth/github/login sets a cookie holding a random
-- nonce, and the state keeps the nonce's SHA-256; the callback redeems the
-- state only for the browser that brings the nonce back. States still in
-- flight have no nonce and could never complete; they last 15 minutes, so
-- they are simply dropped.
DELETE FROM auth_states;

ALTER TABLE auth_states ADD COLUMN browser_hash bytea NOT NULL CHECK (length(browser_hash) = 32);
