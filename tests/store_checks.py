"""Checks shared by the reliability and index tests: the index against a fresh parse, a
whole-store survival check, hang guards, litter."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from isolation import isolated_environment

import xcsh_store
from xcsh_store import (
    SessionContext,
    SessionManager,
    build_session_context,
    load_entries_from_file,
)
from xcsh_store.format.loader import load_session
from xcsh_store.format.versions import find_header_index, synthetic_ids_for
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import migrations_dir
from xcsh_store.js import stringify as dumps

BLOB_NAME = re.compile(r"[0-9a-f]{64}")


class Hang(BaseException):
    """An operation took longer than its guard allows: it would have hung.

    A BaseException, so that code which skips files on ``Exception`` cannot swallow it.
    """


@contextlib.contextmanager
def no_hang(seconds: float = 300.0) -> Iterator[None]:
    """Fail (instead of waiting forever) when the block runs longer than ``seconds``.

    A guard against hangs, not a speed test: the default is far above what any guarded block
    needs even on a loaded machine, so it can only fire on a real hang or a runaway loop.

    SIGALRM interrupts even a blocking system call such as opening a FIFO.
    """

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    # Repeats, in case the first alarm lands where something catches BaseException.
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def entry_ids(path: str | Path) -> list[str]:
    """Ids of the entries (not the header) the loader finds in a session file."""
    return [
        record["id"]
        for record in load_entries_from_file(str(path))
        if record.get("type") not in ("session", "title") and isinstance(record.get("id"), str)
    ]


def loaded_entries(path: str, index: SessionIndex) -> list[dict[str, Any]]:
    """The entries of a file as the loader sees them, with the index's deterministic ids."""
    loaded = load_session(path, blob_store=index.blob_store, new_id=synthetic_ids_for(path))
    return loaded.entries[find_header_index(loaded.entries) + 1 :]


def same_context(one: SessionContext, other: SessionContext) -> bool:
    """Equality that also holds for messages nested too deep for ``==`` (it recurses)."""
    names = [field.name for field in dataclasses.fields(SessionContext)]
    return dumps([getattr(one, name) for name in names]) == dumps(
        [getattr(other, name) for name in names]
    )


def assert_every_leaf_context_matches(index: SessionIndex) -> int:
    """Every session's context at every leaf, at its default leaf and at every 25th entry (for
    compaction boundaries) equals the one built from a fresh parse; how many were compared."""
    checked = 0
    for session in index.list_sessions():
        entries = loaded_entries(session.path, index)
        tree = index.tree(session)
        for leaf in [*tree.leaves, None, *list(tree.entries)[::25]]:
            expected = build_session_context(entries, leaf or session.last_entry_id)
            assert index.context(session, leaf) == expected, (session.path, leaf)
            checked += 1
    return checked


def assert_index_matches_files(agent_dir: Path) -> SessionIndex:
    """Sync, then the index verifies clean and every leaf's context equals a fresh parse."""
    index = SessionIndex.open(str(agent_dir))
    try:
        report = index.sync()
        assert not report.unreadable, report.unreadable
        verification = index.verify()
        assert verification.clean, verification.differences or verification.refcount_errors
        for session in index.list_sessions():
            entries = loaded_entries(session.path, index)
            for leaf in [*index.tree(session).leaves, None]:
                expected = build_session_context(entries, leaf or session.last_entry_id)
                assert same_context(index.context(session, leaf), expected), (session.path, leaf)
    except BaseException:
        index.close()
        raise
    return index


def assert_store_survives(agent_dir: Path, path: Path, valid_ids: list[str]) -> SessionIndex:
    """The loader, the index and the manager keep every valid entry of ``path``, in order, and
    the manager can append to it afterwards without losing anything. Returns the open index."""
    found = entry_ids(path)
    assert [entry_id for entry_id in found if entry_id in valid_ids] == valid_ids, found
    index = assert_index_matches_files(agent_dir)
    session = index.find_session(str(path))
    indexed = [row.id for row in index.tree(session).entries.values()]
    assert set(valid_ids) <= set(indexed)
    with SessionManager.open(str(path)) as manager:
        assert set(valid_ids) <= {entry["id"] for entry in manager.get_entries()}
        added = manager.append_message({"role": "user", "content": "appended afterwards"})
    assert [entry_id for entry_id in entry_ids(path) if entry_id in valid_ids] == valid_ids
    assert added in entry_ids(path)
    index.sync()
    assert index.verify().clean
    return index


def tree_ids(manager: SessionManager) -> list[str]:
    """Every id in the manager's tree, once per appearance (walked without recursion)."""
    pending, found = list(manager.get_tree()), []
    while pending:
        node = pending.pop()
        found.append(node.entry["id"])
        pending.extend(node.children)
    return found


def blob_files_are_whole(blobs_dir: Path) -> list[str]:
    """Names of the blob files (64 hex digits) whose bytes do not hash to their name."""
    if not blobs_dir.is_dir():
        return []
    return [
        entry.name
        for entry in os.scandir(blobs_dir)
        if BLOB_NAME.fullmatch(entry.name)
        and hashlib.sha256(Path(entry.path).read_bytes()).hexdigest() != entry.name
    ]


def age(path: Path, seconds: float) -> None:
    """Date a file's access and modification times ``seconds`` back from now."""
    moment = time.time() - seconds
    os.utime(path, (moment, moment))


