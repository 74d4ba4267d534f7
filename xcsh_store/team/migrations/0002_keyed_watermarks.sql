-- What the usage tier sent that said something of the text (issue 26): each file's watermark
-- held SHA-1 digests of its first 1 KiB and last 4 KiB and its size, and files.indexed_bytes
-- its size again; from those and a few guesses one could confirm a prompt. Watermarks are now
-- MACs under a key that never leaves the host (team/disclosure.py); the old ones are dropped
-- here, so each host's next push sends its files once more and writes keyed ones.
ALTER TABLE files DROP COLUMN indexed_bytes;
UPDATE files SET state = '';
UPDATE hosts SET history_state = NULL;

-- Digests of prompts and of blobs (images, long outputs) confirm guesses of them as well: they
-- are sent at the full tier only, which sends the texts themselves.
DELETE FROM blob_refs AS r USING hosts AS h WHERE h.host = r.host AND h.tier <> 'full';
UPDATE entries AS e SET prompt_hash = NULL FROM hosts AS h
WHERE h.host = e.host AND h.tier <> 'full' AND e.prompt_hash IS NOT NULL;

-- `push --redact-paths`: labels instead of absolute paths, remembered per host as the tier is.
ALTER TABLE hosts ADD COLUMN redact_paths boolean NOT NULL DEFAULT false;
