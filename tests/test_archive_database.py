"""The archive of opencode 1.x's database (issue 34 item 1): a session kept as rows of
``opencode.db`` is kept as a document, a database of its own rows, its latest version only; it
stays when opencode deletes its rows or the database, comes back when index.db is made again,
and restore writes it as a database of its own (never into opencode's). On the storage fixture
laid out as opencode 1.x's database (agent_homes.opencode_database)."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from agent_homes import opencode_database
from click.testing import CliRunner
from session_builder import FIXTURES

from xcsh_store.agents import agent_named
from xcsh_store.agents.opencode_db import database_records
from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex
from xcsh_store.index.archive.folder import ArchiveFolder
from xcsh_store.index.archive.frames import DOCUMENT, Contents, read_contents
from xcsh_store.index.archive.sources import readable_copy

STORAGE = FIXTURES / "opencode" / "jazzyalex__agent-sessions__storage_v2"


def _invoke(*arguments: str) -> str:
    result = CliRunner().invoke(cli, list(arguments), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(*arguments: str) -> object:
    return json.loads(_invoke(*arguments, "--json"))


def _sync(agent_dir: Path) -> None:
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.sync(workers=1)
    assert report.archive_error is None and not report.unreadable, report.unreadable


@pytest.fixture
def database(agent_dir: Path) -> Path:
    """opencode's database where opencode keeps it, synced once."""
    folder = Path(os.environ["HOME"]) / ".local" / "share" / "opencode"
    folder.mkdir(parents=True)
    opencode_database(STORAGE, folder / "opencode.db")
    (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
    _sync(agent_dir)
    return folder / "opencode.db"


def _archives(agent_dir: Path) -> dict[str, list[tuple[int, Contents]]]:
    """source -> (version, contents) of each archive file, oldest version first."""
    found: dict[str, list[tuple[int, Contents]]] = {}
    for stored in sorted(ArchiveFolder(str(agent_dir / "archive")).stored(), key=str):
        descriptor = os.open(stored.path, os.O_RDONLY)
        try:
            contents = read_contents(descriptor)
        finally:
            os.close(descriptor)
        assert contents.source is not None
        found.setdefault(contents.source, []).append((stored.version, contents))
    return {source: sorted(versions, key=lambda v: v[0]) for source, versions in found.items()}


def _sessions() -> dict[str, dict[str, object]]:
    return {s["id"]: s for s in _json("ls", "--agent", "opencode", "--limit", "0")}  # type: ignore[index, union-attr]


def _delete_session(database: Path, session_id: str) -> None:
    with closing(sqlite3.connect(database)) as connection, connection:
        for table, column in (("part", "session_id"), ("message", "session_id"), ("session", "id")):
            connection.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))


def test_each_session_of_the_database_is_archived_as_a_database_of_its_rows(
    agent_dir: Path, database: Path
):
    sessions = _sessions()
    archives = _archives(agent_dir)
    assert {f"{database}#{key}" for key in sessions} == set(archives)
    for key in sessions:
        ((version, contents),) = archives[f"{database}#{key}"]
        assert contents.header is not None and contents.header.kind == DOCUMENT
        assert [piece.member for piece in contents.pieces] == ["opencode.db"]
        assert version == 1


def test_a_session_deleted_from_the_database_reads_as_before(agent_dir: Path, database: Path):
    sessions = _sessions()
    chosen = next(iter(sessions))
    shown = _json("show", chosen)
    _delete_session(database, chosen)
    _sync(agent_dir)
    after = _sessions()
    assert set(after) == set(sessions)
    assert after[chosen]["source"] == "archived" and after[chosen]["source_gone_at"]
    assert {after[key]["source"] for key in after if key != chosen} == {"file"}
    assert _json("show", chosen)["entries"] == shown["entries"]  # type: ignore[index]
    hits = _json("search", "Investigating", "--agent", "opencode")
    assert hits


def test_the_database_deleted_and_the_index_made_again(agent_dir: Path, database: Path):
    before = {key: _json("show", key)["entries"] for key in _sessions()}  # type: ignore[index]
    database.unlink()
    _sync(agent_dir)
    assert {key for key, s in _sessions().items() if s["source"] == "archived"} == set(before)
    (agent_dir / "index.db").unlink()
    _sync(agent_dir)
    again = _sessions()
    assert {s["source"] for s in again.values()} == {"archived"}
    assert {key: _json("show", key)["entries"] for key in again} == before
    with SessionIndex.open(str(agent_dir)) as index:
        verified = index.verify()
    assert verified.clean, (verified.differences, verified.archive_problems)


