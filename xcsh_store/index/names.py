"""Short id prefixes for display: of sessions, which ``find_session`` resolves to the same
session, and of entries, which ``find_entry_id`` resolves to the same entry of their session
(Claude Code's and Codex's entry ids are 36-character UUIDs)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

    from xcsh_store.index.store import SessionIndex

# Snowflake ids made in the same second share their first 8 digits, so the length varies.
MIN_PREFIX = 8


def _common_prefix_length(first: str, second: str) -> int:
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


def unique_id_prefixes(
    index: SessionIndex, session_ids: Iterable[str], minimum: int = MIN_PREFIX
) -> dict[str, str]:
    """For each id, the shortest prefix (at least ``minimum`` long) no other indexed session
    shares. Looks only at each id's two neighbours in sorted order: two indexed lookups per id,
    whatever the number of sessions."""
    prefixes: dict[str, str] = {}
    for session_id in set(session_ids):
        key = session_id.lower()
        length = minimum
        for sql in (
            "SELECT max(lower(session_id)) FROM sessions WHERE lower(session_id) < ?",
            "SELECT min(lower(session_id)) FROM sessions WHERE lower(session_id) > ?",
        ):
            (neighbour,) = index.connection.execute(sql, (key,)).fetchall()[0]
            if neighbour is not None:
                length = max(length, _common_prefix_length(key, neighbour) + 1)
        prefixes[session_id] = session_id[:length]
    return prefixes


def unique_entry_prefixes(
    connection: apsw.Connection, file_id: int, entry_ids: Iterable[str], minimum: int = MIN_PREFIX
) -> dict[str, str]:
    """For each entry id of the file ``file_id``, the shortest prefix (at least ``minimum``
    long) no other entry of that file shares; as :func:`unique_id_prefixes`, two lookups per id
    in the (session, id) index. Entry ids compare case-sensitively, as they are looked up."""
    prefixes: dict[str, str] = {}
    for entry_id in set(entry_ids):
        length = minimum
        for sql in (
            "SELECT max(id) FROM entries WHERE session = ? AND id < ?",
            "SELECT min(id) FROM entries WHERE session = ? AND id > ?",
        ):
            ((neighbour,),) = connection.execute(sql, (file_id, entry_id))
            if neighbour is not None:
                length = max(length, _common_prefix_length(entry_id, neighbour) + 1)
        prefixes[entry_id] = entry_id[:length]
    return prefixes
