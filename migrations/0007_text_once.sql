-- Search text is stored once: in the session files. entries_fts keeps only its index (the terms
-- and where they occur), not a copy of every entry's text, which was over half of index.db
-- (590 of 923 MB on a 1 GB agent dir). Snippets are cut from the JSONL line each hit points at
-- (entries.offset, length, part), read again when the hit is shown (index/search.py).
-- contentless_delete (SQLite 3.43) lets a row be deleted by its rowid alone: a rewritten or
-- truncated file no longer holds the text its old rows were indexed from, so FTS5's older
-- 'delete' command, which needs that very text, could leave stale postings behind.
-- The tokenizer is 0006's, unchanged (the reasons are there).
DROP TABLE entries_vocab;
DROP TABLE entries_fts;
CREATE VIRTUAL TABLE entries_fts USING fts5 (
    text,
    content = '',
    contentless_delete = 1,
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co Sm So' separators '+<=>|~'"
);
INSERT INTO entries_fts (entries_fts, rank) VALUES ('automerge', 8);
CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');
-- The number of texts each term is in, as counted after the last sync that changed the index by
-- a tenth (meta search_terms_rows: the texts indexed then). entries_vocab counts them afresh by
-- walking every posting of a term, which for a common prefix costs more than the search itself;
-- search uses these counts to pick the completions of a common prefix (index/ranking.py).
CREATE TABLE search_terms (
    term TEXT PRIMARY KEY,
    doc INTEGER NOT NULL
) WITHOUT ROWID;
-- The table is empty now: derive every entry's text again on the next sync, which then frees
-- the space the old copy took (index/store.py compacts index.db after such a sync).
INSERT INTO meta (key, value)
VALUES ('resync_required', '0007_text_once: search text is now read from the session files')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
