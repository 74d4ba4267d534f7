"""SessionIndex: the SQLite mirror of an agent dir, and every question answered from it."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, ParamSpec, TypeVar

import apsw
import orjson

from xcsh_store.errors import (
    AmbiguousEntryError,
    AmbiguousSessionError,
    EntryNotFoundError,
    HistoryError,
    IndexDatabaseError,
    SessionNotFoundError,
)
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.entries import content_text
from xcsh_store.history.search import storable_text
from xcsh_store.index import db as database
from xcsh_store.index.gc import GcReport, collect_garbage, refusal, sync_consistently
from xcsh_store.index.indexer import FileIndexer, drop_file_rows, pk_counter
from xcsh_store.index.location import Relocation, find_relocation, settle_location
from xcsh_store.index.prompts import PromptHit, mirror_history, recall_prompts
from xcsh_store.index.scan import (
    IndexedFiles,
    Progress,
    SkippedLines,
    SyncReport,
    is_under_any,
    known_file,
    now_iso,
    scan_root,
)
from xcsh_store.index.search import SearchHit, parse_search_query, search_entries
from xcsh_store.index.sync import sync_files
from xcsh_store.index.tree import (
    IndexedEntry,
    SessionTree,
    branch_rows,
    build_tree,
    context_from_index,
    entry_rows,
    read_entries,
)
from xcsh_store.index.verify import Verifier, VerifyReport, refcount_errors
from xcsh_store.paths import (
    FILE_MODE,
    get_agent_dir,
    get_blobs_dir,
    get_history_db_path,
    get_index_db_path,
    get_sessions_dir,
)
from xcsh_store.session.context import SessionContext
from xcsh_store.session.roots import forget_session_root, read_session_roots

log = logging.getLogger("xcsh_store")

__all__ = [
    "GcReport",
    "IndexedEntry",
    "IndexedSession",
    "PromptHit",
    "SearchHit",
    "SessionIndex",
    "SessionTree",
    "SkippedLines",
    "SyncReport",
    "UsageRow",
    "VerifyReport",
    "parse_search_query",
]

USAGE_GROUPS = {
    "day": "substr(timestamp, 1, 10)",
    "week": "date(timestamp, '-6 days', 'weekday 1')",
    "month": "substr(timestamp, 1, 7)",
    "model": "coalesce(provider || '/', '') || coalesce(model, '?')",
    "provider": "coalesce(provider, '?')",
    "project": "project_dir",
    "session": "session_id",
}

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


def _joined_key(keys: Sequence[str | None]) -> str | None:
    if len(keys) == 1:
        return keys[0]
    return " · ".join("?" if key is None else key for key in keys)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _entry_point(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """A public method of SessionIndex: text arguments are made storable as the index stores
    text (a lone surrogate, from a JSON escape or an undecodable path, becomes U+FFFD), and
    SQLite failures (damage, a full disk) reach the caller as one-line IndexDatabaseErrors that
    say what to do, never as raw apsw errors."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        index = args[0]
        assert isinstance(index, SessionIndex)
        args = tuple(storable_text(item) if isinstance(item, str) else item for item in args)
        for name, value in kwargs.items():
            if isinstance(value, str):
                kwargs[name] = storable_text(value)
        with (
            database.errors_explained(index.db_path),
            database.type_confusion_as_damage(index.connection),
        ):
            return method(*args, **kwargs)  # type: ignore[arg-type]

    return wrapper


_EPOCH = datetime.fromtimestamp(0, UTC)


def _parse_time(text: str | None) -> datetime:
    if not text:
        return _EPOCH
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return _EPOCH
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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


@dataclass(frozen=True, slots=True)
class UsageRow:
    key: str | None
    entries: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float
    # One key per grouping when usage was grouped by several (``key`` then joins them).
    keys: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class IndexStats:
    db_path: str
    db_bytes: int
    files: int
    sessions: int
    entries: int
    unreadable_files: int
    invalid_files: int
    blobs_referenced: int
    history_prompts: int
    last_sync: str | None


