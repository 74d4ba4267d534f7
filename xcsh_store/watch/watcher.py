"""Keeping index.db current from file-system events: every debounced batch of events under the
roots is applied as one incremental sync (unchanged files cost a stat, grown ones are read from
their last indexed byte), and what that sync changed is told one file at a time.

The sync itself finds out what changed, so nothing an event says is trusted beyond "look now":
a rename, a folder moved between projects, a burst of events that overflowed the kernel's
queue, all come down to one sync that sees the files as they are. What events cannot say is
watched between batches: a root that appeared or vanished (its watch is made anew, then one
sync), and an index.db that was deleted or replaced (opened afresh, then one full sync).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from watchfiles._rust_notify import RustNotify

from xcsh_store.errors import SessionNotFoundError
from xcsh_store.index import SessionIndex, SyncReport, holding_watch, is_under_any
from xcsh_store.paths import get_blobs_dir, get_history_db_path, get_index_db_path
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")

# The index's own files: events on them are the watcher's own writes (or a deletion, which the
# check between batches sees).
_INDEX_SUFFIXES = ("", "-wal", "-shm", "-journal", ".sync-lock", ".watch-lock")


@dataclass(frozen=True)
class WatchOptions:
    """``debounce_ms``: the longest a batch of events is held before it is applied;
    ``quiet_ms``: a batch is applied as soon as no event came for this long; ``check_ms``: how
    often, without events, the roots and index.db are looked at (a stat each)."""

    debounce_ms: int = 200
    quiet_ms: int = 20
    check_ms: int = 1000


@dataclass
class AppliedChange:
    """One change the watcher applied to the index.

    ``change``: ``indexed`` (new bytes of a file read), ``added`` (a file now indexed without
    being read: renamed or moved in), ``removed`` (a file no longer indexed), ``moved`` (files
    renamed whose old names events did not give: a folder moved), ``synced`` (a sync of every
    file, with its ``reason``).
    """

    change: str
    path: str | None = None
    session: str | None = None
    entries: int | None = None
    reason: str | None = None
    files: int | None = None
    at: str = field(default_factory=iso_now)

    def as_json(self) -> dict[str, Any]:
        """The change as ``watch --json`` prints it: its fields that are set, and its session
        under ``session_id`` too, as every other record names a session's id."""
        shape = {key: value for key, value in vars(self).items() if value is not None}
        if self.session is not None:
            shape["session_id"] = self.session
        return shape


