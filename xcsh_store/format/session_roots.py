"""Session folders outside ``<agent>/sessions`` whose sessions keep their blobs in this agent
dir: ``<agent>/session-roots.json``, written by the manager, scanned by every sync.

A session created in a custom folder (``SessionManager.create(cwd, "/some/dir")``) writes its
images to the agent dir's ``blobs/``; unless the index scans that folder too, its refs are
never counted and the blob GC would take the blobs for unreferenced. So the manager records
the folder here before it writes the first blob of such a session, and the index treats every
folder listed as a root (a missing one makes ``gc --apply`` refuse, like any missing root).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

import orjson

from xcsh_store.errors import XcshStoreError
from xcsh_store.format.storage import FileSessionStorage, write_atomically
from xcsh_store.paths import FILE_MODE, ensure_private_dir

SESSION_ROOTS_NAME = "session-roots.json"


def session_roots_path(agent_dir: str) -> str:
    return os.path.join(agent_dir, SESSION_ROOTS_NAME)


def read_session_roots(agent_dir: str) -> list[str]:
    """The folders recorded, in the order they were; [] when none ever was."""
    path = session_roots_path(agent_dir)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise XcshStoreError(f"{path} cannot be read: {error.strerror}") from error
    try:
        roots = orjson.loads(data)
    except orjson.JSONDecodeError:
        roots = None
    if type(roots) is not list or not all(isinstance(root, str) for root in roots):
        raise XcshStoreError(f"{path} is not a JSON list of folders: repair it or delete it")
    return roots


def record_session_root(agent_dir: str, folder: str) -> None:
    """Add ``folder`` (made absolute) to the list, unless it is there already."""
    folder = os.path.abspath(folder)
    with _locked(agent_dir):
        roots = read_session_roots(agent_dir)
        if folder not in roots:
            _write(agent_dir, [*roots, folder])


def forget_session_root(agent_dir: str, folder: str) -> bool:
    """Remove ``folder`` from the list; whether it was there."""
    folder = os.path.abspath(folder)
    if folder not in read_session_roots(agent_dir):
        return False  # (and no lock file is made in an agent dir that has no list)
    with _locked(agent_dir):
        roots = read_session_roots(agent_dir)
        if folder not in roots:
            return False
        _write(agent_dir, [root for root in roots if root != folder])
    return True


@contextlib.contextmanager
def _locked(agent_dir: str) -> Iterator[None]:
    """One writer at a time, so that two managers adding folders at once both get theirs in."""
    ensure_private_dir(agent_dir)
    lock = os.open(
        session_roots_path(agent_dir) + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
    )
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)


def _write(agent_dir: str, roots: list[str]) -> None:
    """Replace the file whole: readers see old or new, never half."""
    lines = [orjson.dumps(roots, option=orjson.OPT_INDENT_2) + b"\n"]
    write_atomically(FileSessionStorage(), session_roots_path(agent_dir), lines)
