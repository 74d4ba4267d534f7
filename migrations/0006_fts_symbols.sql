-- Symbols and emoji are words. unicode61 keeps letters, digits and private-use characters by
-- default, so `✅`, `→` or `≥` could not be searched at all; categories adds math symbols (Sm)
-- and other symbols (So, emoji among them). The ASCII ones among those (+ < = > | ~) stay
-- separators, so that `a+b`, `x=1`, `<div>`, `a|b` and `~/src` still index their words.
-- Punctuation (`#`, `-`, `.`), currency ($, €) and modifier symbols (^, `) stay separators too:
-- `#123` is found as 123. The search highlighter runs this very tokenizer (index/search.py,
-- FTS_TOKENIZER), and both options exist in SQLite 3.40. FTS5 cannot change the tokenizer of
-- a table, so entries_fts (and entries_vocab over it) is created again.
DROP TABLE entries_vocab;
DROP TABLE entries_fts;
CREATE VIRTUAL TABLE entries_fts USING fts5 (
    text,
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co Sm So' separators '+<=>|~'"
);
INSERT INTO entries_fts (entries_fts, rank) VALUES ('automerge', 8);
CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');
-- The table is empty now, and tool-call arguments are indexed as readable text rather than
-- JSON: derive every entry's text again on the next sync.
INSERT INTO meta (key, value) VALUES ('resync_required', '0006_fts_symbols')
ON CONFLICT (key) DO NOTHING;
