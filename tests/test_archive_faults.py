"""The archive under faults, with real processes and real file systems (issue 34 item 6): a sync
killed (SIGKILL) at random moments while it archives, a full disk under the archive, an archive
folder the store may not write to. Afterwards the index and the archive agree (every indexed
byte archived, no more), verify is clean, the next sync completes, and no agent's file was ever
written by the store (bytes, mtime and mode)."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from agent_homes import lay_out_agents, lay_out_documents
from archive_kills import archive_disagreements, grows, kill_during_sync
from real_home import RealHome, lay_out_home
from store_checks import SmallDisk, can_drop_to_nobody, fill_disk, hand_over, run_python

from xcsh_store.homes import get_cache_dir
from xcsh_store.index import SessionIndex
from xcsh_store.index.archive.frames import APPEND, Contents, read_contents

Snapshot = dict[str, tuple[bytes, int, int]]


def _snapshot(home: Path, keep: object = None) -> Snapshot:
    """Every agent's file below ``home`` (those ``keep`` takes) with its bytes, mtime, mode; not
    the store's own cache folder (the price table it keeps there)."""
    cache = Path(get_cache_dir())
    found = {}
    for path in sorted(home.rglob("*")):
        if path.is_relative_to(cache):
            continue
        if path.is_file() and (keep is None or keep(path)):  # type: ignore[operator]
            info = path.stat()
            found[str(path)] = (path.read_bytes(), info.st_mtime_ns, stat.S_IMODE(info.st_mode))
    return found


def _consistent_after_the_next_sync(agent_dir: Path) -> None:
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
        assert report.archive_error is None and not report.unreadable
        verified = index.verify()
        assert verified.clean, (verified.differences, verified.archive_problems)
    assert archive_disagreements(agent_dir) == []


@pytest.fixture
def home(agent_dir: Path, real_home: RealHome) -> RealHome:
    lay_out_agents(real_home.home)
    lay_out_documents(real_home.home)
    return real_home


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_sigkill_in_an_archiving_sync_leaves_index_and_archive_agreeing(
    agent_dir: Path, home: RealHome, seed: int
):
    untouched = _snapshot(home.home, lambda path: not grows(path))
    kill_during_sync(home.home, agent_dir, seed)
    assert archive_disagreements(agent_dir) == []
    _consistent_after_the_next_sync(agent_dir)
    assert _snapshot(home.home, lambda path: not grows(path)) == untouched


def test_a_full_disk_under_the_archive_stops_the_sync_cleanly(
    small_disk: SmallDisk, real_home: RealHome
):
    agent_dir = small_disk.path / "agent"
    agent_dir.mkdir()
    claude = real_home.of("claude")
    # Room for the first sync (its index and archive take about 9 MB), then the disk is filled.
    small_disk.grow(32768)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    before = _snapshot(real_home.home)
    # More sessions than the disk has room for: their archive cannot all be written.
    lay_out_agents(real_home.home)
    for path in claude.values():
        with open(path, "ab") as stream:
            stream.write(path.read_bytes())  # (a Claude file read twice: its lines again)
    grown = _snapshot(real_home.home)
    filler = fill_disk(small_disk.path, 150_000)
    with SessionIndex.open(str(agent_dir)) as index:
        try:
            report = index.sync(workers=1)
        except Exception as error:  # SQLite found the disk full first: said in one line
            assert "full" in str(error), error
        else:
            assert report.archive_error is not None
            assert "No space left on device" in report.archive_error
    assert archive_disagreements(agent_dir) == []
    assert _snapshot(real_home.home) == grown and set(before) <= set(grown)
    filler.unlink()
    small_disk.grow(65536)
    _consistent_after_the_next_sync(agent_dir)
    assert _snapshot(real_home.home) == grown


