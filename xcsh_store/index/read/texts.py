"""The search text of indexed entries, read again from the session files.

entries_fts indexes each entry's text without keeping a copy of it (migration 0007): whoever
shows a hit derives the text from the line its entry row points at, exactly as the sync did.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import apsw

from xcsh_store.agents import (
    XCSH_AGENTS,
    Agent,
    SessionFacts,
    kind_of,
    read_entry,
    reader_named,
    records_at,
)
from xcsh_store.errors import XcshStoreError
from xcsh_store.index.archive.sources import (
    ArchivedSources,
    SourceBytes,
    opened_source,
    readable_copy,
    sources_of,
)
from xcsh_store.index.model.facts import SURROGATE_ESCAPE, EntryFacts, storable_values

# (pk, entry id, offset, length, part, agent) of one entry row, by the path of its file; the
# id is None where it cannot be checked against the line.
_Source = tuple[int, str | None, int, int, int, str]

# SQLite allows 32,766 parameters; chunks of this many keep each IN list small.
_CHUNK = 500

# What texts_of needs of an entry, from ``entries AS e JOIN files AS f``: the ids of a v1/v2
# file are the migration's, not the file's (files.legacy), so they cannot be checked; the agent
# says which reader derives the text of another agent's line (agents/).
TEXT_SOURCE = "f.path, e.pk, iif(f.legacy, NULL, e.id), e.offset, e.length, e.part, f.agent"


def entry_texts(
    connection: apsw.Connection,
    pks: Iterable[int],
    local_path: Callable[[str], str] | None = None,
    archive: ArchivedSources | None = None,
) -> dict[int, str | None]:
    """The search text of each entry its file still holds, by entry key; None for the entries
    of a file that exists but cannot be read now (a folder without permission): they are still
    indexed, only their text cannot be shown.

    An entry whose file is gone, or whose line is no longer that entry (the file changed since
    the last sync), is left out: a hit on it would show text the index no longer describes.
    ``local_path`` maps a stored path to where the file is now (an agent dir moved since its
    last sync).
    """
    wanted = list(pks)
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        rows += connection.execute(
            f"SELECT {TEXT_SOURCE} FROM entries AS e JOIN files AS f ON f.id = e.session"
            f" WHERE e.pk IN ({','.join('?' * len(chunk))})",
            chunk,
        )
    return texts_of(rows, local_path, archive or sources_of(connection))


def texts_of(
    rows: Iterable[Sequence[Any]],
    local_path: Callable[[str], str] | None = None,
    archive: ArchivedSources | None = None,
) -> dict[int, str | None]:
    """:func:`entry_texts` of entries whose TEXT_SOURCE columns were read already."""
    by_path: dict[str, list[_Source]] = defaultdict(list)
    for path, *source in rows:
        by_path[local_path(path) if local_path else path].append(tuple(source))
    texts: dict[int, str | None] = {}
    for path, sources in by_path.items():
        texts.update(_texts_in_file(path, sources, archive))
    return texts


def _texts_in_file(
    path: str, sources: list[_Source], archive: ArchivedSources | None
) -> dict[int, str | None]:
    return {
        pk: None if value is None else EntryFacts(value, False).text
        for pk, value, _line in entry_values(path, sources, archive)
    }


def entry_values(
    path: str, sources: Iterable[_Source], archive: ArchivedSources | None = None
) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    """(key, JSON object, its JSON as the file wrote it) of each entry the file at ``path`` still
    holds, in file order. The JSON is the stripped line when the object is all of it, and empty
    where the line holds several objects (old files), a lone surrogate the index repaired, or
    another agent's object (the object is then the xcsh entry its reader made of it). The
    object is None (and the JSON empty) for every entry of a file that exists but cannot be
    read now. An entry whose line is no longer that entry is left out, as is every
    entry of a file that is gone. A session an agent plugin reads itself (a kind other than
    JSONL) is asked for its records again by locator (the offset column). A file that is gone
    is read from ``archive`` when it keeps it."""
    sources = list(sources)
    agent = sources[0][5] if sources else None
    plugin = reader_named(agent)
    if plugin is None and agent not in (None, *XCSH_AGENTS):
        # The agent's plugin is no longer installed: nothing here can read its records (the
        # next sync drops them).
        for source in sources:
            yield source[0], None, b""
        return
    if plugin is not None and kind_of(plugin, path) != "jsonl":
        with readable_copy(path, archive) as readable:
            yield from _source_values(plugin, readable, sources)
        return
    try:
        with opened_source(path, archive) as stream:
            yield from _line_values(stream, path, sources)
    except FileNotFoundError:
        return  # gone since the last sync (and not archived): its rows are stale
    except OSError:
        for source in sources:
            yield source[0], None, b""


def _line_values(
    stream: SourceBytes, path: str, sources: list[_Source]
) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    """entry_values of a JSONL session, from its bytes (an error reading one line costs that
    entry)."""
    for pk, entry_id, offset, length, part, agent in sorted(sources, key=lambda source: source[2]):
        try:
            line = stream.pread(length, offset)
        except (OSError, XcshStoreError):
            continue
        escaped = b"\\u" in line
        values = storable_values(line, escaped) if len(line) == length else []
        if part >= len(values):
            continue
        value = values[part]
        reader = reader_named(agent)
        if reader is not None:
            # Another agent's line, as an entry of the xcsh model (its JSON is that entry's).
            value = read_entry(reader, value, SessionFacts(path)).entry
        whole = (
            reader is None and len(values) == 1 and not (escaped and SURROGATE_ESCAPE.search(line))
        )
        # Repaired ids live in the index, not in the file (compatibility: Deterministic ids
        # for files without them): a line without an id still is the entry.
        if entry_id is not None and value.get("id", entry_id) != entry_id:
            continue
        yield pk, value, line.strip() if whole else b""


def _source_values(
    plugin: Agent, path: str, sources: list[_Source]
) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    """entry_values of a session its plugin reads (Agent.records_at); None for each entry of
    one that exists but cannot be read now, nothing for one that is gone."""
    try:
        found = records_at(plugin, path, [source[2] for source in sources])
    except FileNotFoundError:
        return
    except OSError:
        found = None
    if found is None:  # unreadable now, or the plugin's own fault: the index still holds it
        for source in sources:
            yield source[0], None, b""
        return
    for pk, entry_id, locator, _length, _part, _agent in sorted(sources, key=lambda s: s[2]):
        record = found.get(locator)
        if record is None:
            continue
        value = read_entry(plugin, record, SessionFacts(path)).entry
        if entry_id is not None and value.get("id", entry_id) != entry_id:
            continue
        yield pk, value, b""
