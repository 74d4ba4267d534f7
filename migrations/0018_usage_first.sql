-- Usage first, for real (issue 40, item 1): a first sync of a big tree that was asked for usage
-- (`usage`, `sync(entries=False)`) reads only the lines that hold usage (index/write/
-- usage_first.py) and writes one narrow row per request here, with the few facts of its session
-- that usage groups by in usage_sessions; the entry rows and the search text of those files come
-- later, in the deferred pass (index/write/entries_later.py), which any sync that wants entries
-- runs (every read verb's but usage's).
--
-- entries_pending = 1: the file has its usage here and no entry rows yet (it is text_pending
-- too). The usage rows of a file, its usage_sessions row and the mark are written in one
-- transaction, and go in the transaction that writes the file's last entry rows: at every
-- commit a file's usage is counted either from here (pending) or from entries (done), never
-- both, never neither (usage_entries below leaves out the entries of a pending file, which a
-- deferred pass killed part-way may have written some of).
ALTER TABLE files ADD COLUMN entries_pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX files_entries_pending ON files (id) WHERE entries_pending = 1;
-- The columns of entries that usage_entries reads; seq orders the rows of one file (a line's
-- offset: only the order counts). pk is handed out by SQLite and shown negated in the view, so
-- that it never meets an entry's key.
CREATE TABLE usage_lines (
    pk INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT,
    timestamp TEXT,
    provider TEXT,
    model TEXT,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    premium_requests REAL,
    cost REAL,
    cost_estimated INTEGER,
    list_cost REAL
);
CREATE INDEX usage_lines_session ON usage_lines (session);
-- What usage_entries joins sessions for, for a file whose sessions row is still to come.
CREATE TABLE usage_sessions (
    file_id INTEGER PRIMARY KEY,
    session_id TEXT,
    project_dir TEXT,
    cwd TEXT,
    agent TEXT,
    parent_session_id TEXT,
    created_at TEXT,
    modified_at TEXT
);
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
          AND e.session NOT IN (SELECT id FROM files WHERE entries_pending = 1)
        UNION ALL
        SELECT
            -u.pk, u.session, s.session_id, s.project_dir, s.cwd, u.id, u.timestamp, u.provider,
            u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
            u.premium_requests, u.cost, s.agent, s.parent_session_id, s.created_at,
            s.modified_at, u.cost_estimated, u.list_cost,
            row_number() OVER (
                PARTITION BY
                    u.session, u.timestamp, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                    u.cache_write_tokens
                ORDER BY u.seq
            ) AS occurrence
        FROM usage_lines AS u
        JOIN usage_sessions AS s ON s.file_id = u.session
    )
)
WHERE copy_number = 1 AND file_copy = 1;
