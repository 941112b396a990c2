-- Where a room admin's rights come from. 'room': granted in the room
-- itself (the signed-in creator of an invite room, the first signed-in
-- joiner of a named room), kept until the room says otherwise. 'github':
-- derived from GitHub (an admin of the room's repository), re-read with
-- the caller's repository access and removed when GitHub stops saying so
-- (auth.Service.Role). One row per account and room: a 'room' grant is
-- never replaced by, nor removed with, a GitHub-derived one.
ALTER TABLE room_admins ADD COLUMN source text NOT NULL DEFAULT 'room' CHECK (source IN ('room', 'github'));

-- Until now only GitHub made admins of repository rooms (and of their
-- branch rooms): those rows are GitHub's, to be re-checked like them.
UPDATE room_admins a SET source = 'github' FROM rooms r WHERE r.id = a.room_id AND r.kind IN ('repo', 'branch');
