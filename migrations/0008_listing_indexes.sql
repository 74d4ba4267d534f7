-- Indexes that answer a listing in its own order, so SQLite reads the rows it returns and no
-- others: `list_sessions` (and `ls`) ORDER BY modified_at DESC, file_id, with an optional cwd or
-- project folder, and a LIMIT that then stops the scan early.
--
-- sessions_listing covers the columns a listing shows (index/sessions.py _LISTED), first
-- message cut as the listing reads it: listing 10,000 sessions walks this one b-tree in order,
-- never the table. It replaces sessions_modified, whose order it has.
DROP INDEX sessions_modified;
CREATE INDEX sessions_listing ON sessions (
    modified_at DESC, file_id, session_id, cwd, message_count, input_tokens, output_tokens, cost,
    title, compaction_title, substr(first_message, 1, 256)
);
-- One cwd or project folder, newest first (a short list: the table is read for its rows).
DROP INDEX sessions_cwd;
CREATE INDEX sessions_cwd ON sessions (cwd, modified_at DESC, file_id);
CREATE INDEX sessions_project ON sessions (project_dir, modified_at DESC, file_id);
CREATE INDEX sessions_created ON sessions (created_at DESC, file_id);
-- The shortest unique id prefixes `ls` prints look up each id's neighbours in this order
-- (index/names.py); without it, each lookup read every session.
CREATE INDEX sessions_id_folded ON sessions (lower(session_id));
-- What a sync compares each file with (scan.py IndexedFiles): a tenth of the files table's
-- bytes, so a sync that finds nothing changed reads little more than it stats.
CREATE INDEX files_identity ON files (path, size, mtime_ns, inode, ctime_ns, status);
