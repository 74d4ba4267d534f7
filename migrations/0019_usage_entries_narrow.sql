-- The usage_entries view, the same rows and columns, its window functions over narrow rows
-- (issue 40; migration 0018's union of entries and usage_lines): the windows that decide which
-- copy of a request counts (copies and forks counted once) sort each request's keys alone, not
-- its whole row joined with its session's, and the other columns are read for the rows kept,
-- from entries and sessions (pk > 0) or usage_lines and usage_sessions (pk < 0, the negated
-- usage_lines key). The keys' subquery is read once, so a condition on timestamp (a part of
-- every window's partition) still goes down to the tables' rows.
DROP VIEW usage_entries;
CREATE VIEW usage_entries AS
SELECT
    r.pk, r.session, r.session_id,
    CASE WHEN r.pk > 0 THEN s.project_dir ELSE us.project_dir END AS project_dir,
    CASE WHEN r.pk > 0 THEN s.cwd ELSE us.cwd END AS cwd,
    r.id, r.timestamp,
    CASE WHEN r.pk > 0 THEN e.provider ELSE u.provider END AS provider,
    CASE WHEN r.pk > 0 THEN e.model ELSE u.model END AS model,
    r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens,
    CASE WHEN r.pk > 0 THEN e.premium_requests ELSE u.premium_requests END AS premium_requests,
    CASE WHEN r.pk > 0 THEN e.cost ELSE u.cost END AS cost,
    CASE WHEN r.pk > 0 THEN s.agent ELSE us.agent END AS agent,
    CASE WHEN r.pk > 0 THEN s.parent_session_id ELSE us.parent_session_id END
        AS parent_session_id,
    r.created_at, r.modified_at,
    CASE WHEN r.pk > 0 THEN e.cost_estimated ELSE u.cost_estimated END AS cost_estimated,
    CASE WHEN r.pk > 0 THEN e.list_cost ELSE u.list_cost END AS list_cost,
    r.occurrence, r.copy_number, r.file_copy
FROM (
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
            e.pk, e.session, s.session_id, e.id, e.timestamp, e.input_tokens, e.output_tokens,
            e.cache_read_tokens, e.cache_write_tokens, s.created_at, s.modified_at,
            row_number() OVER (
                PARTITION BY
                    e.session, e.timestamp, e.input_tokens, e.output_tokens, e.cache_read_tokens,
                    e.cache_write_tokens
                ORDER BY e.seq
            ) AS occurrence
        FROM entries AS e
        JOIN sessions AS s ON s.file_id = e.session
        WHERE e.input_tokens IS NOT NULL
          AND e.session NOT IN (SELECT id FROM files WHERE entries_pending = 1)
        UNION ALL
        SELECT
            -u.pk, u.session, s.session_id, u.id, u.timestamp, u.input_tokens, u.output_tokens,
            u.cache_read_tokens, u.cache_write_tokens, s.created_at, s.modified_at,
            row_number() OVER (
                PARTITION BY
                    u.session, u.timestamp, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                    u.cache_write_tokens
                ORDER BY u.seq
            ) AS occurrence
        FROM usage_lines AS u
        JOIN usage_sessions AS s ON s.file_id = u.session
    )
) AS r
LEFT JOIN entries AS e ON r.pk > 0 AND e.pk = r.pk
LEFT JOIN sessions AS s ON r.pk > 0 AND s.file_id = r.session
LEFT JOIN usage_lines AS u ON r.pk < 0 AND u.pk = -r.pk
LEFT JOIN usage_sessions AS us ON r.pk < 0 AND us.file_id = r.session
WHERE r.copy_number = 1 AND r.file_copy = 1;
