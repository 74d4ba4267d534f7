-- The index: a disposable mirror of the JSONL session files, the blob store and history.db.
-- Everything here can be rebuilt from the files; table and column names are a public API
-- (README, "Index schema"). Readable by SQLite 3.40 (Debian 12), so no STRICT tables and no FTS5
-- options newer than that.

-- Index-wide settings, e.g. 'resync_required' set by a migration whose rows must be re-derived.
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT
);

-- Extra folders holding session files, besides <agent>/sessions. Remembered so that a GC never
-- deletes a blob referenced only from a root that is currently missing.
CREATE TABLE roots (
    path TEXT PRIMARY KEY,
    added_at TEXT NOT NULL
);

-- One row per JSONL file seen. size, mtime_ns and inode decide whether a file changed;
-- indexed_bytes is how far it has been read (always the end of a complete line); head_hash and
-- tail_hash (first KiB, last 4 KiB before indexed_bytes) tell an append from a rewrite.
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
);

-- One row per valid session file, keyed by its file: a session id is not unique across files
-- (copies, fixtures), a file path is.
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
);
CREATE INDEX sessions_session_id ON sessions (session_id);
CREATE INDEX sessions_modified ON sessions (modified_at);
CREATE INDEX sessions_cwd ON sessions (cwd);

-- One row per JSON object in a file, in file order (seq), the header and title records
-- included (their id is NULL). pk is an explicit INTEGER PRIMARY KEY so that entries_fts and
-- blob_refs can point at it: implicit rowids may change on VACUUM, this one never does.
-- session is the file id (= sessions.file_id for valid sessions; files with an invalid header
-- have entries but no sessions row). offset/length give the byte range of the line; part is the
-- position of the object on that line (old files have two objects glued on one line).
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
    prompt_hash TEXT,
    UNIQUE (session, id),
    UNIQUE (session, seq)
);
CREATE INDEX entries_parent ON entries (session, parent_id);
CREATE INDEX entries_timestamp ON entries (timestamp);
CREATE INDEX entries_model ON entries (model);
CREATE INDEX entries_prompt_hash ON entries (prompt_hash) WHERE prompt_hash IS NOT NULL;

-- The searchable text of each entry (rowid = entries.pk): user and assistant text, thinking,
-- tool call names and arguments, tool results (capped), custom messages, summaries, labels and
-- session titles. Content is stored by FTS5 itself so snippet() works from the index alone.
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
-- Merge segments less eagerly than the default (4): bulk syncs insert about twice as fast, and
-- queries stay quick (measured in benchmarks/bench_index_sync.py).
INSERT INTO entries_fts (entries_fts, rank) VALUES ('automerge', 8);
-- The indexed terms with their document counts. Search expands a trailing prefix word into its
-- most common completions through this table: an OR of terms is read lazily, newest first,
-- where FTS5's own prefix query merges every posting of every completion up front.
CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');

-- Blob reference counts. A row exists for every hash referenced by an entry or seen in the blob
-- folder; refcount is kept right by the triggers on blob_refs, in the same transaction as the
-- entries that hold the references.
CREATE TABLE blobs (
    hash TEXT PRIMARY KEY,
    size INTEGER,
    refcount INTEGER NOT NULL DEFAULT 0,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE blob_refs (
    entry INTEGER NOT NULL REFERENCES entries (pk),
    hash TEXT NOT NULL,
    PRIMARY KEY (entry, hash)
) WITHOUT ROWID;
CREATE INDEX blob_refs_hash ON blob_refs (hash);

CREATE TRIGGER blob_refs_ai AFTER INSERT ON blob_refs BEGIN
    INSERT INTO blobs (hash, refcount, first_seen, last_seen)
    VALUES (new.hash, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
    ON CONFLICT (hash) DO UPDATE SET
        refcount = refcount + 1,
        last_seen = excluded.last_seen;
END;

CREATE TRIGGER blob_refs_ad AFTER DELETE ON blob_refs BEGIN
    UPDATE blobs SET refcount = refcount - 1 WHERE hash = old.hash;
END;

-- The prompt history, mirrored from history.db with xcsh's own table and FTS names. prompt_hash
-- (as in entries) links a prompt to the session entries with the same text, at query time, so
-- the link appears whichever of the two was indexed first.
CREATE TABLE history (
    id INTEGER PRIMARY KEY,
    prompt TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cwd TEXT,
    prompt_hash TEXT NOT NULL
);
CREATE INDEX idx_history_created_at ON history (created_at DESC);
CREATE INDEX history_prompt_hash ON history (prompt_hash);
CREATE VIRTUAL TABLE history_fts USING fts5 (prompt, content = 'history', content_rowid = 'id');
CREATE TRIGGER history_ai AFTER INSERT ON history BEGIN
    INSERT INTO history_fts (rowid, prompt) VALUES (new.id, new.prompt);
END;
CREATE TRIGGER history_ad AFTER DELETE ON history BEGIN
    INSERT INTO history_fts (history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
END;
CREATE TRIGGER history_au AFTER UPDATE OF prompt ON history BEGIN
    INSERT INTO history_fts (history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
    INSERT INTO history_fts (rowid, prompt) VALUES (new.id, new.prompt);
END;

-- Views for common questions.

CREATE VIEW messages AS
SELECT
    e.pk, s.session_id, s.path, s.cwd, s.project_dir, e.id, e.parent_id, e.timestamp, e.role,
    e.provider, e.model, e.tool_name, e.input_tokens, e.output_tokens, e.cache_read_tokens,
    e.cache_write_tokens, e.cost
FROM entries AS e
JOIN sessions AS s ON s.file_id = e.session
WHERE e.type = 'message';

-- Entries that carry usage, each counted once: a forked session copies its parent's entries
-- (same id and timestamp), and those belong to the oldest session that holds them.
CREATE VIEW usage_entries AS
SELECT * FROM (
    SELECT
        e.pk, e.session, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
        e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
        e.premium_requests, e.cost,
        row_number() OVER (
            PARTITION BY e.id, e.timestamp ORDER BY s.created_at, e.session
        ) AS copy_number
    FROM entries AS e
    JOIN sessions AS s ON s.file_id = e.session
    WHERE e.input_tokens IS NOT NULL
)
WHERE copy_number = 1;

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