def test_a_changed_session_keeps_its_latest_version_only(agent_dir: Path, database: Path):
    key = next(iter(_sessions()))
    with closing(sqlite3.connect(database)) as connection, connection:
        changed = connection.execute(
            "UPDATE part SET data = json_set(data, '$.text', 'a numbat appeared'),"
            " time_updated = time_updated + 1 WHERE session_id = ? AND json_extract(data,"
            " '$.type') = 'text' LIMIT 1",
            (key,),
        ).rowcount
    assert changed == 1
    _sync(agent_dir)
    ((version, _contents),) = _archives(agent_dir)[f"{database}#{key}"]
    assert version == 2
    _delete_session(database, key)
    _sync(agent_dir)
    assert [hit["session_id"] for hit in _json("search", "numbat")] == [key]  # type: ignore[index, union-attr]


def test_restore_writes_a_database_of_its_own_never_into_opencodes(
    agent_dir: Path, database: Path, tmp_path: Path
):
    key = next(iter(_sessions()))
    records = list(database_records(str(database), key))
    before = database.read_bytes()
    refused = CliRunner().invoke(cli, ["restore", key])
    assert refused.exit_code != 0 and "kept in its agent's database or log" in refused.output
    assert database.read_bytes() == before
    restored = _json("restore", key, "--to", str(tmp_path / "out"))
    copy = tmp_path / "out" / "opencode.db"
    assert restored[0]["path"] == f"{copy}#{key}"  # type: ignore[index]
    assert list(database_records(str(copy), key)) == records


def test_a_plugin_that_fails_to_give_its_members_costs_the_session_not_the_sync(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = Path(os.environ["HOME"]) / ".local" / "share" / "opencode"
    folder.mkdir(parents=True)
    opencode_database(STORAGE, folder / "opencode.db")
    (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
    reader = agent_named("opencode")
    assert reader is not None

    def broken(self: object, path: str, root: str) -> list[tuple[str, bytes]]:
        raise sqlite3.DatabaseError("file is not a database")

    with monkeypatch.context() as patched:
        patched.setattr(type(reader), "session_members", broken)
        with SessionIndex.open(str(agent_dir)) as index:
            report = index.sync(workers=1)
    assert report.unreadable and all(
        "agent plugin opencode failed: DatabaseError" in why for why in report.unreadable.values()
    )
    _sync(agent_dir)
    assert {s["source"] for s in _sessions().values()} == {"file"}
    assert len(_archives(agent_dir)) == len(_sessions())


def test_a_session_of_the_database_is_read_from_it_until_it_is_gone(
    agent_dir: Path, database: Path
):
    key = next(iter(_sessions()))
    path = f"{database}#{key}"
    with (
        SessionIndex.open(str(agent_dir)) as index,
        readable_copy(path, index.archived_sources) as readable,
    ):
        assert readable == path
    _delete_session(database, key)
    _sync(agent_dir)
    with (
        SessionIndex.open(str(agent_dir)) as index,
        readable_copy(path, index.archived_sources) as readable,
    ):
        assert readable != path and readable.endswith(f"/opencode.db#{key}")
        assert list(database_records(*readable.rsplit("#", 1)))


def test_forget_takes_a_session_of_the_database_out_of_the_index_and_the_archive(
    agent_dir: Path, database: Path
):
    sessions = _sessions()
    key = next(iter(sessions))
    _invoke("forget", key, "--yes")
    assert f"{database}#{key}" not in _archives(agent_dir)
    _sync(agent_dir)  # the session is still in the database: left out until it changes
    assert set(_sessions()) == set(sessions) - {key}
    assert f"{database}#{key}" not in _archives(agent_dir)


def test_a_revised_reader_that_fails_on_a_gone_session_keeps_its_rows(
    agent_dir: Path, database: Path, monkeypatch: pytest.MonkeyPatch
):
    key = next(iter(_sessions()))
    shown = _json("show", key)["entries"]  # type: ignore[index]
    _delete_session(database, key)
    _sync(agent_dir)
    reader = agent_named("opencode")
    assert reader is not None

    def broken(self: object, path: str) -> object:
        raise ValueError("revision 2 cannot read this")

    with monkeypatch.context() as patched:
        patched.setattr(type(reader), "revision", 2)
        patched.setattr(type(reader), "records", broken)
        with SessionIndex.open(str(agent_dir)) as index:
            report = index.sync(workers=1)
        assert report.unreadable[f"{database}#{key}"].startswith(
            "agent plugin opencode failed: ValueError"
        )
    assert _sessions()[key]["source"] == "archived"
    assert _json("show", key)["entries"] == shown  # type: ignore[index]
