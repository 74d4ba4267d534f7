-- A first sync may index usage first and search text after (index/write/text_later.py): the
-- rows of entries, sessions and usage of every file come in one pass, and the search rows in a
-- second one (the same sync, when it is a plain `sync` or a search asked for it; the next
-- otherwise). Searching entries_fts costs most of a sync's writes, and someone who asked for
-- today's cost should not wait for it.
--
-- text_pending = 1: some entries of the file may have no search row yet. Set with the file's
-- rows, cleared in the transaction that adds its search rows, so that a sync killed in its text
-- pass leaves each file either done or still pending; the next sync carries on. Search says
-- its results are partial while any file is pending (the partial index answers that at once).
ALTER TABLE files ADD COLUMN text_pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX files_text_pending ON files (id) WHERE text_pending = 1;
