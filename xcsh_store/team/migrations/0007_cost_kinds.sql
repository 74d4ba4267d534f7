-- Unknown is never $0 (issue 35, item 2; the local index's migration 0017): how each request's
-- cost is known, pushed with it. cost_estimated: 1 when cost is the index's estimate at list
-- price, 0 when the agent recorded it; list_cost: a recorded $0's list price.
ALTER TABLE entries ADD COLUMN cost_estimated smallint, ADD COLUMN list_cost double precision;
-- Until each host's next push sends its rows again (their marks change with the new columns):
-- the costs of agents that record none were estimates, the others recorded.
UPDATE entries AS e SET cost_estimated = CASE
    WHEN s.agent IN ('xcsh', 'pi', 'omp', 'opencode', 'aider') THEN 0 ELSE 1 END
FROM sessions AS s
WHERE s.host = e.host AND s.path = e.path AND e.cost IS NOT NULL AND e.input_tokens IS NOT NULL;
-- usage_rollup's sums of them (agents/prices/costs.py FACTS_SQL): the free entries, the
-- recorded $0s below list price and their list price; ``estimated`` counts the entries
-- estimated above $0 from now on (rolled up again below).
ALTER TABLE usage_rollup ADD COLUMN free bigint NOT NULL DEFAULT 0,
    ADD COLUMN below_list bigint NOT NULL DEFAULT 0,
    ADD COLUMN list_cost double precision NOT NULL DEFAULT 0;
UPDATE hosts SET usage_stale = true;
CREATE OR REPLACE VIEW usage_entries AS
SELECT * FROM (
    SELECT
        e.host, e.path, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
        e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
        e.premium_requests, e.cost, s.agent, s.parent_session_id,
        row_number() OVER (
            PARTITION BY e.host, e.id, e.timestamp ORDER BY s.created_at, e.path, e.seq
        ) AS copy_number,
        e.cost_estimated, e.list_cost
    FROM entries AS e
    JOIN sessions AS s ON s.host = e.host AND s.path = e.path
    WHERE e.input_tokens IS NOT NULL
) AS numbered
WHERE copy_number = 1;
