-- A file's identity: the change time joins size, mtime and inode. Anyone can put an mtime
-- back (touch -d, os.utime) after a same-size edit; nobody can set the ctime. Rows from before
-- this migration hold 0, which no file has, so the next sync reads each of them again once.
ALTER TABLE files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
-- The agent dir the stored paths were written under. A copied or moved agent dir keeps an
-- index whose paths name the old place: readers map them to the new one, and the next sync
-- rewrites them. Taken here from the root of the files that are not under an extra root.
INSERT OR IGNORE INTO meta (key, value)
SELECT 'agent_dir', substr(root, 1, length(root) - length('/sessions'))
FROM files
WHERE root NOT IN (SELECT path FROM roots) AND substr(root, -length('/sessions')) = '/sessions'
LIMIT 1;
