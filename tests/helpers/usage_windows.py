"""The copy decision of usage_entries computed from scratch, as migration 0019's view did at
every query (its three window functions), to hold the ranks the sync keeps (migration 0020's
usage_ranks) equal to it."""

from __future__ import annotations

import apsw

# Migration 0019's windows, with copy_number's ties (rows of one file with no id and one
# timestamp) broken by seq as usage_ranks breaks them.
WINDOWS = """
SELECT pk, session, occurrence,
    row_number() OVER (PARTITION BY id, timestamp ORDER BY created_at, session, seq),
    row_number() OVER (
        PARTITION BY
            session_id, timestamp, input_tokens, output_tokens, cache_read_tokens,
            cache_write_tokens, occurrence
        ORDER BY modified_at DESC, session DESC
    )
FROM (
    SELECT
        e.pk, e.session, e.seq, s.session_id, e.id, e.timestamp, e.input_tokens,
        e.output_tokens, e.cache_read_tokens, e.cache_write_tokens, s.created_at, s.modified_at,
        row_number() OVER (
            PARTITION BY
                e.session, e.timestamp, e.input_tokens, e.output_tokens, e.cache_read_tokens,
                e.cache_write_tokens
            ORDER BY e.seq
        ) AS occurrence
    FROM entries AS e
    JOIN sessions AS s ON s.file_id = e.session
    WHERE e.input_tokens IS NOT NULL
      AND e.session NOT IN (SELECT id FROM files WHERE entries_pending = 1)
    UNION ALL
    SELECT
        -u.pk, u.session, u.seq, s.session_id, u.id, u.timestamp, u.input_tokens,
        u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, s.created_at, s.modified_at,
        row_number() OVER (
            PARTITION BY
                u.session, u.timestamp, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                u.cache_write_tokens
            ORDER BY u.seq
        ) AS occurrence
    FROM usage_lines AS u
    JOIN usage_sessions AS s ON s.file_id = u.session
)
"""


def ranks_from_scratch(connection: apsw.Connection) -> dict[int, tuple[int, int, int, int]]:
    """pk -> (session, occurrence, copy_number, file_copy), computed over every row now."""
    return {pk: tuple(rest) for pk, *rest in connection.execute(WINDOWS)}


def stored_ranks(connection: apsw.Connection) -> dict[int, tuple[int, int, int, int]]:
    """pk -> (session, occurrence, copy_number, file_copy), as usage_ranks holds them."""
    return {
        pk: tuple(rest)
        for pk, *rest in connection.execute(
            "SELECT pk, session, occurrence, copy_number, file_copy FROM usage_ranks"
        )
    }


def notes_left(connection: apsw.Connection) -> int:
    """How many notes of partitions to rank again a commit left (0 when every write settled)."""
    ((count,),) = connection.execute(
        "SELECT (SELECT count(*) FROM usage_dirty_files) + (SELECT count(*) FROM usage_dirty_keys)"
        " + (SELECT count(*) FROM usage_dirty_sessions)"
    )
    return count
