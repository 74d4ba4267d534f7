-- The index schema that migrating any index.db to the latest migration produces: the rows of
-- sqlite_master (type, name, tbl_name, sql) but the FTS5 shadow tables, which are SQLite's.
-- Written by `python tests/test_index_migrations.py > tests/schema.sql`; do not edit.

-- index agent_prompts_created on agent_prompts
CREATE INDEX agent_prompts_created ON agent_prompts (created_at DESC);

-- index agent_prompts_hash on agent_prompts
CREATE INDEX agent_prompts_hash ON agent_prompts (prompt_hash);

-- index blob_refs_hash on blob_refs
CREATE INDEX blob_refs_hash ON blob_refs (hash);

-- index entries_chain on entries
CREATE INDEX entries_chain ON entries (chain, seq, type);

-- index entries_costs on entries
CREATE INDEX entries_costs ON entries (session, cost, cost_estimated, list_cost, input_tokens)
WHERE input_tokens IS NOT NULL;

-- index entries_model on entries
CREATE INDEX entries_model ON entries (model);

-- index entries_parent on entries
CREATE INDEX entries_parent ON entries (session, parent_id);

-- index entries_prompt_hash on entries
CREATE INDEX entries_prompt_hash ON entries (prompt_hash) WHERE prompt_hash IS NOT NULL;

-- index entries_time_id on entries
CREATE INDEX entries_time_id ON entries (timestamp, id);

-- index entries_title_change on entries
CREATE INDEX entries_title_change ON entries (session) WHERE type = 'title_change';

-- index entries_usage_key on entries
CREATE INDEX entries_usage_key ON entries (session, usage_key) WHERE usage_key IS NOT NULL;

-- index files_entries_pending on files
CREATE INDEX files_entries_pending ON files (id) WHERE entries_pending = 1;

-- index files_gone on files
CREATE INDEX files_gone ON files (path) WHERE gone_at IS NOT NULL;

-- index files_identity on files
CREATE INDEX files_identity ON files (path, size, mtime_ns, inode, ctime_ns, status);

-- index files_revision on files
CREATE INDEX files_revision ON files (agent, reader_revision);

-- index files_text_pending on files
CREATE INDEX files_text_pending ON files (id) WHERE text_pending = 1;

-- index history_prompt_hash on history
CREATE INDEX history_prompt_hash ON history (prompt_hash);

-- index idx_history_created_at on history
CREATE INDEX idx_history_created_at ON history (created_at DESC);

-- index leaf_summaries_leaf on leaf_summaries
CREATE INDEX leaf_summaries_leaf ON leaf_summaries (leaf_id);

-- index quota_observations_time on quota_observations
CREATE INDEX quota_observations_time ON quota_observations (observed_at);

-- index sessions_agent on sessions
CREATE INDEX sessions_agent ON sessions (agent, modified_at DESC, file_id);

-- index sessions_created on sessions
CREATE INDEX sessions_created ON sessions (created_at DESC, file_id);

-- index sessions_cwd on sessions
CREATE INDEX sessions_cwd ON sessions (cwd, modified_at DESC, file_id);

-- index sessions_id_folded on sessions
CREATE INDEX sessions_id_folded ON sessions (lower(session_id));

-- index sessions_listing on sessions
CREATE INDEX sessions_listing ON sessions (
    modified_at DESC, file_id, session_id, cwd, message_count, input_tokens, output_tokens, cost,
    title, compaction_title, substr(first_message, 1, 256)
);

-- index sessions_parent on sessions
CREATE INDEX sessions_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;

-- index sessions_project on sessions
CREATE INDEX sessions_project ON sessions (project_dir, modified_at DESC, file_id);

-- index sessions_session_id on sessions
CREATE INDEX sessions_session_id ON sessions (session_id);

-- index sessions_summary_from on sessions
CREATE INDEX sessions_summary_from ON sessions (summary_from) WHERE summary_from IS NOT NULL;

-- index sqlite_autoindex_archived_1 on archived

-- index sqlite_autoindex_entries_1 on entries

-- index sqlite_autoindex_entries_2 on entries

-- index sqlite_autoindex_files_1 on files

-- index sqlite_autoindex_forgotten_1 on forgotten

-- index sqlite_autoindex_meta_1 on meta

