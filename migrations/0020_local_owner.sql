-- The local owner (issue 21): a server with sign-in off and every room
-- open (the local runner, LETAGENTS_LOCAL_OWNER=on) acts for one account
-- that no sign-in made, provider 'local'. No GitHub sign-in can reach it:
-- sign-in upserts by (provider, provider_user_id) with provider 'github'.
ALTER TABLE accounts DROP CONSTRAINT accounts_provider_check;
ALTER TABLE accounts ADD CONSTRAINT accounts_provider_check CHECK (provider IN ('github', 'local'));
