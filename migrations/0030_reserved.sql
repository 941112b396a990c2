-- Placeholder: 0030 belongs to the OAuth branch (wt-oauth's 0030_oauth.sql).
-- It exists only so that 0031 follows without a gap on this branch, which
-- db.Migrate refuses; drop this file when merging that branch's 0030.
SELECT 1;
