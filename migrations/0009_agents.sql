-- Sessions of other agents in the same tables (issue 18): Claude Code and Codex files are read
-- by agents/<name>.py into the same entry rows as xcsh files.
--
-- files.agent says which reader derives the rows of a file, also when a hit's text is read again
-- (index/texts.py) or a resumed read carries on; sessions.agent is what listings filter on
-- (`ls --agent`, `usage --by agent`). Existing files all have a session header (the xcsh
-- family): the header does not tell pi, oh-my-pi and xcsh apart, their folders do
-- (agents/__init__.py xcsh_agent_of, the same rule).
ALTER TABLE files ADD COLUMN agent TEXT NOT NULL DEFAULT 'xcsh';
UPDATE files SET agent = CASE
    WHEN path LIKE '%/.pi/%' THEN 'pi'
    WHEN path LIKE '%/.omp/%' THEN 'omp'
    ELSE 'xcsh'
END;
ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT 'xcsh';
UPDATE sessions SET agent = (SELECT agent FROM files WHERE files.id = sessions.file_id);
-- The session id of the parent of a subagent or fork (Claude subagent files, Codex forks and
-- spawned threads), which may not be indexed: parent_session holds a path, where one is known.
ALTER TABLE sessions ADD COLUMN parent_session_id TEXT;
-- A root of another agent's files (`sync --add-root claude:PATH`): read-only, a sync never
-- removes anything there (xcsh's stale temp files are looked for only in xcsh roots).
ALTER TABLE roots ADD COLUMN agent TEXT;
-- Lines that report the same model response (Claude streams one response as several lines, each
-- repeating its usage; Codex writes a token_count event twice) share a usage key: only the last
-- of them keeps its usage figures, so that sums count each response once. A line appended later
-- finds the one it supersedes through this index.
ALTER TABLE entries ADD COLUMN usage_key TEXT;
CREATE INDEX entries_usage_key ON entries (session, usage_key) WHERE usage_key IS NOT NULL;
CREATE INDEX sessions_agent ON sessions (agent, modified_at DESC, file_id);
CREATE INDEX sessions_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;
-- usage_entries gains the agent (usage --by agent / --agent) and the parent session's id (usage
-- --by root-session rolls subagents and forks up into the session they came from). The views
-- over it (usage_by_day, usage_by_model) name it, not its columns: they stay as they are.
DROP VIEW usage_entries;
CREATE VIEW usage_entries AS
SELECT * FROM (
    SELECT
        e.pk, e.session, s.session_id, s.project_dir, s.cwd, e.id, e.timestamp, e.provider,
        e.model, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
        e.premium_requests, e.cost, s.agent, s.parent_session_id,
        row_number() OVER (
            PARTITION BY e.id, e.timestamp ORDER BY s.created_at, e.session
        ) AS copy_number
    FROM entries AS e
    JOIN sessions AS s ON s.file_id = e.session
    WHERE e.input_tokens IS NOT NULL
)
WHERE copy_number = 1;

-- Prompts typed into Claude Code (~/.claude/history.jsonl: display, timestamp, project) and
-- Codex (~/.codex/history.jsonl: session_id, ts, text), mirrored like history.db's (prompt
-- recall searches them with the session prompts). Each file is read again whole when it changed
-- (meta agent_history_signature:<agent>): they are small, and Claude Code rewrites its own.
CREATE TABLE agent_prompts (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    prompt TEXT NOT NULL,
    created_at REAL NOT NULL,
    cwd TEXT,
    session_id TEXT,
    prompt_hash TEXT NOT NULL
);
CREATE INDEX agent_prompts_hash ON agent_prompts (prompt_hash);
CREATE INDEX agent_prompts_created ON agent_prompts (created_at DESC);
CREATE VIRTUAL TABLE agent_prompts_fts USING fts5 (
    prompt, content = 'agent_prompts', content_rowid = 'id'
);
CREATE TRIGGER agent_prompts_ai AFTER INSERT ON agent_prompts BEGIN
    INSERT INTO agent_prompts_fts (rowid, prompt) VALUES (new.id, new.prompt);
END;
CREATE TRIGGER agent_prompts_ad AFTER DELETE ON agent_prompts BEGIN
    INSERT INTO agent_prompts_fts (agent_prompts_fts, rowid, prompt)
    VALUES ('delete', old.id, old.prompt);
END;
-- Read every file again: a Claude Code or Codex folder added as a root before was indexed as
-- files with an invalid header and no rows.
INSERT INTO meta (key, value) VALUES ('resync_required', '0009_agents: other agents'' sessions')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
