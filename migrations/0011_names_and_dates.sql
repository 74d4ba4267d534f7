-- The names and dates a user sees (issue 25, items 6-10).
--
-- modified_at is the session's last activity: the newest timestamp of its file's lines (UTC,
-- as iso_millis writes it), the file's mtime only where no line has one. A copied or restored
-- file gets a new mtime, not a new history. activity_at keeps that newest timestamp apart
-- (NULL: no line has one), for the sync that reads on from where the last one stopped.
ALTER TABLE sessions ADD COLUMN activity_at TEXT;
-- Read every file again: the modified times above, which of pi and oh-my-pi wrote a file (its
-- leading title record says oh-my-pi, agents.xcsh_agent_of), oh-my-pi's title_change names,
-- the first prompts of Claude sessions started with a slash command.
INSERT INTO meta (key, value) VALUES ('resync_required', '0011_names_and_dates: names and dates')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
