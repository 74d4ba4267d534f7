-- Costs as the user can trust them (issue 25, the money).
--
-- An entry of a model no price source knows keeps cost NULL (agents/pricing.py); a session
-- shows its cost as unknown when all its priced entries add nothing and some have no price, or
-- as a lower bound when some do. Listings count those entries per session through this index:
-- it holds only them, so it stays as small as they are few.
--
-- (No re-sync asked for here: an index without meta price_table, as every one before this,
-- has its Claude Code and Codex files read again by the next sync, index/prices.py.)
CREATE INDEX entries_unpriced ON entries (session) WHERE cost IS NULL AND input_tokens IS NOT NULL;
-- A session in two files counts once (issue 25, money 3). A copy of a session file that keeps
-- its session id (pi's v1 file and the v3 file oh-my-pi migrated it to, a backup restored
-- beside the original) holds the same requests: same session id, and each request the same
-- time and token figures. Its entry ids may differ (a v1 file has none: the index makes them
-- per file, and the migration made new ones), so copies are told by that content; the copy in
-- the file modified last counts (it is the one still written to), the others not at all.
-- Entries copied into a fork (another session id, same entry id and time) still count once,
-- in the oldest session, as before.
-- (Two requests of one file with the same time and figures are two: ``occurrence`` numbers
-- them within their file, and copies pair up by it.)
DROP VIEW usage_entries;
CREATE VIEW usage_entries AS
SELECT * FROM (
    SELECT
        *,
        row_number() OVER (
            PARTITION BY id, timestamp ORDER BY created_at, session
        ) AS copy_number,
        row_number() OVER (
            PARTITION BY
                session_id, timestamp, input_tokens, output_tokens, cache_read_tokens,
                cache_write_tokens, occurrence
            ORDER BY modified_at DESC, session DESC
        ) AS file_copy
    FROM (
        SELECT
            e.pk, e.session, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
            e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
            e.premium_requests, e.cost, s.agent, s.parent_session_id, s.created_at,
            s.modified_at,
            row_number() OVER (
                PARTITION BY
                    e.session, e.timestamp, e.input_tokens, e.output_tokens, e.cache_read_tokens,
                    e.cache_write_tokens
                ORDER BY e.seq
            ) AS occurrence
        FROM entries AS e
        JOIN sessions AS s ON s.file_id = e.session
        WHERE e.input_tokens IS NOT NULL
    )
)
WHERE copy_number = 1 AND file_copy = 1;
