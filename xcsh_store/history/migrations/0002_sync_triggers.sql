-- The two triggers xcsh lacks (compatibility: Delete and update triggers), so that deleting and
-- pruning prompts keeps the FTS index right. Both use the external-content 'delete' command,
-- which must be given the old text so FTS5 can remove exactly the tokens it indexed; the update
-- trigger fires only when the indexed text or its id changes, so correcting a created_at or cwd
-- does not rewrite the index.
CREATE TRIGGER IF NOT EXISTS history_ad AFTER DELETE ON history BEGIN
  INSERT INTO history_fts(history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
END;
CREATE TRIGGER IF NOT EXISTS history_au AFTER UPDATE OF id, prompt ON history BEGIN
  INSERT INTO history_fts(history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
  INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
END;
