"""The copy decision of usage_entries made by the sync and stored (migration 0020's
usage_ranks): after any sequence of appends, copies into other projects, forks, rewrites,
deletions and restorations, each followed by a real sync (whole or usage first), the ranks the
sync kept are those ranked from scratch over every row, no note is left for later, and `usage`
gives what a fresh index of the same files gives."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import orjson
import pytest
from helpers.usage_windows import notes_left, ranks_from_scratch, stored_ranks
from real_home import RealHome

from xcsh_store.index import SessionIndex
from xcsh_store.index.db import migrations_dir, transaction
from xcsh_store.index.write import bulk_load, usage_first
from xcsh_store.index.write import sync as sync_module

OPERATIONS = ("append", "append_again", "copy", "fork", "rewrite", "delete", "restore")


@pytest.fixture
def lean_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usage-first pass whenever a sync is asked for usage alone (the fixtures are far
    smaller than the bytes that make it worth it in use)."""
    monkeypatch.setattr(sync_module, "TEXT_LATER_MIN_BYTES", 0)


class Tree:
    """The Claude Code files of a home, changed as a user's tree changes."""

    def __init__(self, real_home: RealHome, seed: int) -> None:
        self.projects = real_home.claude_dir / "projects"
        self.random = random.Random(seed)
        self.gone: dict[Path, bytes] = {}

    def files(self) -> list[Path]:
        return sorted(
            path for path in self.projects.rglob("*.jsonl") if b'"usage"' in path.read_bytes()
        )

    def usage_lines(self, path: Path) -> list[dict[str, object]]:
        return [orjson.loads(line) for line in path.read_bytes().splitlines() if b'"usage"' in line]

    def change(self, operation: str) -> None:
        path = self.random.choice(self.files())
        getattr(self, operation)(path)

    def append(self, path: Path, same_id: bool = False) -> None:
        line = self.random.choice(self.usage_lines(path))
        line["uuid"] = str(uuid.UUID(int=self.random.getrandbits(128)))
        if not same_id:
            line["message"]["id"] = f"msg_{self.random.getrandbits(32):08x}"
        with path.open("ab") as stream:
            stream.write(orjson.dumps(line) + b"\n")

    def append_again(self, path: Path) -> None:
        """A line of a response already in the file, written again (the same id and time)."""
        self.append(path, same_id=True)

    def copy(self, path: Path) -> None:
        """The same session in another project (a copied folder)."""
        target = self.projects / f"-copy-{self.random.getrandbits(16)}" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())

    def fork(self, path: Path) -> None:
        """A new session that starts with a copy of the first lines of another."""
        lines = path.read_bytes().splitlines()
        kept = lines[: self.random.randint(1, len(lines))]
        session_id = str(uuid.UUID(int=self.random.getrandbits(128)))
        forked = [
            line.replace(b'"sessionId":"', b'"sessionId":"' + session_id.encode() + b"-", 1)
            for line in kept
        ]
        (path.parent / f"{session_id}.jsonl").write_bytes(b"\n".join(forked) + b"\n")

    def rewrite(self, path: Path) -> None:
        """The file written again shorter (its later responses gone, their keys with them)."""
        lines = path.read_bytes().splitlines()
        path.write_bytes(b"\n".join(lines[: max(1, len(lines) // 2)]) + b"\n")

    def delete(self, path: Path) -> None:
        self.gone[path] = path.read_bytes()
        path.unlink()

    def restore(self, path: Path) -> None:
        if self.gone:
            lost = self.random.choice(sorted(self.gone))
            lost.parent.mkdir(parents=True, exist_ok=True)
            lost.write_bytes(self.gone.pop(lost))


def usage_totals(index: SessionIndex) -> list[tuple[object, ...]]:
    return [
        (row.key, row.entries, row.input_tokens, row.output_tokens, row.cache_read_tokens,
         row.cache_write_tokens, None if row.cost is None else round(row.cost, 9))
        for row in index.usage(by=("session", "day", "model"))
    ]  # fmt: skip


def assert_ranked_as_from_scratch(index: SessionIndex) -> None:
    assert notes_left(index.connection) == 0
    assert stored_ranks(index.connection) == ranks_from_scratch(index.connection)


@pytest.mark.parametrize("seed", range(4))
def test_the_stored_ranks_stay_those_ranked_from_scratch(
    agent_dir: Path, real_home: RealHome, lean_always: None, tmp_path: Path, seed: int
):
    tree = Tree(real_home, seed)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=seed % 2 == 0)
        assert_ranked_as_from_scratch(index)
        for _step in range(8):
            tree.change(tree.random.choice(OPERATIONS))
            index.sync(entries=tree.random.random() < 0.5)
            assert_ranked_as_from_scratch(index)
        index.sync()
        assert_ranked_as_from_scratch(index)
        kept = usage_totals(index)
    with SessionIndex.open(str(tmp_path / "fresh")) as fresh:
        fresh.sync()
        assert usage_totals(fresh) == kept


def test_a_bulk_load_ranks_every_row_once_its_indexes_are_back(
    agent_dir: Path, real_home: RealHome, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(bulk_load, "BULK_MIN_BYTES", 0)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        assert not bulk_load.deferred(index.connection)
        assert_ranked_as_from_scratch(index)
        assert len(stored_ranks(index.connection)) > 1000


def test_the_migration_ranks_the_rows_of_an_index_made_before_it(
    agent_dir: Path, real_home: RealHome, lean_always: None
):
    text = (migrations_dir() / "0020_usage_ranks.sql").read_text()
    fill = text[text.index("INSERT INTO usage_ranks") : text.index("-- The same columns")]
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        late = real_home.claude_dir / "projects" / "-late" / "late.jsonl"
        late.parent.mkdir()
        late.write_bytes(real_home.files["apanloco__random__claude-session.jsonl"].read_bytes())
        index.sync(entries=False)  # the new file's usage in usage_lines, the others' in entries
        connection = index.connection
        ((lines,),) = connection.execute("SELECT count(*) FROM usage_lines")
        assert lines > 0
        with transaction(connection):
            connection.execute("DELETE FROM usage_ranks")
            connection.execute(fill)
        assert stored_ranks(connection) == ranks_from_scratch(connection)


def test_a_first_usage_pass_committed_file_by_file_ranks_every_row_at_its_end(
    agent_dir: Path, real_home: RealHome, lean_always: None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(usage_first, "COMMIT_EVERY_VALUES", 1)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        ((lines,),) = index.connection.execute("SELECT count(*) FROM usage_lines")
        assert lines > 0
        assert_ranked_as_from_scratch(index)


@pytest.mark.parametrize("seed", range(3))
def test_a_first_usage_pass_ranks_its_rows_in_python_as_the_windows_do(
    agent_dir: Path, real_home: RealHome, lean_always: None, monkeypatch: pytest.MonkeyPatch,
    seed: int,
):  # fmt: skip
    """The rows of a first pass into an empty index are ranked while the pass holds them
    (usage_ranks.ranks_of), not by the windows: copies, forks and lines written again among
    them, across transactions, ranked as from scratch."""
    tree = Tree(real_home, seed)
    for operation in ("copy", "copy", "fork", "fork", "append_again", "copy", "append"):
        tree.change(operation)
    monkeypatch.setattr(usage_first, "COMMIT_EVERY_VALUES", 40 * (seed + 1))

    def no_windows(connection: object) -> None:
        raise AssertionError("the first pass's rows ranked by the windows")

    monkeypatch.setattr(usage_first, "settle_ranks", no_windows)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync(entries=False)
        ranks = stored_ranks(index.connection)
        assert {copy for _session, _occurrence, copy, _file in ranks.values()} > {1}
        assert {file for _session, _occurrence, _copy, file in ranks.values()} > {1}
        assert_ranked_as_from_scratch(index)
