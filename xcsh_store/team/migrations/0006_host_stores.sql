-- Which store pushes each host (issue 39): a push deletes the host's files that its own index
-- does not hold, so two agent dirs pushing as one host name (neither gave --host: both are the
-- machine's name) deleted each other's sessions on every push. A host is pushed by one store,
-- named by a fingerprint of the host key beside its index.db (team/upload.py store_of); a push
-- from another store is refused unless it takes the host over (push --take-over). NULL: a
-- host pushed before this migration, claimed by its next push.
ALTER TABLE hosts ADD COLUMN store text;