class SessionIndex:
    """Owns one apsw connection to ``index.db``; every write goes through it."""

    def __init__(self, connection: apsw.Connection, agent_dir: str, db_path: str, read_only: bool):
        self.connection = connection
        self.agent_dir = agent_dir
        self.db_path = db_path
        self.read_only = read_only
        self.blob_store = BlobStore(get_blobs_dir(agent_dir))
        # The files table as the last sync left it, with the write stamp it was valid for: a
        # process that syncs again and again need not read 10,000 rows each time.
        self._files_snapshot: tuple[tuple[int, int], IndexedFiles] | None = None

    @classmethod
    def open(
        cls, agent_dir: str | None = None, db_path: str | None = None, read_only: bool = False
    ) -> SessionIndex:
        """Open (creating or migrating) the index; a damaged file is moved aside and rebuilt."""
        agent_dir = os.path.abspath(agent_dir) if agent_dir else get_agent_dir()
        db_path = db_path or get_index_db_path(agent_dir)
        with database.errors_explained(db_path):
            if read_only:
                if not os.path.exists(db_path):
                    raise IndexDatabaseError(f"No index at {db_path}; run `xcsh-store sync` first")
                return cls(database.connect(db_path, read_only=True), agent_dir, db_path, True)
            return cls(_open_for_writing(db_path), agent_dir, db_path, False)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> SessionIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- roots ------------------------------------------------------------------------------

    # -- location ---------------------------------------------------------------------------

    @functools.cached_property
    def relocation(self) -> Relocation | None:
        """Set when the stored paths name another agent dir (this one was copied or moved
        there) and no sync has rewritten them yet."""
        return find_relocation(self.connection, self.agent_dir)

    def local_path(self, path: str) -> str:
        """A stored path as a path below this agent dir, where the file is now."""
        return path if self.relocation is None else self.relocation.to_local(path)

    def _stored_path(self, path: str) -> str:
        return path if self.relocation is None else self.relocation.to_stored(path)

    def _settle_location(self) -> None:
        settle_location(self.connection, self.agent_dir)
        self.__dict__.pop("relocation", None)

    @property
    def sessions_root(self) -> str:
        return get_sessions_dir(self.agent_dir)

    @_entry_point
    def roots(self) -> list[str]:
        """The sessions folder of the agent dir, then every registered extra root."""
        extra = [
            self.local_path(row[0])
            for row in self.connection.execute("SELECT path FROM roots ORDER BY path")
        ]
        roots = [self.sessions_root, *extra]
        # Folders of sessions made elsewhere by the manager, unless a root covers them already.
        for folder in read_session_roots(self.agent_dir):
            if not is_under_any(folder, roots):
                roots.append(folder)
        return roots

    @_entry_point
    def add_root(self, path: str) -> None:
        with database.transaction(self.connection):
            self.connection.execute(
                "INSERT OR IGNORE INTO roots (path, added_at) VALUES (?, ?)",
                (os.path.abspath(path), now_iso()),
            )

    @_entry_point
    def remove_root(self, path: str) -> None:
        with database.transaction(self.connection):
            self.connection.execute("DELETE FROM roots WHERE path = ?", (os.path.abspath(path),))
        forget_session_root(self.agent_dir, path)

    # -- sync -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _sync_lock(self) -> Iterator[None]:
        """One sync at a time per index; a second one waits, then finds little left to do."""
        lock = os.open(
            self.db_path + ".sync-lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
        )
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)  # releases the lock

    @_entry_point
    def sync(self, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Bring the index up to date with every session file and history.db."""
        self._require_writable()
        with self._sync_lock():
            return self._sync_locked(full, progress)

    def _sync_locked(self, full: bool = False, progress: Progress | None = None) -> SyncReport:
        try:
            with database.type_confusion_as_damage(self.connection):
                return self._sync_once(full, progress)
        except database.DAMAGE_ERRORS as error:
            return self._rebuild_after_damage(error, progress)

    def _sync_once(self, full: bool, progress: Progress | None) -> SyncReport:
        self._settle_location()
        resync = self._take_resync_request()
        indexed = self._indexed_files()
        changes = self.connection.total_changes()
        report = sync_files(self.connection, self.roots(), full or resync, progress, indexed)
        report.recorded_roots = read_session_roots(self.agent_dir)
        untouched = self.connection.total_changes() == changes
        try:
            report.history_mirrored = mirror_history(
                self.connection, get_history_db_path(self.agent_dir)
            )
        except HistoryError as error:
            report.history_error = str(error)
            log.warning("%s", report.history_error)
        with database.transaction(self.connection):
            database.set_meta(self.connection, "last_sync", now_iso())
        self._files_snapshot = (self._write_stamp(), indexed) if untouched else None
        return report

    def _indexed_files(self) -> IndexedFiles:
        """The files table: the last sync's copy while nothing has written to index.db since."""
        if self._files_snapshot is not None and self._files_snapshot[0] == self._write_stamp():
            return self._files_snapshot[1]
        return IndexedFiles.read(self.connection)

    def _write_stamp(self) -> tuple[int, int]:
        """Changes when anything writes index.db: another connection (PRAGMA data_version)
        or this one (its count of changed rows)."""
        ((version,),) = self.connection.execute("PRAGMA data_version").fetchall()
        return version, self.connection.total_changes()

    def _take_resync_request(self) -> bool:
        """Whether a migration asked for every row to be derived again (asked once)."""
        if database.get_meta(self.connection, "resync_required") is None:
            return False
        with database.transaction(self.connection):
            self.connection.execute("DELETE FROM meta WHERE key = 'resync_required'")
        return True

    def _rebuild_after_damage(self, error: object, progress: Progress | None) -> SyncReport:
        self._files_snapshot = None
        self.connection.close()
        moved = database.move_aside(self.db_path)
        log.warning("%s is damaged (%s); moved it to %s and rebuilding", self.db_path, error, moved)
        self.connection = database.connect(self.db_path)
        database.apply_migrations(self.connection, database.load_migrations())
        return self._sync_once(True, progress)

    def _require_writable(self) -> None:
        if self.read_only:
            raise IndexDatabaseError("This index was opened read-only")

    # -- sessions ---------------------------------------------------------------------------

    @_entry_point
    def list_sessions(
        self,
        cwd: str | None = None,
        project: str | None = None,
        limit: int | None = None,
        order: str = "modified",
    ) -> list[IndexedSession]:
        """``list`` / ``list_all`` answered by SQL, newest first (or by ``created``/``title``)."""
        orders = {
            "modified": "s.modified_at DESC",
            "created": "s.created_at DESC",
            # As the title is shown (whitespace trimmed), untitled sessions last, newest first.
            "title": f"{_SHOWN_TITLE} IS NULL, {_SHOWN_TITLE} COLLATE NOCASE, s.modified_at DESC",
        }
        if order not in orders:
            raise ValueError(f"order must be one of {', '.join(orders)}")
        conditions, arguments = [], []
        if cwd is not None:
            conditions.append("s.cwd = ?")
            arguments.append(cwd)
        if project is not None:
            conditions.append("s.project_dir = ?")
            arguments.append(project)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions AS s JOIN files AS f ON f.id = s.file_id"
            f"{where} ORDER BY {orders[order]}, s.file_id"
        )
        if limit is not None:
            sql += " LIMIT ?"
            arguments.append(limit)
        return [
            IndexedSession.from_row(row, self) for row in self.connection.execute(sql, arguments)
        ]

    @_entry_point
    def find_session(self, prefix: str) -> IndexedSession:
        """A session file by path, id prefix, file-name prefix or the part after ``_`` (§8.3).

        Case-insensitive. A path selects its file; otherwise exactly one file must match, or
        one whose id or file name is the whole of ``prefix``: several raise
        :class:`AmbiguousSessionError` listing them (two files may share one session id).
        """
        text = prefix.strip()
        if not text:
            raise SessionNotFoundError("No session matches an empty id")
        select = f"SELECT {_SESSION_COLUMNS} FROM sessions AS s JOIN files AS f ON f.id = s.file_id"
        if os.sep in text or text.endswith(".jsonl"):
            rows = self.connection.execute(
                f"{select} WHERE s.path = ?", (self._stored_path(os.path.abspath(text)),)
            ).fetchall()
            if rows:
                return IndexedSession.from_row(rows[0], self)
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
        rows = self.connection.execute(
            f"SELECT {_SESSION_COLUMNS}, {whole} AS whole FROM sessions AS s"
            f" JOIN files AS f ON f.id = s.file_id WHERE {matches}"
            " ORDER BY whole DESC, s.modified_at DESC LIMIT ?3",
            (_like_prefix(text.lower()), text.lower(), AMBIGUOUS_LISTED + 1),
        ).fetchall()
        exact = [row for row in rows if row[-1]]
        found = exact or rows
        if not found:
            raise SessionNotFoundError(f"No session matches {prefix!r}")
        if len(found) > 1:
            raise _ambiguous(prefix, [IndexedSession.from_row(row[:-1], self) for row in found])
        return IndexedSession.from_row(found[0][:-1], self)

    def _session(self, session: str | int | IndexedSession) -> IndexedSession:
        if isinstance(session, IndexedSession):
            return session
        if isinstance(session, int):
            rows = self.connection.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions AS s JOIN files AS f ON f.id = s.file_id"
                " WHERE s.file_id = ?",
                (session,),
            ).fetchall()
            if not rows:
                raise SessionNotFoundError(f"No session with file id {session}")
            return IndexedSession.from_row(rows[0], self)
        return self.find_session(session)

    @_entry_point
    def all_messages_text(self, session: IndexedSession) -> str:
        rows = [
            row
            for row in entry_rows(self.connection, session.file_id)
            if row.type == "message" and row.role in ("user", "assistant")
        ]
        values = read_entries(session.path, rows, None)
        texts = [
            content_text(value["message"].get("content"))
            for value in values
            if type(value.get("message")) is dict
        ]
        return " ".join(text for text in texts if text)

    @_entry_point
    def skipped_lines(
        self, session: str | int | IndexedSession | None = None
    ) -> dict[str, SkippedLines]:
        """Lines that hold no JSON object (every reader skips them), by file: of every indexed
        file, or of one session's file."""
        sql = "SELECT path, skipped_count, skipped_lines FROM files WHERE skipped_count > 0"
        arguments: tuple[Any, ...] = ()
        if session is not None:
            sql += " AND id = ?"
            arguments = (self._session(session).file_id,)
        rows = self.connection.execute(sql + " ORDER BY path", arguments)
        return {
            path: SkippedLines(count, orjson.loads(numbers or "[]"))
            for path, count, numbers in rows
        }

    # -- trees ------------------------------------------------------------------------------

    @_entry_point
    def branch(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> list[IndexedEntry]:
        """Root -> leaf entries of one branch (default: the session's last entry)."""
        info = self._session(session)
        leaf = leaf_id or info.last_entry_id
        if leaf is None:
            return []
        return branch_rows(self.connection, info.file_id, leaf)

    @_entry_point
    def find_entry_id(self, session: str | int | IndexedSession, text: str) -> str:
        """The id of the session's entry that is ``text`` or, like session ids, the only one
        that starts with it; :class:`AmbiguousEntryError` lists the candidates."""
        info = self._session(session)
        # The (session, id) unique index answers both: the exact id, then an id range.
        rows = self.connection.execute(
            "SELECT id FROM entries WHERE session = ?1 AND id = ?2 UNION ALL"
            " SELECT * FROM (SELECT id FROM entries WHERE session = ?1 AND id > ?2"
            " AND id < ?2 || char(1114111) ORDER BY id LIMIT ?3)",
            (info.file_id, text, AMBIGUOUS_LISTED + 1),
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

    @_entry_point
    def branch_entries(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The full JSON entries of :meth:`branch`, read from the file by byte offset."""
        info = self._session(session)
        return read_entries(info.path, self.branch(info, leaf_id), self.blob_store)

    @_entry_point
    def tree(self, session: str | int | IndexedSession) -> SessionTree:
        info = self._session(session)
        return build_tree(entry_rows(self.connection, info.file_id))

    @_entry_point
    def context(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> SessionContext:
        """The model context at ``leaf_id`` (default: the last entry), reading only its path."""
        info = self._session(session)
        leaf = leaf_id or info.last_entry_id
        return context_from_index(
            self.connection, info.file_id, info.path, leaf, info.legacy, self.blob_store
        )

    # -- search -----------------------------------------------------------------------------

    @_entry_point
    def search(
        self,
        query: str,
        *,
        cwd: str | None = None,
        project: str | None = None,
        role: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        model: str | None = None,
        limit: int = 20,
        highlight: tuple[str, str] = ("[", "]"),
    ) -> list[SearchHit]:
        hits = search_entries(
            self.connection, query, cwd=cwd, project=project, role=role, since=since,
            until=until, model=model, limit=limit, highlight=highlight,
        )  # fmt: skip
        if self.relocation is None:
            return hits
        return [replace(hit, path=self.local_path(hit.path)) for hit in hits]

    @_entry_point
    def on_active_branch(self, hit: SearchHit) -> bool:
        """Whether a hit lies on the path of its session's last entry."""
        info = self._session(hit.file_id)
        if hit.entry_id is None or info.last_entry_id is None:
            return False
        return any(row.id == hit.entry_id for row in self.branch(info))

    @_entry_point
    def history_search(self, query: str, limit: int = 20) -> list[PromptHit]:
        return self._local_prompts(recall_prompts(self.connection, query, limit))

    @_entry_point
    def history_recent(self, limit: int = 20) -> list[PromptHit]:
        return self._local_prompts(recall_prompts(self.connection, None, limit))

    def _local_prompts(self, hits: list[PromptHit]) -> list[PromptHit]:
        if self.relocation is None:
            return hits
        return [
            replace(hit, session_path=self.local_path(hit.session_path))
            if hit.session_path is not None
            else hit
            for hit in hits
        ]

    # -- usage ------------------------------------------------------------------------------

    @_entry_point
    def usage(
        self,
        by: str | Sequence[str] = "day",
        since: datetime | str | None = None,
        until: datetime | str | None = None,
    ) -> list[UsageRow]:
        """Token and cost sums per group; an entry copied into a fork counts once.

        ``by`` is one grouping or several (``("day", "model")``: a row per day and model, as
        ccusage's daily breakdown); each row's ``keys`` has one key per grouping and its
        ``key`` is them joined with ``" · "``.
        """
        groups = list(dict.fromkeys([by] if isinstance(by, str) else by))
        if not groups or any(group not in USAGE_GROUPS for group in groups):
            raise ValueError(f"by must be one or more of {', '.join(USAGE_GROUPS)}")
        conditions, arguments = [], []
        for operator, bound in ((">=", since), ("<", until)):
            if bound is not None:
                conditions.append(f"timestamp {operator} ?")
                arguments.append(bound if isinstance(bound, str) else _iso(bound))
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        keys = ", ".join(
            f"{USAGE_GROUPS[group]} AS key{number}" for number, group in enumerate(groups)
        )
        names = ", ".join(f"key{number}" for number in range(len(groups)))
        rows = self.connection.execute(
            f"SELECT {keys}, count(*), sum(input_tokens), sum(output_tokens),"
            " sum(cache_read_tokens), sum(cache_write_tokens), sum(cost)"
            f" FROM usage_entries{where} GROUP BY {names} ORDER BY {names}",
            arguments,
        )
        width = len(groups)
        return [
            UsageRow(_joined_key(row[:width]), *row[width:], keys=tuple(row[:width]))
            for row in rows
        ]

    # -- blobs ------------------------------------------------------------------------------

    @_entry_point
    def blob_gc(self, apply: bool = False, grace: timedelta = timedelta(hours=1)) -> GcReport:
        """Unreferenced blob files older than ``grace``; deleted only with ``apply``.

        Syncs first, until a sync saw a consistent view of the session files. Refuses to
        delete (and a dry run says it would refuse) while any session file, folder or root the
        index knew could not be reached, or files kept moving, since a blob referenced only
        from such a file would look unreferenced.
        """
        self._require_writable()
        synced_from = time.time()
        # One lock for the syncs and the collection: a sync by another process in between
        # could miss a moving file, and the collection would go by its counts.
        with self._sync_lock():
            report, moving = sync_consistently(self._sync_locked, self.roots, self.connection)
            return collect_garbage(
                self.connection,
                self.blob_store.dir,
                apply=apply,
                cutoff=synced_from - grace.total_seconds(),
                refuse_reason=refusal(report, moving),
            )

    # -- verify -----------------------------------------------------------------------------

    @_entry_point
    def verify(self, repair: bool = False) -> VerifyReport:
        """Compare the index with a fresh parse of every file; ``repair`` re-indexes those.

        The file itself is checked first (:func:`database.check_integrity`), since damage a sync
        never reads stays unnoticed until a query hits it; a damaged index is rebuilt on
        ``repair``.
        """
        report = VerifyReport()
        try:
            report.damaged = database.check_integrity(self.connection)
            if report.damaged is None and self.relocation is not None and not repair:
                # Every path would differ; the sync that rewrites them is the repair.
                report.differences[self.agent_dir] = [
                    f"the index names the files of {self.relocation.stored}, where this agent"
                    " dir was copied or moved from; run sync"
                ]
            elif report.damaged is None:
                if self.relocation is not None:
                    with self._sync_lock():
                        self._settle_location()
                self._compare_with_files(report, repair)
        except database.DAMAGE_ERRORS as error:
            report.damaged = str(error)
        if report.damaged is not None and repair:
            self._require_writable()
            with self._sync_lock():
                self._rebuild_after_damage(report.damaged, None)
            report.rebuilt = True
        return report

    def _compare_with_files(self, report: VerifyReport, repair: bool) -> None:
        scan = SyncReport()
        on_disk = {
            item.path: item
            for root in self.roots()
            if os.path.isdir(root)
            for item in scan_root(root, scan)
        }
        rows = self.connection.execute(
            "SELECT path, id, size, mtime_ns, inode, ctime_ns FROM files"
        ).fetchall()
        indexed = {path: file_id for path, file_id, *_ in rows}
        synced = {path: tuple(seen) for path, _, *seen in rows}
        verifier = Verifier(self.connection)
        try:
            for path, item in sorted(on_disk.items()):
                report.files_checked += 1
                if path not in synced:
                    report.changed_since_sync[path] = "new"
                    continue
                if synced[path] != (item.size, item.mtime_ns, item.inode, item.ctime_ns):
                    # An append (or any change) the last sync has not seen is no fault of the
                    # index: a sync is what it takes, not a repair. The identity is the one
                    # the sync's scan compares.
                    report.changed_since_sync[path] = "changed"
                    continue
                problems = verifier.compare_file(item)
                if problems:
                    report.differences[path] = problems
            report.skipped_lines = verifier.skipped_lines
        finally:
            verifier.close()
        unreadable = list(scan.unreadable)
        for path in sorted(set(indexed) - set(on_disk)):
            if is_under_any(path, unreadable):
                continue
            report.changed_since_sync[path] = "deleted"
        report.refcount_errors = refcount_errors(self.connection)
        if repair and not report.clean:
            self._repair(report, on_disk, indexed)

    def _repair(
        self, report: VerifyReport, on_disk: dict[str, Any], indexed: dict[str, int]
    ) -> None:
        self._require_writable()
        with self._sync_lock():
            indexer = FileIndexer(self.connection, pk_counter(self.connection), SyncReport())
            for path in [*report.differences, *report.changed_since_sync]:
                if path in on_disk:
                    known = known_file(self.connection, path)
                    indexer.index(on_disk[path], known, full=True)
                    indexer.batch.commit()
                else:
                    with database.transaction(self.connection):
                        drop_file_rows(self.connection, indexed[path])
                        self.connection.execute("DELETE FROM files WHERE id = ?", (indexed[path],))
                report.repaired.append(path)
            if report.refcount_errors:
                with database.transaction(self.connection):
                    self.connection.execute(
                        "UPDATE blobs SET refcount = (SELECT count(*) FROM blob_refs AS r"
                        " WHERE r.hash = blobs.hash)"
                    )
                    self.connection.execute(
                        "INSERT OR IGNORE INTO blobs (hash, refcount, first_seen, last_seen)"
                        " SELECT hash, count(*), ?1, ?1 FROM blob_refs GROUP BY hash",
                        (now_iso(),),
                    )

    # -- stats ------------------------------------------------------------------------------

    @_entry_point
    def stats(self) -> IndexStats:
        def scalar(sql: str) -> Any:
            return self.connection.execute(sql).fetchall()[0][0]

        size = sum(
            os.path.getsize(self.db_path + suffix)
            for suffix in ("", "-wal")
            if os.path.exists(self.db_path + suffix)
        )
        return IndexStats(
            db_path=self.db_path,
            db_bytes=size,
            files=scalar("SELECT count(*) FROM files"),
            sessions=scalar("SELECT count(*) FROM sessions"),
            entries=scalar("SELECT count(*) FROM entries"),
            unreadable_files=scalar("SELECT count(*) FROM files WHERE status = 'unreadable'"),
            invalid_files=scalar("SELECT count(*) FROM files WHERE status = 'invalid_header'"),
            blobs_referenced=scalar("SELECT count(*) FROM blobs WHERE refcount > 0"),
            history_prompts=scalar("SELECT count(*) FROM history"),
            last_sync=database.get_meta(self.connection, "last_sync"),
        )


def _open_for_writing(db_path: str) -> apsw.Connection:
    """Connect and migrate; a damaged file is moved aside (with a warning) and started afresh."""
    try:
        connection = database.connect(db_path)
    except database.DamagedIndexError as error:
        moved = database.move_aside(db_path)
        log.warning("%s; moved it to %s and rebuilding from the session files", error, moved)
        connection = database.connect(db_path)
    try:
        database.apply_migrations(connection, database.load_migrations())
    except database.DAMAGE_ERRORS as error:
        connection.close()
        moved = database.move_aside(db_path)
        log.warning("%s is damaged (%s); moved it to %s and rebuilding", db_path, error, moved)
        connection = database.connect(db_path)
        database.apply_migrations(connection, database.load_migrations())
    except BaseException:
        connection.close()
        raise
    return connection


def _listed(found: list[_R]) -> tuple[str, list[_R]]:
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


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
