"""What the search table of index.db holds, as both rooms count it: the texts indexed and
their average length (FTS5's own totals record), and the rows of entries that are gone (counted
by a sync when their entries go: write/stale_search.py; skipped by search: read/search.py)."""

from __future__ import annotations

import apsw

from xcsh_store.index.db import get_meta

STALE_KEY = "stale_search_rows"


def stale_count(connection: apsw.Connection) -> int:
    """The stale search rows, as counted when their entries went."""
    return int(get_meta(connection, STALE_KEY) or 0)


def index_size(connection: apsw.Connection) -> tuple[int, float]:
    """(texts indexed, average tokens per text), from FTS5's own totals record."""
    rows = list(connection.execute("SELECT block FROM entries_fts_data WHERE id = 1"))
    if not rows or not rows[0][0]:
        return 0, 1.0
    block = rows[0][0]
    count, position = _varint(block, 0)
    tokens, _ = _varint(block, position)
    return count, max(tokens / count, 1.0) if count else 1.0


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """One of SQLite's big-endian varints (7 bits a byte, the ninth byte whole)."""
    value = 0
    for index in range(position, min(position + 8, len(data))):
        byte = data[index]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, index + 1
    if position + 8 < len(data):
        return (value << 8) | data[position + 8], position + 9
    return value, len(data)
