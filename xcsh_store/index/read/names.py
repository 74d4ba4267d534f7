"""Short id prefixes for display: of sessions, which ``find_session`` resolves to the same
session, and of entries, which ``find_entry_id`` resolves to the same entry of their session
(other agents' entry ids are often 36-character UUIDs, as Claude Code's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

# Snowflake ids made in the same second share their first 8 digits, so the length varies.
MIN_PREFIX = 8


def _common_prefix_length(first: str, second: str) -> int:
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


def prefix_apart(key: str, neighbours: Iterable[str | None], minimum: int = MIN_PREFIX) -> str:
    """The shortest prefix of ``key`` (at least ``minimum`` long) that its neighbours in sorted
    order (None: none on that side) do not share, so that no other key shares it."""
    length = minimum
    for neighbour in neighbours:
        if neighbour is not None:
            length = max(length, _common_prefix_length(key, neighbour) + 1)
    return key[:length]


def unique_prefixes(keys: Iterable[str], minimum: int = MIN_PREFIX) -> dict[str, str]:
    """Each of ``keys`` (all there are, such as every entry id of a session) by its shortest
    prefix no other of them shares."""
    ordered = sorted(set(keys))
    return {
        key: prefix_apart(
            key,
            (ordered[i - 1] if i else None, ordered[i + 1] if i + 1 < len(ordered) else None),
            minimum,
        )
        for i, key in enumerate(ordered)
    }


def unique_id_prefixes(
    connection: apsw.Connection, session_ids: Iterable[str], minimum: int = MIN_PREFIX
) -> dict[str, str]:
    """For each id, the shortest prefix (at least ``minimum`` long) no other indexed session
    shares. Looks only at each id's two neighbours in sorted order: two indexed lookups per id,
    whatever the number of sessions."""
    prefixes: dict[str, str] = {}
    for session_id in set(session_ids):
        key = session_id.lower()
        neighbours = [
            connection.execute(sql, (key,)).get
            for sql in (
                "SELECT max(lower(session_id)) FROM sessions WHERE lower(session_id) < ?",
                "SELECT min(lower(session_id)) FROM sessions WHERE lower(session_id) > ?",
            )
        ]
        prefixes[session_id] = session_id[: len(prefix_apart(key, neighbours, minimum))]
    return prefixes


def unique_entry_prefixes(
    connection: apsw.Connection, file_id: int, entry_ids: Iterable[str], minimum: int = MIN_PREFIX
) -> dict[str, str]:
    """For each entry id of the file ``file_id``, the shortest prefix (at least ``minimum``
    long) no other entry of that file shares; as :func:`unique_id_prefixes`, two lookups per id
    in the (session, id) index. Entry ids compare case-sensitively, as they are looked up."""
    return {
        entry_id: prefix_apart(
            entry_id,
            [
                connection.execute(sql, (file_id, entry_id)).get
                for sql in (
                    "SELECT max(id) FROM entries WHERE session = ? AND id < ?",
                    "SELECT min(id) FROM entries WHERE session = ? AND id > ?",
                )
            ],
            minimum,
        )
        for entry_id in set(entry_ids)
    }
