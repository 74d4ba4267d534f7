"""The index store: ``SessionIndex`` owns the one connection to index.db, opens (creating,
migrating or rebuilding) it, serialises syncs with a lock, and answers every question by handing
its connection to the module that knows the query."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, Self, TypeVar

import apsw

# The agents' plugins and the folders the manager recorded are imported where a method needs
# them: a read whose stamp holds (fresh.py) needs neither.
from xcsh_store.errors import HistoryError, IndexDatabaseError, XcshStoreError
from xcsh_store.homes import get_store_dir
from xcsh_store.index import db as database
from xcsh_store.index.fresh import (
    BUSY,
    SYNC_LOCK_SUFFIX,
    SYNCED,
    WATCHED,
    Freshness,
    Identities,
    environment_key,
    index_key,
    is_watched,
    remove_stamp,
    stamp_holds,
    tree_paths,
    working_folder,
    write_stamp,
)
from xcsh_store.index.location import Relocation, find_relocation, settle_location
from xcsh_store.index.read import sessions
from xcsh_store.index.read.questions import (
    PromptQuery,
    Question,
    SearchQuery,
    SessionFilter,
    SessionQuery,
    UsageQuery,
    time_bound,
    with_texts,
)
from xcsh_store.index.read.sessions import IndexedSession, ReadSession
from xcsh_store.index.sql_functions import register_search_functions
from xcsh_store.js import well_formed
from xcsh_store.paths import (
    FILE_MODE,
    get_blobs_dir,
    get_history_db_path,
    get_index_db_path,
    get_sessions_dir,
)
from xcsh_store.times import iso_now

# The modules behind the other questions are imported by the methods that ask them: a process
# that only lists sessions (`xcsh-store ls`) does not wait for the sync, search or gc code.
if TYPE_CHECKING:
    from xcsh_store.agents.prices.pricing import PriceTable
    from xcsh_store.format.blobs import BlobStore
    from xcsh_store.format.context import SessionContext
    from xcsh_store.glance.settings import Limits
    from xcsh_store.glance.spend import BudgetStatus
    from xcsh_store.index.archive.folder import ArchiveFolder, ArchiveStats
    from xcsh_store.index.archive.forget import Forgotten
    from xcsh_store.index.archive.keeper import Keeper
    from xcsh_store.index.archive.restore import Restored
    from xcsh_store.index.archive.sources import ArchivedSources
    from xcsh_store.index.limits.quota import QuotaWindow
    from xcsh_store.index.model.facts import SkippedLines
    from xcsh_store.index.model.paths import IndexedEntry
    from xcsh_store.index.read.outline import SessionOutline
    from xcsh_store.index.read.prompts import PromptHit
    from xcsh_store.index.read.search import SearchHit
    from xcsh_store.index.read.tree import SessionTree
    from xcsh_store.index.read.usage import BillingBlock, DuplicateSession, EntryUsage, UsageRow
    from xcsh_store.index.upkeep.blob_folder import BlobFolder
    from xcsh_store.index.upkeep.gc import GcReport, SessionWatch
    from xcsh_store.index.upkeep.verify import VerifyReport
    from xcsh_store.index.write.prices import ModelSeen
    from xcsh_store.index.write.scan import IndexedFiles, Progress, SyncReport

log = logging.getLogger("xcsh_store")

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
        storable = tuple(_storable(item) for item in args)
        for name, value in kwargs.items():
            kwargs[name] = _storable(value)
        with (
            database.errors_explained(index.db_path),
            database.type_confusion_as_damage(index.connection),
        ):
            # The same arguments, their text made storable: the checker cannot see that.
            return method(*storable, **kwargs)

    return wrapper


def _storable(value: Any) -> Any:
    """A text argument, or the texts of a question (questions.py), as the index stores text."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, Question):
        return with_texts(value, well_formed)
    return value


class IndexReader(Protocol):
    """What index.db (``SessionIndex``) and the team index (``TeamIndex``) both answer: the
    questions (questions.py), each compiled to its own SQL, and what the read fronts (the CLI's
    read verbs, ``--db`` or not) ask about the sessions they return. A session or hit passed
    back is one this index returned (its own kind: IndexedSession or TeamSession)."""

    def sessions(self, query: SessionQuery) -> Sequence[ReadSession]: ...

    def hits(self, query: SearchQuery) -> Sequence[SearchHit]: ...

    def usage_rows(self, query: UsageQuery) -> Sequence[UsageRow]: ...

    def prompts(self, query: PromptQuery) -> Sequence[PromptHit]: ...

    def has_model(self, model: str) -> bool: ...

    def find_session(self, prefix: str) -> ReadSession: ...

    def unique_id_prefixes(self, session_ids: Iterable[str]) -> dict[str, str]: ...

    def entry_id_prefixes(self, where: Any, entry_ids: Iterable[str]) -> dict[str, str]: ...

    def find_entry_id(self, session: Any, text: str) -> str: ...

    def skipped_lines(self, session: Any = None) -> dict[str, SkippedLines]: ...

    def branch_entries(self, session: Any, leaf_id: str | None = None) -> list[Any]: ...

    def entry_usage(self, session: Any) -> dict[str, EntryUsage]: ...

    def context(self, session: Any, leaf_id: str | None = None) -> SessionContext: ...

    def outline(self, session: Any, leaf_id: str | None = None) -> SessionOutline: ...

    def on_active_branch(self, hit: Any) -> bool: ...

    def text_pending(self) -> int: ...

    def entries_pending(self) -> int: ...

    def quota(
        self,
        limits: Limits | None = None,
        now: datetime | None = None,
        agents: tuple[str, ...] = (),
    ) -> list[QuotaWindow]: ...

    def budgets(
        self, limits: Limits | None = None, now: datetime | None = None
    ) -> list[BudgetStatus]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


