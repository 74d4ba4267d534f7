-- Lines that hold no JSON object (malformed JSON, a bare value, a line a crash cut short and a
-- later append ended) are skipped by every reader of a file; the index keeps where they are,
-- so `sync`, `doctor`, `verify` and `show` can say so instead of losing them silently.
-- lines: how many lines the index has read (up to indexed_bytes), so that a read resuming at
-- indexed_bytes numbers the lines it adds. skipped_count: how many lines were skipped in all;
-- skipped_lines: the 1-based numbers of the first 1,000 of them, as a JSON array (NULL: none).
ALTER TABLE files ADD COLUMN lines INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN skipped_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN skipped_lines TEXT;
-- Rows written before this migration counted no lines: derive them again on the next sync.
INSERT INTO meta (key, value) VALUES ('resync_required', '0004_skipped_lines')
ON CONFLICT (key) DO NOTHING;
