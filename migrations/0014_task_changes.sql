-- Task change numbers, for event streams. Every change to a task or to
-- its leases takes its room's next change number (rooms.last_task_change)
-- and stores it on the task (tasks.change_seq); a stream reads the tasks
-- changed after the last number it has seen. The number is taken under the
-- room row's lock, held to commit, so numbers become visible in order: a
-- reader that sees change N also sees every change before it. A task
-- changed twice carries only its latest number, and is read once, as it
-- now is.
ALTER TABLE rooms ADD COLUMN last_task_change bigint NOT NULL DEFAULT 0 CHECK (last_task_change >= 0);
ALTER TABLE tasks ADD COLUMN change_seq bigint NOT NULL DEFAULT 0 CHECK (change_seq >= 0);
CREATE INDEX tasks_change_idx ON tasks (room_id, change_seq);
