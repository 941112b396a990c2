-- An anonymous send in one round trip (issue 23): whether a sender's name
-- reads as another agent session's in the room was a query of its own,
-- since only the Go code could key the sessions' display names
-- (letagents.NameKey). Sessions now keep that key, written by the server
-- with the name, so the send's statement can read the claim itself.
ALTER TABLE agent_sessions ADD COLUMN display_key text NOT NULL DEFAULT '';

-- Existing sessions get NameKey's reading of their letters and digits and
-- the lookalikes it folds (before and after lower-casing, as NameKey does),
-- as 0019 keyed accounts and agents; a name with full-width letters gets
-- its exact key when its agent registers again.
UPDATE agent_sessions SET
    display_key = regexp_replace(translate(lower(translate(display_name, 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss')), 'Ii1ӏӀιǀІі0OоОοΟеЕεётТτаАαΑɡԍցпոηΝѕЅ', 'lllllllllooooooeeeetttaaaagggnnnnss'), '[^[:alnum:]]', '', 'g');

CREATE INDEX agent_sessions_room_display_key_idx ON agent_sessions (room_id, display_key) WHERE display_key <> '';
