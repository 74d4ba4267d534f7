"""The demo's folder: what may be replaced in it and the marker that records the demo's files.

The marker lists every file the demo wrote with its sha256; a later run replaces only those
files (and the index, a mirror it rewrites) and refuses, deleting nothing, a folder holding
anything else (:func:`prepare_demo_dir`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from xcsh_store.errors import XcshStoreError
from xcsh_store.format.storage import FileSessionStorage, write_atomically
from xcsh_store.paths import FILE_MODE, INDEX_DB_NAME, ensure_private_dir

DEMO_MARKER = ".xcsh-store-demo"
# The index is a mirror of the demo's files that every sync rewrites; a later run may replace it
# whatever it holds (the files it mirrors are checked).
# So is the price table that versions before the user's cache folder kept beside it
# (agents/prices/price_cache.py CACHE_NAME).
INDEX_FILES = (
    *(
        INDEX_DB_NAME + suffix
        for suffix in ("", "-wal", "-shm", "-journal", ".sync-lock", ".watch-lock")
    ),
    "price-table.json",
)
# SQLite's companions of history.db that a reader leaves behind: the shared-memory index never
# holds data, and an empty write-ahead log holds none either.
HISTORY_COMPANIONS = ("history.db-shm", "history.db-wal")
# Refusals name this many of the files that are in the way.
SHOWN_FOREIGN_FILES = 3


class DemoDirError(XcshStoreError):
    """The demo would overwrite a folder, or files, that it did not write."""


def prepare_demo_dir(agent_dir: str) -> None:
    """Make ``agent_dir`` ready for :func:`~xcsh_store.demo.build.build_demo`: a new or empty
    folder is used as it is; one holding an earlier demo loses that demo's files (each checked
    against the sha256 the marker recorded) and its index. Anything else, a file the demo did
    not write or one that changed since, makes it refuse before deleting anything: the demo
    never touches a file that is not its own."""
    if not os.path.isdir(agent_dir) or not os.listdir(agent_dir):
        ensure_private_dir(agent_dir)
        return
    marker = _read_marker(agent_dir)
    recorded: dict[str, Any] = marker["files"]
    found = list(_folder_contents(agent_dir))
    foreign = [
        path
        for path in found
        if not _replaceable(agent_dir, path) and recorded.get(path) != _sha256(agent_dir, path)
    ]
    if foreign:
        shown = ", ".join(
            f"{path} (changed)" if path in recorded else path
            for path in foreign[:SHOWN_FOREIGN_FILES]
        )
        more = len(foreign) - SHOWN_FOREIGN_FILES
        raise DemoDirError(
            f"{agent_dir} holds {len(foreign)} file{'s' if len(foreign) != 1 else ''} "
            f"`xcsh-store demo` did not write: {shown}{f' and {more} more' if more > 0 else ''}; "
            "nothing was deleted (move them away or give the demo another folder with "
            "--agent-dir)"
        )
    # Only what was found inside the folder is deleted, never a path the marker names: a
    # marker is a file anyone could have edited.
    for path in found:
        full = os.path.join(agent_dir, path)
        if not _replaceable(agent_dir, path) and _sha256(agent_dir, path) != recorded.get(path):
            raise DemoDirError(f"{full} changed while the demo was replacing its files")
        os.unlink(full)
    listed = set(marker["dirs"])
    for path in sorted(_folders(agent_dir), key=lambda name: name.count("/"), reverse=True):
        if path in listed:
            try:
                os.rmdir(os.path.join(agent_dir, path))
            except OSError as error:
                # A folder something was put in since stays as it is, with its content.
                if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
    # The marker stays until the new one replaces it: a run that is interrupted leaves files
    # the next run recognises (the demo writes the same bytes every time).


def _replaceable(agent_dir: str, path: str) -> bool:
    """The index (a mirror of the demo's files) and history.db's companions while they hold no
    data: a later run replaces these whatever they hold, as a sync rewrites them."""
    if path in INDEX_FILES:
        return True
    if path not in HISTORY_COMPANIONS:
        return False
    try:
        info = os.lstat(os.path.join(agent_dir, path))
    except FileNotFoundError:
        return True
    return stat.S_ISREG(info.st_mode) and (path.endswith("-shm") or info.st_size == 0)


def _read_marker(agent_dir: str) -> dict[str, Any]:
    """The marker's record of the demo's files; a folder without one is not a demo."""
    path = os.path.join(agent_dir, DEMO_MARKER)
    if not os.path.lexists(path):
        raise DemoDirError(
            f"{agent_dir} is not empty and was not made by `xcsh-store demo`; "
            "give the demo another folder with --agent-dir"
        )
    try:
        with open(path, "rb") as handle:
            marker = json.loads(handle.read())
    except (OSError, ValueError):
        marker = None
    if (
        not isinstance(marker, dict)
        or not isinstance(marker.get("files"), dict)
        or not isinstance(marker.get("dirs"), list)
    ):
        raise DemoDirError(
            f"{agent_dir} has a demo marker that does not list the demo's files (an older "
            "xcsh-store wrote it, or it was edited); nothing was deleted: delete the folder "
            "yourself or give the demo another folder with --agent-dir"
        )
    return marker


def _folder_contents(agent_dir: str) -> Iterator[str]:
    """The relative path of everything in the folder that is not a folder (symlinks to folders
    included), the marker aside, in a stable order."""
    for folder, dirs, names in os.walk(agent_dir):
        dirs.sort()
        relative = os.path.relpath(folder, agent_dir)
        linked = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
        for name in sorted(names + linked):
            path = name if relative == "." else f"{relative}/{name}"
            if path != DEMO_MARKER:
                yield path


def _folders(agent_dir: str) -> Iterator[str]:
    """The relative path of every real folder below ``agent_dir``."""
    for folder, dirs, _ in os.walk(agent_dir):
        dirs.sort()
        for name in dirs:
            if not os.path.islink(os.path.join(folder, name)):
                yield os.path.relpath(os.path.join(folder, name), agent_dir)


def _sha256(agent_dir: str, path: str) -> str:
    """The file's sha256, or "" for anything but a regular file (a symlink is never followed)."""
    try:
        descriptor = os.open(
            os.path.join(agent_dir, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        )
    except OSError:
        return ""
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return hashlib.file_digest(handle, "sha256").hexdigest()


def write_marker(agent_dir: str, written: list[str], now: datetime) -> None:
    """Record the files the demo wrote (relative paths) with their sha256 and the folders they
    are in, readable by the owner only; then give those folders the story's time."""
    files = {path: _sha256(agent_dir, path) for path in written}
    dirs = sorted(
        {
            os.path.join(*parts[:depth])
            for parts in (path.split("/") for path in written)
            for depth in range(1, len(parts))
        }
    )
    marker = {
        "note": "Made by `xcsh-store demo`. Running it again replaces these files (and the "
        "index) and nothing else; it refuses while the folder holds any other file.",
        "files": files,
        "dirs": dirs,
    }
    path = os.path.join(agent_dir, DEMO_MARKER)
    text = json.dumps(marker, indent=1, sort_keys=True).encode() + b"\n"
    write_atomically(FileSessionStorage(), path, [text])
    os.chmod(path, FILE_MODE)
    moment = now.timestamp()
    os.utime(path, (moment, moment))
    deepest_first = sorted(dirs, key=lambda name: name.count("/"), reverse=True)
    for folder in [*(os.path.join(agent_dir, name) for name in deepest_first), agent_dir]:
        os.utime(folder, (moment, moment))
