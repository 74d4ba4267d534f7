"""The index as rows for another store (the team index, the Parquet export): each session
file's state, its session row, its entries with their text and raw JSON read again from the
file (index/read/texts.py), its blob references, and the mirrored prompt history.

Column names are the index's own (docs/schema.md), so a copy reads like the original.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from xcsh_store.index.model.columns import (
    ENTRY_ROW,
    PROMPT_ROW,
    SESSION_ROW,
    USAGE_ROW,
    local,
    names,
    pushed,
)
from xcsh_store.index.model.facts import EntryFacts
from xcsh_store.index.read.texts import entry_values

if TYPE_CHECKING:
    from xcsh_store.index.store import SessionIndex

# The columns each table copies (model/columns.py: those the team index has too).
SESSION_COLUMNS = pushed(SESSION_ROW)
# Where each of SESSION_COLUMNS is read: the sessions row, but when its file was found gone
# (the file's row: migration 0014).
_SESSION_SELECT = ", ".join(local(column) for column in SESSION_ROW if column.postgres)
ENTRY_COLUMNS = pushed(ENTRY_ROW)
HISTORY_COLUMNS = pushed(PROMPT_ROW)
# The usage_entries view's columns (each entry with usage, a fork's copies counted once).
USAGE_COLUMNS = names(USAGE_ROW)


@dataclass(frozen=True, slots=True)
class FileState:
    """A session file as the index last read it. ``state`` changes whenever the rows derived
    from the file may have: new bytes, a rewrite, a re-read after a migration."""

    file_id: int
    path: str
    state: str
    indexed_bytes: int
    created_at: str | None


def session_files(index: SessionIndex) -> dict[str, FileState]:
    """Every indexed file that is a session (a valid header), by its stored path."""
    # (gone_at: a file found gone changes its state, so that its session row is pushed again.)
    rows = index.connection.execute(
        "SELECT f.id, f.path, s.created_at, f.indexed_bytes, f.size, f.head_hash, f.tail_hash,"
        " f.indexed_at, f.lines, s.modified_at, s.entry_count, f.gone_at"
        " FROM files AS f JOIN sessions AS s ON s.file_id = f.id"
    )
    return {
        path: FileState(file_id, path, ":".join(map(str, state)), state[0], created_at)
        for file_id, path, created_at, *state in rows
    }


@contextlib.contextmanager
def one_state(index: SessionIndex) -> Iterator[None]:
    """One read transaction: what is read in it is of one state of the index, even while a
    sync writes (a file's rows and their marks, below, must describe the same rows)."""
    index.connection.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        index.connection.execute("COMMIT")


def session_row(index: SessionIndex, file_id: int) -> tuple[Any, ...]:
    """The SESSION_COLUMNS of one file's session."""
    (row,) = index.connection.execute(
        f"SELECT {_SESSION_SELECT} FROM sessions AS s JOIN files AS f ON f.id = s.file_id"
        " WHERE s.file_id = ?",
        (file_id,),
    )
    return row


@dataclass(slots=True)
class EntryRow:
    """One entry: its ENTRY_COLUMNS, and (when asked for) the text search reads and the JSON
    object as the file holds it; both None when the file no longer holds the entry."""

    values: tuple[Any, ...]
    blob_refs: list[str]
    text: str | None = None
    raw: str | None = None


def entry_rows(
    index: SessionIndex, file_id: int, with_text: bool, seqs: Collection[int] | None = None
) -> Iterator[EntryRow]:
    """The entries of one file in file order (those at ``seqs`` only, when given)."""
    connection = index.connection
    rows = list(
        connection.execute(
            f"SELECT e.pk, f.path, iif(f.legacy, NULL, e.id), e.offset, e.length, e.part, f.agent,"
            f" {', '.join(f'e.{column}' for column in ENTRY_COLUMNS)}"
            f" FROM entries AS e JOIN files AS f ON f.id = e.session WHERE e.session = ?{_AT_SEQS}"
            " ORDER BY e.seq",
            (file_id, _seqs(seqs)),
        )
    )
    refs = _blob_refs(index, file_id, seqs)
    found: dict[int, tuple[str | None, str | None]] = {}
    if with_text and rows:
        path = index.local_path(rows[0][1])
        sources = [(row[0], *row[2:7]) for row in rows]
        for pk, value, line in entry_values(path, sources, index.archived_sources):
            if value is not None:
                found[pk] = (EntryFacts(value, False).text, _raw_json(line, value))
    for row in rows:
        text, raw = found.get(row[0], (None, None))
        yield EntryRow(tuple(row[7:]), refs.get(row[0], []), text, raw)


# Only the entries at the seqs of a JSON array (all of them when it is NULL).
_AT_SEQS = " AND (?2 IS NULL OR e.seq IN (SELECT value FROM json_each(?2)))"


def _seqs(seqs: Collection[int] | None) -> str | None:
    return None if seqs is None else orjson.dumps(sorted(seqs)).decode()


def _blob_refs(
    index: SessionIndex, file_id: int, seqs: Collection[int] | None
) -> dict[int, list[str]]:
    """The blob digests of a file's entries (those at ``seqs``), by entry key."""
    refs: dict[int, list[str]] = {}
    for pk, digest in index.connection.execute(
        "SELECT r.entry, r.hash FROM blob_refs AS r JOIN entries AS e ON e.pk = r.entry"
        f" WHERE e.session = ?{_AT_SEQS} ORDER BY r.hash",
        (file_id, _seqs(seqs)),
    ):
        refs.setdefault(pk, []).append(digest)
    return refs


def entry_marks(index: SessionIndex, file_id: int) -> dict[int, int]:
    """A 64-bit mark of each entry of a file, by seq, that changes whenever the row another
    store holds of it may: its key (a re-read of the whole file gives every entry a new one),
    its place in the file (where its text is read), its values and its blob references. Read
    from the index alone: no text, no file."""
    refs = _blob_refs(index, file_id, None)
    marks = {}
    for row in index.connection.execute(
        f"SELECT e.seq, e.pk, e.offset, e.length, e.part, f.legacy,"
        f" {', '.join(f'e.{column}' for column in ENTRY_COLUMNS)}"
        " FROM entries AS e JOIN files AS f ON f.id = e.session WHERE e.session = ?",
        (file_id,),
    ):
        digest = hashlib.blake2b(orjson.dumps((row, refs.get(row[1]))), digest_size=8)
        marks[row[0]] = int.from_bytes(digest.digest(), "little", signed=True)
    return marks


# The columns of a file's rate-limit readings as they leave (quota_observations, migration 0015).
QUOTA_COLUMNS = (
    "seq", "slot", "observed_at", "used_percent", "window_minutes", "resets_at", "limit_id",
    "plan_type",
)  # fmt: skip


def quota_rows(index: SessionIndex, file_id: int) -> list[tuple[Any, ...]]:
    """A file's rate-limit readings (QUOTA_COLUMNS), by seq and slot. No text: they leave at
    every tier."""
    return index.connection.execute(
        f"SELECT {', '.join(QUOTA_COLUMNS)} FROM quota_observations WHERE file_id = ?"
        " ORDER BY seq, slot",
        (file_id,),
    ).fetchall()


def _raw_json(line: bytes, value: dict[str, Any]) -> str:
    return line.decode("utf-8") if line else orjson.dumps(value).decode("utf-8")


def usage_rows(index: SessionIndex) -> dict[int, list[tuple[Any, ...]]]:
    """The USAGE_COLUMNS of the entries that usage counts, by file. One query for them all: the
    view decides which copy of a forked entry counts by looking at every session."""
    rows: dict[int, list[tuple[Any, ...]]] = {}
    for file_id, *values in index.connection.execute(
        f"SELECT session, {', '.join(USAGE_COLUMNS)} FROM usage_entries"
    ):
        rows.setdefault(file_id, []).append(tuple(values))
    return rows


def history_rows(index: SessionIndex) -> list[tuple[Any, ...]]:
    """The mirrored prompt history (HISTORY_COLUMNS), oldest first."""
    return index.connection.execute(
        f"SELECT {', '.join(HISTORY_COLUMNS)} FROM history ORDER BY id"
    ).fetchall()


def history_state(index: SessionIndex) -> str:
    """Changes whenever the mirrored history does (the mirror only appends, or starts over)."""
    ((count, last, total),) = index.connection.execute(
        "SELECT count(*), max(id), total(length(prompt)) FROM history"
    )
    return f"{count}:{last}:{total}"
