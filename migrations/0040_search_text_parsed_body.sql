-- message_search_text's body is stored parsed (a SQL-standard body,
-- PostgreSQL 14 and later), rather than as text (issue 23).
--
-- The generated search column inlines the function into its expression,
-- and PostgreSQL builds that expression again at the start of every
-- statement that writes a message: a body kept as text is parsed and
-- analysed each time, about 3% of a lone send's backend CPU by a profile
-- of its backends (docs/benchmark.md, "The search function's body
-- parsed once"); a stored parse tree is only read. The function returns
-- what it returned before, so no stored search_vector changes.
--
-- CREATE OR REPLACE keeps the function's identity, which the generated
-- column depends on. A server older than 14 has no such body and keeps
-- the function as it was.
DO $migrate$
BEGIN
	IF current_setting('server_version_num')::integer >= 140000 THEN
		EXECUTE $body$
			CREATE OR REPLACE FUNCTION message_search_text(text) RETURNS text
				LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
			BEGIN ATOMIC
				SELECT translate(left($1, 65536), '<>', E'\uE000\uE001');
			END
		$body$;
	END IF;
END
$migrate$;
