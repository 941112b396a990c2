-- Full-text search over messages (store.Search). The schema keeps the
-- index itself: a stored generated column holds each message's tsvector,
-- so no code path can insert a message and forget it, and a GIN index
-- finds the messages of a query's words.
--
-- The 'simple' configuration lower-cases words and nothing more: no
-- stemming and no stop words. Messages here are mostly code, paths, log
-- lines, identifiers and error text in any language, where 'english'
-- would fold "tests" and "testing" into "test" but also mangle identifiers
-- and drop words such as "no", "not" and "off" that decide what a log line
-- means. Queries are parsed with the same configuration, so what a query
-- says is exactly what is matched.

-- message_search_text is the part of a message's text that search reads,
-- for the index and for snippets alike.
--
-- Only the first 65,536 characters (letagents.SearchIndexedChars; a test
-- holds the two equal): a tsvector holds at most 1 MiB, and a text of
-- MaxTextBytes made of distinct hyphenated words measures up to about 10
-- bytes of tsvector a character, which would make its send fail; 65,536
-- characters stay below 1 MiB at up to 16 bytes a character.
--
-- < and > become private-use characters, which the parser takes for
-- blanks: otherwise it reads <String> in Vec<String> as an HTML tag and
-- skips it, skips the whole body of a <script> or <style>, and ts_headline
-- drops tags from snippets. Store.Search turns them back in snippets.
CREATE FUNCTION message_search_text(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT translate(left($1, 65536), '<>', E'\uE000\uE001') $$;

-- fastupdate is off: with it on, a send that finds the pending list full
-- (4 MB) merges it into the index itself, a pause of its own; off, every
-- send pays its share of the index as it goes (make bench: "search index").
--
-- Adding a stored column rewrites messages under an exclusive lock, once.
ALTER TABLE messages ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, message_search_text(text))) STORED;

CREATE INDEX messages_search_idx ON messages USING gin (search_vector) WITH (fastupdate = off);
