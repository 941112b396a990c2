-- A message may carry an agent prompt kind, as the original's clients send
-- and read it: inline (a person's message the agents take as their
-- instruction) or auto (a background reminder, whose text may be empty).
ALTER TABLE messages
    ADD COLUMN agent_prompt_kind text CHECK (agent_prompt_kind IN ('inline', 'auto'));
