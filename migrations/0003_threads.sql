-- Threads. thread_parent_seq is the message a reply answers (the quote);
-- thread_root_seq the top-level message of its thread, so a thread is one
-- indexed range however deep replies nest. message_threads keeps each
-- root's reply count and newest reply, maintained by the sending
-- statement itself.
ALTER TABLE messages ADD COLUMN thread_root_seq bigint;

WITH RECURSIVE roots AS (
    SELECT room_id, seq, seq AS root FROM messages WHERE thread_parent_seq IS NULL
    UNION ALL
    SELECT m.room_id, m.seq, r.root
    FROM messages m JOIN roots r ON m.room_id = r.room_id AND m.thread_parent_seq = r.seq
)
UPDATE messages m SET thread_root_seq = r.root
FROM roots r
WHERE m.room_id = r.room_id AND m.seq = r.seq AND m.thread_parent_seq IS NOT NULL;

ALTER TABLE messages
    ADD CONSTRAINT messages_thread_shape CHECK ((thread_parent_seq IS NULL) = (thread_root_seq IS NULL)
                                               AND thread_root_seq <= thread_parent_seq),
    ADD CONSTRAINT messages_thread_root_fk FOREIGN KEY (room_id, thread_root_seq) REFERENCES messages (room_id, seq)
        ON DELETE CASCADE ON UPDATE CASCADE;

CREATE INDEX messages_thread_root_idx ON messages (room_id, thread_root_seq)
    WHERE thread_root_seq IS NOT NULL;

CREATE TABLE message_threads (
    room_id          text NOT NULL,
    root_seq         bigint NOT NULL,
    reply_count      integer NOT NULL CHECK (reply_count > 0),
    latest_reply_seq bigint NOT NULL,
    latest_reply_at  timestamptz NOT NULL,
    PRIMARY KEY (room_id, root_seq),
    FOREIGN KEY (room_id, root_seq) REFERENCES messages (room_id, seq) ON DELETE CASCADE ON UPDATE CASCADE
);

INSERT INTO message_threads (room_id, root_seq, reply_count, latest_reply_seq, latest_reply_at)
SELECT room_id, thread_root_seq, count(*), max(seq), max(created_at)
FROM messages WHERE thread_root_seq IS NOT NULL
GROUP BY room_id, thread_root_seq;
