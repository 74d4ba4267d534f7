-- Sessions whose file is gone on their host, kept by that host's archive (issue 34): they stay
-- in the team index as pushed, and say so (`ls --db … --archived`, "source" in --json).
-- NULL while the file is there.
ALTER TABLE sessions ADD COLUMN source_gone_at text;