class IndexWatcher:
    """Watches the agent dir and every extra root until ``stop`` is set (a signal handler
    sets it); each change applied goes to ``on_change``."""

    def __init__(
        self,
        agent_dir: str,
        on_change: Callable[[AppliedChange], None],
        options: WatchOptions | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.agent_dir = os.path.abspath(agent_dir)
        self.on_change = on_change
        self.options = options or WatchOptions()
        self.stop = stop or threading.Event()
        self.db_path = get_index_db_path(self.agent_dir)
        self._blobs_dir = get_blobs_dir(self.agent_dir)
        self._history_db = get_history_db_path(self.agent_dir)
        self._index: SessionIndex | None = None
        self._db_identity: tuple[int, int] | None = None
        self.roots: list[str] = []

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        """Watch, sync once, then apply events until stopped; the index is closed on the way
        out. The watch lock is held all along: read verbs then leave the syncing to this
        watch (index/fresh.py)."""
        try:
            self._open_index()
            reason = "start"
            with holding_watch(self.db_path):
                while not self.stop.is_set():
                    reason = self._watch(reason)
        finally:
            if self._index is not None:
                self._index.close()
                self._index = None

    def _watch(self, reason: str) -> str:
        """Watch the roots as they are now, sync every file once for ``reason``, then apply
        batches of events; returns why the watch had to be made anew."""
        watched = self._watched_paths()
        try:
            notify = RustNotify(watched, False, False, 0, True, True) if watched else None
        except FileNotFoundError:
            notify = None  # a root vanished while its watch was made
        if notify is None:
            self.stop.wait(self.options.check_ms / 1000)
            return reason
        with notify:
            # After the watch began: what changes from now on is an event.
            self._full_sync(reason, workers=None if reason == "start" else 1)
            while not self.stop.is_set():
                options = self.options
                batch = notify.watch(
                    options.debounce_ms, options.quiet_ms, options.check_ms, self.stop
                )
                if batch in ("stop", "signal"):
                    break
                if self._index_was_replaced():
                    self._open_index()
                    self._full_sync("index.db was deleted or replaced")
                    continue
                if not isinstance(batch, str):  # events, not "timeout"
                    paths = self._relevant({path for _change, path in batch})
                    if paths:
                        self._apply(paths)
                if self._watched_paths(refresh=batch != "timeout") != watched:
                    return "a root appeared or vanished"
        return reason

    # -- what is watched --------------------------------------------------------------------

    def _watched_paths(self, refresh: bool = True) -> list[str]:
        """The agent dir (sessions/, history.db, index.db) and the extra roots outside it,
        those that exist now. ``refresh``: ask the index for its roots (a query); else the
        roots known from the last time (a stat each: an idle watcher reads nothing)."""
        assert self._index is not None
        if refresh or not self.roots:
            self.roots = self._index.roots()
        outside = [root for root in self.roots if not is_under_any(root, [self.agent_dir])]
        return [path for path in (self.agent_dir, *outside) if os.path.isdir(path)]

    def _relevant(self, paths: Iterable[str]) -> set[str]:
        """The paths of a batch that may change what the index holds: anything under a root,
        and history.db; not the index's own files nor the blob store."""
        own = {self.db_path + suffix for suffix in _INDEX_SUFFIXES}
        return {
            path
            for path in paths
            if path not in own
            and not is_under_any(path, [self._blobs_dir])
            and (path.startswith(self._history_db) or is_under_any(path, self.roots))
        }

    # -- the index --------------------------------------------------------------------------

    def _open_index(self) -> None:
        if self._index is not None:
            self._index.close()
        self._index = SessionIndex.open(self.agent_dir)

    def _index_was_replaced(self) -> bool:
        try:
            stat = os.stat(self.db_path)
        except FileNotFoundError:
            return True
        return (stat.st_dev, stat.st_ino) != self._db_identity

    def _remember_index_file(self) -> None:
        stat = os.stat(self.db_path)
        self._db_identity = (stat.st_dev, stat.st_ino)

    def _sync(self, workers: int | None = 1) -> SyncReport:
        assert self._index is not None
        # One process: a watcher reads appended bytes, rarely a whole file.
        report = self._index.sync(workers=workers)
        self._remember_index_file()  # a damaged index.db is rebuilt by the sync itself
        return report

    def _full_sync(self, reason: str, workers: int | None = 1) -> None:
        """A sync that no event asked for: one line for it, and (but for the first) one for
        each file it read."""
        report = self._sync(workers)
        self.on_change(
            AppliedChange(
                "synced", reason=reason, files=report.files_seen, entries=report.entries_added
            )
        )
        if reason != "start":
            self._tell(report, set(), {})

    def _apply(self, paths: set[str]) -> None:
        """One sync for a batch of events; a change per file it touched."""
        session_files = {path for path in paths if path.endswith(".jsonl")}
        before = {path: self._indexed(path) for path in session_files}
        self._tell(self._sync(), session_files, before)

    def _tell(
        self,
        report: SyncReport,
        session_files: set[str],
        before: dict[str, tuple[str, int] | None],
    ) -> None:
        """A change for every file the sync read and every one of ``session_files`` (named
        by events) that came or went; a count for those no event named."""
        read = set(report.read_paths)
        told = {"added": 0, "removed": 0}
        for path in sorted(read | session_files):
            was, now = before.get(path), self._indexed(path)
            if path in read and now is not None:
                self.on_change(AppliedChange("indexed", path, now[0], now[1]))
            elif now is not None and was is None:
                told["added"] += 1
                self.on_change(AppliedChange("added", path, now[0], now[1]))
            elif now is None and was is not None:
                told["removed"] += 1
                self.on_change(AppliedChange("removed", path, was[0]))
        # Files whose names no event gave: a folder moved (renamed files) or taken away.
        if report.files_renamed > told["added"]:
            self.on_change(AppliedChange("moved", files=report.files_renamed - told["added"]))
        if report.files_removed > told["removed"]:
            self.on_change(AppliedChange("removed", files=report.files_removed - told["removed"]))

    def _indexed(self, path: str) -> tuple[str, int] | None:
        """(session id, entry count) of an indexed session file, else None."""
        assert self._index is not None
        try:
            session = self._index.find_session(path)
        except SessionNotFoundError:
            return None
        return session.id, session.entry_count
