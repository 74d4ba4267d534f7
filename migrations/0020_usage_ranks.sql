-- The copy decision of usage_entries stored (issue 40): which copy of a request counts (copies
-- and forks counted once: migration 0010's occurrence, copy_number and file_copy) is decided by
-- the sync that writes the rows, not by three window sorts at every query (0.19-0.25 CPU-s of a
-- 0.63 CPU-s usage on the 327 MB Claude tree). usage_ranks holds the three numbers of every
-- row usage_entries reads (pk: entries.pk > 0, the negated usage_lines.pk < 0), and the view
-- only joins the rows it keeps.
--
-- Kept current in the transaction of each change (crash-consistent: a commit never holds rows
-- and ranks that disagree): the triggers below note what a write touched (the file of a row,
-- the (id, timestamp) of a row gone or changed, the session_id a file had), and the writer
-- ranks again, before it commits, the partitions so noted (index/usage_ranks.py): occurrence
-- over the noted files' rows, copy_number over every row of a noted key (the noted files'
-- keys, before and after), file_copy over every row of a noted session_id (the files', before
-- and after). Those three are the only partitions a change reaches: occurrence is within one
-- file, copy_number depends on no other rank, and file_copy reads only the occurrence of rows
-- of its own session_id. A bulk load (write/bulk_load.py) leaves the notes until it builds the
-- entries' indexes again, and ranks everything then; so does a usage-first pass into an index
-- with no usage rows yet, until its last commit. Both only add rows: until ranked, the new rows
-- are not counted (as files not yet read) and every other row is counted as before.
--
-- copy_number's ties (rows of one file with no id and one timestamp) are broken by seq, the
-- order of the lines, where the view used to leave them to the sorter.
CREATE TABLE usage_ranks (
    pk INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    occurrence INTEGER NOT NULL,
    copy_number INTEGER NOT NULL,
    file_copy INTEGER NOT NULL
);
CREATE INDEX usage_ranks_session ON usage_ranks (session);
-- The partitions to rank again (empty at every commit). No key: ids, timestamps and session_ids
-- can be NULL, which PARTITION BY takes for one value and a UNIQUE column for many.
CREATE TABLE usage_dirty_files (file_id INTEGER PRIMARY KEY);
CREATE TABLE usage_dirty_keys (id TEXT, timestamp TEXT);
CREATE TABLE usage_dirty_sessions (session_id TEXT);
-- What a noted key or session_id is looked up by (entries has entries_time_id and
-- sessions_session_id).
CREATE INDEX usage_lines_time_id ON usage_lines (timestamp, id);
CREATE INDEX usage_sessions_session_id ON usage_sessions (session_id);

CREATE TRIGGER entries_usage_ai AFTER INSERT ON entries WHEN new.input_tokens IS NOT NULL BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.session);
END;
CREATE TRIGGER entries_usage_ad AFTER DELETE ON entries WHEN old.input_tokens IS NOT NULL BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;
CREATE TRIGGER entries_usage_au AFTER UPDATE OF
    session, seq, id, timestamp, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens
ON entries WHEN old.input_tokens IS NOT NULL OR new.input_tokens IS NOT NULL BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session), (new.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;
CREATE TRIGGER usage_lines_ai AFTER INSERT ON usage_lines BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.session);
END;
CREATE TRIGGER usage_lines_ad AFTER DELETE ON usage_lines BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;
CREATE TRIGGER usage_lines_au AFTER UPDATE OF
    session, seq, id, timestamp, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens
ON usage_lines BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session), (new.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;
CREATE TRIGGER sessions_usage_ai AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.file_id);
END;
CREATE TRIGGER sessions_usage_ad AFTER DELETE ON sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;
CREATE TRIGGER sessions_usage_au AFTER UPDATE OF file_id, session_id, created_at, modified_at
ON sessions WHEN old.file_id IS NOT new.file_id OR old.session_id IS NOT new.session_id
    OR old.created_at IS NOT new.created_at OR old.modified_at IS NOT new.modified_at BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id), (new.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;
CREATE TRIGGER usage_sessions_ai AFTER INSERT ON usage_sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.file_id);
END;
CREATE TRIGGER usage_sessions_ad AFTER DELETE ON usage_sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;
CREATE TRIGGER usage_sessions_au AFTER UPDATE OF file_id, session_id, created_at, modified_at
ON usage_sessions WHEN old.file_id IS NOT new.file_id OR old.session_id IS NOT new.session_id
    OR old.created_at IS NOT new.created_at OR old.modified_at IS NOT new.modified_at BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id), (new.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;
-- A file's entries count from when its mark goes (0018).
CREATE TRIGGER files_usage_au AFTER UPDATE OF entries_pending ON files
WHEN old.entries_pending IS NOT new.entries_pending BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.id);
END;
CREATE TRIGGER files_usage_ad AFTER DELETE ON files WHEN old.entries_pending = 1 BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.id);
END;

-- The ranks of the rows already indexed: 0019's windows, once.
INSERT INTO usage_ranks (pk, session, occurrence, copy_number, file_copy)
SELECT pk, session, occurrence,
    row_number() OVER (
        PARTITION BY id, timestamp ORDER BY created_at, session, seq
    ),
    row_number() OVER (
        PARTITION BY
            session_id, timestamp, input_tokens, output_tokens, cache_read_tokens,
            cache_write_tokens, occurrence
        ORDER BY modified_at DESC, session DESC
    )
FROM (
    SELECT
        e.pk, e.session, e.seq, s.session_id, e.id, e.timestamp, e.input_tokens,
        e.output_tokens, e.cache_read_tokens, e.cache_write_tokens, s.created_at, s.modified_at,
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
        -u.pk, u.session, u.seq, s.session_id, u.id, u.timestamp, u.input_tokens,
        u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, s.created_at, s.modified_at,
        row_number() OVER (
            PARTITION BY
                u.session, u.timestamp, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                u.cache_write_tokens
            ORDER BY u.seq
        ) AS occurrence
    FROM usage_lines AS u
    JOIN usage_sessions AS s ON s.file_id = u.session
);

-- The same columns as 0019's, of the rows ranked first on both counts. The session is read
-- from usage_ranks, so that a condition on it (a session's count) finds its rows by
-- usage_ranks_session; the ranks are read first (CROSS JOIN, as in 0019).
DROP VIEW usage_entries;
CREATE VIEW usage_entries AS
SELECT
    e.pk, r.session, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
    e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
    e.premium_requests, e.cost, s.agent, s.parent_session_id, s.created_at,
    s.modified_at, e.cost_estimated, e.list_cost, r.occurrence, r.copy_number, r.file_copy
FROM usage_ranks AS r
CROSS JOIN entries AS e ON e.pk = r.pk
CROSS JOIN sessions AS s ON s.file_id = r.session
WHERE r.pk > 0 AND r.copy_number = 1 AND r.file_copy = 1
UNION ALL
SELECT
    -u.pk, r.session, s.session_id, s.project_dir, s.cwd, u.id, u.timestamp, u.provider,
    u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
    u.premium_requests, u.cost, s.agent, s.parent_session_id, s.created_at,
    s.modified_at, u.cost_estimated, u.list_cost, r.occurrence, r.copy_number, r.file_copy
FROM usage_ranks AS r
CROSS JOIN usage_lines AS u ON u.pk = -r.pk
CROSS JOIN usage_sessions AS s ON s.file_id = r.session
WHERE r.pk < 0 AND r.copy_number = 1 AND r.file_copy = 1;
