-- Pushes that send what is new (issue 28): a file that grew sends its new entries, and the
-- usage_rollup rows of the sessions they touch are made again in the same transaction, not the
-- host's whole rollup at the end of the push (team/upload.py).

-- The other copies of an entry (a forked session copies its parent's entries: same id and
-- timestamp, usage_entries counts the oldest): found by their key when one copy comes or goes.
-- coalesce: PARTITION BY takes NULLs as equal, and the lookups must find those too (an id ''
-- found with a NULL one is only looked at once more: the rollup query partitions exactly).
CREATE INDEX entries_usage_copies ON entries (host, coalesce(id, ''), coalesce(timestamp, ''))
WHERE input_tokens IS NOT NULL;

-- A session's rollup rows, replaced when its entries change.
CREATE INDEX usage_rollup_session ON usage_rollup (host, session_id);

-- The copy that counts no longer depends on the order rows are read in: a file holding two
-- entries with one id and timestamp counts its first (seq breaks the tie), in the view as in
-- the rollup of a few sessions.
CREATE OR REPLACE VIEW usage_entries AS
SELECT * FROM (
    SELECT
        e.host, e.path, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
        e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
        e.premium_requests, e.cost, s.agent, s.parent_session_id,
        row_number() OVER (
            PARTITION BY e.host, e.id, e.timestamp ORDER BY s.created_at, e.path, e.seq
        ) AS copy_number
    FROM entries AS e
    JOIN sessions AS s ON s.host = e.host AND s.path = e.path
    WHERE e.input_tokens IS NOT NULL
) AS numbered
WHERE copy_number = 1;