class SmallDisk:
    """A tmpfs of a few hundred KiB mounted for one test; ``grow`` frees space by remounting.
    ``owner``: the (uid, gid) its root belongs to (default: root's)."""

    def __init__(
        self, mount_point: Path, size_kib: int, owner: tuple[int, int] | None = None
    ) -> None:
        self.path = mount_point
        mount_point.mkdir(parents=True, exist_ok=True)
        options = f"size={size_kib}k,mode=0700"
        if owner is not None:
            options += f",uid={owner[0]},gid={owner[1]}"
        self._mount("-t", "tmpfs", "-o", options, "tmpfs")

    def _mount(self, *arguments: str) -> None:
        subprocess.run(
            ["mount", *arguments, str(self.path)], check=True, capture_output=True, timeout=30
        )

    def grow(self, size_kib: int) -> None:
        self._mount("-o", f"remount,size={size_kib}k")

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False, timeout=30)


def mount_small_disk(
    mount_point: Path, size_kib: int, owner: tuple[int, int] | None = None
) -> SmallDisk | None:
    """A mounted :class:`SmallDisk`, or None where this process may not mount one."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return None
    try:
        return SmallDisk(mount_point, size_kib, owner)
    except (subprocess.CalledProcessError, OSError):
        return None


def fill_disk(folder: Path, leave: int = 0) -> Path:
    """A file that takes every free byte of ``folder``'s file system but ``leave``."""
    filler = folder / "filler"
    found = os.statvfs(folder)
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if leave:
            os.write(descriptor, b"\0" * max(found.f_bavail * found.f_frsize - leave, 0))
        else:
            while os.write(descriptor, b"\0" * 4096):
                pass
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(descriptor)
    return filler


NOBODY = 65534


def can_drop_to_nobody() -> bool:
    """Root can run a child as ``nobody``, for whom permissions are really enforced."""
    return os.geteuid() == 0


# Everything the child needs is imported before it gives up root: the interpreter and its
# libraries may live where ``nobody`` cannot read (here: under /root).
# Every module of the store is imported before the child gives up root: the store imports some
# only when first used, and nobody may not read the interpreter's own library (under /root).
_DROP_TO_NOBODY = """
import importlib, json, os, pkgutil, sys
import xcsh_store
for module in pkgutil.walk_packages(xcsh_store.__path__, "xcsh_store."):
    if module.name != "xcsh_store.__main__":
        importlib.import_module(module.name)
if os.geteuid() == 0:
    os.setgroups([])
    os.setgid({nobody})
    os.setuid({nobody})
"""


@functools.cache
def readable_package() -> Path:
    """A copy of the package (with its migrations) that every user can read, for the child of
    :func:`run_python`: the checkout may sit in a private folder (a 0700 home or ``mktemp -d``),
    where ``nobody`` cannot read the migrations the store loads after the child gives up root."""
    base = Path(tempfile.mkdtemp(prefix="xcsh-package-"))
    atexit.register(shutil.rmtree, base, True)
    package = base / "xcsh_store"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(xcsh_store.__file__).parent, package, ignore=ignore)
    if not (package / "migrations").is_dir():
        shutil.copytree(migrations_dir(), package / "migrations", ignore=ignore)
    for path in [base, *base.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return base


def run_python(code: str, agent_dir: Path, *arguments: str) -> str:
    """Run ``code`` in a fresh interpreter on ``agent_dir``, as ``nobody`` when we are root
    (root reads any file whatever its mode); returns stdout, fails with stderr."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **isolated_environment(agent_dir.parent),
        "XCSH_AGENT_DIR": str(agent_dir),
        "XCSH_TERMINAL_ID": "unreadable-test",
        "PYTHONPATH": str(readable_package()),
    }
    result = subprocess.run(
        # From the copy's folder: `python -c` puts the working directory first on sys.path.
        [sys.executable, "-c", _DROP_TO_NOBODY.format(nobody=NOBODY) + code, *arguments],
        env=environment,
        cwd=readable_package(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def hand_over(folder: Path) -> None:
    """Give ``folder`` and everything below it to the user :func:`run_python` runs as."""
    if not can_drop_to_nobody():
        return
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, NOBODY, NOBODY)


# Python's own sqlite3 (SQLite 3.40 on Debian 12), in a child process (index.md: one SQLite
# library per process): every row of every table and view, then a full-text query.
_STDLIB_READER = """
import json, sqlite3, sys
from urllib.parse import quote
db = sqlite3.connect(f"file:{quote(sys.argv[1])}?mode=ro", uri=True)
kinds = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
names = [row[0] for row in db.execute(kinds)]
counts, errors = {}, {}
for name in names:
    try:
        counts[name] = len(db.execute(f'SELECT * FROM "{name}"').fetchall())
    except sqlite3.Error as error:
        errors[name] = str(error)
try:
    hits = [row[0] for row in db.execute(
        "SELECT e.id FROM entries_fts JOIN entries AS e ON e.pk = entries_fts.rowid"
        " WHERE entries_fts MATCH ? ORDER BY e.pk", (sys.argv[2],))]
except sqlite3.Error as error:
    hits = str(error)
print(json.dumps({"version": sqlite3.sqlite_version, "counts": counts, "errors": errors,
                  "hits": hits}))
"""


def stdlib_reads(db_path: Path, match: str = '"xcsh"') -> dict[str, Any]:
    """What Python's sqlite3 reads of ``db_path``: its SQLite ``version``, the rows of each table
    and view it read (``counts``), the ``errors`` of those it could not, and the entry ids
    ``match`` finds in entries_fts (or the error)."""
    result = subprocess.run(
        [sys.executable, "-c", _STDLIB_READER, str(db_path), match],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(result.stdout)
