-- Unknown is never $0 (issue 35, item 2): how each request's cost is known
-- (agents/prices/costs.py). cost_estimated: 1 when entries.cost is the index's estimate at list
-- price, 0 when the agent recorded it (NULL: no usage, or no cost known). list_cost: for a
-- recorded $0 (a reseller's or a subscription's), the same tokens at list price (NULL: no
-- price known), shown beside the $0, never summed into it.
ALTER TABLE entries ADD COLUMN cost_estimated INTEGER;
ALTER TABLE entries ADD COLUMN list_cost REAL;
-- Every cost an agent that records none has is an estimate (their readers price each request
-- as they read it); the files of the agents that record costs are read again by the next sync
-- below, which gives a request without a recorded cost an estimate (pi's lines without
-- ``cost``) and a recorded $0 its list price.
UPDATE entries SET cost_estimated = 1
WHERE cost IS NOT NULL AND input_tokens IS NOT NULL
  AND (SELECT agent FROM files WHERE files.id = entries.session)
      NOT IN ('xcsh', 'pi', 'omp', 'opencode', 'aider');
UPDATE entries SET cost_estimated = 0
WHERE cost IS NOT NULL AND input_tokens IS NOT NULL AND cost_estimated IS NULL;
UPDATE files SET mtime_ns = -1, indexed_bytes = 0
WHERE agent IN ('xcsh', 'pi', 'omp', 'opencode', 'aider') AND gone_at IS NULL;
-- A session's cost kind is summed from its requests when it is listed (index/read/sessions.py):
-- this index holds exactly what that sum reads, so it reads no table row. It replaces
-- entries_unpriced (migration 0010), whose rows it holds too.
DROP INDEX entries_unpriced;
CREATE INDEX entries_costs ON entries (session, cost, cost_estimated, list_cost, input_tokens)
WHERE input_tokens IS NOT NULL;
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
            s.modified_at, e.cost_estimated, e.list_cost,
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