def _limited(limit: int) -> None:
    """In the child, before it runs Python: no file may grow past ``limit`` bytes (a write
    past it fails with EFBIG, SIGXFSZ ignored, as Python itself does)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_a_file_size_limit_under_the_archive_stops_the_sync_cleanly(
    agent_dir: Path, home: RealHome
):
    """The full disk where no small file system can be mounted: RLIMIT_FSIZE at the size of
    the largest archive file, whose source grows, so that its append cannot be written."""
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    appends = []
    for path in (agent_dir / "archive").rglob("*.zst"):
        contents = read_contents_of(path)
        if contents.header is not None and contents.header.kind == APPEND:
            appends.append((path.stat().st_size, path, contents.source))
    size, largest, source = max(appends)
    assert source is not None
    lines = Path(source).read_bytes().splitlines(keepends=True)
    with open(source, "ab") as stream:
        stream.write(b"".join(lines[-20:]))  # (its last lines again: new bytes to archive)
    grown = _snapshot(home.home)
    child = subprocess.run(
        [sys.executable, "-c", _SYNC],
        env={**os.environ, "XCSH_AGENT_DIR": str(agent_dir)},
        preexec_fn=lambda: _limited(size),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    error = json.loads(child.stdout)["archive_error"]
    assert error is not None and "File too large" in error and str(largest) in error
    assert largest.stat().st_size == size  # (what the failed write began is cut off)
    assert archive_disagreements(agent_dir) == []
    assert _snapshot(home.home) == grown
    _consistent_after_the_next_sync(agent_dir)
    assert largest.stat().st_size > size
    assert _snapshot(home.home) == grown


@pytest.mark.skipif(not can_drop_to_nobody(), reason="permissions bind only a user not root")
def test_an_archive_folder_without_permission_stops_the_sync_cleanly(shared_agent_dir: Path):
    agent_dir = shared_agent_dir
    # The home of run_python's child is the agent dir's parent: the agents' folders there.
    home = lay_out_home(agent_dir.parent)
    hand_over(agent_dir.parent)
    run_python(_SYNC, agent_dir)  # the first sync, as the user the store runs as
    for path in list(home.files.values())[:6]:
        with open(path, "ab") as stream:
            stream.write(path.read_bytes().splitlines(keepends=True)[-1])

    def agents(path: Path) -> bool:
        return not path.is_relative_to(agent_dir)

    before = _snapshot(home.home, agents)
    archive = agent_dir / "archive"
    archive.chmod(0)
    try:
        found = json.loads(run_python(_SYNC, agent_dir))
    finally:
        archive.chmod(0o700)
    assert found["archive_error"] is not None and "Permission denied" in found["archive_error"]
    assert archive_disagreements(agent_dir) == []
    assert json.loads(run_python(_SYNC, agent_dir))["archive_error"] is None
    assert archive_disagreements(agent_dir) == []
    assert json.loads(run_python(_VERIFY, agent_dir))["clean"]
    assert _snapshot(home.home, agents) == before


_SYNC = """
import json, sys
from xcsh_store.index import SessionIndex
with SessionIndex.open() as index:
    report = index.sync(workers=1)
print(json.dumps({"archive_error": report.archive_error}))
"""


_VERIFY = """
import json
from xcsh_store.index import SessionIndex
with SessionIndex.open() as index:
    print(json.dumps({"clean": index.verify().clean}))
"""


def test_a_sync_that_is_killed_leaves_no_tail_the_next_one_keeps(agent_dir: Path, home: RealHome):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(workers=1)
    archive = agent_dir / "archive"
    name = max(archive.rglob("*.zst"), key=lambda path: path.stat().st_size)
    recorded = name.stat().st_size
    with open(name, "ab") as stream:
        stream.write(os.urandom(5000))  # what a sync killed before its commit leaves
    source = next(path for path in home.of("codex").values())
    with open(source, "ab") as stream:
        stream.write(source.read_bytes().splitlines(keepends=True)[-1])
    _consistent_after_the_next_sync(agent_dir)
    assert name.stat().st_size >= recorded


def read_contents_of(path: Path) -> Contents:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        return read_contents(descriptor)
    finally:
        os.close(descriptor)
