-- How close a user is to the plan's limits (issue 37): the rate-limit readings that agents
-- write into their session files (Codex's token_count events carry ``rate_limits``: each
-- window's used percent, its length and when it resets), one row per window per line, kept
-- like leaf_summaries: rows of the file they were read from, at the line's seq, gone with it.
-- The session, agent and host are the file's (sessions.file_id; the index is one machine's).
CREATE TABLE quota_observations (
    file_id INTEGER NOT NULL REFERENCES files (id),
    seq INTEGER NOT NULL,
    -- 'primary' / 'secondary' as the agent names the window slot.
    slot TEXT NOT NULL,
    -- The line's time (UTC ISO), the percent of the window used then (0-100, may exceed 100).
    observed_at TEXT NOT NULL,
    used_percent REAL NOT NULL,
    -- The window's length (300: five hours, 10080: a week) and its end (UTC ISO), when said.
    window_minutes INTEGER,
    resets_at TEXT,
    -- The agent's name of the limit ('codex') and the account's plan ('plus', 'pro', 'free').
    limit_id TEXT,
    plan_type TEXT,
    PRIMARY KEY (file_id, seq, slot)
) WITHOUT ROWID;
CREATE INDEX quota_observations_time ON quota_observations (observed_at);
-- Codex files already indexed are read again, whole, by the next sync to find their readings
-- (as a change of prices does: index/write/prices.py).
UPDATE files SET mtime_ns = -1, indexed_bytes = 0 WHERE agent = 'codex';
-- The status line sums one session's usage as usage_entries counts it (xcsh_store/glance/usage.py):
-- its entries and their copies elsewhere, found by time and id from this index alone (the
-- timestamp index it replaces answered only the time, and every other session's entries of the
-- same moment were read to learn their ids).
DROP INDEX entries_timestamp;
CREATE INDEX entries_time_id ON entries (timestamp, id);
