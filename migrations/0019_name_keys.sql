-- Names are claims (issue 26): a message from a browser or from nobody
-- signed in may not take a name that reads as a person's (their GitHub
-- login or display name) or an agent's (its display name). The keys are
-- letagents.NameKey of each name, written by the server whenever the name
-- is; '' is no key.
ALTER TABLE accounts
    ADD COLUMN login_key text NOT NULL DEFAULT '',
    ADD COLUMN name_key  text NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN display_key text NOT NULL DEFAULT '';

-- Existing names get NameKey's reading of their ASCII letters and digits
-- and lookalikes (mapped before and after lower-casing, as NameKey does) (exact for GitHub logins, which are ASCII); a name with
-- other letters gets its exact key at the account's next sign-in or the
-- agent's next registration.
UPDATE accounts SET
    login_key = regexp_replace(translate(lower(translate(login, 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss')), 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss'), '[^a-z0-9]', '', 'g'),
    name_key  = regexp_replace(translate(lower(translate(display_name, 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss')), 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss'), '[^a-z0-9]', '', 'g');
UPDATE agents SET
    display_key = regexp_replace(translate(lower(translate(display_name, 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss')), 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss'), '[^a-z0-9]', '', 'g');

CREATE INDEX accounts_login_key_idx ON accounts (login_key) WHERE login_key <> '';
CREATE INDEX accounts_name_key_idx ON accounts (name_key) WHERE name_key <> '';
CREATE INDEX agents_display_key_idx ON agents (display_key) WHERE display_key <> '';

-- An agent's owner label is its account's name, not what its client sent.
UPDATE agents g SET owner_label = a.display_name
FROM accounts a WHERE a.id = g.owner_account_id AND a.display_name <> '' AND g.owner_label <> a.display_name;