-- index sqlite_autoindex_roots_1 on roots

-- index sqlite_autoindex_schema_migrations_1 on schema_migrations

-- index usage_lines_session on usage_lines
CREATE INDEX usage_lines_session ON usage_lines (session);

-- index usage_lines_time_id on usage_lines
CREATE INDEX usage_lines_time_id ON usage_lines (timestamp, id);

-- index usage_ranks_session on usage_ranks
CREATE INDEX usage_ranks_session ON usage_ranks (session);

-- index usage_sessions_session_id on usage_sessions
CREATE INDEX usage_sessions_session_id ON usage_sessions (session_id);

-- table agent_prompts on agent_prompts
CREATE TABLE agent_prompts (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    prompt TEXT NOT NULL,
    created_at REAL NOT NULL,
    cwd TEXT,
    session_id TEXT,
    prompt_hash TEXT NOT NULL
);

-- table agent_prompts_fts on agent_prompts_fts
CREATE VIRTUAL TABLE agent_prompts_fts USING fts5 (
    prompt, content = 'agent_prompts', content_rowid = 'id'
);

-- table archived on archived
CREATE TABLE archived (
    file_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    version INTEGER NOT NULL,
    source_bytes INTEGER NOT NULL,
    archive_bytes INTEGER NOT NULL
);

-- table blob_refs on blob_refs
CREATE TABLE blob_refs (
    entry INTEGER NOT NULL REFERENCES entries (pk),
    hash TEXT NOT NULL,
    PRIMARY KEY (entry, hash)
) WITHOUT ROWID;

-- table blobs on blobs
CREATE TABLE blobs (
    hash TEXT PRIMARY KEY,
    size INTEGER,
    refcount INTEGER NOT NULL DEFAULT 0,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
) WITHOUT ROWID;

-- table entries on entries
CREATE TABLE entries (
    pk INTEGER PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES files (id),
    seq INTEGER NOT NULL,
    id TEXT,
    parent_id TEXT,
    type TEXT,
    timestamp TEXT,
    role TEXT,
    provider TEXT,
    model TEXT,
    tool_name TEXT,
    custom_type TEXT,
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL,
    part INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    premium_requests REAL,
    cost REAL,
    -- SHA-1 of a user prompt's text, to link history.db prompts to the session they came from.
    prompt_hash TEXT, chain INTEGER, usage_key TEXT, cost_estimated INTEGER, list_cost REAL,
    UNIQUE (session, id),
    UNIQUE (session, seq)
);

-- table entries_fts on entries_fts
CREATE VIRTUAL TABLE entries_fts USING fts5 (
    text,
    content = '',
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co Sm So' separators '+<=>|~'"
);

-- table entries_vocab on entries_vocab
CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');

-- table files on files
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    project_dir TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    indexed_bytes INTEGER NOT NULL DEFAULT 0,
    head_hash TEXT,
    tail_hash TEXT,
    status TEXT NOT NULL CHECK (status IN ('ok', 'invalid_header', 'unreadable')),
    error TEXT,
    indexed_at TEXT,
    -- Parser state carried from one incremental read to the next.
    next_seq INTEGER NOT NULL DEFAULT 0,
    last_id TEXT,
    -- 1 when the file needs a format migration (v1/v2): such files are re-read whole.
    legacy INTEGER NOT NULL DEFAULT 0
, chained INTEGER NOT NULL DEFAULT 0, ctime_ns INTEGER NOT NULL DEFAULT 0, lines INTEGER NOT NULL DEFAULT 0, skipped_count INTEGER NOT NULL DEFAULT 0, skipped_lines TEXT, agent TEXT NOT NULL DEFAULT 'xcsh', text_pending INTEGER NOT NULL DEFAULT 0, gone_at TEXT, reader_revision INTEGER NOT NULL DEFAULT 1, entries_pending INTEGER NOT NULL DEFAULT 0);

-- table forgotten on forgotten
CREATE TABLE forgotten (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    forgotten_at TEXT NOT NULL
);

-- table history on history
CREATE TABLE history (
    id INTEGER PRIMARY KEY,
    prompt TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cwd TEXT,
    prompt_hash TEXT NOT NULL
);

