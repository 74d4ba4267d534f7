"""The copy decision of ``usage_entries`` kept current (migration 0020): the partitions the
triggers noted, ranked again in the writer's transaction before it commits."""

from __future__ import annotations

import apsw

# The rows usage_entries ranks, narrow, in two halves (entries of files whose entries are done;
# the usage-first rows), each from {rows}: a FROM clause ending in the table's alias (e or u)
# joined to what restricts it.
_TOKENS = "{t}.input_tokens, {t}.output_tokens, {t}.cache_read_tokens, {t}.cache_write_tokens"
_HALVES = (
    "SELECT e.pk AS pk, e.session AS session, e.seq AS seq, e.id AS id,"
    " e.timestamp AS timestamp, s.session_id AS session_id, s.created_at AS created_at,"
    " s.modified_at AS modified_at, " + _TOKENS.format(t="e") + " FROM {entries}"
    " CROSS JOIN sessions AS s ON s.file_id = e.session WHERE e.input_tokens IS NOT NULL"
    " AND e.session NOT IN (SELECT id FROM files WHERE entries_pending = 1)",
    "SELECT -u.pk, u.session, u.seq, u.id, u.timestamp, s.session_id, s.created_at,"
    " s.modified_at, " + _TOKENS.format(t="u") + " FROM {usage_lines}"
    " CROSS JOIN usage_sessions AS s ON s.file_id = u.session",
)


def _rows(entries: str, usage_lines: str) -> str:
    return " UNION ALL ".join(
        half.format(entries=entries, usage_lines=usage_lines) for half in _HALVES
    )


_OF_FILES = _rows(
    "usage_dirty_files AS d CROSS JOIN entries AS e ON e.session = d.file_id",
    "usage_dirty_files AS d CROSS JOIN usage_lines AS u ON u.session = d.file_id",
)
_OF_KEYS = _rows(
    "(SELECT DISTINCT id, timestamp FROM usage_dirty_keys) AS k"
    " CROSS JOIN entries AS e ON e.timestamp IS k.timestamp AND e.id IS k.id",
    "(SELECT DISTINCT id, timestamp FROM usage_dirty_keys) AS k"
    " CROSS JOIN usage_lines AS u ON u.timestamp IS k.timestamp AND u.id IS k.id",
)
_OF_SESSIONS = _rows(
    "(SELECT DISTINCT session_id FROM usage_dirty_sessions) AS d"
    " CROSS JOIN sessions AS o ON o.session_id IS d.session_id"
    " CROSS JOIN entries AS e ON e.session = o.file_id",
    "(SELECT DISTINCT session_id FROM usage_dirty_sessions) AS d"
    " CROSS JOIN usage_sessions AS o ON o.session_id IS d.session_id"
    " CROSS JOIN usage_lines AS u ON u.session = o.file_id",
)

_STEPS = (
    # occurrence, within each noted file (its rows ranked afresh, the others' kept)
    "DELETE FROM usage_ranks WHERE session IN (SELECT file_id FROM usage_dirty_files)",
    "INSERT INTO usage_ranks (pk, session, occurrence, copy_number, file_copy)"
    " SELECT pk, session, row_number() OVER (PARTITION BY session, timestamp, "
    + _TOKENS.format(t="r")
    + " ORDER BY seq), 0, 0 FROM ("
    + _OF_FILES
    + ") AS r",
    # the keys and session_ids the noted files hold now (the triggers noted those they held)
    "INSERT INTO usage_dirty_keys SELECT id, timestamp FROM (" + _OF_FILES + ")",
    "INSERT INTO usage_dirty_sessions SELECT session_id FROM sessions"
    " WHERE file_id IN (SELECT file_id FROM usage_dirty_files)"
    " UNION ALL SELECT session_id FROM usage_sessions"
    " WHERE file_id IN (SELECT file_id FROM usage_dirty_files)",
    # copy_number, over every row of a noted key
    "UPDATE usage_ranks SET copy_number = ranked.number FROM (SELECT pk, row_number() OVER"
    " (PARTITION BY id, timestamp ORDER BY created_at, session, seq) AS number FROM ("
    + _OF_KEYS
    + ")) AS ranked"
    " WHERE usage_ranks.pk = ranked.pk AND usage_ranks.copy_number <> ranked.number",
    # file_copy, over every row of a noted session_id (occurrence is current by now)
    "UPDATE usage_ranks SET file_copy = ranked.number FROM (SELECT r.pk, row_number() OVER"
    " (PARTITION BY r.session_id, r.timestamp, " + _TOKENS.format(t="r") + ", o.occurrence"
    " ORDER BY r.modified_at DESC, r.session DESC) AS number FROM (" + _OF_SESSIONS + ") AS r"
    " CROSS JOIN usage_ranks AS o ON o.pk = r.pk) AS ranked"
    " WHERE usage_ranks.pk = ranked.pk AND usage_ranks.file_copy <> ranked.number",
    "DELETE FROM usage_dirty_files",
    "DELETE FROM usage_dirty_keys",
    "DELETE FROM usage_dirty_sessions",
)

# Whether a write noted something, and whether a bulk load has the entries' indexes dropped
# (write/bulk_load.py's note).
_NOTED = (
    "SELECT EXISTS (SELECT 1 FROM usage_dirty_files) OR EXISTS (SELECT 1 FROM usage_dirty_keys)"
    " OR EXISTS (SELECT 1 FROM usage_dirty_sessions),"
    " EXISTS (SELECT 1 FROM meta WHERE key = 'entry_indexes_deferred')"
)


def settle_ranks(connection: apsw.Connection) -> None:
    """Rank again what the writes of the open transaction noted (call it before its commit).
    Left for later while a bulk load has the entries' indexes dropped: a lookup by key would
    read every row; ``rank_everything`` once they are back."""
    try:
        ((noted, deferred),) = connection.execute(_NOTED)
    except apsw.SQLError:  # an index before migration 0020 (a test's, or one being migrated)
        return
    if noted and not deferred:
        for statement in _STEPS:
            connection.execute(statement)


def rank_everything(connection: apsw.Connection) -> None:
    """Every file's rows ranked again (after a bulk load), in the open transaction."""
    connection.execute("DELETE FROM usage_dirty_keys")
    connection.execute("DELETE FROM usage_dirty_sessions")
    connection.execute("DELETE FROM usage_ranks")
    connection.execute(
        "INSERT OR IGNORE INTO usage_dirty_files SELECT session FROM usage_lines"
        " UNION SELECT file_id FROM sessions"
    )
    for statement in _STEPS:
        connection.execute(statement)