def _keyword_filter(
    cwd: str | None,
    project: str | None,
    agents: Collection[str] | None,
    since: datetime | str | None,
    until: datetime | str | None,
) -> SessionFilter:
    """The filter the keyword methods (list_sessions, search, usage) ask with."""
    return SessionFilter(
        cwd=cwd,
        project=project,
        agents=tuple(agents or ()),
        since=time_bound(since),
        until=time_bound(until),
    )


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
        register_search_functions(connection)
        self.agent_dir = agent_dir
        self.db_path = db_path
        self.read_only = read_only
        # The files table as the last sync left it, with the write stamp it was valid for: a
        # process that syncs again and again need not read 10,000 rows each time.
        self._files_snapshot: tuple[tuple[int, int], IndexedFiles] | None = None
        # Listings whose sessions read some fields on first use (sessions.IndexedSession).
        self.listings: weakref.WeakSet[sessions.Listing] = weakref.WeakSet()
        # What the collections of this process keep between them: the blob folder as they
        # track it (blob_folder.py) and the watch on the session folders.
        self._blob_folder: BlobFolder | None = None
        self._session_watch: SessionWatch | None = None

    @classmethod
    def open(
        cls, agent_dir: str | None = None, db_path: str | None = None, read_only: bool = False
    ) -> SessionIndex:
        """Open (creating or migrating) the index; a damaged file is moved aside and rebuilt."""
        agent_dir = os.path.abspath(agent_dir) if agent_dir else get_store_dir()
        db_path = db_path or get_index_db_path(agent_dir)
        with database.errors_explained(db_path):
            if read_only:
                if not os.path.exists(db_path):
                    raise IndexDatabaseError(f"No index at {db_path}; run `xcsh-store sync` first")
                return cls(_open_for_reading(db_path), agent_dir, db_path, True)
            return cls(_open_for_writing(db_path), agent_dir, db_path, False)

    @functools.cached_property
    def archive(self) -> ArchiveFolder:
        """The archive of other agents' session files, beside index.db (index/archive/)."""
        from xcsh_store.index.archive.folder import ArchiveFolder, archive_dir

        return ArchiveFolder(archive_dir(os.path.dirname(os.path.abspath(self.db_path))))

    @functools.cached_property
    def archived_sources(self) -> ArchivedSources:
        """The sessions the archive keeps, read where their files are gone."""
        from xcsh_store.index.archive.sources import ArchivedSources

        return ArchivedSources(self.archive, lambda: self.connection)

    @functools.cached_property
    def blob_store(self) -> BlobStore:
        from xcsh_store.format.blobs import BlobStore

        return BlobStore(get_blobs_dir(self.agent_dir))

    def close(self) -> None:
        """Close the connection; sessions listed before keep every field (they read the ones
        they have not read yet now)."""
        try:
            # A damaged file leaves those fields unread: reading them later says so.
            with contextlib.suppress(apsw.Error, *database.DAMAGE_ERRORS):
                for listing in list(self.listings):
                    listing.read_everything()
            if self._blob_folder is not None:
                self._blob_folder.close()
            if self._session_watch is not None:
                self._session_watch.close()
        finally:
            self.connection.close()

    def __enter__(self) -> SessionIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- location ---------------------------------------------------------------------------

    @functools.cached_property
    def relocation(self) -> Relocation | None:
        """Set when the stored paths name another agent dir (this one was copied or moved
        there) and no sync has rewritten them yet."""
        return find_relocation(self.connection, self.agent_dir)

    def local_path(self, path: str) -> str:
        """A stored path as a path below this agent dir, where the file is now."""
        return path if self.relocation is None else self.relocation.to_local(path)

    def _path_mapping(self) -> Callable[[str], str] | None:
        """local_path, or None while the stored paths are where the files are."""
        return None if self.relocation is None else self.local_path

    def _settle_location(self) -> None:
        settle_location(self.connection, self.agent_dir)
        self.__dict__.pop("relocation", None)

    # -- roots ------------------------------------------------------------------------------

    @property
    def sessions_root(self) -> str:
        return get_sessions_dir(self.agent_dir)

    @_entry_point
    def roots(self) -> list[str]:
        """The sessions folder of the agent dir (unless it has none), then every registered
        extra root, then the other agents' folders that exist (unless turned off)."""
        from xcsh_store.format.session_roots import read_session_roots
        from xcsh_store.index.write.scan import is_under_any

        extra = [
            self.local_path(row[0])
            for row in self.connection.execute("SELECT path FROM roots ORDER BY path")
        ]
        roots = [self.sessions_root, *extra] if self._keeps_sessions() else extra
        # Folders of sessions made elsewhere by the manager, unless a root covers them already.
        for folder in read_session_roots(self.agent_dir):
            if not is_under_any(folder, roots):
                roots.append(folder)
        for folder in self._found_agent_roots():
            if not is_under_any(folder, roots):
                roots.append(folder)
        return roots

    def _keeps_sessions(self) -> bool:
        """Whether the agent dir's own ``sessions/`` is a root: it is there (a symbolic link to
        something missing too), or files were indexed from it (its absence is then a missing
        root, which gc must not take for no sessions at all). An index in the data dir, of
        someone who uses only other agents, has none."""
        root = self.sessions_root
        if os.path.lexists(root):
            return True
        stored = root if self.relocation is None else self.relocation.to_stored(root)
        found = self.connection.execute("SELECT 1 FROM files WHERE root = ? LIMIT 1", (stored,))
        return bool(found.fetchall())

    @_entry_point
    def agent_roots(self) -> dict[str, str]:
        """The roots of other agents' files (read-only: a sync never writes there) -> their
        agent: those added as ``AGENT:PATH`` (``claude:PATH``, ``opencode:PATH``) and the ones
        found by themselves (pi's and oh-my-pi's folders: homes.py; each agent plugin's own)."""
        from xcsh_store.agents import agent_session_roots

        found = agent_session_roots()
        roots = {folder: found[folder] for folder in self._found_agent_roots()}
        for path, agent in self.connection.execute(
            "SELECT path, agent FROM roots WHERE agent IS NOT NULL"
        ):
            roots[self.local_path(path)] = agent
        return roots

    def _found_agent_roots(self) -> list[str]:
        if not self.finds_agent_roots:
            return []
        from xcsh_store.agents import agent_session_roots

        return [folder for folder in agent_session_roots() if os.path.isdir(folder)]

    @property
    def finds_agent_roots(self) -> bool:
        """Whether sync indexes the other agents' folders (homes.py) when they exist."""
        return database.get_meta(self.connection, "agent_roots") != "off"

    @_entry_point
    def find_agent_roots(self, enabled: bool) -> None:
        """Turn the other agents' folders found by themselves on or off (remembered; a sync
        then drops the rows of the ones turned off)."""
        self._require_writable()
        with database.transaction(self.connection):
            if enabled:
                self.connection.execute("DELETE FROM meta WHERE key = 'agent_roots'")
            else:
                database.set_meta(self.connection, "agent_roots", "off")

    @_entry_point
    def add_root(self, path: str, agent: str | None = None) -> None:
        """Index the files under ``path`` too; ``agent`` names whose files they are when they
        are another agent's (a plugin's name: ``claude``, ``opencode``): then the folder is only
        ever read."""
        with database.transaction(self.connection):
            self.connection.execute(
                "INSERT INTO roots (path, added_at, agent) VALUES (?, ?, ?)"
                " ON CONFLICT (path) DO UPDATE SET agent = coalesce(excluded.agent, agent)",
                (os.path.abspath(path), iso_now(), agent),
            )

    @_entry_point
    def remove_root(self, path: str) -> None:
        with database.transaction(self.connection):
            self.connection.execute("DELETE FROM roots WHERE path = ?", (os.path.abspath(path),))
        from xcsh_store.format.session_roots import forget_session_root

        forget_session_root(self.agent_dir, path)

    # -- sync -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _sync_lock(self, wait: bool = True) -> Iterator[bool]:
        """One sync at a time per index; a second one waits, then finds little left to do.
        With ``wait`` false, yields whether the lock was free (and is now held)."""
        lock = os.open(
            self.db_path + SYNC_LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
        )
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                free = False
            else:
                free = True
                remove_stamp(self.db_path)  # what the holder changes is stamped anew, or not
            yield free
        finally:
            os.close(lock)  # releases the lock

    @_entry_point
    def refresh(self, *, entries: bool = True) -> Freshness:
        """Bring the index up to date before a read answers: a sync (an unchanged file costs a
        stat), unless a watch keeps the index current (``watched``) or another process is
        syncing it now (``busy``: the read answers from what the index holds, never waits).
        One that finds nothing changed writes nothing, not even the time of the last sync: a
        read verb then costs no write to index.db (nor the checkpoint of it on close). Where
        the stamp the last refresh left still holds (fresh.py: no folder, file, variable or
        row it depends on changed), it is ``synced`` without a sync, and without a report.

        ``entries`` false: for a read of usage alone (``usage``): a first run reads only the
        usage of the files (``sync(entries=False)``); a read that wants entries (the default)
        reads whole the files whose entries such a sync put off."""
        self._require_writable()
        if is_watched(self.db_path):
            return Freshness(WATCHED)
        # (Any sync reads whole the files whose entries a usage-only sync put off.)
        if stamp_holds(self.db_path, self.agent_dir, self.connection) and not (
            self._entries_put_off()
        ):
            return Freshness(SYNCED)  # nothing changed since the last sync (fresh.py)
        with self._sync_lock(wait=False) as free:
            if not free:
                return Freshness(BUSY)
            return Freshness(SYNCED, self._sync_locked(record_time=False, entries=entries))

    @_entry_point
    def sync(
        self,
        full: bool = False,
        progress: Progress | None = None,
        *,
        workers: int | None = None,
        text: bool = True,
        entries: bool = True,
    ) -> SyncReport:
        """Bring the index up to date with every session file and history.db.

        ``workers``: processes that read files whole, in parallel (default: one per core; a
        sync with little to read whole starts none); 1 reads everything in this process.
        ``text`` false: usage first (index/write/text_later.py): with tens of MB to read whole
        (a first sync), those files get every row but their search rows, which a later sync
        adds (``SyncReport.text_pending`` says how many files wait; searches are partial until
        then). A sync with ``text`` adds the search rows still pending.
        ``entries`` false: usage first, for real (index/write/usage_first.py): with as much to
        read whole, the Claude Code files get only their usage rows (``usage`` answers, every
        other read waits for their entries: ``SyncReport.entries_pending``); a sync with
        ``entries`` (the default) reads those files whole. ``entries`` false implies ``text``
        false.
        """
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self._require_writable()
        with self._sync_lock():
            return self._sync_locked(full, progress, workers, text and entries, entries=entries)

    def _sync_locked(
        self,
        full: bool = False,
        progress: Progress | None = None,
        workers: int | None = None,
        text: bool = False,
        record_time: bool = True,
        entries: bool = True,
    ) -> SyncReport:
        """The sync, under the lock. ``text`` is false unless asked for: the syncs that come
        before something else (a read's, gc's) leave the search text of a first run for later;
        ``sync`` itself, ``watch`` and ``search`` add it. ``record_time``: note the time of
        this sync in index.db even when it changed nothing (a read's refresh does not)."""
        try:
            with database.type_confusion_as_damage(self.connection):
                return self._sync_once(full, progress, workers, text, record_time, entries)
        except database.DAMAGE_ERRORS as error:
            return self._rebuild_after_damage(error, progress, workers)

    def _sync_once(
        self,
        full: bool,
        progress: Progress | None,
        workers: int | None = None,
        text: bool = True,
        record_time: bool = True,
        entries: bool = True,
    ) -> SyncReport:
        from xcsh_store.agents import agent_history_files
        from xcsh_store.agents.prices.pricing import price_sources
        from xcsh_store.format.session_roots import read_session_roots
        from xcsh_store.index.model.pending import pending_entry_files, pending_text_files
        from xcsh_store.index.read.prompts import mirror_agent_history, mirror_history
        from xcsh_store.index.write.prices import price_again_if_changed, record_prices
        from xcsh_store.index.write.summaries import pending as summaries_pending
        from xcsh_store.index.write.sync import sync_files

        changes_before = self.connection.total_changes()
        # Rows changed by a sync that was stopped before it gave them their summary titles.
        titles_left = summaries_pending(self.connection)
        self._settle_location()
        resync = database.get_meta(self.connection, "resync_required")
        # A new index's migrations ask for a resync too; its first sync reads every file anyway,
        # so it has no reason to report (pending_upgrade says the same).
        upgrade = resync if resync is not None and self._holds_files() else None
        sources = price_sources()
        repriced = price_again_if_changed(self.connection, sources)
        whole = full or resync is not None
        if whole:
            self._forget_search_text()
        indexed = self._indexed_files()
        changes = self.connection.total_changes()
        agent_roots = self.agent_roots()
        roots = self.roots()
        # A read's refresh (record_time false) leaves the stamp its next read checks (fresh.py);
        # `sync` and `watch` do not pay for the walk it takes. Taken before anything is read: a
        # file that changes meanwhile no longer matches.
        stamp = None
        if not record_time:
            stamp = (
                environment_key(self.agent_dir),
                Identities.take(self._stamped_paths(roots, agent_roots)),
            )
        report = sync_files(
            self.connection,
            roots,
            whole,
            progress,
            indexed,
            workers,
            agent_roots=agent_roots,
            text=text,
            keeper=self._keeper(agent_roots),
            standing_roots=self._standing_roots(),
            entries=entries,
        )
        if report.archive_error is None:
            from xcsh_store.index.archive.adopt import adopt_archived, read_again

            adopt_archived(self.connection, self.archive, report, whole, self._standing_roots())
            read_again(self.connection, self.archive, report)
        if text:
            report.text_files_indexed = self._index_pending_text(progress, workers)
        report.text_pending = pending_text_files(self.connection)
        report.entries_pending = pending_entry_files(self.connection)
        report.recorded_roots = read_session_roots(self.agent_dir)
        record_prices(self.connection, sources)
        report.repriced = repriced
        if whole:
            # Taken only now: a resync killed part-way is done again in full next time.
            report.resync_reason = upgrade
            with database.transaction(self.connection):
                self.connection.execute("DELETE FROM meta WHERE key = 'resync_required'")
            if resync is not None:
                database.compact_if_sparse(self.connection)
        untouched = self.connection.total_changes() == changes
        if not untouched or titles_left:
            from xcsh_store.index.read.ranking import refresh_term_counts
            from xcsh_store.index.write.scan import file_ids
            from xcsh_store.index.write.stale_search import delete_stale_rows_if_many
            from xcsh_store.index.write.summaries import resolve_pending

            delete_stale_rows_if_many(self.connection)
            refresh_term_counts(self.connection)
            with database.transaction(self.connection):
                read = file_ids(self.connection, report.read_paths)
                resolve_pending(self.connection, read, everything=titles_left)
        try:
            report.history_mirrored = mirror_history(
                self.connection, get_history_db_path(self.agent_dir)
            )
        except HistoryError as error:
            report.history_error = str(error)
            log.warning("%s", report.history_error)
        histories: dict[str, str | None] = dict(agent_history_files())
        if not self.finds_agent_roots:
            histories = dict.fromkeys(histories)  # turned off: their prompts go
        report.history_mirrored += mirror_agent_history(self.connection, histories)
        if (
            record_time
            or self.connection.total_changes() != changes_before
            or database.get_meta(self.connection, "last_sync") is None
        ):
            with database.transaction(self.connection):
                database.set_meta(self.connection, "last_sync", iso_now())
        self._files_snapshot = (self._write_stamp(), indexed) if untouched else None
        if stamp is not None:
            self._leave_stamp(*stamp, roots, agent_roots)
        return report

    def _stamped_paths(self, roots: list[str], agent_roots: dict[str, str]) -> list[str]:
        """What a sync reads, for its stamp (fresh.py): every folder and file under the roots
        and the archive, every file indexed, the history files, the files of the sessions'
        roots, the config and the prices, the plugins' modules and the import path's folders."""
        import sys

        from xcsh_store.agents import READERS, agent_history_files
        from xcsh_store.agents.prices.pricing import price_source_paths
        from xcsh_store.format.session_roots import session_roots_path
        from xcsh_store.homes import get_config_file

        paths: list[str | None] = list(tree_paths([*roots, *agent_roots, self.archive.folder]))
        paths += [path for (path,) in self.connection.execute("SELECT path FROM files")]
        paths += agent_history_files().values()
        paths += [get_history_db_path(self.agent_dir), session_roots_path(self.agent_dir),
                  get_config_file(), *price_source_paths()]  # fmt: skip
        for agent in READERS:
            plugin = getattr(agent, "reader", agent)
            module = sys.modules.get(type(plugin).__module__)
            paths.append(getattr(module, "__file__", None))
        # (Not the working folder, which `python -m` puts first: what else is made there
        # would stale the stamp; a plugin is found in the folders of the installed packages.)
        paths += [folder for folder in sys.path if folder and folder != working_folder()]
        return [path for path in paths if path and not path.startswith(self.db_path)]

    def _leave_stamp(
        self,
        environment: list[Any],
        identities: Identities,
        roots: list[str],
        agent_roots: dict[str, str],
    ) -> None:
        """The stamp of this sync, unless it indexed a file it had not stamped (one found
        outside the roots) or the roots changed while it ran: the next sync stamps then."""
        indexed = {path for (path,) in self.connection.execute("SELECT path FROM files")}
        if (
            indexed <= identities.paths.keys()
            and self.roots() == roots
            and self.agent_roots() == agent_roots
        ):
            write_stamp(
                self.db_path, environment, index_key(self.connection, self.db_path), identities
            )

    def _standing_roots(self) -> set[str] | None:
        """The roots whose archived sessions stay in the index when their folder is no longer
        read (deleted, or moved by the agent's variable): every root (None) unless the other
        agents' folders are turned off, then those added with an agent."""
        if self.finds_agent_roots:
            return None
        return {
            self.local_path(path)
            for (path,) in self.connection.execute("SELECT path FROM roots WHERE agent IS NOT NULL")
        }

    def _keeper(self, agent_roots: dict[str, str]) -> Keeper:
        """The archive's writer for a sync: the roots of the agents whose sessions it keeps
        (all but those the config file turns off: archive/settings.py), never a root that
        holds the archive itself."""
        from xcsh_store.index.archive.keeper import Keeper
        from xcsh_store.index.archive.settings import agents_not_archived
        from xcsh_store.index.write.scan import is_under_any

        off = agents_not_archived()
        kept = {
            root: agent
            for root, agent in agent_roots.items()
            if agent not in off and not is_under_any(self.archive.folder, [root])
        }
        return Keeper(self.connection, self.archive, kept)

    @_entry_point
    def index_pending_text(
        self, progress: Progress | None = None, *, workers: int | None = None
    ) -> int:
        """Add the search rows a usage-first sync put off (``sync(text=False)``), without
        syncing anything else; returns the files done. Waits for a sync under way."""
        self._require_writable()
        with self._sync_lock():
            done = self._index_pending_text(progress, workers)
        if done:
            from xcsh_store.index.read.ranking import refresh_term_counts

            refresh_term_counts(self.connection)
        return done

    def _index_pending_text(self, progress: Progress | None, workers: int | None) -> int:
        from xcsh_store.index.model.pending import pending_entry_files
        from xcsh_store.index.write.entries_later import index_pending_entries
        from xcsh_store.index.write.pipeline import default_workers
        from xcsh_store.index.write.text_later import index_pending_text

        workers = default_workers() if workers is None else workers
        # Files whose entries a usage-first sync put off get them with their text.
        keeper = self._keeper(self.agent_roots()) if pending_entry_files(self.connection) else None
        with_entries = index_pending_entries(
            self.connection, workers, progress, keeper
        ).files_reindexed
        done, _changed = index_pending_text(self.connection, workers, progress)
        return done + with_entries

    @_entry_point
    def text_pending(self) -> int:
        """How many files' search text is still to be indexed: while any is, a search may miss
        their entries (a usage-first sync put it off; the next sync adds it)."""
        from xcsh_store.index.model.pending import pending_text_files

        return pending_text_files(self.connection)

    @_entry_point
    def entries_pending(self) -> int:
        """How many session files have only their usage rows yet (a sync asked for usage
        alone put their entries off): while any has, listings, sessions and searches miss
        them (any sync that wants entries, the default, reads them)."""
        from xcsh_store.index.model.pending import pending_entry_files

        return pending_entry_files(self.connection)

    def _forget_search_text(self) -> None:
        """Empty entries_fts before a sync that reads every file whole (its rows could only go
        stale, stale_search.py), and make sure that such a sync killed part-way is done in full
        by the next one, which then finds all of them without search text."""
        from xcsh_store.index.write.stale_search import forget_all

        with database.transaction(self.connection):
            self.connection.execute(
                "INSERT INTO meta (key, value) VALUES ('resync_required', ?)"
                " ON CONFLICT (key) DO NOTHING",
                ("a full sync had not finished",),
            )
            forget_all(self.connection)

    @_entry_point
    def pending_upgrade(self) -> str | None:
        """Why the next sync will read every file again (an index upgrade needs rows derived
        anew), or None; None too for an index that holds no files yet."""
        reason = database.get_meta(self.connection, "resync_required")
        return reason if reason is not None and self._holds_files() else None

    def _entries_put_off(self) -> bool:
        """Whether a file has its usage rows but not yet its entries (a usage-only sync)."""
        return bool(
            self.connection.execute(
                "SELECT 1 FROM files WHERE entries_pending = 1 LIMIT 1"
            ).fetchall()
        )

    def _holds_files(self) -> bool:
        return bool(self.connection.execute("SELECT 1 FROM files LIMIT 1").fetchall())

    def _indexed_files(self) -> IndexedFiles:
        """The files table: the last sync's copy while nothing has written to index.db since."""
        from xcsh_store.index.write.scan import IndexedFiles

        if self._files_snapshot is not None and self._files_snapshot[0] == self._write_stamp():
            return self._files_snapshot[1]
        return IndexedFiles.read(self.connection)

    def _write_stamp(self) -> tuple[int, int]:
        """Changes when anything writes index.db: another connection (PRAGMA data_version)
        or this one (its count of changed rows)."""
        ((version,),) = self.connection.execute("PRAGMA data_version")
        return version, self.connection.total_changes()

    def _rebuild_after_damage(
        self, damage: object, progress: Progress | None, workers: int | None = None
    ) -> SyncReport:
        from xcsh_store.index.upkeep.repair import start_afresh

        self._files_snapshot = None
        self.connection.close()
        self.connection = start_afresh(self.db_path, damage)
        register_search_functions(self.connection)
        return self._sync_once(True, progress, workers)

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
        agents: Collection[str] | None = None,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
    ) -> list[IndexedSession]:
        """``list`` / ``list_all`` answered by SQL, newest first (or by ``created``/``title``);
        ``agents``: only the sessions of these agents (``AGENTS``: xcsh, pi, omp, claude, …);
        ``since``/``until``: only those active in that span (modified at or after ``since``,
        started before ``until``).

        The keyword form of ``sessions(SessionQuery(...))``, kept for the API (index.md); the
        fronts ask the question, which either index (IndexReader) answers."""
        filters = _keyword_filter(cwd, project, agents, since, until)
        return self.sessions(SessionQuery(filter=filters, order=order, limit=limit))

    @_entry_point
    def sessions(self, query: SessionQuery) -> list[IndexedSession]:
        """The listing ``query`` asks for (questions.IndexReader)."""
        return sessions.list_sessions(self, query)

    @_entry_point
    def find_session(self, prefix: str) -> IndexedSession:
        """A session file by path, id prefix, file-name prefix or the part after ``_``
        (compatibility: Ambiguous session lookups are errors).

        Case-insensitive. A path selects its file; otherwise exactly one file must match, or
        one whose id or file name is the whole of ``prefix``: several raise
        :class:`AmbiguousSessionError` listing them (two files may share one session id).
        """
        return sessions.find_session(self, prefix)

    @_entry_point
    def subagents(self, session: str | IndexedSession, limit: int = 50) -> list[IndexedSession]:
        """The sessions (at most ``limit``) that say they are subagents or forks of
        ``session``: Claude Code's subagent files, Codex's forks and spawned threads, Gemini
        CLI's and Cursor's subagent chats, opencode's child sessions."""
        found = self._session(session)
        rows = list(
            self.connection.execute(
                "SELECT file_id FROM sessions WHERE parent_session_id = ? AND path != ?"
                " ORDER BY path LIMIT ?",
                (found.id, found.path, limit),
            )
        )
        return [sessions.session_by_file_id(self, file_id) for (file_id,) in rows]

    def _session(self, session: str | int | IndexedSession) -> IndexedSession:
        if isinstance(session, IndexedSession):
            return session
        if isinstance(session, int):
            return sessions.session_by_file_id(self, session)
        return self.find_session(session)

    @_entry_point
    def unique_id_prefixes(self, session_ids: Iterable[str]) -> dict[str, str]:
        """names.unique_id_prefixes over this index (the team index answers the same)."""
        from xcsh_store.index.read.names import unique_id_prefixes

        return unique_id_prefixes(self.connection, session_ids)

    @_entry_point
    def all_messages_text(self, session: IndexedSession) -> str:
        return sessions.all_messages_text(self.connection, session)

    @_entry_point
    def skipped_lines(
        self, session: str | int | IndexedSession | None = None
    ) -> dict[str, SkippedLines]:
        """Lines that hold no JSON object (every reader skips them), by file: of every indexed
        file, or of one session's file."""
        file_id = None if session is None else self._session(session).file_id
        return sessions.skipped_lines(self.connection, file_id)

    # -- trees ------------------------------------------------------------------------------

    @_entry_point
    def branch(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> list[IndexedEntry]:
        """Root -> leaf entries of one branch (default: the session's last entry)."""
        from xcsh_store.index.model.paths import branch_rows

        info = self._session(session)
        leaf = leaf_id or info.last_entry_id
        if leaf is None:
            return []
        return branch_rows(self.connection, info.file_id, leaf)

    @_entry_point
    def entry_id_prefixes(self, where: Any, entry_ids: Iterable[str]) -> dict[str, str]:
        """Each entry id of the file of ``where`` (a session or a search hit) by the shortest
        prefix (at least 8 characters) no other entry of that file shares: what find_entry_id
        resolves to the same entry (other agents' ids are often 36-character UUIDs)."""
        from xcsh_store.index.read.names import unique_entry_prefixes

        return unique_entry_prefixes(self.connection, where.file_id, entry_ids)

    @_entry_point
    def find_entry_id(self, session: str | int | IndexedSession, text: str) -> str:
        """The id of the session's entry that is ``text`` or, like session ids, the only one
        that starts with it; :class:`AmbiguousEntryError` lists the candidates."""
        return sessions.find_entry_id(self.connection, self._session(session).file_id, text)

    @_entry_point
    def branch_entries(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The full JSON entries of :meth:`branch`, read from the file by byte offset."""
        from xcsh_store.index.model.paths import read_entries

        info = self._session(session)
        rows = self.branch(info, leaf_id)
        return read_entries(info.path, rows, self.blob_store, info.agent, self.archived_sources)

    @_entry_point
    def entry_usage(self, session: str | int | IndexedSession) -> dict[str, EntryUsage]:
        """Entry id -> the tokens and cost of the model response it records, each response
        once (read.entry_usage); entries without usage are absent."""
        from xcsh_store.index.read.usage import entry_usage

        return entry_usage(self.connection, self._session(session).file_id)

    @_entry_point
    def tree(self, session: str | int | IndexedSession) -> SessionTree:
        from xcsh_store.index.model.paths import entry_rows
        from xcsh_store.index.read.tree import build_tree

        info = self._session(session)
        return build_tree(entry_rows(self.connection, info.file_id))

    @_entry_point
    def outline(self, session: str | IndexedSession, leaf_id: str | None = None) -> SessionOutline:
        """outline.session_outline of this index (the team index answers the same)."""
        from xcsh_store.index.read.outline import session_outline

        return session_outline(self, session, leaf_id)

    @_entry_point
    def context(
        self, session: str | int | IndexedSession, leaf_id: str | None = None
    ) -> SessionContext:
        """The model context at ``leaf_id`` (default: the last entry), reading only its path."""
        from xcsh_store.index.read.tree import context_from_index

        info = self._session(session)
        leaf = leaf_id or info.last_entry_id
        return context_from_index(
            self.connection, info.file_id, info.path, leaf, info.legacy, self.blob_store,
            info.agent, self.archived_sources,
        )  # fmt: skip

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
        agents: Collection[str] | None = None,
    ) -> list[SearchHit]:
        """The keyword form of ``hits(SearchQuery(...))``, kept for the API (index.md); the
        fronts ask the question, which either index (IndexReader) answers."""
        filters = _keyword_filter(cwd, project, agents, since, until)
        return self.hits(
            SearchQuery(
                text=query,
                filter=filters,
                role=role,
                model=model,
                limit=limit,
                highlight=highlight,
            )
        )

    @_entry_point
    def hits(self, query: SearchQuery) -> list[SearchHit]:
        """The hits of the search ``query`` (questions.IndexReader)."""
        from xcsh_store.index.read.search import search_entries

        return search_entries(self.connection, query, self._path_mapping())

    @_entry_point
    def has_model(self, model: str) -> bool:
        """Whether an entry of the index is of ``model`` (an id, or ``provider/model``), as
        ``search(model=…)`` matches it."""
        from xcsh_store.index.read.search import model_condition

        condition, values = model_condition("e", model)
        found = self.connection.execute(
            f"SELECT 1 FROM entries AS e WHERE {condition} LIMIT 1", values
        )
        return found.fetchall() != []

    @_entry_point
    def on_active_branch(self, hit: SearchHit) -> bool:
        """Whether a hit lies on the path of its session's last entry."""
        info = self._session(hit.file_id)
        if hit.entry_id is None or info.last_entry_id is None:
            return False
        return any(row.id == hit.entry_id for row in self.branch(info))

    @_entry_point
    def history_search(
        self, query: str, limit: int = 20, *, agents: Collection[str] | None = None
    ) -> list[PromptHit]:
        """The keyword form of ``prompts(PromptQuery(text=...))``, kept for the API (index.md)."""
        return self.prompts(PromptQuery(text=query, limit=limit, agents=tuple(agents or ())))

    @_entry_point
    def history_recent(
        self, limit: int = 20, *, agents: Collection[str] | None = None
    ) -> list[PromptHit]:
        """The keyword form of ``prompts(PromptQuery())``, kept for the API (index.md)."""
        return self.prompts(PromptQuery(limit=limit, agents=tuple(agents or ())))

    @_entry_point
    def prompts(self, query: PromptQuery) -> list[PromptHit]:
        """The prompts ``query`` recalls (questions.IndexReader)."""
        from xcsh_store.index.read.prompts import recall_prompts

        return self._local_prompts(recall_prompts(self.connection, query, self._path_mapping()))

    def _local_prompts(self, hits: list[PromptHit]) -> list[PromptHit]:
        from dataclasses import replace

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
        agents: Collection[str] | None = None,
        zone: tzinfo | None = None,
    ) -> list[UsageRow]:
        """Token and cost sums per group; an entry copied into a fork counts once, and so does
        a session kept in several files; days, weeks and months are ``zone``'s (default: the
        local time zone); ``agents``:
        only these agents' sessions (the costs of agents that record none are estimates: see
        each row's ``estimated`` and ``unpriced``).

        ``by`` is one grouping or several (``("day", "model")``: a row per day and model, as
        ccusage's daily breakdown); each row's ``keys`` has one key per grouping and its
        ``key`` is them joined with ``" · "``.

        The keyword form of ``usage_rows(UsageQuery(...))``, kept for the API (index.md).
        """
        filters = _keyword_filter(None, None, agents, since, until)
        by = (by,) if isinstance(by, str) else tuple(by)
        return self.usage_rows(UsageQuery(by=by, filter=filters, zone=zone))

    @_entry_point
    def usage_rows(self, query: UsageQuery) -> list[UsageRow]:
        """The usage sums ``query`` asks for (questions.IndexReader)."""
        from xcsh_store.index.read.usage import usage_rows

        return usage_rows(self.connection, query)

    @_entry_point
    def billing_blocks(
        self, filter: SessionFilter | None = None, now: datetime | None = None
    ) -> list[BillingBlock]:
        """Claude's five-hour billing windows over the requests of ``filter`` (default:
        all), as ccusage's ``blocks`` finds them (usage.billing_blocks), with the active one's
        burn rate and projection. index.db's alone: the team index has no such question."""
        from xcsh_store.index.read.usage import billing_blocks

        return billing_blocks(self.connection, filter or SessionFilter(), now)

    @_entry_point
    def quota(
        self,
        limits: Limits | None = None,
        now: datetime | None = None,
        agents: tuple[str, ...] = (),
    ) -> list[QuotaWindow]:
        """Each agent's usage-limit windows: the readings in its files (Codex's rate limits)
        or its token windows against the limits of ``limits`` (default: the config file's),
        each with its pace (limits/quota.py)."""
        from xcsh_store.glance.settings import read_limits
        from xcsh_store.index.limits.quota import quota_windows

        return quota_windows(self.connection, limits or read_limits(), now, agents)

    @_entry_point
    def budgets(
        self, limits: Limits | None = None, now: datetime | None = None
    ) -> list[BudgetStatus]:
        """Each spend budget of ``limits`` (default: the config file's and budgets.toml's)
        with what its sessions spent in its period so far (glance/spend.py)."""
        from xcsh_store.glance.settings import read_limits
        from xcsh_store.glance.spend import budget_statuses

        return budget_statuses(self.connection, limits or read_limits(), now or datetime.now(UTC))

    @_entry_point
    def models_seen(self, table: PriceTable) -> tuple[list[ModelSeen], bool]:
        """prices.models_seen, and whether the index's costs come from ``table``."""
        from xcsh_store.index.write.prices import models_seen, priced_with

        current = priced_with(self.connection) == table.fingerprint
        return models_seen(self.connection, table), current

    @_entry_point
    def duplicate_sessions(self) -> list[DuplicateSession]:
        """Sessions kept in several files, whose usage counts once (usage.duplicate_sessions)."""
        from xcsh_store.index.read.usage import duplicate_sessions

        return duplicate_sessions(self.connection)

    # -- blobs ------------------------------------------------------------------------------

    @_entry_point
    def blob_gc(self, apply: bool = False, grace: timedelta = timedelta(hours=1)) -> GcReport:
        """Unreferenced blob files older than ``grace``; deleted only with ``apply``.

        Syncs first, until a sync saw a consistent view of the session files. Refuses to
        delete (and a dry run says it would refuse) while any session file, folder or root the
        index knew could not be reached, or files kept moving, since a blob referenced only
        from such a file would look unreferenced.
        """
        from xcsh_store.index.upkeep.blob_folder import BlobFolder
        from xcsh_store.index.upkeep.gc import (
            SessionWatch,
            collect_garbage,
            refusal,
            sync_consistently,
        )

        self._require_writable()
        if self._blob_folder is None:
            self._blob_folder = BlobFolder(get_blobs_dir(self.agent_dir))
            self._session_watch = SessionWatch()
        assert self._session_watch is not None
        synced_from = time.time()
        # One lock for the syncs and the collection: a sync by another process in between
        # could miss a moving file, and the collection would go by its counts.
        with self._sync_lock():
            report, moving = sync_consistently(
                self._sync_locked, self.roots, self.connection, self._session_watch
            )
            return collect_garbage(
                self.connection,
                self._blob_folder,
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
        from xcsh_store.index.archive.check import check_archive, repair_archive
        from xcsh_store.index.upkeep.repair import repair_files
        from xcsh_store.index.upkeep.verify import VerifyReport, compare_with_files

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
                on_disk, indexed = compare_with_files(
                    self.connection, self.roots(), report, self.agent_roots()
                )
                archive_problems = check_archive(self.connection, self.archive)
                report.archive_problems = {p.archive: p.problem for p in archive_problems}
                if repair and not report.clean:
                    self._require_writable()
                    with self._sync_lock():
                        for problem in archive_problems:
                            report.archive_repaired[problem.archive] = repair_archive(
                                self.connection, self.archive, problem
                            )
                        repair_files(self.connection, report, on_disk, indexed)
        except database.DAMAGE_ERRORS as error:
            report.damaged = str(error)
        if report.damaged is not None and repair:
            self._require_writable()
            with self._sync_lock():
                self._rebuild_after_damage(report.damaged, None)
            report.rebuilt = True
        return report

    # -- the archive --------------------------------------------------------------------------

    @_entry_point
    def restore(self, session: str | IndexedSession, to: str | None = None) -> Restored:
        """Write the archived session back where its agent keeps it (its folder as found now),
        or into the folder ``to``: the bytes the store read, byte for byte (index/archive/
        restore.py). RestoreError: not archived, or its place holds other bytes."""
        from xcsh_store.agents import reader_named
        from xcsh_store.index.archive.keeper import archived_row
        from xcsh_store.index.archive.restore import (
            Restored,
            RestoreError,
            current_root,
            restore_files,
        )

        info = self._session(session)
        row = archived_row(self.connection, info.file_id)
        if row is None:
            raise RestoreError(
                f"{info.session_id} is not archived (xcsh's own sessions and those of agents"
                " whose archiving is off are not): nothing to restore"
            )
        ((root,),) = self.connection.execute("SELECT root FROM files WHERE id = ?", (info.file_id,))
        target = None if to is not None else current_root(info.agent, root)
        path, written, there, digest, size = restore_files(
            self.archive, row.name, row.version, target, to
        )
        plugin = reader_named(info.agent)
        command = None if plugin is None else plugin.resume_command(info.session_id, info.cwd)
        return Restored(info.session_id, info.agent, path, written, there, digest, size, command)

    @_entry_point
    def forget(self, sessions: Iterable[IndexedSession], apply: bool = False) -> Forgotten:
        """Forget ``sessions`` on purpose: their rows leave the index and their files the
        archive (the one way anything leaves it); the team index drops them on the next push.
        Only counted unless ``apply`` (index/archive/forget.py)."""
        from xcsh_store.index.archive.forget import forget_files

        if apply:
            self._require_writable()
            with self._sync_lock():
                return forget_files(
                    self.connection, self.archive, [s.file_id for s in sessions], True
                )
        return forget_files(self.connection, self.archive, [s.file_id for s in sessions], False)

    @_entry_point
    def archive_stats(self) -> ArchiveStats:
        """The archive's files and bytes, and the sessions it keeps (those whose file is
        gone among them)."""
        from xcsh_store.index.archive.folder import ArchiveStats

        files, size = self.archive.size()
        ((sessions, gone, held),) = self.connection.execute(
            "SELECT count(*), count(f.gone_at), coalesce(sum(a.source_bytes), 0)"
            " FROM archived AS a JOIN files AS f ON f.id = a.file_id"
        )
        return ArchiveStats(self.archive.folder, files, size, sessions, gone, held)

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


# How often, at most, a long-running reader (serve, mcp) syncs before it answers.
REFRESH_SECONDS = 2.0


class Refresher:
    """Fresh answers for a long-running reader (``serve``, ``mcp``): :meth:`refresh` brings the
    index of ``agent_dir`` up to date before a read, at most once every ``every`` seconds,
    unless a watch keeps it current. Thread-safe: a read that comes while another's sync runs
    waits for it, then answers from what it wrote."""

    def __init__(self, agent_dir: str, every: float = REFRESH_SECONDS) -> None:
        self.agent_dir = os.path.abspath(agent_dir)
        self.db_path = get_index_db_path(self.agent_dir)
        self.every = every
        self._index: SessionIndex | None = None
        self._identity: tuple[int, int] | None = None
        self._synced_at: float | None = None
        self._lock = threading.Lock()
        self._text_pass: threading.Thread | None = None

    def refresh(self) -> Freshness | None:
        """What the index's refresh did; None when it was done less than ``every`` seconds
        ago, or could not be (the reason is logged: the read answers from what is there).
        Search text a usage-first sync put off is indexed by a thread of its own, so reads
        answer meanwhile (searches say they are partial until it is done)."""
        with self._lock:
            if self._synced_at is not None and time.monotonic() - self._synced_at < self.every:
                return None
            try:
                index = self._opened()
                freshness = index.refresh()
                if index.text_pending():
                    self._start_text_pass()
                return freshness
            except (XcshStoreError, OSError, apsw.Error) as error:
                log.warning("index.db could not be brought up to date: %s", error)
                return None
            finally:
                self._synced_at = time.monotonic()

    def _start_text_pass(self) -> None:
        if self._text_pass is not None and self._text_pass.is_alive():
            return
        self._text_pass = threading.Thread(
            target=self._index_pending_text, name="xcsh-store search text", daemon=True
        )
        self._text_pass.start()

    def wait_for_text(self) -> None:
        """Wait for the search text being indexed in the background, if any."""
        if self._text_pass is not None:
            self._text_pass.join()

    def _index_pending_text(self) -> None:
        try:
            with SessionIndex.open(self.agent_dir) as index:
                log.info("indexing the search text of %d files", index.text_pending())
                index.index_pending_text(workers=1)
        except (XcshStoreError, OSError, apsw.Error) as error:
            log.warning("the search text could not be indexed now: %s", error)

    def _opened(self) -> SessionIndex:
        """The index, kept open between reads (a sync of unchanged files then reads no rows
        of the files table again); opened afresh when index.db was deleted or replaced."""
        try:
            info = os.stat(self.db_path)
            identity: tuple[int, int] | None = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            identity = None
        if self._index is not None and identity != self._identity:
            self.close()
        if self._index is None:
            self._index = SessionIndex.open(self.agent_dir)
            info = os.stat(self.db_path)
            self._identity = (info.st_dev, info.st_ino)
        return self._index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


def _open_for_reading(db_path: str) -> apsw.Connection:
    """A read-only connection to an index of the current schema: its queries would fail on an
    older one, which only a sync (it may write) can upgrade."""
    connection = database.connect(db_path, read_only=True)
    try:
        missing = database.missing_migrations(connection)
    except BaseException:
        connection.close()
        raise
    if missing:
        connection.close()
        raise IndexDatabaseError(
            f"{db_path} was written by an older xcsh-store (it lacks schema {missing[-1]});"
            " run `xcsh-store sync` to upgrade it"
        )
    return connection


def _open_for_writing(db_path: str) -> apsw.Connection:
    """Connect and migrate; a damaged file is started afresh."""
    # The repair is imported only for a damaged file: it brings verify and its parsers.
    try:
        connection = database.connect(db_path)
    except database.DamagedIndexError as error:
        from xcsh_store.index.upkeep.repair import start_afresh

        return start_afresh(db_path, error)
    try:
        if not database.schema_is_current(connection):
            database.apply_migrations(connection, database.load_migrations())
    except database.DAMAGE_ERRORS as error:
        from xcsh_store.index.upkeep.repair import start_afresh

        connection.close()
        return start_afresh(db_path, error)
    except BaseException:
        connection.close()
        raise
    return connection
