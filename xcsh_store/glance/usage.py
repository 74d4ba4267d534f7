"""Usage sums of a few rows, as the usage_entries view counts them (migration 0010), on a
read-only connection of index.db.

The view numbers copies over all entries (a fork's copy of an entry counts in the oldest
session, a session in two files in the file modified last), which a sum of one session or one
day must not pay for: every partition of its three windows (copies by id and time; a file's
repeats by time and figures; a session's files by time and figures) holds rows of one
timestamp only, so the view's rules applied to the entries of a period give exactly the view's
rows of that period; and a session's rows need only its files' entries and their copies (the
partitions its rows are in). ``restriction`` names those entries (an SQL condition on ``e``,
which the (timestamp, id) index answers); tests/test_statusline.py holds the sums equal to
`usage`'s.
"""

from __future__ import annotations

import os
from typing import Any

import apsw

# The usage_entries view of migration 0010 over the entries whose timestamp ``{restriction}``
# keeps (an index-friendly condition on e.timestamp), copy_number's ties broken by seq as
# migration 0020's usage_ranks breaks them.
USAGE_ROWS = """
SELECT session_id, project_dir, agent, timestamp, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, cost
FROM (
    SELECT
        *,
        row_number() OVER (PARTITION BY id, timestamp ORDER BY created_at, session, seq)
            AS copy_number,
        row_number() OVER (
            PARTITION BY
                session_id, timestamp, input_tokens, output_tokens, cache_read_tokens,
                cache_write_tokens, occurrence
            ORDER BY modified_at DESC, session DESC
        ) AS file_copy
    FROM (
        SELECT
            e.session, e.seq, s.session_id, s.project_dir, e.id, e.timestamp, e.input_tokens,
            e.output_tokens, e.cache_read_tokens, e.cache_write_tokens, e.cost, s.agent,
            s.created_at, s.modified_at,
            row_number() OVER (
                PARTITION BY
                    e.session, e.timestamp, e.input_tokens, e.output_tokens,
                    e.cache_read_tokens, e.cache_write_tokens
                ORDER BY e.seq
            ) AS occurrence
        FROM entries AS e
        JOIN sessions AS s ON s.file_id = e.session
        WHERE e.input_tokens IS NOT NULL AND ({restriction})
    )
)
WHERE copy_number = 1 AND file_copy = 1
"""


# Every token of a request, as UsageRow.tokens counts them.
TOKENS = (
    "coalesce(input_tokens, 0) + coalesce(output_tokens, 0) + coalesce(cache_read_tokens, 0)"
    " + coalesce(cache_write_tokens, 0)"
)


# While some files have their usage rows and no entries yet (a sync asked for usage alone:
# migration 0018), the rows are the view's own: it counts those files from usage_lines.
_VIEW_ROWS = """
SELECT session_id, project_dir, agent, timestamp, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, cost
FROM usage_entries AS e WHERE {restriction}
"""


def entries_pending(connection: apsw.Connection) -> bool:
    """Whether some file has its usage rows and no entries yet (False on an index from before
    migration 0018, which a read-only connection does not migrate)."""
    try:
        found = connection.execute(
            "SELECT EXISTS (SELECT 1 FROM files WHERE entries_pending = 1)"
        ).fetchone()
    except apsw.SQLError:
        return False
    return bool(found and found[0])


def _rows(connection: apsw.Connection, restriction: str) -> str:
    """The usage rows ``restriction`` keeps (an SQL condition on ``e``'s session, timestamp
    and id)."""
    pending = entries_pending(connection)
    return (_VIEW_ROWS if pending else USAGE_ROWS).format(restriction=restriction)


def requests_since(
    connection: apsw.Connection, moment: str, scope: str = "1", *args: object
) -> list[tuple[str, int, float | None]]:
    """(timestamp, tokens, cost) of each request at or after ``moment`` that ``scope`` keeps,
    oldest first."""
    sql = (
        f"SELECT timestamp, {TOKENS}, cost FROM ("
        + _rows(connection, "e.timestamp >= ?")
        + f") WHERE {scope} ORDER BY timestamp"
    )
    rows: list[Any] = connection.execute(sql, (moment, *args)).fetchall()
    return [tuple(row) for row in rows]


def open_read_only(db_path: str) -> apsw.Connection | None:
    """index.db opened read-only (no migration, no write, never a new file); None when there
    is none yet."""
    if not os.path.isfile(db_path):
        return None
    connection = apsw.Connection(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    # A sync holding the write lock does not block readers (WAL); a checkpoint may, briefly.
    connection.set_busy_timeout(200)
    return connection


def since(
    connection: apsw.Connection, moment: str, scope: str = "1", *args: object
) -> tuple[float | None, int]:
    """(cost, tokens) of the requests at or after ``moment`` (UTC ISO) that ``scope`` (an SQL
    condition on the view's columns, with ``args``) keeps; the cost is None when there were
    requests and none of them has a price (unknown, never $0)."""
    sql = (
        f"SELECT sum(cost), coalesce(sum({TOKENS}), 0), count(*) FROM ("
        + _rows(connection, "e.timestamp >= ?")
        + f") WHERE {scope}"
    )
    row: Any = connection.execute(sql, (moment, *args)).fetchone()
    cost, tokens, count = row
    return (cost if count else 0.0), tokens


# The rows a session's sums involve: its files' entries, and every copy of one of them (same
# time and id: the view's copies; an entry without an id is a copy of every entry of its time
# without one).
_OF_SESSION = """
e.session IN (SELECT file_id FROM sessions WHERE session_id = ?)
OR (e.timestamp, e.id) IN (
    SELECT e2.timestamp, e2.id FROM entries AS e2 JOIN sessions AS s2 ON s2.file_id = e2.session
    WHERE s2.session_id = ? AND e2.input_tokens IS NOT NULL AND e2.id IS NOT NULL
)
OR (e.id IS NULL AND e.timestamp IN (
    SELECT e3.timestamp FROM entries AS e3 JOIN sessions AS s3 ON s3.file_id = e3.session
    WHERE s3.session_id = ? AND e3.input_tokens IS NOT NULL AND e3.id IS NULL
))
"""


def of_session(connection: apsw.Connection, session_id: str) -> float | None:
    """The cost of a session's requests (None: the index has none of it, or none of them has
    a price)."""
    if entries_pending(connection):
        sql = "SELECT sum(cost), count(*) FROM usage_entries WHERE session_id = ?"
        row: Any = connection.execute(sql, (session_id,)).fetchone()
        cost, count = row
        return cost if count else None
    sql = (
        "SELECT sum(cost), count(*) FROM ("
        + USAGE_ROWS.format(restriction=_OF_SESSION)
        + ") WHERE session_id = ?"
    )
    row = connection.execute(sql, (session_id,) * 4).fetchone()
    cost, count = row
    return cost if count else None
