-- Reader revisions (docs/archive.md, "When a reader is fixed"): the revision of the agent
-- reader (agents/base.py Agent.revision) that made each file's rows. A reader fixed in a way
-- that changes the rows it makes of the same bytes gets a higher revision; the next sync reads
-- every file of that agent with another revision again, whole: from the file, or from its
-- archive when the file is gone. The rows there are were made by the first revision of each
-- reader.
ALTER TABLE files ADD COLUMN reader_revision INTEGER NOT NULL DEFAULT 1;
-- What every sync asks (index/write/scan.py stale_files): the files of an agent made by
-- another revision than its reader's, found by a seek on each side of that revision, never a
-- read of the whole table.
CREATE INDEX files_revision ON files (agent, reader_revision);
