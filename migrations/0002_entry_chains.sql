-- Ancestry without a walk over every parent link. Entries are grouped into chains: a chain is
-- a run of entries each the first child of the one before it, so the path from any entry to
-- its root is a few seq ranges of a few chains. chain is the pk of the chain's first entry;
-- that entry's parent_id leads to the chain the path continues in. files.chained is 1 while
-- every entry of the file has a chain that can be trusted: each parent came before its
-- children and no id was used twice. Otherwise (0) readers walk the parent links instead.
ALTER TABLE entries ADD COLUMN chain INTEGER;
ALTER TABLE files ADD COLUMN chained INTEGER NOT NULL DEFAULT 0;
CREATE INDEX entries_chain ON entries (chain, seq, type);
-- Rows written before this migration have no chains: derive them again on the next sync.
INSERT INTO meta (key, value) VALUES ('resync_required', '0002_entry_chains')
ON CONFLICT (key) DO NOTHING;
