"""The file of a live session: when it is written, its append writer, its latched error."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from xcsh_store.errors import PersistenceError
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.persist import entry_to_line
from xcsh_store.format.storage import SessionStorage, SessionStorageWriter, write_atomically
from xcsh_store.paths import file_timestamp
from xcsh_store.times import iso_now

log = logging.getLogger("xcsh_store")


class SessionFile:
    """Keeps one session's JSONL file in step with its tree: a new session is written whole with
    its first assistant message, later entries are appended, and a file that needs it is written
    whole again (compatibility: Persistence as in the reference; Header always first).

    The first persistence error is latched: every later write raises it until the manager moves to
    another session with :meth:`detach` (compatibility: Synchronous writes with a latched error).
    ``records`` gives the session's records in file order for whole-file writes; ``path`` is the
    file (None for a session that is never written).
    """

    def __init__(
        self,
        storage: SessionStorage,
        blob_store: BlobStore,
        records: Callable[[], Iterable[dict[str, Any]]],
    ) -> None:
        self.path: str | None = None
        self._storage = storage
        self._blob_store = blob_store
        self._records = records
        # The whole file has been written, and every entry since appended (the reference's flag).
        self._flushed = False
        # Written even before an assistant message: a loaded file, or ensure_on_disk.
        self._ensured_on_disk = False
        self._needs_rewrite = False
        # The file on disk ends without a newline: the next append must end that line first.
        self._cut_last_line = False
        self._writer: SessionStorageWriter | None = None
        self._error: PersistenceError | None = None

    # ----------------------------------------------------------------------------------------
    # State changes of the manager's lifecycle

    def detach(self) -> None:
        """Close the append writer and forget a latched error: the manager moves on."""
        self._close_writer()
        self._error = None

    def start_unwritten(self) -> None:
        """A new session: nothing of it is on disk, and nothing is until an assistant message."""
        self._flushed = False
        self._ensured_on_disk = False
        self._needs_rewrite = False
        self._cut_last_line = False

    def loaded(self, migrated: bool, unterminated: bool) -> None:
        """The session was read from the file: a migrated one must be written back."""
        self._flushed = True
        self._ensured_on_disk = True
        self._needs_rewrite = migrated
        self._cut_last_line = unterminated

    def replaced(self) -> None:
        """The file held no valid session: the new session takes its place at once."""
        self._needs_rewrite = True

    def write_if_needed(self) -> None:
        """A migration is written back at once; a replaced file gets its header now
        (compatibility: Migrations are written back at once; Header always first)."""
        if self._needs_rewrite:
            self.write_and_keep()

    def write_and_keep(self) -> None:
        """Write the whole session now, and keep it written from now on."""
        self.rewrite()
        self._ensured_on_disk = True

    def write_to(self, path: str) -> None:
        """Write the whole session to a new file, which holds nothing of it before."""
        self.path = path
        self._flushed = False
        self.rewrite()

    def set_aside_invalid(self) -> None:
        """A non-empty file without a valid header is renamed, never overwritten (compatibility:
        Invalid files are moved aside)."""
        path = self.path
        if path is None or not self._has_content():
            return
        stamp = file_timestamp(iso_now())
        target = f"{path}.invalid-{stamp}"
        suffix = 1
        while self._storage.exists(target):
            target = f"{path}.invalid-{stamp}-{suffix}"
            suffix += 1
        try:
            self._storage.rename(path, target)
        except Exception as error:
            raise self._fail(error, "set aside the invalid") from error
        log.warning("%s has no valid session header; moved it to %s", path, target)

    # ----------------------------------------------------------------------------------------
    # Writes

    def rewrite(self) -> None:
        """Atomically replace the file with every record (compatibility: Header always first)."""
        assert self.path is not None
        self._raise_latched()
        self._close_writer()
        blob_store = self._blob_store
        try:
            write_atomically(
                self._storage,
                self.path,
                (entry_to_line(record, blob_store) for record in self._records()),
            )
        except Exception as error:
            raise self._fail(error, "rewrite") from error
        self._needs_rewrite = False
        self._cut_last_line = False
        self._flushed = True

    def ensure_on_disk(self) -> None:
        """Write the session now unless the file already holds it, and keep it written."""
        if not (self._flushed and not self._needs_rewrite and self._has_content()):
            self.rewrite()
        self._ensured_on_disk = True

    def append(self, entry: dict[str, Any], has_assistant: bool) -> None:
        """Write one freshly appended entry, or defer it until the session has an assistant
        message (compatibility: Persistence as in the reference)."""
        self._raise_latched()
        if not self._ensured_on_disk and not has_assistant:
            self._flushed = False
            return
        # If the file vanished or was emptied under us, an append would leave it without its
        # header; write the whole session instead (compatibility: Header always first).
        if self._needs_rewrite or not self._flushed or not self._has_content():
            self.rewrite()
            return
        line = entry_to_line(entry, self._blob_store)
        if self._cut_last_line:
            # A crash or a full disk cut the last line short: glued onto it, this entry would be
            # unreadable too. Ending the cut line first leaves it a malformed line on its own.
            line = b"\n" + line
        try:
            if self._writer is None:
                assert self.path is not None  # the rewrite above, on the first write, set it
                self._writer = self._storage.open_writer(self.path, "a")
            self._writer.write_line(line)
        except Exception as error:
            raise self._fail(error, "append to") from error
        self._cut_last_line = False

    def flush(self) -> None:
        """Make everything written so far durable (writer flush + fsync)."""
        self._raise_latched()
        if self._writer is None:
            return
        try:
            self._writer.flush()
            self._writer.fsync()
        except Exception as error:
            raise self._fail(error, "flush") from error

    def close(self) -> None:
        """Flush and close the append writer; raise the latched persistence error, if any.

        A later append opens a new writer.
        """
        try:
            if self._writer is not None and self._error is None:
                self.flush()
        finally:
            self._close_writer()
        self._raise_latched()

    # ----------------------------------------------------------------------------------------
    # Helpers

    def _has_content(self) -> bool:
        """Whether the file exists and is not empty; when that cannot be told, False (callers
        then write the whole file, the safe choice)."""
        try:
            return self._storage.stat(self.path or "").size > 0
        except OSError:
            return False

    def _raise_latched(self) -> None:
        if self._error is not None:
            raise self._error

    def _fail(self, error: Exception, action: str) -> PersistenceError:
        """Latch the first persistence error (logged once) and return what to raise."""
        if isinstance(error, PersistenceError):
            wrapped = error
        else:
            wrapped = PersistenceError(f"Could not {action} session file {self.path}: {error}")
            wrapped.__cause__ = error
        if self._error is None:
            self._error = wrapped
            log.error("Session persistence error (session file %s): %s", self.path, error)
        return wrapped

    def _close_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()