-- table history_fts on history_fts
CREATE VIRTUAL TABLE history_fts USING fts5 (prompt, content = 'history', content_rowid = 'id');

-- table leaf_summaries on leaf_summaries
CREATE TABLE leaf_summaries (
    file_id INTEGER NOT NULL REFERENCES files (id),
    seq INTEGER NOT NULL,
    leaf_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    PRIMARY KEY (file_id, seq)
) WITHOUT ROWID;

-- table meta on meta
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT
);

-- table quota_observations on quota_observations
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

-- table roots on roots
CREATE TABLE roots (
    path TEXT PRIMARY KEY,
    added_at TEXT NOT NULL
, agent TEXT);

-- table schema_migrations on schema_migrations
CREATE TABLE schema_migrations ( name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TEXT NOT NULL);

-- table search_terms on search_terms
CREATE TABLE search_terms (
    term TEXT PRIMARY KEY,
    doc INTEGER NOT NULL
) WITHOUT ROWID;

-- table sessions on sessions
CREATE TABLE sessions (
    file_id INTEGER PRIMARY KEY REFERENCES files (id),
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    cwd TEXT,
    project_dir TEXT,
    title TEXT,
    title_source TEXT,
    parent_session TEXT,
    version INTEGER,
    created_at TEXT,
    modified_at TEXT,
    entry_count INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    first_message TEXT,
    last_entry_id TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    premium_requests REAL NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    -- The newest compaction shortSummary: the title shown when the header has none.
    compaction_title TEXT
, agent TEXT NOT NULL DEFAULT 'xcsh', parent_session_id TEXT, activity_at TEXT, file_title TEXT, file_title_source TEXT, summary_from INTEGER);

-- table usage_dirty_files on usage_dirty_files
CREATE TABLE usage_dirty_files (file_id INTEGER PRIMARY KEY);

-- table usage_dirty_keys on usage_dirty_keys
CREATE TABLE usage_dirty_keys (id TEXT, timestamp TEXT);

-- table usage_dirty_sessions on usage_dirty_sessions
CREATE TABLE usage_dirty_sessions (session_id TEXT);

-- table usage_lines on usage_lines
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

-- table usage_ranks on usage_ranks
CREATE TABLE usage_ranks (
    pk INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    occurrence INTEGER NOT NULL,
    copy_number INTEGER NOT NULL,
    file_copy INTEGER NOT NULL
);

-- table usage_sessions on usage_sessions
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

-- trigger agent_prompts_ad on agent_prompts
CREATE TRIGGER agent_prompts_ad AFTER DELETE ON agent_prompts BEGIN
    INSERT INTO agent_prompts_fts (agent_prompts_fts, rowid, prompt)
    VALUES ('delete', old.id, old.prompt);
END;

-- trigger agent_prompts_ai on agent_prompts
CREATE TRIGGER agent_prompts_ai AFTER INSERT ON agent_prompts BEGIN
    INSERT INTO agent_prompts_fts (rowid, prompt) VALUES (new.id, new.prompt);
END;

-- trigger blob_refs_ad on blob_refs
CREATE TRIGGER blob_refs_ad AFTER DELETE ON blob_refs BEGIN
    UPDATE blobs SET refcount = refcount - 1 WHERE hash = old.hash;
END;

-- trigger blob_refs_ai on blob_refs
CREATE TRIGGER blob_refs_ai AFTER INSERT ON blob_refs BEGIN
    INSERT INTO blobs (hash, refcount, first_seen, last_seen)
    VALUES (new.hash, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    ON CONFLICT (hash) DO UPDATE SET
        refcount = refcount + 1,
        last_seen = excluded.last_seen;
END;

-- trigger entries_usage_ad on entries
CREATE TRIGGER entries_usage_ad AFTER DELETE ON entries WHEN old.input_tokens IS NOT NULL BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;

-- trigger entries_usage_ai on entries
CREATE TRIGGER entries_usage_ai AFTER INSERT ON entries WHEN new.input_tokens IS NOT NULL BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.session);
END;

-- trigger entries_usage_au on entries
CREATE TRIGGER entries_usage_au AFTER UPDATE OF
    session, seq, id, timestamp, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens
