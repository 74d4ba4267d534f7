"""The search text of indexed entries, read again from the session files.

entries_fts indexes each entry's text without keeping a copy of it (migration 0007): whoever
shows a hit derives the text from the line its entry row points at, exactly as the sync did.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable

import apsw

from xcsh_store.files import open_regular_file
from xcsh_store.format.jsonl import parse_line
from xcsh_store.index.rows import SURROGATE_ESCAPE, EntryFacts, replace_lone_surrogates

# (pk, entry id, offset, length, part) of one entry row, by the path of its file.
_Source = tuple[int, str | None, int, int, int]

# SQLite allows 32,766 parameters; chunks of this many keep each IN list small.
_CHUNK = 500


def entry_texts(
    connection: apsw.Connection,
    pks: Iterable[int],
    local_path: Callable[[str], str] | None = None,
) -> dict[int, str]:
    """The search text of each entry its file still holds, by entry key.

    An entry whose line is gone, or is no longer that entry (the file changed since the last
    sync), is left out: a hit on it would show text the index no longer describes. ``local_path``
    maps a stored path to where the file is now (an agent dir moved since its last sync).
    """
    by_path: dict[str, list[_Source]] = defaultdict(list)
    wanted = list(pks)
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        rows = connection.execute(
            "SELECT f.path, e.pk, e.id, e.offset, e.length, e.part FROM entries AS e"
            f" JOIN files AS f ON f.id = e.session WHERE e.pk IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for path, *source in rows:
            by_path[local_path(path) if local_path else path].append(tuple(source))  # type: ignore[arg-type]
    texts: dict[int, str] = {}
    for path, sources in by_path.items():
        texts.update(_texts_in_file(path, sources))
    return texts


def _texts_in_file(path: str, sources: list[_Source]) -> dict[int, str]:
    texts: dict[int, str] = {}
    try:
        stream = open_regular_file(path)
    except OSError:
        return texts  # gone or unreadable since the last sync: its hits are stale
    with stream:
        for pk, entry_id, offset, length, part in sorted(sources, key=lambda source: source[2]):
            try:
                line = os.pread(stream.fileno(), length, offset)
            except OSError:
                continue
            values = parse_line(line) if len(line) == length else []
            if part >= len(values):
                continue
            value = values[part]
            # Repaired ids live in the index, not in the file (compatibility: Deterministic ids
            # for files without them): a line without an id still is the entry.
            if entry_id is not None and value.get("id", entry_id) != entry_id:
                continue
            if b"\\u" in line and SURROGATE_ESCAPE.search(line):
                value = replace_lone_surrogates(value)
            texts[pk] = EntryFacts(value, False).text
    return texts


def register_entry_text(
    connection: apsw.Connection, local_path: Callable[[str], str] | None = None
) -> None:
    """``entry_text(pk)`` in SQL: an entry's search text read from its file (NULL when the file
    no longer holds it), for ``xcsh-store sql`` and snippets of one's own."""

    def entry_text(pk: object) -> str | None:
        if type(pk) is not int:
            return None
        return entry_texts(connection, [pk], local_path).get(pk)

    connection.create_scalar_function("entry_text", entry_text, 1)
