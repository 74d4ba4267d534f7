-- The prompt history as xcsh (the reference) makes it, statement for statement (compatibility:
-- Prompt history as in the reference), so that a history.db written by xcsh opens here as is
-- and one written here opens in xcsh. The default is strftime() rather than unixepoch(), which
-- SQLite before 3.38 cannot parse. The FTS table uses external content keyed on the explicit
-- integer id, so the text is stored once and the FTS rows follow the history rows by id.
-- IF NOT EXISTS throughout, as xcsh has it: a history table xcsh made without its FTS table
-- gains it here, and the rebuild indexes the rows it holds (on a new file it costs nothing).
CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL,
  created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)), cwd TEXT);
CREATE INDEX IF NOT EXISTS idx_history_created_at ON history(created_at DESC);
CREATE VIRTUAL TABLE IF NOT EXISTS history_fts
  USING fts5(prompt, content='history', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS history_ai AFTER INSERT ON history BEGIN
  INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
END;
INSERT INTO history_fts(history_fts) VALUES ('rebuild');
