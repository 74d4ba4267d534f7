"""A full disk says so, and what was kept, on a real small file system: ``sync`` (SQLite,
which reports some of these as a plain "disk I/O error") and ``export parquet``. The team
server's full disk: test_team_messages.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from session_builder import random_tree_session, sessions_dir
from store_checks import SmallDisk, fill_disk

from xcsh_store.cli import cli


def sessions(agent_dir: Path, count: int, first: int = 0) -> dict[Path, bytes]:
    folder = sessions_dir(agent_dir)
    written = [
        random_tree_session(folder / f"2026-01-0{n % 9 + 1}T00-00-00-000Z_s{n}.jsonl", n, 60)
        for n in range(first, first + count)
    ]
    return {path: path.read_bytes() for path in written}


def run(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(arguments))
    return result.exit_code, result.stderr


# Room left for the index: enough for its first pages (SQLite then finds the disk full), and
# too little for its shared-memory file (which SQLite reports as a disk I/O error).
@pytest.mark.parametrize("leave", [200_000, 30_000, 0])
def test_sync_on_a_full_disk_says_so_and_goes_on_after(small_disk: SmallDisk, leave: int) -> None:
    agent = small_disk.path / "agent"
    files = sessions(agent, 20)
    filler = fill_disk(small_disk.path, leave)
    code, error = run("--agent-dir", str(agent), "sync")
    assert code == 1
    assert error.startswith(f"Error: The disk holding {agent} is full (")
    assert f"{agent}/index.db keeps what was written before" in error
    assert "the session files are not affected" in error and error.count("\n") == 1
    assert {path: path.read_bytes() for path in files} == files
    filler.unlink()
    assert run("--agent-dir", str(agent), "sync") == (0, "")
    listed = CliRunner().invoke(cli, ["--agent-dir", str(agent), "ls", "-n", "0", "--json"])
    assert len(listed.output.split('"path"')) - 1 == len(files)


def test_an_export_on_a_full_disk_keeps_the_previous_one(
    agent_dir: Path, small_disk: SmallDisk
) -> None:
    here = ("--agent-dir", str(agent_dir))  # the index off the small disk, the export on it
    sessions(agent_dir, 3)
    assert run(*here, "sync")[0] == 0
    out = small_disk.path / "export"
    export = (*here, "export", "parquet", str(out), "--host", "laptop")
    assert run(*export) == (0, "")
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    sessions(agent_dir, 40, first=3)
    assert run(*here, "sync")[0] == 0
    filler = fill_disk(small_disk.path, 20_000)
    code, error = run(*export)
    assert code == 1
    assert error.startswith(f"Error: No space left on the disk holding {out}:")
    assert "the manifest is the previous export's" in error and error.count("\n") == 1
    for path in before:
        assert path.exists(), path
        if path.suffix == ".parquet":
            pq.read_table(path)  # whole: the old file, or the new one the export got to
    manifest = next(path for path in before if path.suffix == ".json")
    assert manifest.read_bytes() == before[manifest]
    assert not [path for path in out.rglob("*.tmp")]
    filler.unlink()
    assert run(*export) == (0, "")
    rows = sum(pq.read_table(path).num_rows for path in (out / "sessions").rglob("*.parquet"))
    assert rows == 43
