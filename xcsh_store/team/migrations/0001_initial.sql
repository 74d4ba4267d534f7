-- The team index: what the local indexes of several hosts hold, in one PostgreSQL database.
-- Every table's key starts with host: a host writes only its own rows (team/push.py), so pushes
-- from many machines never touch the same rows and never wait for one another.
-- Column names follow the local index (migrations/0001_initial.sql and later) so that the same
-- questions read the same way on both.

-- One row per host that has pushed: the privacy tier its rows were written under.
-- tier: 'usage' (counts, tokens, cost, models, projects, times), 'meta' (and titles, first
-- prompts), 'full' (and every entry's text and raw JSON, the prompt history).
-- history_state: what the local index's history mirror was when it was last pushed.
-- usage_stale: the host's rows changed since its usage_rollup rows were made.
CREATE TABLE hosts (
    host text PRIMARY KEY,
    tier text NOT NULL CHECK (tier IN ('usage', 'meta', 'full')),
    history_state text,
    usage_stale boolean NOT NULL DEFAULT false,
    pushed_at timestamptz NOT NULL DEFAULT now()
);

-- The per-(host, file) watermark: what the local index said of the file when its rows were
-- pushed. A push compares each local file's state with it and sends only the files that
-- differ; the rows of a file and its watermark change in one transaction, so a push killed at
-- any point leaves each file either as it was or as it is now.
CREATE TABLE files (
    host text NOT NULL REFERENCES hosts (host),
    path text NOT NULL,
    state text NOT NULL,
    tier text NOT NULL,
    indexed_bytes bigint NOT NULL,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, path)
);

-- One row per session file. A new column is one
-- ALTER TABLE ... ADD COLUMN in a later migration: no reader selects * from this table.
CREATE TABLE sessions (
    host text NOT NULL,
    path text NOT NULL,
    session_id text NOT NULL,
    cwd text,
    project_dir text,
    title text,
    title_source text,
    parent_session text,
    version integer,
    created_at text,
    modified_at text,
    entry_count integer NOT NULL DEFAULT 0,
    message_count integer NOT NULL DEFAULT 0,
    first_message text,
    last_entry_id text,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cache_read_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens bigint NOT NULL DEFAULT 0,
    premium_requests double precision NOT NULL DEFAULT 0,
    cost double precision NOT NULL DEFAULT 0,
    compaction_title text,
    -- Which agent wrote it (xcsh, pi, omp, claude, codex), and the session id of the session
    -- it is a subagent or fork of (local migration 0009).
    agent text NOT NULL,
    parent_session_id text,
    PRIMARY KEY (host, path),
    FOREIGN KEY (host, path) REFERENCES files (host, path) ON DELETE CASCADE
);
CREATE INDEX sessions_listing ON sessions (modified_at DESC, host, path);
CREATE INDEX sessions_id ON sessions (lower(session_id) text_pattern_ops);

-- One row per entry of a session file, in file order (seq). text and raw are NULL below the
-- full tier. raw is the entry's JSON object as text, not jsonb: jsonb reorders keys and
-- refuses \u0000, and a tree or context is rebuilt from exactly what the file said.
-- search is the text's tsvector, made to split words as the local index's unicode61 tokenizer
-- does: 'simple' (no stemming, no stop words) over the text with every run of characters that
-- are not letters or digits made a space (PostgreSQL's parser would keep `a.md`, `/tmp/x` and
-- `a-b` as words of their own, which the local search never sees). The first 100,000
-- characters of a text are indexed (a tsvector holds at most 1 MB).
CREATE TABLE entries (
    host text NOT NULL,
    path text NOT NULL,
    seq integer NOT NULL,
    id text,
    parent_id text,
    type text,
    timestamp text,
    role text,
    provider text,
    model text,
    tool_name text,
    custom_type text,
    input_tokens bigint,
    output_tokens bigint,
    cache_read_tokens bigint,
    cache_write_tokens bigint,
    premium_requests double precision,
    cost double precision,
    prompt_hash text,
    text text,
    raw text,
    search tsvector GENERATED ALWAYS AS (
        to_tsvector(
            'simple'::regconfig,
            regexp_replace(left(coalesce(text, ''), 100000), '[^[:alnum:]]+', ' ', 'g')
        )
    ) STORED,
    PRIMARY KEY (host, path, seq),
    FOREIGN KEY (host, path) REFERENCES files (host, path) ON DELETE CASCADE
);
CREATE INDEX entries_search ON entries USING gin (search);
-- Newest first: search ranks the newest matches of a common word, found in this order.
CREATE INDEX entries_timestamp ON entries (timestamp DESC NULLS LAST);
CREATE INDEX entries_parent ON entries (host, path, parent_id);

-- The blobs each entry references (hashes only: the blob store stays on its host).
CREATE TABLE blob_refs (
    host text NOT NULL,
    path text NOT NULL,
    seq integer NOT NULL,
    hash text NOT NULL,
    PRIMARY KEY (host, path, seq, hash),
    FOREIGN KEY (host, path) REFERENCES files (host, path) ON DELETE CASCADE
);

-- The prompt history of each host (full tier only), as the local index mirrors history.db.
CREATE TABLE history (
    host text NOT NULL REFERENCES hosts (host),
    id bigint NOT NULL,
    prompt text NOT NULL,
    created_at bigint NOT NULL,
    cwd text,
    prompt_hash text NOT NULL,
    search tsvector GENERATED ALWAYS AS (
        to_tsvector(
            'simple'::regconfig, regexp_replace(left(prompt, 100000), '[^[:alnum:]]+', ' ', 'g')
        )
    ) STORED,
    PRIMARY KEY (host, id)
);
CREATE INDEX history_search ON history USING gin (search);

-- Entries that carry usage, each counted once, as the local view of the same name: a forked
-- session copies its parent's entries (same id and timestamp), and those belong to the oldest
-- session that holds them, on the same host.
CREATE VIEW usage_entries AS
SELECT * FROM (
    SELECT
        e.host, e.path, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
        e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
        e.premium_requests, e.cost, s.agent, s.parent_session_id,
        row_number() OVER (
            PARTITION BY e.host, e.id, e.timestamp ORDER BY s.created_at, e.path
        ) AS copy_number
    FROM entries AS e
    JOIN sessions AS s ON s.host = e.host AND s.path = e.path
    WHERE e.input_tokens IS NOT NULL
) AS numbered
WHERE copy_number = 1;

-- usage_entries summed per host, day, provider, model, project and session: every grouping of
-- `usage` is a sum of these rows, a few per session instead of one per entry. A push that
-- changed a host's rows makes them again, in one transaction, at its end; until then (and for
-- a host whose push was cut short) hosts.usage_stale sends readers to usage_entries instead.
CREATE TABLE usage_rollup (
    host text NOT NULL REFERENCES hosts (host),
    day text,
    provider text,
    model text,
    project_dir text,
    session_id text,
    agent text NOT NULL,
    parent_session_id text,
    entries bigint NOT NULL,
    -- Entries whose cost is estimated (Claude Code and Codex write none), and entries of a
    -- model without a known price (as the local UsageRow's estimated and unpriced).
    estimated bigint NOT NULL,
    unpriced bigint NOT NULL,
    input_tokens bigint,
    output_tokens bigint,
    cache_read_tokens bigint,
    cache_write_tokens bigint,
    cost double precision
);
CREATE INDEX usage_rollup_host ON usage_rollup (host, day);
