-- The session archive (index/archive/, docs/archive.md): the bytes of other agents' session
-- files, kept compressed in archive/ beside index.db, so that a session stays when its agent
-- deletes its file, and the index can be made again from them.
--
-- archived: what the index recorded of each file's archive, written in the transaction of the
-- rows made of those bytes, after the bytes were fsynced (index/archive/keeper.py): an index
-- row never names archive bytes that are not on the disk, and archive bytes past archive_bytes
-- are a sync killed before its commit, cut off when the file is next written to. name: the
-- archive files' name without version (archive/<name>.v<version>.zst); kind: append (a file
-- kept as it grows; source_bytes = files.indexed_bytes once it has caught up) or document (a
-- session kept whole, its latest version; source_bytes = the bytes of its files).
CREATE TABLE archived (
    file_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    version INTEGER NOT NULL,
    source_bytes INTEGER NOT NULL,
    archive_bytes INTEGER NOT NULL
);
-- When the file was found gone (its session is then read from the archive): listings say
-- "archived" (source_gone_at in --json). Cleared when the file is read again.
ALTER TABLE files ADD COLUMN gone_at TEXT;
-- Sessions forgotten on purpose (`xcsh-store forget`) while their file was still there: the
-- file's identity as it was then. A sync takes such a file for unchanged (it is not read again,
-- nor archived) until its agent writes to it; then it is a new session to the index.
CREATE TABLE forgotten (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    forgotten_at TEXT NOT NULL
);
-- What a sync reads of the gone files (IndexedFiles.read): their paths alone.
CREATE INDEX files_gone ON files (path) WHERE gone_at IS NOT NULL;
