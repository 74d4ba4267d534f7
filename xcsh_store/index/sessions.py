"""Sessions as the index lists and finds them: the one query over the sessions and their files,
the listing orders, lookup by path or id prefix, and what one session's file holds (message text,
skipped lines, entry ids)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import apsw
import orjson

from xcsh_store.errors import (
    AmbiguousEntryError,
    AmbiguousSessionError,
    EntryNotFoundError,
    SessionNotFoundError,
)
from xcsh_store.format.entries import content_text
from xcsh_store.index.scan import SkippedLines
from xcsh_store.index.tree import entry_rows, read_entries
from xcsh_store.times import parse_iso

if TYPE_CHECKING:
    from xcsh_store.index.store import SessionIndex

# How many candidates an ambiguous session argument or entry id prefix lists.
AMBIGUOUS_LISTED = 20

_SESSION_COLUMNS = (
    "s.file_id, s.session_id, s.path, s.cwd, s.project_dir, s.title, s.title_source,"
    " s.parent_session, s.version, s.created_at, s.modified_at, s.entry_count, s.message_count,"
    " s.first_message, s.last_entry_id, s.input_tokens, s.output_tokens, s.cache_read_tokens,"
    " s.cache_write_tokens, s.premium_requests, s.cost, s.compaction_title, f.legacy,"
    " EXISTS (SELECT 1 FROM sessions AS twin"
    "  WHERE twin.session_id = s.session_id AND twin.file_id != s.file_id)"
)

_SHOWN_TITLE = "nullif(trim(coalesce(s.title, s.compaction_title), ' ' || char(9, 10, 13)), '')"

# ``list_sessions`` orders.
_ORDERS = {
    "modified": "s.modified_at DESC",
    "created": "s.created_at DESC",
    # As the title is shown (whitespace trimmed), untitled sessions last, newest first.
    "title": f"{_SHOWN_TITLE} IS NULL, {_SHOWN_TITLE} COLLATE NOCASE, s.modified_at DESC",
}

_EPOCH = datetime.fromtimestamp(0, UTC)

_Listed = TypeVar("_Listed")


def _parse_time(text: str | None) -> datetime:
    return (parse_iso(text) if text else None) or _EPOCH


@dataclass
class IndexedSession:
    """A session as listed by the index: the fields of ``SessionInfo`` and a few more."""

    file_id: int
    session_id: str
    path: str
    cwd: str
    project_dir: str | None
    title: str | None
    title_source: str | None
    parent_session_path: str | None
    version: int | None
    created: datetime
    modified: datetime
    entry_count: int
    message_count: int
    first_message: str
    last_entry_id: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    premium_requests: float
    cost: float
    legacy: bool = False
    # Whether another indexed file has the same session id (a copy, or a clash).
    id_shared: bool = False
    _index: Any = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.session_id

    @cached_property
    def all_messages_text(self) -> str:
        """Every user and assistant text, read from the file on first use (it can be large)."""
        return self._index.all_messages_text(self) if self._index is not None else ""

    @classmethod
    def from_row(cls, row: tuple[Any, ...], index: SessionIndex | None) -> IndexedSession:
        (file_id, session_id, path, cwd, project_dir, title, title_source, parent, version,
         created_at, modified_at, entry_count, message_count, first_message, last_entry_id,
         input_tokens, output_tokens, cache_read, cache_write, premium, cost, compaction_title,
         legacy, id_shared) = row  # fmt: skip
        if index is not None:
            path = index.local_path(path)
        return cls(
            file_id, session_id, path, cwd or "", project_dir, title or compaction_title,
            title_source, parent, version, _parse_time(created_at), _parse_time(modified_at),
            entry_count, message_count, first_message or "(no messages)", last_entry_id,
            input_tokens, output_tokens, cache_read, cache_write, premium, cost, bool(legacy),
            bool(id_shared), index,
        )  # fmt: skip


def _select_sessions(clauses: str, extra_column: str | None = None) -> str:
    """The one query of the sessions joined with their files: the columns
    :meth:`IndexedSession.from_row` reads (then ``extra_column``), then ``clauses`` (WHERE,
    ORDER BY, LIMIT)."""
    columns = _SESSION_COLUMNS if extra_column is None else f"{_SESSION_COLUMNS}, {extra_column}"
    return f"SELECT {columns} FROM sessions AS s JOIN files AS f ON f.id = s.file_id{clauses}"


def list_sessions(
    index: SessionIndex,
    cwd: str | None = None,
    project: str | None = None,
    limit: int | None = None,
    order: str = "modified",
) -> list[IndexedSession]:
    """The sessions (of one cwd or project folder), newest first or by ``created``/``title``."""
    if order not in _ORDERS:
        raise ValueError(f"order must be one of {', '.join(_ORDERS)}")
    conditions, arguments = [], []
    if cwd is not None:
        conditions.append("s.cwd = ?")
        arguments.append(cwd)
    if project is not None:
        conditions.append("s.project_dir = ?")
        arguments.append(project)
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    sql = _select_sessions(f"{where} ORDER BY {_ORDERS[order]}, s.file_id")
    if limit is not None:
        sql += " LIMIT ?"
        arguments.append(limit)
    return [IndexedSession.from_row(row, index) for row in index.connection.execute(sql, arguments)]


def find_session(index: SessionIndex, prefix: str) -> IndexedSession:
    """:meth:`SessionIndex.find_session`: a path, else the one file whose id, file name or part
    after ``_`` starts with ``prefix`` (case-insensitive), a whole match winning."""
    text = prefix.strip()
    if not text:
        raise SessionNotFoundError("No session matches an empty id")
    if os.sep in text or text.endswith(".jsonl"):
        path = os.path.abspath(text)
        if index.relocation is not None:
            path = index.relocation.to_stored(path)
        rows = index.connection.execute(_select_sessions(" WHERE s.path = ?"), (path,)).fetchall()
        if rows:
            return IndexedSession.from_row(rows[0], index)
    # The file name is what follows the last "/", its suffix what follows the last "_".
    after_last = "replace(s.path, rtrim(s.path, replace(s.path, '{0}', '')), '')"
    name, suffix = after_last.format("/"), after_last.format("_")
    matches = " OR ".join(
        f"lower({column}) LIKE ?1 ESCAPE '\\'" for column in ("s.session_id", name, suffix)
    )
    whole = (
        f"(lower(s.session_id) = ?2 OR lower({name}) IN (?2, ?2 || '.jsonl')"
        f" OR lower({suffix}) IN (?2, ?2 || '.jsonl'))"
    )
    rows = index.connection.execute(
        _select_sessions(
            f" WHERE {matches} ORDER BY whole DESC, s.modified_at DESC LIMIT ?3",
            extra_column=f"{whole} AS whole",
        ),
        (_like_prefix(text.lower()), text.lower(), AMBIGUOUS_LISTED + 1),
    ).fetchall()
    exact = [row for row in rows if row[-1]]
    found = exact or rows
    if not found:
        raise SessionNotFoundError(f"No session matches {prefix!r}")
    if len(found) > 1:
        raise _ambiguous(prefix, [IndexedSession.from_row(row[:-1], index) for row in found])
    return IndexedSession.from_row(found[0][:-1], index)


def session_by_file_id(index: SessionIndex, file_id: int) -> IndexedSession:
    rows = index.connection.execute(_select_sessions(" WHERE s.file_id = ?"), (file_id,)).fetchall()
    if not rows:
        raise SessionNotFoundError(f"No session with file id {file_id}")
    return IndexedSession.from_row(rows[0], index)


def all_messages_text(connection: apsw.Connection, session: IndexedSession) -> str:
    """Every user and assistant text of the session, read from its file, joined by spaces."""
    rows = [
        row
        for row in entry_rows(connection, session.file_id)
        if row.type == "message" and row.role in ("user", "assistant")
    ]
    values = read_entries(session.path, rows, None)
    texts = [
        content_text(value["message"].get("content"))
        for value in values
        if type(value.get("message")) is dict
    ]
    return " ".join(text for text in texts if text)


def skipped_lines(connection: apsw.Connection, file_id: int | None) -> dict[str, SkippedLines]:
    """Lines that hold no JSON object, by file: of every indexed file, or of file ``file_id``."""
    sql = "SELECT path, skipped_count, skipped_lines FROM files WHERE skipped_count > 0"
    arguments: tuple[Any, ...] = ()
    if file_id is not None:
        sql += " AND id = ?"
        arguments = (file_id,)
    rows = connection.execute(sql + " ORDER BY path", arguments)
    return {
        path: SkippedLines(count, orjson.loads(numbers or "[]")) for path, count, numbers in rows
    }


def find_entry_id(connection: apsw.Connection, file_id: int, text: str) -> str:
    """:meth:`SessionIndex.find_entry_id` in the file ``file_id``."""
    # The (session, id) unique index answers both: the exact id, then an id range.
    rows = connection.execute(
        "SELECT id FROM entries WHERE session = ?1 AND id = ?2 UNION ALL"
        " SELECT * FROM (SELECT id FROM entries WHERE session = ?1 AND id > ?2"
        " AND id < ?2 || char(1114111) ORDER BY id LIMIT ?3)",
        (file_id, text, AMBIGUOUS_LISTED + 1),
    ).fetchall()
    ids = [entry_id for (entry_id,) in rows]
    if not text or not ids:
        raise EntryNotFoundError(text)
    if ids[0] == text or len(ids) == 1:
        return ids[0]
    count, shown = _listed(ids)
    raise AmbiguousEntryError(
        f"Entry id {text!r} is ambiguous: {count} entries start with it ({', '.join(shown)}"
        f"{', …' if len(ids) > len(shown) else ''}); give more of it",
        shown,
    )


def _listed(found: list[_Listed]) -> tuple[str, list[_Listed]]:
    """How many matched ("more than 20" when the query stopped there) and the ones listed."""
    listed = found[:AMBIGUOUS_LISTED]
    count = f"more than {AMBIGUOUS_LISTED}" if len(found) > len(listed) else str(len(listed))
    return count, listed


def _ambiguous(prefix: str, sessions: list[IndexedSession]) -> AmbiguousSessionError:
    count, listed = _listed(sessions)
    names = "; ".join(f"{session.session_id} ({session.path})" for session in listed)
    return AmbiguousSessionError(
        f"{prefix!r} matches {count} session files; give more of the id, the file name or the"
        f" path: {names}{'; …' if len(sessions) > len(listed) else ''}",
        [session.path for session in listed],
    )


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
