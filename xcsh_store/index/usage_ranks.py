"""The copy decision of ``usage_entries`` kept current (migration 0020): the partitions the
triggers noted, ranked again in the writer's transaction before it commits."""

from __future__ import annotations

import apsw

# The rows usage_entries ranks, narrow, in two halves (entries of files whose entries are done;
# the usage-first rows), each reading its table from {entries} or {usage_lines}: a FROM clause
# that ends with the table under its alias (e or u), joined to what restricts it.
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

# The three windows of 0019's view, over rows of the columns above (and occurrence).
_FIGURES = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens"
_OCCURRENCE = f"row_number() OVER (PARTITION BY session, timestamp, {_FIGURES} ORDER BY seq)"
_COPY_NUMBER = "row_number() OVER (PARTITION BY id, timestamp ORDER BY created_at, session, seq)"
_FILE_COPY = (
    f"row_number() OVER (PARTITION BY session_id, timestamp, {_FIGURES}, occurrence"
    " ORDER BY modified_at DESC, session DESC)"
)

_STEPS = (
    # occurrence, within each noted file (its rows ranked afresh, the others' kept)
    "DELETE FROM usage_ranks WHERE session IN (SELECT file_id FROM usage_dirty_files)",
    "INSERT INTO usage_ranks (pk, session, occurrence, copy_number, file_copy)"
    f" SELECT pk, session, {_OCCURRENCE}, 0, 0 FROM ({_OF_FILES})",
    # the keys and session_ids the noted files hold now (the triggers noted those they held)
    f"INSERT INTO usage_dirty_keys SELECT id, timestamp FROM ({_OF_FILES})",
    "INSERT INTO usage_dirty_sessions SELECT session_id FROM sessions"
    " WHERE file_id IN (SELECT file_id FROM usage_dirty_files)"
    " UNION ALL SELECT session_id FROM usage_sessions"
    " WHERE file_id IN (SELECT file_id FROM usage_dirty_files)",
    # copy_number, over every row of a noted key
    f"UPDATE usage_ranks SET copy_number = ranked.number FROM (SELECT pk, {_COPY_NUMBER}"
    f" AS number FROM ({_OF_KEYS})) AS ranked"
    " WHERE usage_ranks.pk = ranked.pk AND usage_ranks.copy_number <> ranked.number",
    # file_copy, over every row of a noted session_id (occurrence is current by now)
    f"UPDATE usage_ranks SET file_copy = ranked.number FROM (SELECT pk, {_FILE_COPY} AS number"
    f" FROM (SELECT r.*, o.occurrence FROM ({_OF_SESSIONS}) AS r"
    " CROSS JOIN usage_ranks AS o ON o.pk = r.pk)) AS ranked"
    " WHERE usage_ranks.pk = ranked.pk AND usage_ranks.file_copy <> ranked.number",
    "DELETE FROM usage_dirty_files",
    "DELETE FROM usage_dirty_keys",
    "DELETE FROM usage_dirty_sessions",
)
_EVERYTHING = (
    "INSERT INTO usage_ranks (pk, session, occurrence, copy_number, file_copy)"
    f" SELECT pk, session, occurrence, {_COPY_NUMBER}, {_FILE_COPY} FROM"
    f" (SELECT *, {_OCCURRENCE} AS occurrence FROM ({_rows('entries AS e', 'usage_lines AS u')}))"
)

# Whether a write noted something, and whether a bulk load has the entries' indexes dropped
# (write/bulk_load.py's note).
_NOTED = (
    "SELECT EXISTS (SELECT 1 FROM usage_dirty_files) OR EXISTS (SELECT 1 FROM usage_dirty_keys)"
    " OR EXISTS (SELECT 1 FROM usage_dirty_sessions),"
    " EXISTS (SELECT 1 FROM meta WHERE key = 'entry_indexes_deferred')"
)

_SHARE = "SELECT (SELECT count(*) FROM usage_dirty_files), (SELECT count(*) FROM files)"


def settle_ranks(connection: apsw.Connection) -> None:
    """Rank again what the writes of the open transaction noted (call it before its commit).
    Left for later while a bulk load has the entries' indexes dropped: a lookup by key would
    read every row; ``rank_everything`` once they are back."""
    try:
        ((noted, deferred),) = connection.execute(_NOTED)
    except apsw.SQLError:  # an index before migration 0020 (a test's, or one being migrated)
        return
    if not noted or deferred:
        return
    ((files, everywhere),) = connection.execute(_SHARE)
    # Ranking every row takes 0.27 CPU-s on the 327 MB Claude tree's 35,740, the lookups by
    # key for them all 0.65: from a quarter of the files on, the windows over all are cheaper.
    if files * 4 >= everywhere:
        rank_everything(connection)
        return
    for statement in _STEPS:
        connection.execute(statement)


def rank_everything(connection: apsw.Connection) -> None:
    """Every row ranked again, in one pass of the three windows (after a bulk load, or when most
    files were noted), in the open transaction."""
    for table in ("usage_ranks", "usage_dirty_files", "usage_dirty_keys", "usage_dirty_sessions"):
        connection.execute(f"DELETE FROM {table}")
    connection.execute(_EVERYTHING)
