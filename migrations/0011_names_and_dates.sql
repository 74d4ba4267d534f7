-- The names and dates a user sees (issue 25, items 6-10).
--
-- modified_at is the session's last activity: the newest timestamp of its file's lines (UTC,
-- as iso_millis writes it), the file's mtime only where no line has one. A copied or restored
-- file gets a new mtime, not a new history. activity_at keeps that newest timestamp apart
-- (NULL: no line has one), for the sync that reads on from where the last one stopped.
ALTER TABLE sessions ADD COLUMN activity_at TEXT;
-- The title a session's own lines give it in file order (a header's, a title record's, pi's
-- session_info, Claude Code's ai-title and custom-title, Codex's thread name): sessions.title
-- is this, unless oh-my-pi's title_change on the active branch renames the session (D28).
ALTER TABLE sessions ADD COLUMN file_title TEXT;
ALTER TABLE sessions ADD COLUMN file_title_source TEXT;
UPDATE sessions SET file_title = title, file_title_source = title_source;
-- Whether a file has title_change entries, without reading its rows: only oh-my-pi's have.
CREATE INDEX entries_title_change ON entries (session) WHERE type = 'title_change';
-- Claude Code's summary lines ({"type": "summary", "summary", "leafUuid"}) summarise the
-- conversation that ends at leafUuid, most often another file's: they title the session that
-- holds that entry, in the same project folder (index/summaries.py), never the file they are in.
-- A file's summary lines are its rows here; a Claude session without a title of its own takes
-- the summary of its latest entry that has one (title_source 'summary'), resolved after each
-- sync, and summary_from names the file it came from (a change there resolves it again).
CREATE TABLE leaf_summaries (
    file_id INTEGER NOT NULL REFERENCES files (id),
    seq INTEGER NOT NULL,
    leaf_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    PRIMARY KEY (file_id, seq)
) WITHOUT ROWID;
CREATE INDEX leaf_summaries_leaf ON leaf_summaries (leaf_id);
ALTER TABLE sessions ADD COLUMN summary_from INTEGER;
CREATE INDEX sessions_summary_from ON sessions (summary_from) WHERE summary_from IS NOT NULL;
-- Read every file again: the modified times above, which of pi and oh-my-pi wrote a file (its
-- leading title record says oh-my-pi, agents.xcsh_agent_of), oh-my-pi's title_change names,
-- the summary lines of Claude sessions, the first prompts of those started with a slash command.
INSERT INTO meta (key, value) VALUES ('resync_required', '0011_names_and_dates: names and dates')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
