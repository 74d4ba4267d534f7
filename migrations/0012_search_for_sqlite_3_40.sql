-- index.db opens, and every table in it reads, with the SQLite of Debian 12 (3.40), so with its
-- sqlite3 command, sqlite-utils and Datasette (index.md, guarantee 5). They stopped at
-- entries_fts: its contentless_delete option (0007) is SQLite 3.43's.
--
-- entries_fts stays contentless (content='': the text is in the session files, 0007) and stays
-- in index.db, without that option. A row of such a table can be deleted only with the text it
-- was indexed from, which a rewritten, truncated or deleted file no longer holds: the search row
-- of an entry that is gone stays, joined to no entry (every search joins entries, and entry keys
-- are never reused), and is counted in meta stale_search_rows in the same transaction; once they
-- are a tenth of the texts indexed, a sync deletes them with their terms, read back from the
-- index itself (index/stale_search.py). A second file holding the search tables would have left
-- them out of index.db's transactions: SQLite commits a write to two WAL databases in each file
-- on its own, and a crash in between leaves them disagreeing.
--
-- The tokenizer is 0006's, unchanged (the reasons are there).
DROP TABLE entries_vocab;
DROP TABLE entries_fts;
CREATE VIRTUAL TABLE entries_fts USING fts5 (
    text,
    content = '',
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co Sm So' separators '+<=>|~'"
);
INSERT INTO entries_fts (entries_fts, rank) VALUES ('automerge', 8);
CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');
-- The counts of the old table's terms go with it; the next sync counts the new one's.
DELETE FROM search_terms;
DELETE FROM meta WHERE key = 'search_terms_rows';
-- The table is empty now: derive every entry's text again on the next sync.
INSERT INTO meta (key, value)
VALUES ('resync_required', '0012_search_for_sqlite_3_40: search text indexed again')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
