"""The copy decision of ``usage_entries`` kept current (migration 0020): the partitions the
triggers noted, ranked again in the writer's transaction before it commits."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

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


# A first usage-first pass ranks its rows in Python when they are the only rows usage_entries
# reads (new_rows_only): the same three numbers as the windows above, without the SQL sorts
# (0.27-0.40 CPU-s on the 327 MB Claude tree's 35,740 rows, against 0.05 here).
_ALONE = (
    "SELECT (SELECT count(*) FROM usage_lines) = ?"
    " AND NOT EXISTS (SELECT 1 FROM usage_ranks)"
    " AND NOT EXISTS (SELECT 1 FROM entries WHERE input_tokens IS NOT NULL"
    " AND session NOT IN (SELECT id FROM files WHERE entries_pending = 1))"
    " AND NOT EXISTS (SELECT 1 FROM meta WHERE key = 'entry_indexes_deferred')"
)


def new_rows_only(connection: apsw.Connection, count: int) -> bool:
    """Whether the ``count`` usage_lines rows a pass wrote are every row usage_entries ranks
    (none ranked yet, no entry with usage counted, no bulk load waiting)."""
    ((alone,),) = connection.execute(_ALONE, (count,))
    return bool(alone)


def _nulls_first(value: str | None) -> tuple[bool, str]:
    """A TEXT-or-NULL column's value as SQLite sorts it (NULL first; text by its bytes)."""
    return (value is not None, value or "")


def _shared(keys: list[tuple[Any, ...]]) -> list[list[int]]:
    """The positions of the keys that occur more than once, grouped by key, in order."""
    first: dict[tuple[Any, ...], int] = {}
    shared: dict[tuple[Any, ...], list[int]] = {}
    for at, key in enumerate(keys):
        earlier = first.setdefault(key, at)
        if earlier != at:
            shared.setdefault(key, [earlier]).append(at)
    return list(shared.values())


def ranks_of(
    rows: list[tuple[Any, ...]], sessions: dict[int, tuple[str | None, str | None, str | None]]
) -> list[tuple[int, int, int, int, int]]:
    """The usage_ranks rows (pk, session, occurrence, copy_number, file_copy) of usage_lines
    rows that are all usage_entries ranks: the windows of _EVERYTHING, computed in Python.
    ``rows``: (pk, session, seq, id, timestamp, provider, model, input, output, cache read,
    cache write, ...) as inserted; ``sessions``: file id -> (session_id, created_at,
    modified_at) as usage_sessions holds them (a row of a file without one is not ranked)."""
    rows = sorted((row for row in rows if row[1] in sessions), key=itemgetter(1, 2))
    # occurrence: by (session, timestamp, figures), in seq order
    seen: dict[tuple[Any, ...], int] = {}
    occurrences = []
    for key in map(itemgetter(1, 4, 7, 8, 9, 10), rows):
        seen[key] = number = seen.get(key, 0) + 1
        occurrences.append(number)
    # copy_number: by (id, timestamp), ordered by created_at, session, seq
    copies = [1] * len(rows)
    for members in _shared(list(map(itemgetter(3, 4), rows))):
        members.sort(
            key=lambda at: (*_nulls_first(sessions[rows[at][1]][1]), rows[at][1], rows[at][2])
        )
        for number, at in enumerate(members, 1):
            copies[at] = number
    # file_copy: by (session_id, timestamp, figures, occurrence), latest modified_at first
    file_copies = [1] * len(rows)
    keys = [
        (sessions[row[1]][0], row[4], row[7], row[8], row[9], row[10], occurrence)
        for row, occurrence in zip(rows, occurrences, strict=True)
    ]
    for members in _shared(keys):
        members.sort(
            key=lambda at: (*_nulls_first(sessions[rows[at][1]][2]), rows[at][1]), reverse=True
        )
        for number, at in enumerate(members, 1):
            file_copies[at] = number
    return [
        (-row[0], row[1], occurrence, copy, file_copy)
        for row, occurrence, copy, file_copy in zip(
            rows, occurrences, copies, file_copies, strict=True
        )
    ]


def store_ranks(connection: apsw.Connection, ranks: list[tuple[int, int, int, int, int]]) -> None:
    """Ranks computed by ``ranks_of`` stored, in the open transaction, for an index whose rows
    they are all (``new_rows_only``): the notes go, as after ``rank_everything``."""
    for table in ("usage_ranks", "usage_dirty_files", "usage_dirty_keys", "usage_dirty_sessions"):
        connection.execute(f"DELETE FROM {table}")
    ranks.sort()
    connection.executemany(
        "INSERT INTO usage_ranks (pk, session, occurrence, copy_number, file_copy)"
        " VALUES (?, ?, ?, ?, ?)",
        ranks,
    )