ON entries WHEN old.input_tokens IS NOT NULL OR new.input_tokens IS NOT NULL BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session), (new.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;

-- trigger files_usage_ad on files
CREATE TRIGGER files_usage_ad AFTER DELETE ON files WHEN old.entries_pending = 1 BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.id);
END;

-- trigger files_usage_au on files
CREATE TRIGGER files_usage_au AFTER UPDATE OF entries_pending ON files
WHEN old.entries_pending IS NOT new.entries_pending BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.id);
END;

-- trigger history_ad on history
CREATE TRIGGER history_ad AFTER DELETE ON history BEGIN
    INSERT INTO history_fts (history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
END;

-- trigger history_ai on history
CREATE TRIGGER history_ai AFTER INSERT ON history BEGIN
    INSERT INTO history_fts (rowid, prompt) VALUES (new.id, new.prompt);
END;

-- trigger history_au on history
CREATE TRIGGER history_au AFTER UPDATE OF prompt ON history BEGIN
    INSERT INTO history_fts (history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
    INSERT INTO history_fts (rowid, prompt) VALUES (new.id, new.prompt);
END;

-- trigger sessions_usage_ad on sessions
CREATE TRIGGER sessions_usage_ad AFTER DELETE ON sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;

-- trigger sessions_usage_ai on sessions
CREATE TRIGGER sessions_usage_ai AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.file_id);
END;

-- trigger sessions_usage_au on sessions
CREATE TRIGGER sessions_usage_au AFTER UPDATE OF file_id, session_id, created_at, modified_at
ON sessions WHEN old.file_id IS NOT new.file_id OR old.session_id IS NOT new.session_id
    OR old.created_at IS NOT new.created_at OR old.modified_at IS NOT new.modified_at BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id), (new.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;

-- trigger usage_lines_ad on usage_lines
CREATE TRIGGER usage_lines_ad AFTER DELETE ON usage_lines BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;

-- trigger usage_lines_au on usage_lines
CREATE TRIGGER usage_lines_au AFTER UPDATE OF
    session, seq, id, timestamp, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens
ON usage_lines BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.session), (new.session);
    INSERT INTO usage_dirty_keys VALUES (old.id, old.timestamp);
END;

-- trigger usage_sessions_ad on usage_sessions
CREATE TRIGGER usage_sessions_ad AFTER DELETE ON usage_sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;

-- trigger usage_sessions_ai on usage_sessions
CREATE TRIGGER usage_sessions_ai AFTER INSERT ON usage_sessions BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (new.file_id);
END;

-- trigger usage_sessions_au on usage_sessions
CREATE TRIGGER usage_sessions_au AFTER UPDATE OF file_id, session_id, created_at, modified_at
ON usage_sessions WHEN old.file_id IS NOT new.file_id OR old.session_id IS NOT new.session_id
    OR old.created_at IS NOT new.created_at OR old.modified_at IS NOT new.modified_at BEGIN
    INSERT OR IGNORE INTO usage_dirty_files VALUES (old.file_id), (new.file_id);
    INSERT INTO usage_dirty_sessions VALUES (old.session_id);
END;

-- view messages on messages
CREATE VIEW messages AS
SELECT
    e.pk, s.session_id, s.path, s.cwd, s.project_dir, e.id, e.parent_id, e.timestamp, e.role,
    e.provider, e.model, e.tool_name, e.input_tokens, e.output_tokens, e.cache_read_tokens,
    e.cache_write_tokens, e.cost
FROM entries AS e
JOIN sessions AS s ON s.file_id = e.session
WHERE e.type = 'message';

-- view usage_by_day on usage_by_day
CREATE VIEW usage_by_day AS
SELECT
    substr(timestamp, 1, 10) AS day,
    count(*) AS entries,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(cache_read_tokens) AS cache_read_tokens,
    sum(cache_write_tokens) AS cache_write_tokens,
    sum(cost) AS cost
FROM usage_entries
GROUP BY day;

-- view usage_by_model on usage_by_model
CREATE VIEW usage_by_model AS
SELECT
    provider,
    model,
    count(*) AS entries,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(cache_read_tokens) AS cache_read_tokens,
    sum(cache_write_tokens) AS cache_write_tokens,
    sum(cost) AS cost
FROM usage_entries
GROUP BY provider, model;

-- view usage_entries on usage_entries
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
